//! Merging a GPU segment's partial groups in one partition instead of an exchange.
//!
//! DataFusion plans a grouped aggregate as a partial aggregate per input partition, a
//! hash exchange (`RepartitionExec`) on the group keys, and a final aggregate per
//! output partition (`FinalPartitioned`). Once the partial aggregate is a GPU segment,
//! its `DeviceToHostExec` already delivers every partial group in one partition, and
//! often few of them (TPC-H Q1: 4). Spreading those rows over `target_partitions`
//! tasks costs more than merging them: on the H200 host (16 partitions), resident
//! Q1's execution outside its GPU segment took 1.6 ms with the exchange, 16 final
//! aggregates and 16 sorts, and 0.55 ms with one final aggregate (traced,
//! docs/benchmarks.md). So the pair becomes one `Final` aggregate over the segment
//! when few groups are expected: every group key is a string column whose sampled
//! values are few ([`super::shape::few_groups`]). Many groups (order keys) keep the
//! exchange, so that their final aggregation stays spread over the cores.
//!
//! That changes the output from hash-partitioned to one partition, which every
//! single-input operator above accepts (a sort, a projection, a merge) but an operator
//! joining two inputs partition by partition would not; the rewrite is made only where
//! every operator above the aggregate has one input.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

use crate::ops::DeviceToHostExec;

/// `plan` with each `FinalPartitioned` aggregate over an exchange over a GPU segment
/// (reached from the root through operators of one input) made a `Final` aggregate
/// over the segment.
pub fn merge_gpu_partials_in_one_partition(
    plan: Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(merged) = final_over_segment(&plan)? {
        return Ok(merged);
    }
    let children = plan.children();
    let [child] = children.as_slice() else {
        return Ok(plan);
    };
    let child = Arc::clone(child);
    let merged = merge_gpu_partials_in_one_partition(Arc::clone(&child))?;
    if Arc::ptr_eq(&merged, &child) {
        return Ok(plan);
    }
    datafusion::physical_plan::replace_children_if_necessary(plan, vec![merged])
}

/// The exchange under `plan`, when `plan` is a `FinalPartitioned` aggregate reading
/// an exchange: the pair that goes when the exchange reads a GPU segment.
pub fn exchange_below_final(plan: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    let aggregate = plan.downcast_ref::<AggregateExec>()?;
    let exchange = aggregate.input();
    (*aggregate.mode() == AggregateMode::FinalPartitioned && exchange.is::<RepartitionExec>())
        .then_some(exchange)
}

/// The `Final` aggregate replacing `plan`, when `plan` is a `FinalPartitioned`
/// aggregate over an exchange over a `DeviceToHostExec`.
fn final_over_segment(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(exchange) = exchange_below_final(plan) else {
        return Ok(None);
    };
    let Some(aggregate) = plan.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    let [segment] = exchange.children()[..] else {
        return Ok(None);
    };
    let few_rows = segment
        .downcast_ref::<DeviceToHostExec>()
        .is_some_and(DeviceToHostExec::few_rows);
    if !few_rows || segment.output_partitioning().partition_count() != 1 {
        return Ok(None);
    }
    let merged = AggregateExec::try_new(
        AggregateMode::Final,
        aggregate.group_expr().clone(),
        aggregate.aggr_expr().to_vec(),
        aggregate.filter_expr().to_vec(),
        Arc::clone(segment),
        aggregate.input_schema(),
    )?
    .with_limit_options(aggregate.limit_options());
    Ok(Some(Arc::new(merged)))
}
