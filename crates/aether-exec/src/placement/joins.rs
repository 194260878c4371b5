//! Hash joins on the GPU: which `HashJoinExec`s can run as a [`GpuHashJoinExec`]
//! (crate::ops), and what they compute.
//!
//! Keys are columns of integers, dates or decimals of precision <= 18 (both sides the
//! same type, or both signed integers), so one 64-bit word per key compares them. Not
//! yet: string keys (each side's strings are coded by its own dictionary), mark joins, null-aware anti joins (`NOT IN`), `NULL = NULL` keys, a pushed
//! LIMIT, and joins whose output keeps an order. Exchanges right below the join
//! (`RepartitionExec`, `CoalescePartitionsExec`) collapse into it: on one GPU every
//! partition of either side goes to the one join.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::{JoinSide as DfJoinSide, JoinType, NullEquality};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::repartition::RepartitionExec;

use crate::codegen::pipeline::Stage;
use crate::codegen::rows::row_kernels;
use crate::ops::{GpuJoinSpec, JoinResidual, JoinSide};
use crate::reason::{PlacementReason, ReasonCode};

fn unsupported(text: String) -> PlacementReason {
    PlacementReason::new(ReasonCode::UnsupportedOperator, text)
}

/// Whether `data_type` is a signed integer.
fn signed_integer(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

/// Why a key pair of these types cannot be compared on the GPU, if it cannot.
fn key_type_reason(left: &DataType, right: &DataType) -> Option<PlacementReason> {
    let one_word = |t: &DataType| match t {
        DataType::Date32 => true,
        DataType::Decimal128(precision, _) => *precision <= 18,
        other => signed_integer(other),
    };
    if signed_integer(left) && signed_integer(right) {
        return None;
    }
    if left == right && one_word(left) {
        return None;
    }
    let text = if matches!(
        left,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        format!(
            "its string key ({left}) would need codes shared by both sides, which GPU joins do not build yet"
        )
    } else {
        format!("its key types ({left} = {right}) are not compared on the GPU yet")
    };
    Some(PlacementReason::new(ReasonCode::UnsupportedType, text))
}

/// Index of `expr` when it is a plain column.
pub(super) fn column_index(expr: &Arc<dyn PhysicalExpr>) -> Option<usize> {
    let any: &dyn PhysicalExpr = expr.as_ref();
    any.downcast_ref::<Column>().map(Column::index)
}

/// What `join` computes on the GPU, or every reason it cannot. The GPU join builds its
/// table from the left input, as DataFusion's does, or from the right one when
/// `build_right` (the smaller by the cost model's estimate): the join type is then
/// mirrored (a left join keeps every probe row) and each output column keeps its place.
pub(super) fn join_spec(
    join: &HashJoinExec,
    build_right: bool,
) -> Result<GpuJoinSpec, Vec<PlacementReason>> {
    let mut reasons = Vec::new();
    let join_type = *join.join_type();
    if matches!(join_type, JoinType::LeftMark | JoinType::RightMark) {
        reasons.push(unsupported(format!(
            "{join_type} joins (EXISTS or IN under OR) do not run on the GPU yet"
        )));
    }
    let residual = match join
        .filter()
        .map(|filter| residual_spec(filter, build_right))
    {
        Some(Ok(residual)) => Some(residual),
        Some(Err(found)) => {
            reasons.extend(found);
            None
        }
        None => None,
    };
    if join.null_equality() == NullEquality::NullEqualsNull {
        reasons.push(unsupported(
            "it matches NULL keys to each other, which GPU joins do not yet".into(),
        ));
    }
    if join.null_aware {
        reasons.push(unsupported(
            "it is a null-aware anti join (NOT IN), whose NULL semantics GPU joins do not implement yet"
                .into(),
        ));
    }
    if join.fetch().is_some() {
        reasons.push(unsupported(
            "it stops after a row limit (a LIMIT pushed into it), which GPU joins do not apply yet"
                .into(),
        ));
    }
    if join.properties().output_ordering().is_some() {
        reasons.push(unsupported(
            "its rows keep an input's sort order, which a GPU join does not promise yet".into(),
        ));
    }
    let (left, right) = (join.left().schema(), join.right().schema());
    let mut build_keys = Vec::new();
    let mut probe_keys = Vec::new();
    for (l, r) in join.on() {
        match (column_index(l), column_index(r)) {
            (Some(l), Some(r)) => {
                let (lt, rt) = (left.field(l).data_type(), right.field(r).data_type());
                reasons.extend(key_type_reason(lt, rt));
                build_keys.push(l);
                probe_keys.push(r);
            }
            _ => reasons.push(PlacementReason::new(
                ReasonCode::UnsupportedExpression,
                format!("its keys ({l} = {r}) are computed, not columns"),
            )),
        }
    }
    reasons.extend(super::input_type_reasons(&left));
    reasons.extend(super::input_type_reasons(&right));
    if !reasons.is_empty() {
        return Err(reasons);
    }
    let outputs = join_outputs(join_type, &left, &right, join.projection.as_deref());
    if build_right {
        return Ok(GpuJoinSpec {
            join_type: join_type.swap(),
            build_keys: probe_keys,
            probe_keys: build_keys,
            outputs: outputs
                .into_iter()
                .map(|(side, index)| (side.other(), index))
                .collect(),
            residual,
        });
    }
    Ok(GpuJoinSpec {
        join_type,
        build_keys,
        probe_keys,
        outputs,
        residual,
    })
}

/// The GPU form of a join's residual filter, or every reason it has none; the right
/// input is the build side when `build_right`.
fn residual_spec(
    filter: &JoinFilter,
    build_right: bool,
) -> Result<JoinResidual, Vec<PlacementReason>> {
    let (left_side, right_side) = if build_right {
        (JoinSide::Probe, JoinSide::Build)
    } else {
        (JoinSide::Build, JoinSide::Probe)
    };
    let schema = Arc::clone(filter.schema());
    let mut reasons = Vec::new();
    let mut columns = Vec::with_capacity(filter.column_indices().len());
    for column in filter.column_indices() {
        match column.side {
            DfJoinSide::Left => columns.push((left_side, column.index)),
            DfJoinSide::Right => columns.push((right_side, column.index)),
            DfJoinSide::None => reasons.push(unsupported(
                "its residual filter reads a column of neither side (a mark column)".into(),
            )),
        }
    }
    let stage = Stage::Filter {
        input: Arc::clone(&schema),
        predicate: Arc::clone(filter.expression()),
        projection: Some(Vec::new()),
    };
    match row_kernels(&schema, &[stage], &Arc::new(Schema::empty()), &[]) {
        Ok(kernels) if reasons.is_empty() => Ok(JoinResidual {
            kernels,
            schema,
            columns,
        }),
        Ok(_) => Err(reasons),
        Err(found) => {
            reasons.extend(found.into_iter().map(|reason| {
                PlacementReason::new(
                    reason.code,
                    format!(
                        "its residual filter ({}) cannot run on the GPU: {}",
                        filter.expression(),
                        reason.message
                    ),
                )
            }));
            Err(reasons)
        }
    }
}

/// The output columns of a join of `join_type`, after its embedded projection.
fn join_outputs(
    join_type: JoinType,
    left: &Schema,
    right: &Schema,
    projection: Option<&[usize]>,
) -> Vec<(JoinSide, usize)> {
    let build = (0..left.fields().len()).map(|i| (JoinSide::Build, i));
    let probe = (0..right.fields().len()).map(|i| (JoinSide::Probe, i));
    let all: Vec<_> = match join_type {
        JoinType::LeftSemi | JoinType::LeftAnti => build.collect(),
        JoinType::RightSemi | JoinType::RightAnti => probe.collect(),
        _ => build.chain(probe).collect(),
    };
    match projection {
        Some(indices) => indices.iter().map(|&i| all[i]).collect(),
        None => all,
    }
}

/// The exchanges right below a GPU join (top first) and what they read.
pub(super) fn exchanges_below(
    child: &Arc<dyn ExecutionPlan>,
) -> (Vec<Arc<dyn ExecutionPlan>>, Arc<dyn ExecutionPlan>) {
    let mut exchanges = Vec::new();
    let mut node = Arc::clone(child);
    while node.is::<RepartitionExec>() || node.is::<CoalescePartitionsExec>() {
        let below = Arc::clone(node.children()[0]);
        exchanges.push(node);
        node = below;
    }
    (exchanges, node)
}
