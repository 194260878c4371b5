//! Spark window expressions as DataFusion window functions.
//!
//! `F.sum("v").over(Window.partitionBy("k").orderBy("t"))` arrives as an
//! `Expression.Window`: a function, partition and order specs, and an optional frame.
//! Aggregate functions (everything in the function library that aggregates) become
//! window aggregates over the frame; Spark's ranking and offset functions (`row_number`,
//! `rank`, `lag`, ...) map to DataFusion's window functions, cast to Spark's result
//! types (`int` where DataFusion counts in `bigint unsigned`). A projection that holds
//! window expressions is planned as a window node below the projection, as Spark does.
//!
//! Frames follow Spark: without a frame, an ordered window runs from the partition's
//! start to the current row and its peers (RANGE), an unordered one over the whole
//! partition; `rowsBetween` / `rangeBetween` bounds are offsets from the current row,
//! negative ones preceding.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::expr::{Sort, WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::{
    Expr, LogicalPlan, LogicalPlanBuilder, WindowFrame, WindowFrameBound, WindowFrameUnits,
    WindowFunctionDefinition, cast,
};
use datafusion::logical_expr::{ExprSchemable, expr::NullTreatment, utils::find_window_exprs};

use crate::error::{ConnectError, ConnectResult};
use crate::proto::Expression;
use crate::proto::expression::window::WindowFrame as SparkFrame;
use crate::proto::expression::window::window_frame::frame_boundary::Boundary;
use crate::proto::expression::window::window_frame::{FrameBoundary, FrameType};
use crate::proto::expression::{ExprType, UnresolvedFunction, Window, literal::LiteralType};

use super::Translator;
use super::naming::spark_name;

/// The OVER clause of one window expression.
struct WindowSpec {
    partition_by: Vec<Expr>,
    order_by: Vec<Sort>,
    frame: WindowFrame,
}

impl WindowSpec {
    fn call(&self, fun: WindowFunctionDefinition, args: Vec<Expr>) -> Expr {
        Expr::WindowFunction(Box::new(WindowFunction {
            fun,
            params: WindowFunctionParams {
                args,
                partition_by: self.partition_by.clone(),
                order_by: self.order_by.clone(),
                window_frame: self.frame.clone(),
                filter: None,
                null_treatment: None,
                distinct: false,
            },
        }))
    }
}

/// Spark's ranking and offset functions: DataFusion's name and Spark's result type
/// (`None`: DataFusion's type already is Spark's).
fn window_only_function(name: &str) -> Option<(&'static str, Option<DataType>)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "row_number" => ("row_number", Some(DataType::Int32)),
        "rank" => ("rank", Some(DataType::Int32)),
        "dense_rank" => ("dense_rank", Some(DataType::Int32)),
        "ntile" => ("ntile", Some(DataType::Int32)),
        "percent_rank" => ("percent_rank", None),
        "cume_dist" => ("cume_dist", None),
        "lag" => ("lag", None),
        "lead" => ("lead", None),
        "nth_value" => ("nth_value", None),
        // Over a window, Spark's first/last take the frame's first/last row; DataFusion's
        // first_value/last_value aggregates cannot slide, its window functions can.
        "first" | "first_value" => ("first_value", None),
        "last" | "last_value" => ("last_value", None),
        _ => return None,
    })
}

impl Translator {
    /// The DataFusion expression of a Spark window expression over `schema`.
    pub(super) fn window(&self, window: &Window, schema: &DFSchema) -> ConnectResult<Expr> {
        let function = window
            .window_function
            .as_deref()
            .ok_or_else(|| ConnectError::invalid("a window expression without a function"))?;
        let partition_by = window
            .partition_spec
            .iter()
            .map(|e| self.expr(e, schema))
            .collect::<ConnectResult<Vec<_>>>()?;
        let order_by = window
            .order_spec
            .iter()
            .map(|order| self.sort(order, schema))
            .collect::<ConnectResult<Vec<_>>>()?;
        let key_type = match order_by.first() {
            Some(key) => Some(key.expr.get_type(schema)?),
            None => None,
        };
        let frame = frame(window.frame_spec.as_deref(), key_type.as_ref())?;
        let spec = WindowSpec {
            partition_by,
            order_by,
            frame,
        };
        if let Some(ExprType::UnresolvedFunction(call)) = &function.expr_type
            && let Some((name, result_type)) = window_only_function(&call.function_name)
        {
            return self.ranking_or_offset(call, name, result_type, &spec, schema);
        }
        let translated = self.expr(function, schema)?;
        let mut windowed = false;
        let expr = translated
            .transform_up(|e| match e {
                Expr::AggregateFunction(aggregate) => {
                    windowed = true;
                    let mut call = spec.call(
                        WindowFunctionDefinition::AggregateUDF(aggregate.func),
                        aggregate.params.args,
                    );
                    if let Expr::WindowFunction(window) = &mut call {
                        window.params.distinct = aggregate.params.distinct;
                        window.params.filter = aggregate.params.filter;
                        window.params.null_treatment = aggregate.params.null_treatment;
                    }
                    Ok(Transformed::yes(call))
                }
                other => Ok(Transformed::no(other)),
            })?
            .data;
        if !windowed {
            return Err(ConnectError::analysis(
                "UNSUPPORTED_EXPR_FOR_WINDOW",
                format!(
                    "[UNSUPPORTED_EXPR_FOR_WINDOW] Expression \"{}\" not supported within a \
                     window function.",
                    spark_name(function)
                ),
            ));
        }
        Ok(expr)
    }

    fn ranking_or_offset(
        &self,
        call: &UnresolvedFunction,
        name: &str,
        result_type: Option<DataType>,
        spec: &WindowSpec,
        schema: &DFSchema,
    ) -> ConnectResult<Expr> {
        let frame_function = matches!(name, "nth_value" | "first_value" | "last_value");
        if spec.order_by.is_empty() && !frame_function {
            return Err(ConnectError::analysis(
                "WINDOW_FUNCTION_FRAME_NOT_ORDERED",
                format!(
                    "[WINDOW_FUNCTION_FRAME_NOT_ORDERED] Window function {} requires the window \
                     to be ordered. You need to add an ORDER BY clause.",
                    call.function_name
                ),
            ));
        }
        let state = self.session().engine.context().state();
        let udwf = state.window_functions().get(name).cloned().ok_or_else(|| {
            ConnectError::unsupported(format!("the window function `{}`", call.function_name))
        })?;
        let mut args = call
            .arguments
            .iter()
            .map(|a| self.expr(a, schema))
            .collect::<ConnectResult<Vec<_>>>()?;
        // nth_value(col, n, ignoreNulls), first(col, ignoreNulls), last(...): the flag
        // is a null treatment in DataFusion.
        let flag_position = match name {
            "nth_value" => Some(2),
            "first_value" | "last_value" => Some(1),
            _ => None,
        };
        let mut null_treatment = None;
        if flag_position.is_some_and(|position| args.len() == position + 1) {
            if let Some(Expr::Literal(ScalarValue::Boolean(Some(ignore)), _)) = args.pop() {
                null_treatment = ignore.then_some(NullTreatment::IgnoreNulls);
            } else {
                return Err(ConnectError::analysis(
                    "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT",
                    format!(
                        "{}'s ignoreNulls must be a boolean literal",
                        call.function_name
                    ),
                ));
            }
        }
        let mut expr = spec.call(WindowFunctionDefinition::WindowUDF(udwf), args);
        if let Expr::WindowFunction(window) = &mut expr {
            window.params.null_treatment = null_treatment;
        }
        Ok(match result_type {
            Some(data_type) => cast(expr, data_type),
            None => expr,
        })
    }
}

/// DataFusion's frame for a Spark frame spec over a window ordered by a key of
/// `key_type` (`None`: unordered); Spark's default when there is no spec.
fn frame(spec: Option<&SparkFrame>, key_type: Option<&DataType>) -> ConnectResult<WindowFrame> {
    let default = WindowFrame::new(key_type.is_some().then_some(false));
    let Some(spec) = spec else {
        return Ok(default);
    };
    let units = match FrameType::try_from(spec.frame_type) {
        Ok(FrameType::Row) => WindowFrameUnits::Rows,
        Ok(FrameType::Range) => WindowFrameUnits::Range,
        _ => return Ok(default),
    };
    let lower = bound(spec.lower.as_deref(), units, key_type, true)?;
    let upper = bound(spec.upper.as_deref(), units, key_type, false)?;
    Ok(WindowFrame::new_bounds(units, lower, upper))
}

/// One end of a frame: an offset from the current row, negative meaning preceding.
fn bound(
    boundary: Option<&FrameBoundary>,
    units: WindowFrameUnits,
    key_type: Option<&DataType>,
    lower: bool,
) -> ConnectResult<WindowFrameBound> {
    let unbounded = || {
        if lower {
            WindowFrameBound::Preceding(ScalarValue::UInt64(None))
        } else {
            WindowFrameBound::Following(ScalarValue::UInt64(None))
        }
    };
    let Some(boundary) = boundary.and_then(|b| b.boundary.as_ref()) else {
        return Ok(unbounded());
    };
    let value = match boundary {
        Boundary::CurrentRow(_) => return Ok(WindowFrameBound::CurrentRow),
        Boundary::Unbounded(_) => return Ok(unbounded()),
        Boundary::Value(expression) => offset_value(expression)?,
    };
    if value == 0 {
        return Ok(WindowFrameBound::CurrentRow);
    }
    let magnitude = value.unsigned_abs();
    let scalar = match units {
        WindowFrameUnits::Rows | WindowFrameUnits::Groups => ScalarValue::UInt64(Some(magnitude)),
        // RANGE offsets are cast to the ORDER BY key's type by DataFusion's type
        // coercion; given as text, as its SQL planner gives them, so that the cast is
        // exact for every numeric key type. Spark rejects integer offsets over other
        // keys (dates and timestamps included), and so does this.
        WindowFrameUnits::Range => match key_type {
            Some(key) if !key.is_numeric() => {
                return Err(ConnectError::analysis(
                    "DATATYPE_MISMATCH.RANGE_FRAME_INVALID_TYPE",
                    format!(
                        "[DATATYPE_MISMATCH.RANGE_FRAME_INVALID_TYPE] The data type \"{}\" used \
                         in the order specification does not support the data type \"BIGINT\" \
                         which is used in the range frame.",
                        super::naming::sql_type_name(key)
                    ),
                ));
            }
            _ => ScalarValue::Utf8(Some(magnitude.to_string())),
        },
    };
    Ok(if value < 0 {
        WindowFrameBound::Preceding(scalar)
    } else {
        WindowFrameBound::Following(scalar)
    })
}

/// The integer offset of a frame boundary (`rowsBetween(-2, 3)`).
fn offset_value(expression: &Expression) -> ConnectResult<i64> {
    let literal = match &expression.expr_type {
        Some(ExprType::Literal(literal)) => literal.literal_type.as_ref(),
        _ => None,
    };
    match literal {
        Some(LiteralType::Integer(v)) => Ok(i64::from(*v)),
        Some(LiteralType::Long(v)) => Ok(*v),
        Some(LiteralType::Short(v)) => Ok(i64::from(*v)),
        Some(LiteralType::Byte(v)) => Ok(i64::from(*v)),
        _ => Err(ConnectError::unsupported(
            "window frame boundaries other than integer offsets",
        )),
    }
}

/// `exprs` projected over `input`; window expressions among them are computed by a
/// window node below the projection and referenced by name.
pub(super) fn project_with_windows(
    input: LogicalPlan,
    exprs: Vec<Expr>,
) -> ConnectResult<LogicalPlan> {
    let windows = find_window_exprs(exprs.iter());
    if windows.is_empty() {
        return Ok(LogicalPlanBuilder::from(input).project(exprs)?.build()?);
    }
    let plan = LogicalPlanBuilder::window_plan(input, windows.clone())?;
    let exprs = exprs
        .into_iter()
        .map(|e| super::relation::rebase_on_columns(e, &windows))
        .collect::<ConnectResult<Vec<_>>>()?;
    Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
}
