//! Pinned host staging: uploads through page-locked memory allocated once.
//!
//! Copies from ordinary (pageable) memory reach 7-8 GB/s on the H200 host; from pinned
//! memory, 55 GB/s (GPU.md). Pinning costs about 0.45 s per GiB, so a small pool of
//! chunks is pinned once when the device opens and every upload streams through it:
//! the CPU fills one chunk while the copy engine drains the one before, each chunk
//! guarded by an event recorded after its copy.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, result as driver};

use crate::error::DeviceError;

/// Copies `source` into `target` (of equal length) on several threads.
///
/// One core copies about 8-10 GB/s, a fifth of what PCIe takes from pinned memory, so a
/// single-threaded fill would make staging slower than copying from pageable memory
/// directly (measured on the H200 host, 2026-11-30: 7.6 GB/s staged with one thread
/// against 9.9 GB/s direct). Pieces under 4 MiB are not worth a thread.
fn fill_in_parallel(target: &mut [u8], source: &[u8]) {
    const MIN_BYTES_PER_THREAD: usize = 4 << 20;
    const MAX_THREADS: usize = 8;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
        .min(source.len() / MIN_BYTES_PER_THREAD)
        .max(1);
    if threads == 1 {
        target.copy_from_slice(source);
        return;
    }
    let part = source.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (to, from) in target.chunks_mut(part).zip(source.chunks(part)) {
            scope.spawn(move || to.copy_from_slice(from));
        }
    });
}

/// Host memory allocated pinned (page-locked), freed on drop.
#[derive(Debug)]
pub struct PinnedBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain host memory owned by this value; access goes through
// `&mut self`, so moving it between threads is sound.
unsafe impl Send for PinnedBuffer {}

// SAFETY: a shared reference only reads `len`; the bytes are reachable only through
// `&mut self`, so sharing references between threads cannot race on them.
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    pub fn new(len: usize) -> Result<Self, DeviceError> {
        // SAFETY: flags 0 asks for plain pinned memory (not write-combined, so the CPU
        // can also read it); the pointer is owned by this value and freed once, in drop.
        let ptr = unsafe { driver::malloc_host(len.max(1), 0) }
            .map_err(DeviceError::driver("allocating pinned host memory"))?;
        Ok(Self {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to at least `len` bytes allocated in `new`, alive until
        // drop, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `malloc_host` and is freed only here.
        let _ = unsafe { driver::free_host(self.ptr.cast()) };
    }
}

#[derive(Debug)]
struct Chunk {
    buffer: PinnedBuffer,
    /// Recorded after the last copy out of `buffer`; the CPU waits on it before refilling.
    copied: Option<CudaEvent>,
}

/// A pool of pinned chunks that uploads stream through.
#[derive(Debug)]
pub struct StagingPool {
    chunks: Mutex<Vec<Chunk>>,
    chunk_bytes: usize,
}

impl StagingPool {
    /// Pins `chunks` buffers of `chunk_bytes` each.
    pub fn new(chunks: usize, chunk_bytes: usize) -> Result<Self, DeviceError> {
        let chunks = (0..chunks.max(1))
            .map(|_| {
                Ok(Chunk {
                    buffer: PinnedBuffer::new(chunk_bytes)?,
                    copied: None,
                })
            })
            .collect::<Result<Vec<_>, DeviceError>>()?;
        Ok(Self {
            chunks: Mutex::new(chunks),
            chunk_bytes: chunk_bytes.max(1),
        })
    }

    /// Bytes of pinned memory the pool holds.
    pub fn pinned_bytes(&self) -> usize {
        self.chunks.lock().map_or(0, |c| c.len() * self.chunk_bytes)
    }

    /// Copies `source` into the start of `target` on `stream`, through the pinned chunks.
    /// Returns once every byte is in a chunk; the copies complete in stream order.
    pub fn upload(
        &self,
        stream: &Arc<CudaStream>,
        source: &[u8],
        target: &mut CudaSlice<u8>,
    ) -> Result<(), DeviceError> {
        if source.len() > target.len() {
            return Err(DeviceError::Internal(format!(
                "staging {} bytes into a {}-byte GPU buffer",
                source.len(),
                target.len()
            )));
        }
        let mut chunks = self
            .chunks
            .lock()
            .map_err(|_| DeviceError::Internal("the pinned staging pool is poisoned".into()))?;
        let count = chunks.len();
        for (index, piece) in source.chunks(self.chunk_bytes).enumerate() {
            let chunk = &mut chunks[index % count];
            if let Some(copied) = &chunk.copied {
                copied
                    .synchronize()
                    .map_err(DeviceError::driver("waiting for a staging chunk"))?;
            }
            let staged = &mut chunk.buffer.as_mut_slice()[..piece.len()];
            fill_in_parallel(staged, piece);
            let offset = index * self.chunk_bytes;
            let mut window = target.slice_mut(offset..offset + piece.len());
            stream
                .memcpy_htod(&*staged, &mut window)
                .map_err(DeviceError::driver("copying to the GPU"))?;
            chunk.copied = Some(
                stream
                    .record_event(None)
                    .map_err(DeviceError::driver("recording a staging event"))?,
            );
        }
        Ok(())
    }
}
