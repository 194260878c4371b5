//! Aether's GPU operators: DataFusion `ExecutionPlan`s that hand device batches to each
//! other.
//!
//! A GPU segment is `HostToDeviceExec -> GpuSegmentExec -> DeviceToHostExec`: the
//! segment operator runs the filters and projections it replaced fused into the
//! kernels of what they end in, a hash aggregate (partial, or partial and final) or
//! rows (stream compaction). `GpuHashJoinExec` joins two device streams and
//! `GpuSortExec` sorts one; a segment, join or sort above reads their batches on the
//! device. Only the transitions speak `RecordBatch`: inside a
//! segment, operators call [`DeviceExec::execute_device`] on their child and pass
//! `DeviceBatch`es that never leave the GPU.

use std::pin::Pin;
use std::sync::Arc;

use aether_gpu::{DeviceBatch, DeviceError};
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use futures::Stream;

mod device_to_host;
mod gather;
mod gpu_hash_join;
mod gpu_segment;
mod gpu_sort;
mod group_table;
mod host_layout;
mod host_predicate;
mod host_tables;
mod host_to_device;
mod join_filter;
mod join_kernels;
mod join_table;
mod mapped_strings;
mod resident;
mod row_compaction;
mod scan_rows;
mod sort_kernels;
pub(crate) mod string_code_cache;
pub(crate) mod string_codes;

pub use device_to_host::DeviceToHostExec;
pub use gpu_hash_join::{GpuHashJoinExec, GpuJoinSpec, JoinSide};
pub use gpu_segment::{GpuSegmentExec, SegmentOutput};
pub use gpu_sort::{GpuSortExec, GpuSortSpec, SortKey};
pub use host_to_device::HostToDeviceExec;
pub use join_filter::JoinResidual;
pub use resident::ResidentTables;
pub use sort_kernels::sort_key_type;
pub use string_code_cache::{StringCodeCache, table_column_arrays};

/// The kernel sources that are not generated (hash joins, sorts), by name: compiled
/// without a GPU by the kernel-compile test along with the generated ones.
pub const FIXED_KERNEL_SOURCES: [(&str, &str); 2] = [
    ("hash_join", join_kernels::HASH_JOIN_SOURCE),
    ("sort", sort_kernels::SORT_SOURCE),
];

/// Device batches flowing between GPU operators.
pub type DeviceStream =
    Pin<Box<dyn Stream<Item = datafusion::error::Result<Arc<DeviceBatch>>> + Send>>;

/// A GPU operator: produces device batches for the GPU operator above it.
pub trait DeviceExec: ExecutionPlan {
    fn execute_device(&self, context: Arc<TaskContext>) -> datafusion::error::Result<DeviceStream>;
}

/// `plan` as a GPU operator, when it is one.
pub fn as_device_exec(plan: &Arc<dyn ExecutionPlan>) -> Option<&dyn DeviceExec> {
    if let Some(exec) = plan.downcast_ref::<HostToDeviceExec>() {
        return Some(exec);
    }
    if let Some(exec) = plan.downcast_ref::<GpuSegmentExec>() {
        return Some(exec);
    }
    if let Some(exec) = plan.downcast_ref::<GpuHashJoinExec>() {
        return Some(exec);
    }
    if let Some(exec) = plan.downcast_ref::<GpuSortExec>() {
        return Some(exec);
    }
    None
}

/// The one child `operator` is rebuilt with.
pub(crate) fn only_child(
    operator: &str,
    mut children: Vec<Arc<dyn ExecutionPlan>>,
) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
    match (children.pop(), children.is_empty()) {
        (Some(child), true) => Ok(child),
        _ => Err(DataFusionError::Internal(format!(
            "{operator} needs one child"
        ))),
    }
}

/// A device error as a DataFusion error, keeping its GPU-naming message.
pub(crate) fn device_error(error: DeviceError) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}
