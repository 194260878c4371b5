//! Scans and exchanges under GPU operators.
//!
//! As in the RAPIDS Accelerator, the scan of an in-memory (or cached) table that a GPU
//! operator reads is a GPU scan: the `HostToDeviceExec` that feeds the operator reads
//! the table's batches itself and gathers them into device layout (or hands over the
//! resident copy), so the scan is its upload. File scans (Parquet, CSV, JSON) decode
//! on the CPU: device decoding is not built yet.
//!
//! Exchanges (`RepartitionExec`, `CoalescePartitionsExec`) between a GPU operator and
//! what it reads collapse: on one GPU, the upload reads every partition into one
//! stream, so redistributing the partitions first does nothing. They stay in the CPU
//! plan that a segment falls back to.

use std::sync::Arc;

use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::repartition::RepartitionExec;

use crate::memory_table::memory_source;
use crate::reason::{PlacementReason, ReasonCode};

/// Whether `plan` is an exchange that collapses under a GPU operator.
pub(super) fn is_exchange(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.is::<RepartitionExec>() || plan.is::<CoalescePartitionsExec>()
}

/// What a GPU operator reads through `plan`: below any exchanges.
pub(super) fn below_exchanges(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let mut plan = plan;
    while is_exchange(&plan) {
        let [child] = plan.children()[..] else {
            break;
        };
        plan = Arc::clone(child);
    }
    plan
}

/// The scan an upload reading `plan` reads a table through: below any exchanges and
/// below a filter the upload runs on the host (`placement/host_prefilter.rs`) with
/// the exchanges under it.
pub(super) fn scan_below(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let below = below_exchanges(Arc::clone(plan));
    match below.downcast_ref::<FilterExec>() {
        Some(filter) => below_exchanges(Arc::clone(filter.input())),
        None => below,
    }
}

/// For a scan (`None` for anything else): whether it runs on the GPU, or why not.
/// `read_on_gpu` says whether a GPU operator reads it.
pub(super) fn scan_placement(
    plan: &Arc<dyn ExecutionPlan>,
    read_on_gpu: bool,
) -> Option<Result<(), PlacementReason>> {
    plan.downcast_ref::<DataSourceExec>()?;
    let reason = |text: &str| {
        Some(Err(PlacementReason::new(
            ReasonCode::UnsupportedOperator,
            text,
        )))
    };
    let Some(memory) = memory_source(plan.as_ref()) else {
        return reason(
            "files are decoded on the CPU (GPU decoding of Parquet pages is not built yet); the GPU operator above uploads what this reads",
        );
    };
    if !read_on_gpu {
        return reason("it is read by CPU operators (a GPU scan feeds GPU operators only)");
    }
    if datafusion::datasource::source::DataSource::fetch(memory).is_some() {
        return reason("it holds a pushed-down LIMIT, which the GPU scan does not apply");
    }
    let types = super::input_type_reasons(&plan.schema());
    if let Some(first) = types.into_iter().next() {
        return Some(Err(first));
    }
    Some(Ok(()))
}
