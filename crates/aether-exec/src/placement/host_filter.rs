//! Which filters an upload runs on the host before gathering (`ops/scan_rows.rs`).
//!
//! The bottom filter of a GPU segment that reads an in-memory table, when a sample of
//! the table says it keeps few rows: evaluating it on the host costs one pass over
//! its columns, and saves gathering and sending every row it drops. At SF10 on the
//! H100 (2026-12-07, EXPLAIN ANALYZE), Q14's `lineitem` upload (60 M rows, 1.2% kept)
//! spent 630 ms gathering summed over the tasks and 67 ms of PCIe, Q15's two uploads
//! (3.8% kept) about as much each; a filter keeping most rows (Q1's 98%) gains
//! nothing from it.

use std::sync::Arc;

use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::repartition::RepartitionExec;

use super::scans::below_exchanges;
use super::subtree_cost::sampled_selectivity;
use crate::memory_table::memory_source;

/// The largest share of the sampled rows a filter may keep to run on the host.
pub const MAX_HOST_FILTER_SELECTIVITY: f64 = 0.3;

/// The predicate and sampled selectivity of `filter` when it reads an in-memory
/// table (through exchanges at most) and keeps at most
/// [`MAX_HOST_FILTER_SELECTIVITY`] of a sample of it.
pub(super) fn host_filter(filter: &FilterExec) -> Option<(Arc<dyn PhysicalExpr>, f64)> {
    memory_source(below_exchanges(Arc::clone(filter.input())).as_ref())?;
    // Evaluated twice (on the host, then on the GPU), a volatile predicate could keep
    // other rows the second time.
    if is_volatile(filter.predicate()) {
        return None;
    }
    let selectivity = sampled_selectivity(filter)?;
    (selectivity <= MAX_HOST_FILTER_SELECTIVITY)
        .then(|| (Arc::clone(filter.predicate()), selectivity))
}

/// The host filter of a segment whose row stages are `nodes` (top first), and its
/// sampled selectivity: that of its bottom stage, when it is such a filter.
pub(super) fn of_chain(nodes: &[Arc<dyn ExecutionPlan>]) -> Option<(Arc<dyn PhysicalExpr>, f64)> {
    let bottom = nodes
        .iter()
        .rev()
        .find(|node| !node.is::<RepartitionExec>() && !node.is::<CoalescePartitionsExec>())?;
    host_filter(bottom.downcast_ref::<FilterExec>()?)
}
