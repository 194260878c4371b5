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
use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;

/// Device batches by input fingerprint.
#[derive(Debug, Default)]
pub struct ResidentTables {
    tables: Mutex<HashMap<u64, Vec<Arc<DeviceBatch>>>>,
}

impl ResidentTables {
    pub fn new() -> Self {
        Self::default()
    }

    /// The fingerprint of `batches` of `schema`: the same columns of the same
    /// in-memory data give the same fingerprint.
    pub fn fingerprint(schema: &SchemaRef, batches: &[RecordBatch]) -> u64 {
        let mut hasher = DefaultHasher::new();
        for field in schema.fields() {
            field.name().hash(&mut hasher);
            field.data_type().hash(&mut hasher);
        }
        for batch in batches {
            batch.num_rows().hash(&mut hasher);
            for column in batch.columns() {
                let data = column.to_data();
                data.offset().hash(&mut hasher);
                for buffer in data.buffers() {
                    (buffer.as_ptr() as usize).hash(&mut hasher);
                    buffer.len().hash(&mut hasher);
                }
                column.len().hash(&mut hasher);
            }
        }
        hasher.finish()
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
