//! Pinned slabs that host code gathers into directly, so an upload is one DMA.
//!
//! The staging pool ([`crate::staging`]) copies data that already sits in pageable
//! memory: every byte is written twice on the host before it crosses PCIe. Gathering
//! (narrowing decimals, coding strings) must write every byte anyway, so it can write
//! straight into pinned memory: a [`PinnedSlab`] is taken from the [`SlabPool`], filled
//! by one gathering task, copied to the device asynchronously, and given back with an
//! event recorded after that copy. The next task to take it waits on the event, which
//! is almost always already complete.
//!
//! Slabs are pinned on first demand (pinning costs about 0.45 s per GiB, GPU.md) and
//! kept for the life of the device, so later queries pay nothing and fresh pages never
//! fault in the middle of a query. When every slab is out and the pool is at its cap,
//! [`SlabPool::acquire`] returns `None` and the caller gathers into ordinary memory:
//! a gathering task never waits on another task, so there is no deadlock to reason
//! about.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::{CudaContext, CudaEvent};

use crate::error::DeviceError;
use crate::staging::PinnedBuffer;

/// A pinned host buffer lent by a [`SlabPool`]. Dropped without
/// [`SlabPool::release`] (a query that failed while gathering into it), it goes back
/// to its pool as free: nothing was copied out of it.
#[derive(Debug)]
pub struct PinnedSlab {
    buffer: Option<PinnedBuffer>,
    home: Weak<Mutex<PoolState>>,
}

impl PinnedSlab {
    pub fn len(&self) -> usize {
        self.buffer.as_ref().map_or(0, PinnedBuffer::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .map_or(&mut [], PinnedBuffer::as_mut_slice)
    }
}

impl Drop for PinnedSlab {
    fn drop(&mut self) {
        if let (Some(buffer), Some(home)) = (self.buffer.take(), self.home.upgrade())
            && let Ok(mut state) = home.lock()
        {
            state.free.push_back((buffer, None));
        }
    }
}

#[derive(Debug, Default)]
struct PoolState {
    /// Given-back slabs, oldest first, each with the event after its last copy.
    free: VecDeque<(PinnedBuffer, Option<CudaEvent>)>,
    /// Slabs pinned so far, lent or free.
    pinned: usize,
    /// Set when pinning failed once (the host is short of lockable memory): no more
    /// attempts, gathering uses ordinary memory.
    pinning_failed: bool,
}

/// Pinned slabs of one size, pinned lazily up to a cap.
#[derive(Debug)]
pub struct SlabPool {
    context: Arc<CudaContext>,
    slab_bytes: usize,
    max_slabs: usize,
    state: Arc<Mutex<PoolState>>,
}

impl SlabPool {
    /// A pool of at most `max_slabs` slabs of `slab_bytes` each; nothing is pinned yet.
    pub fn new(context: Arc<CudaContext>, max_slabs: usize, slab_bytes: usize) -> Self {
        Self {
            context,
            slab_bytes: slab_bytes.max(1 << 16),
            max_slabs,
            state: Arc::new(Mutex::new(PoolState::default())),
        }
    }

    pub fn slab_bytes(&self) -> usize {
        self.slab_bytes
    }

    /// Bytes pinned so far.
    pub fn pinned_bytes(&self) -> usize {
        self.state.lock().map_or(0, |s| s.pinned * self.slab_bytes)
    }

    fn lend(&self, buffer: PinnedBuffer) -> PinnedSlab {
        PinnedSlab {
            buffer: Some(buffer),
            home: Arc::downgrade(&self.state),
        }
    }

    /// A slab ready to be written: a free one whose copy is done, else a newly pinned
    /// one while under the cap, else the oldest free one once its copy is done; `None`
    /// when every slab is lent out or the host cannot pin more memory.
    pub fn acquire(&self) -> Result<Option<PinnedSlab>, DeviceError> {
        let poisoned = || DeviceError::Internal("the pinned slab pool is poisoned".into());
        let mut state = self.state.lock().map_err(|_| poisoned())?;
        let done = state
            .free
            .iter()
            .position(|(_, copied)| copied.as_ref().is_none_or(CudaEvent::is_complete));
        if let Some(index) = done {
            let (buffer, _) = state.free.remove(index).ok_or_else(poisoned)?;
            return Ok(Some(self.lend(buffer)));
        }
        if state.pinned < self.max_slabs && !state.pinning_failed {
            state.pinned += 1;
            drop(state);
            // Pinning needs the context current on this thread (any runtime worker).
            let pinned = self
                .context
                .bind_to_thread()
                .map_err(DeviceError::driver("binding the GPU context"))
                .and_then(|()| PinnedBuffer::new(self.slab_bytes));
            return Ok(match pinned {
                Ok(buffer) => Some(self.lend(buffer)),
                Err(_) => {
                    let mut state = self.state.lock().map_err(|_| poisoned())?;
                    state.pinned -= 1;
                    state.pinning_failed = true;
                    None
                }
            });
        }
        let Some((buffer, copied)) = state.free.pop_front() else {
            return Ok(None);
        };
        drop(state);
        if let Some(copied) = copied {
            copied
                .synchronize()
                .map_err(DeviceError::driver("waiting for a pinned slab's copy"))?;
        }
        Ok(Some(self.lend(buffer)))
    }

    /// Gives `slab` back; `copied` is recorded after the last copy out of it (`None`
    /// when nothing was copied).
    pub fn release(&self, mut slab: PinnedSlab, copied: Option<CudaEvent>) {
        let Some(buffer) = slab.buffer.take() else {
            return;
        };
        match self.state.lock() {
            Ok(mut state) => state.free.push_back((buffer, copied)),
            Err(_) => {
                // The pool is unusable; free the slab, but never under a running copy.
                if let Some(copied) = copied {
                    let _ = copied.synchronize();
                }
                drop(buffer);
            }
        }
    }
}
