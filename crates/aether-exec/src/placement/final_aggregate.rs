//! The final aggregate above a GPU partial aggregate, computed on the GPU as well.
//!
//! DataFusion plans a grouped aggregate as a partial aggregate per input partition, an
//! exchange (a hash `RepartitionExec`, or a `CoalescePartitionsExec` without keys), and
//! a final aggregate merging the partial states. A GPU aggregate already folds every
//! input partition into one device table, so its groups are complete: when the final
//! aggregate's values can be generated too ([`crate::codegen::aggregate::AggregateOutput`]),
//! the GPU segment writes final values, and the exchange and the CPU merge go. The
//! segment's aggregate then shows as `mode=Single`, DataFusion's name for an aggregate
//! that does both halves.
//!
//! The segment returns one partition. Every operator of one input accepts that; an
//! operator joining two inputs partition by partition needs the hash partitioning the
//! final aggregate gave, so off the plan's spine a `RepartitionExec` with that
//! partitioning goes above the segment. A final aggregate promising an output order
//! (over sorted group keys) stays on the CPU, as its order would be lost.

use std::sync::Arc;

use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use super::{Candidate, candidate};
use crate::codegen::aggregate::{
    AggregateKernels, AggregateOutput, AggregateSpec, aggregate_kernels,
};
use crate::reason::{PlacementReason, ReasonCode};

/// A final aggregate and the partial aggregate it merges.
pub(super) struct FinalOverPartial {
    /// The final aggregate (its plan is also the CPU fallback of the whole).
    pub final_plan: Arc<dyn ExecutionPlan>,
    pub partial: Candidate,
}

/// `plan` as a final aggregate over a partial aggregate candidate (through at most
/// one exchange), if it is one.
pub(super) fn final_over_partial(
    plan: &Arc<dyn ExecutionPlan>,
    host_side: &dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Option<FinalOverPartial> {
    let aggregate = plan.downcast_ref::<AggregateExec>()?;
    if !matches!(
        aggregate.mode(),
        AggregateMode::Final | AggregateMode::FinalPartitioned
    ) {
        return None;
    }
    let mut input = aggregate.input();
    if input.is::<RepartitionExec>() || input.is::<CoalescePartitionsExec>() {
        input = input.children()[0];
    }
    let partial = input.downcast_ref::<AggregateExec>()?;
    if !merges(aggregate, partial) {
        return None;
    }
    Some(FinalOverPartial {
        final_plan: Arc::clone(plan),
        partial: candidate(input, host_side)?,
    })
}

/// Whether `final_aggregate` merges exactly the states `partial` produces: the same
/// functions in the same order, and as many group keys (the final groups by the
/// partial's key columns). DataFusion always plans them so; the GPU segment relies on
/// it, so anything else stays as it is.
fn merges(final_aggregate: &AggregateExec, partial: &AggregateExec) -> bool {
    let names = |aggregate: &AggregateExec| {
        aggregate
            .aggr_expr()
            .iter()
            .map(|f| f.name().to_string())
            .collect::<Vec<_>>()
    };
    names(final_aggregate) == names(partial)
        && final_aggregate.group_expr().expr().len() == partial.group_expr().expr().len()
        && !final_aggregate.group_expr().has_grouping_set()
}

/// The spec and kernels of the GPU aggregate computing `final_plan`'s values from the
/// partial aggregate `partial` (already generated for the GPU), or why it cannot.
pub(super) fn final_kernels(
    partial: &AggregateSpec,
    final_plan: &Arc<dyn ExecutionPlan>,
) -> Result<(AggregateSpec, AggregateKernels), Vec<PlacementReason>> {
    if final_plan.output_ordering().is_some() {
        return Err(vec![PlacementReason::new(
            ReasonCode::UnsupportedOperator,
            "the final aggregate keeps its input's order, which a GPU aggregate does not",
        )]);
    }
    let spec = AggregateSpec {
        output: final_plan.schema(),
        mode: AggregateOutput::Values,
        ..partial.clone()
    };
    let kernels = aggregate_kernels(&spec)?;
    Ok((spec, kernels))
}

/// The reason a final aggregate stays on the CPU when its partial aggregate does.
pub(super) fn partial_on_cpu() -> PlacementReason {
    PlacementReason::new(
        ReasonCode::UnsupportedOperator,
        "the final aggregate runs on the GPU only with its partial aggregate",
    )
}

/// The partitioning to restore above a GPU segment replacing `final_plan`, if the
/// operators above need it (`spine`: every one above has one input).
pub(super) fn partitioning_to_restore(
    final_plan: &Arc<dyn ExecutionPlan>,
    spine: bool,
) -> Option<Partitioning> {
    let partitioning = final_plan.output_partitioning();
    (!spine && partitioning.partition_count() > 1).then(|| partitioning.clone())
}

/// How the GPU aggregate doing both halves displays: the partial aggregate's text
/// (`mode=Partial, gby=[...], aggr=[...]`) with DataFusion's mode for both.
pub(super) fn single_description(partial: &str) -> String {
    partial.replacen("mode=Partial", "mode=Single", 1)
}
