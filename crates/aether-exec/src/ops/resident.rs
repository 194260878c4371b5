//! GPU-resident tables, minimal form: device batches kept across queries.
//!
//! When a `HostToDeviceExec` runs with residency on, it fingerprints its input (the
//! schema and the addresses of the host buffers it reads, which identify an in-memory
//! table and its projected columns) and keeps the uploaded device batches under that
//! fingerprint. The next query over the same columns of the same table skips the
//! conversion and PCIe entirely. The full cache (`CACHE TABLE`, a byte budget,
//! eviction) is a later piece; this one holds batches until it is cleared.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use aether_gpu::DeviceBatch;
use datafusion::physical_plan::ExecutionPlan;

use crate::memory_table::memory_source;

/// Device batches by input fingerprint.
#[derive(Debug, Default)]
pub struct ResidentTables {
    tables: Mutex<HashMap<u64, Vec<Arc<DeviceBatch>>>>,
}

impl ResidentTables {
    pub fn new() -> Self {
        Self::default()
    }

    /// The fingerprint of what `input` reads, when it is a scan of an in-memory table:
    /// the addresses of the table's own buffers (stable while the table lives) and the
    /// projected columns. Other inputs are not kept resident (`None`).
    pub fn fingerprint(input: &Arc<dyn ExecutionPlan>) -> Option<u64> {
        let memory = memory_source(input.as_ref())?;
        let mut hasher = DefaultHasher::new();
        memory.projection().hash(&mut hasher);
        for field in input.schema().fields() {
            field.name().hash(&mut hasher);
            field.data_type().hash(&mut hasher);
        }
        // The table's arrays themselves: the same `Arc`s for as long as it lives.
        for batch in memory.partitions().iter().flatten() {
            batch.num_rows().hash(&mut hasher);
            for column in batch.columns() {
                (Arc::as_ptr(column) as *const u8 as usize).hash(&mut hasher);
            }
        }
        Some(hasher.finish())
    }

    pub fn get(&self, fingerprint: u64) -> Option<Vec<Arc<DeviceBatch>>> {
        self.tables.lock().ok()?.get(&fingerprint).cloned()
    }

    pub fn insert(&self, fingerprint: u64, batches: Vec<Arc<DeviceBatch>>) {
        if let Ok(mut tables) = self.tables.lock() {
            tables.insert(fingerprint, batches);
        }
    }

    /// Bytes held on the device.
    pub fn device_bytes(&self) -> usize {
        self.tables.lock().map_or(0, |tables| {
            tables
                .values()
                .flatten()
                .map(|batch| batch.device_bytes())
                .sum()
        })
    }

    /// Releases every resident batch.
    pub fn clear(&self) {
        if let Ok(mut tables) = self.tables.lock() {
            tables.clear();
        }
    }
}
