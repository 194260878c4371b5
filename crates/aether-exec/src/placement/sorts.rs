//! Sorts on the GPU: which `SortExec`s run as a [`GpuSortExec`] (crate::ops), and what
//! they compute.
//!
//! A sort group is a `SortPreservingMergeExec` over a `SortExec` (with any projections
//! that only select columns between them), or a `SortExec` over one partition. On one
//! GPU the sort sees every partition at once, so the merge above it has nothing left
//! to merge and goes with it; a `LIMIT` pushed into either makes the sort a top-k.
//! Keys are columns of integers, dates, decimals (128-bit ones as two words), floats
//! (Arrow's total order), booleans and strings (by their dictionary's sorted values); a
//! key computed by an expression keeps the group on the CPU.
//!
//! [`GpuSortExec`]: crate::ops::GpuSortExec

use std::sync::Arc;

use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

use super::joins::column_index;
use crate::ops::{GpuSortSpec, SortKey, sort_key_type};
use crate::reason::{PlacementReason, ReasonCode};

/// A sort and what goes with it, top first.
pub(super) struct SortGroup {
    /// The merge (if any), the projections, the sort: top first.
    pub nodes: Vec<Arc<dyn ExecutionPlan>>,
    /// What the sort reads.
    pub source: Arc<dyn ExecutionPlan>,
}

/// Whether `plan` is a projection that only selects (and renames) columns.
fn selects_columns(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<ProjectionExec>()
        .is_some_and(|projection| {
            projection
                .expr()
                .iter()
                .all(|e| column_index(&e.expr).is_some())
        })
}

/// The sort group starting at `plan`, if it is one.
pub(super) fn sort_group(plan: &Arc<dyn ExecutionPlan>) -> Option<SortGroup> {
    let mut nodes = vec![Arc::clone(plan)];
    let mut node = Arc::clone(plan);
    if plan.is::<SortPreservingMergeExec>() {
        node = Arc::clone(plan.children()[0]);
        while selects_columns(&node) {
            nodes.push(Arc::clone(&node));
            node = Arc::clone(node.children()[0]);
        }
        if !node.is::<SortExec>() {
            return None;
        }
        nodes.push(Arc::clone(&node));
    }
    let sort = node.downcast_ref::<SortExec>()?;
    // A sort keeping its partitions, with no merge above, promises sorted partitions
    // to a parent that wants several; one GPU stream cannot keep that promise.
    if nodes.len() == 1
        && sort.preserve_partitioning()
        && sort.input().output_partitioning().partition_count() > 1
    {
        return None;
    }
    Some(SortGroup {
        source: Arc::clone(sort.input()),
        nodes,
    })
}

fn refuse(text: String) -> PlacementReason {
    PlacementReason::new(ReasonCode::UnsupportedExpression, text)
}

/// What `group` computes on the GPU, or every reason it cannot.
pub(super) fn sort_spec(group: &SortGroup) -> Result<GpuSortSpec, Vec<PlacementReason>> {
    let Some(sort) = group
        .nodes
        .last()
        .and_then(|node| node.downcast_ref::<SortExec>())
    else {
        return Err(vec![refuse("a sort group without a sort".into())]);
    };
    let input = sort.input().schema();
    let mut reasons = Vec::new();
    let mut keys = Vec::new();
    for sort_expr in sort.expr().iter() {
        let Some(column) = column_index(&sort_expr.expr) else {
            reasons.push(refuse(format!(
                "its sort key {} is computed, and GPU sorts take columns only yet",
                sort_expr.expr
            )));
            continue;
        };
        let data_type = input.field(column).data_type();
        if let Some(why) = sort_key_type(data_type) {
            reasons.push(PlacementReason::new(
                ReasonCode::UnsupportedType,
                format!("its sort key {} {why}", sort_expr.expr),
            ));
            continue;
        }
        keys.push(SortKey {
            column,
            descending: sort_expr.options.descending,
            nulls_first: sort_expr.options.nulls_first,
        });
    }
    if !reasons.is_empty() {
        return Err(reasons);
    }
    // The output columns, through the projections from the sort up.
    let mut outputs: Vec<usize> = (0..input.fields().len()).collect();
    for node in group.nodes.iter().rev().skip(1) {
        if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
            outputs = projection
                .expr()
                .iter()
                .filter_map(|e| column_index(&e.expr))
                .map(|index| outputs[index])
                .collect();
        }
    }
    let merge_fetch = group
        .nodes
        .first()
        .filter(|n| n.is::<SortPreservingMergeExec>())
        .map(|n| n.fetch());
    let fetch = match merge_fetch {
        // Per-partition top-k's merged: the same as one top-k only when the merge
        // keeps no more rows than each partition did.
        Some(merge)
            if sort.preserve_partitioning()
                && sort.input().output_partitioning().partition_count() > 1 =>
        {
            match (merge, sort.fetch()) {
                (merge, None) => merge,
                (Some(merge), Some(each)) if merge <= each => Some(merge),
                (_, Some(each)) => {
                    return Err(vec![refuse(format!(
                        "its partitions each keep {each} rows and the merge more, which one GPU sort does not reproduce"
                    ))]);
                }
            }
        }
        merge => [merge.flatten(), sort.fetch()].into_iter().flatten().min(),
    };
    Ok(GpuSortSpec {
        keys,
        fetch,
        outputs,
    })
}
