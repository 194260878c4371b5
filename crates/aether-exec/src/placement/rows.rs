//! Row segments: a chain of filters and projections that no GPU aggregate consumes,
//! run on the GPU and returning its rows (stream compaction,
//! [`crate::codegen::rows`]).
//!
//! The chain is the longest run of `FilterExec` / `ProjectionExec` from the node
//! placement reached, with any exchange between two of them (when the whole chain
//! cannot move, it is cut at its first exchange and the part below is placed on its
//! own); what it reads is uploaded, its rows come back through `DeviceToHostExec`. A
//! segment returns one partition, so where the chain returned several, the
//! partitioning is restored above it (a hash partitioning as it was, or round-robin to
//! as many partitions): operators above keep their parallelism and any
//! partition-wise contract.
//!
//! With `auto`, a row segment moves only when its input is resident on the GPU and
//! the cost model predicts a gain: from host memory its input crosses PCIe one way and
//! its rows the other, then CPU operators read them, which the CPU's own filter beats.
//! A chain whose rows a GPU operator reads (a join's input) moves whenever it can,
//! even one that only selects columns: its rows are on the device either way.

use std::sync::Arc;

use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, UnKnownColumn};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use super::report::Mark;
use super::scans;
use crate::codegen::pipeline::Stage;
use crate::codegen::rows::{RowKernels, row_kernels};
use crate::reason::{PlacementReason, ReasonCode};

/// A chain of filters and projections down to what it reads.
pub(super) struct RowChain {
    /// The chain's nodes, top first: filters, projections and exchanges between them.
    pub nodes: Vec<Arc<dyn ExecutionPlan>>,
    pub source: Arc<dyn ExecutionPlan>,
}

/// Whether `plan` is a filter or a projection.
pub(super) fn is_row_stage(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.is::<FilterExec>() || plan.is::<ProjectionExec>()
}

/// The chain of filters and projections starting at `plan`, if it is one. Exchanges
/// between two of its stages belong to it: a segment reads every partition anyway,
/// and the partitioning its top had is restored above it.
/// The chain stops above a filter below its top that `host_side` says the upload
/// runs on the host (`placement/host_prefilter.rs`).
pub(super) fn row_chain(
    plan: &Arc<dyn ExecutionPlan>,
    host_side: &dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Option<RowChain> {
    if !is_row_stage(plan) {
        return None;
    }
    let mut nodes = Vec::new();
    let mut node = Arc::clone(plan);
    while is_row_stage(&node) && (nodes.is_empty() || !host_side(&node)) {
        let child = Arc::clone(node.children()[0]);
        nodes.push(node);
        node = child;
        let below = scans::below_exchanges(Arc::clone(&node));
        if !Arc::ptr_eq(&below, &node) && is_row_stage(&below) && !host_side(&below) {
            while !Arc::ptr_eq(&node, &below) {
                let child = Arc::clone(node.children()[0]);
                nodes.push(node);
                node = child;
            }
        }
    }
    Some(RowChain {
        nodes,
        source: node,
    })
}

/// The fused stages of `chain` (top first), bottom first.
pub(super) fn stages_of(chain: &[Arc<dyn ExecutionPlan>]) -> Vec<Stage> {
    let mut stages = Vec::new();
    for node in chain.iter().rev() {
        if let Some(filter) = node.downcast_ref::<FilterExec>() {
            stages.push(Stage::Filter {
                input: filter.input().schema(),
                predicate: Arc::clone(filter.predicate()),
                projection: filter.projection().as_ref().map(|p| p.to_vec()),
            });
        } else if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
            stages.push(Stage::Project {
                input: projection.input().schema(),
                exprs: projection
                    .expr()
                    .iter()
                    .map(|e| Arc::clone(&e.expr))
                    .collect(),
            });
        }
    }
    stages
}

/// Whether every node of `chain` only selects or renames columns: nothing to compute,
/// so moving it would add two transfers and no work.
fn selects_only(chain: &[Arc<dyn ExecutionPlan>]) -> bool {
    chain.iter().filter(|node| is_row_stage(node)).all(|node| {
        node.downcast_ref::<ProjectionExec>().is_some_and(|p| {
            p.expr().iter().all(|e| {
                let any: &dyn PhysicalExpr = e.expr.as_ref();
                any.downcast_ref::<Column>().is_some()
            })
        })
    })
}

/// Why the chain cannot run on the GPU, or its kernels.
/// `string_bytes` are the input string columns uploaded as offsets and bytes;
/// `feeds_gpu` says a GPU operator reads the chain's rows, which are then on the device
/// whether the chain runs there or not, so a chain that only selects columns costs no
/// transfer there (a projection between a GPU aggregate and a GPU join).
pub(super) fn row_segment_kernels(
    chain: &RowChain,
    string_bytes: &[usize],
    feeds_gpu: bool,
) -> Result<RowKernels, (Mark, Vec<PlacementReason>)> {
    let not_on_gpu = |code, text: String| (Mark::NotOnGpu, vec![PlacementReason::new(code, text)]);
    let top = &chain.nodes[0];
    if !feeds_gpu && selects_only(&chain.nodes) {
        return Err(not_on_gpu(
            ReasonCode::UnsupportedOperator,
            "it only selects columns, which moving to the GPU would only add transfers to".into(),
        ));
    }
    if let Some(limited) = chain.nodes.iter().find(|node| node.fetch().is_some()) {
        return Err(not_on_gpu(
            ReasonCode::UnsupportedOperator,
            format!(
                "{} stops after a row limit (a LIMIT pushed into it), which a GPU segment does not apply yet",
                limited.name()
            ),
        ));
    }
    if top.output_ordering().is_some() {
        return Err(not_on_gpu(
            ReasonCode::UnsupportedOperator,
            "its rows keep their input's sort order, which a GPU segment does not promise yet"
                .into(),
        ));
    }
    let mut reasons = super::input_type_reasons(&chain.source.schema());
    let stages = stages_of(&chain.nodes);
    match row_kernels(&chain.source.schema(), &stages, &top.schema(), string_bytes) {
        Ok(kernels) if reasons.is_empty() => Ok(kernels),
        Ok(_) => Err((Mark::NotOnGpu, reasons)),
        Err(more) => {
            reasons.extend(more);
            Err((Mark::NotOnGpu, reasons))
        }
    }
}

/// The partitioning to restore above a row segment or GPU join replacing `top`, if it
/// had several partitions: its hash partitioning, or round-robin over as many
/// partitions. A hash on columns `top` projected away (DataFusion writes them as
/// `UnKnownColumn`, which cannot be evaluated, and nothing above can require) becomes
/// round-robin too.
pub(super) fn partitioning_to_restore(top: &Arc<dyn ExecutionPlan>) -> Option<Partitioning> {
    let partitioning = top.output_partitioning();
    let count = partitioning.partition_count();
    if count <= 1 {
        return None;
    }
    Some(match partitioning {
        Partitioning::Hash(exprs, n) if !exprs.iter().any(reads_unknown_column) => {
            Partitioning::Hash(exprs.clone(), *n)
        }
        _ => Partitioning::RoundRobinBatch(count),
    })
}

/// Whether `expr` reads a column its plan no longer has.
fn reads_unknown_column(expr: &Arc<dyn PhysicalExpr>) -> bool {
    let any: &dyn PhysicalExpr = expr.as_ref();
    any.downcast_ref::<UnKnownColumn>().is_some()
        || expr.children().into_iter().any(reads_unknown_column)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{BinaryExpr, Literal};
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion::physical_plan::repartition::RepartitionExec;
    use datafusion::scalar::ScalarValue;

    use super::*;

    /// `a > 0` over `input`.
    fn filter(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let predicate = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("a", 0)),
            Operator::Gt,
            Arc::new(Literal::new(ScalarValue::Int32(Some(0)))),
        ));
        Arc::new(FilterExec::try_new(predicate, input).unwrap())
    }

    /// `a + 1` over `input`.
    fn projection(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let plus: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("a", 0)),
            Operator::Plus,
            Arc::new(Literal::new(ScalarValue::Int32(Some(1)))),
        ));
        Arc::new(ProjectionExec::try_new(vec![(plus, "a".to_string())], input).unwrap())
    }

    fn exchange(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let hash = vec![Arc::new(Column::new("a", 0)) as Arc<dyn PhysicalExpr>];
        Arc::new(RepartitionExec::try_new(input, Partitioning::Hash(hash, 4)).unwrap())
    }

    #[test]
    fn a_chain_takes_exchanges_between_its_stages_only() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let table: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(schema));
        // projection -> exchange -> filter -> exchange -> table
        let plan = projection(exchange(filter(exchange(Arc::clone(&table)))));
        let chain = row_chain(&plan, &|_| false).unwrap();
        let names: Vec<&str> = chain.nodes.iter().map(|n| n.name()).collect();
        assert_eq!(names, ["ProjectionExec", "RepartitionExec", "FilterExec"]);
        assert_eq!(chain.source.name(), "RepartitionExec");
        assert_eq!(stages_of(&chain.nodes).len(), 2);
        assert!(!selects_only(&chain.nodes));
        // An exchange with no stage below it ends the chain.
        let chain = row_chain(&projection(exchange(table)), &|_| false).unwrap();
        assert_eq!(chain.nodes.len(), 1);
        assert_eq!(chain.source.name(), "RepartitionExec");
    }
}
