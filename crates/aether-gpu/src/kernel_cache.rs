//! The kernel cache: compiled CUBINs in memory and on disk.
//!
//! A kernel is keyed by a BLAKE3 hash of its source, the device architecture and the
//! driver version, so a driver upgrade or a new GPU compiles afresh and never loads a
//! CUBIN built for something else. On disk each entry is one file,
//! `<key>.cubin`, with a header that repeats the key and a hash of the payload; an entry
//! that is truncated, corrupt or for another key is rebuilt and rewritten. Files are
//! written to a temporary name and renamed, so concurrent processes never read half an
//! entry.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::DeviceError;

const MAGIC: &[u8; 16] = b"AETHER-CUBIN-v1\0";
const HEADER_LEN: usize = MAGIC.len() + 32 + 32 + 8;

/// Identifies one compiled kernel: source, architecture and driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelKey([u8; 32]);

impl KernelKey {
    pub fn new(source: &str, arch: &str, driver_version: i32) -> Self {
        let mut hasher = blake3::Hasher::new();
        hasher.update(source.as_bytes());
        hasher.update(b"\0arch=");
        hasher.update(arch.as_bytes());
        hasher.update(b"\0driver=");
        hasher.update(&driver_version.to_le_bytes());
        Self(*hasher.finalize().as_bytes())
    }

    fn file_name(&self) -> String {
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}.cubin")
    }
}

/// Where a CUBIN came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CubinSource {
    Memory,
    Disk,
    Compiled,
    /// The disk entry was unreadable or corrupt and was compiled again.
    Rebuilt,
}

/// Counts of how kernels were obtained since the cache was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub memory_hits: u64,
    pub disk_hits: u64,
    pub compiled: u64,
    pub rebuilt: u64,
}

/// Compiled kernels in memory, backed by a directory on disk (if one is usable).
#[derive(Debug)]
pub struct KernelCache {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<KernelKey, std::sync::Arc<Vec<u8>>>>,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    compiled: AtomicU64,
    rebuilt: AtomicU64,
}

impl KernelCache {
    /// A cache in `dir`; `None` keeps kernels in memory only.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            memory: Mutex::new(HashMap::new()),
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
            rebuilt: AtomicU64::new(0),
        }
    }

    /// The default directory: `$XDG_CACHE_HOME/aether/kernels`, else
    /// `$HOME/.cache/aether/kernels`.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
        Some(base.join("aether").join("kernels"))
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            compiled: self.compiled.load(Ordering::Relaxed),
            rebuilt: self.rebuilt.load(Ordering::Relaxed),
        }
    }

    /// Number of entries and total bytes in the disk cache.
    pub fn disk_usage(&self) -> (usize, u64) {
        let Some(entries) = self.dir.as_ref().and_then(|d| std::fs::read_dir(d).ok()) else {
            return (0, 0);
        };
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "cubin"))
            .fold((0, 0), |(n, bytes), e| {
                (n + 1, bytes + e.metadata().map_or(0, |m| m.len()))
            })
    }

    /// The CUBIN for `key`: from memory, else from disk, else from `compile` (whose
    /// result is then stored in both).
    pub fn get_or_compile(
        &self,
        key: KernelKey,
        compile: impl FnOnce() -> Result<Vec<u8>, DeviceError>,
    ) -> Result<(std::sync::Arc<Vec<u8>>, CubinSource), DeviceError> {
        if let Some(cubin) = self.memory.lock().ok().and_then(|m| m.get(&key).cloned()) {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((cubin, CubinSource::Memory));
        }
        let path = self.dir.as_ref().map(|dir| dir.join(key.file_name()));
        let (cubin, source) = match path.as_deref().map(|p| read_entry(p, &key)) {
            Some(DiskEntry::Valid(cubin)) => {
                self.disk_hits.fetch_add(1, Ordering::Relaxed);
                (cubin, CubinSource::Disk)
            }
            found => {
                let cubin = compile()?;
                let source = if matches!(found, Some(DiskEntry::Invalid)) {
                    self.rebuilt.fetch_add(1, Ordering::Relaxed);
                    CubinSource::Rebuilt
                } else {
                    self.compiled.fetch_add(1, Ordering::Relaxed);
                    CubinSource::Compiled
                };
                if let Some(path) = &path {
                    // A cache that cannot be written still works from memory.
                    let _ = write_entry(path, &key, &cubin);
                }
                (cubin, source)
            }
        };
        let cubin = std::sync::Arc::new(cubin);
        if let Ok(mut memory) = self.memory.lock() {
            memory.insert(key, std::sync::Arc::clone(&cubin));
        }
        Ok((cubin, source))
    }
}

enum DiskEntry {
    Missing,
    Invalid,
    Valid(Vec<u8>),
}

fn read_entry(path: &Path, key: &KernelKey) -> DiskEntry {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DiskEntry::Missing,
        Err(_) => return DiskEntry::Invalid,
    };
    let Some((header, payload)) = bytes.split_at_checked(HEADER_LEN) else {
        return DiskEntry::Invalid;
    };
    let (magic, rest) = header.split_at(MAGIC.len());
    let (stored_key, rest) = rest.split_at(32);
    let (stored_hash, stored_len) = rest.split_at(32);
    let length_matches = <[u8; 8]>::try_from(stored_len)
        .map(u64::from_le_bytes)
        .is_ok_and(|len| len == payload.len() as u64);
    let valid = magic == MAGIC
        && stored_key == key.0
        && length_matches
        && stored_hash == blake3::hash(payload).as_bytes();
    if valid {
        DiskEntry::Valid(payload.to_vec())
    } else {
        DiskEntry::Invalid
    }
}

fn write_entry(path: &Path, key: &KernelKey, cubin: &[u8]) -> Result<(), DeviceError> {
    let cache_error = |source| DeviceError::Cache {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(cache_error)?;
    }
    let mut bytes = Vec::with_capacity(HEADER_LEN + cubin.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&key.0);
    bytes.extend_from_slice(blake3::hash(cubin).as_bytes());
    bytes.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
    bytes.extend_from_slice(cubin);
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, &bytes).map_err(cache_error)?;
    std::fs::rename(&temporary, path).map_err(cache_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_compile(
        counter: &std::cell::Cell<u32>,
    ) -> impl FnOnce() -> Result<Vec<u8>, DeviceError> + '_ {
        move || {
            counter.set(counter.get() + 1);
            Ok(b"not really a cubin".to_vec())
        }
    }

    #[test]
    fn keys_change_with_source_arch_and_driver() {
        let base = KernelKey::new("k", "sm_90", 13000);
        assert_eq!(base, KernelKey::new("k", "sm_90", 13000));
        assert_ne!(base, KernelKey::new("k2", "sm_90", 13000));
        assert_ne!(base, KernelKey::new("k", "sm_80", 13000));
        assert_ne!(base, KernelKey::new("k", "sm_90", 12080));
    }

    #[test]
    fn entries_come_from_memory_then_disk_and_corrupt_ones_are_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let key = KernelKey::new("source", "sm_90", 13000);
        let compiles = std::cell::Cell::new(0);

        let cache = KernelCache::new(Some(dir.path().to_path_buf()));
        let (_, source) = cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        assert_eq!(source, CubinSource::Compiled);
        let (_, source) = cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        assert_eq!(source, CubinSource::Memory);
        assert_eq!(cache.disk_usage().0, 1);

        // A new process finds the entry on disk.
        let cache = KernelCache::new(Some(dir.path().to_path_buf()));
        let (cubin, source) = cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        assert_eq!(source, CubinSource::Disk);
        assert_eq!(cubin.as_slice(), b"not really a cubin");
        assert_eq!(compiles.get(), 1);

        // A corrupted entry is detected and rebuilt.
        let path = dir.path().join(key.file_name());
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let cache = KernelCache::new(Some(dir.path().to_path_buf()));
        let (_, source) = cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        assert_eq!(source, CubinSource::Rebuilt);
        assert_eq!(compiles.get(), 2);

        // A truncated entry too.
        std::fs::write(&path, b"AETHER").unwrap();
        let cache = KernelCache::new(Some(dir.path().to_path_buf()));
        let (_, source) = cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        assert_eq!(source, CubinSource::Rebuilt);
        assert_eq!(
            cache.stats(),
            CacheStats {
                memory_hits: 0,
                disk_hits: 0,
                compiled: 0,
                rebuilt: 1
            }
        );
    }

    #[test]
    fn a_cache_without_a_directory_works_from_memory() {
        let cache = KernelCache::new(None);
        let key = KernelKey::new("s", "sm_90", 1);
        let compiles = std::cell::Cell::new(0);
        cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        let (_, source) = cache.get_or_compile(key, fake_compile(&compiles)).unwrap();
        assert_eq!(source, CubinSource::Memory);
        assert_eq!(cache.disk_usage(), (0, 0));
    }
}
