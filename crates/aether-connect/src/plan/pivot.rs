//! `df.groupBy(...).pivot(col, values).agg(...)`, as Spark computes it.
//!
//! Each pivot value becomes one output column per aggregate: the aggregate over the
//! group's rows whose pivot column equals the value (null-safe, so a NULL value has its
//! own column). Groups without such rows get NULL, counts included, as in Spark. Without
//! values, the distinct values of the pivot column are computed first, sorted with NULL
//! first, at most `MAX_VALUES` of them (Spark's `spark.sql.pivotMaxValues`). Columns are
//! named after the value alone for one aggregate, `value_aggregate` for several.

use datafusion::arrow::array::Array;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, ScalarValue};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, LogicalPlan, LogicalPlanBuilder, Operator, SortExpr, binary_expr, lit,
    when,
};

use crate::error::{ConnectError, ConnectResult};
use crate::proto;

use super::Translator;
use super::literal::literal_to_scalar;
use super::relation::aggregate_and_project;

/// Spark's default `spark.sql.pivotMaxValues`.
const MAX_VALUES: usize = 10_000;

impl Translator {
    pub(super) async fn pivot(
        &self,
        input: LogicalPlan,
        aggregate: &proto::Aggregate,
    ) -> ConnectResult<LogicalPlan> {
        let pivot = aggregate
            .pivot
            .as_ref()
            .ok_or_else(|| ConnectError::invalid("a pivot without its column"))?;
        let schema = std::sync::Arc::clone(input.schema());
        let column = pivot
            .col
            .as_ref()
            .ok_or_else(|| ConnectError::invalid("a pivot without its column"))?;
        let column = self.expr(column, &schema)?;
        let values = if pivot.values.is_empty() {
            self.distinct_values(&input, &column).await?
        } else {
            pivot
                .values
                .iter()
                .map(literal_to_scalar)
                .collect::<ConnectResult<Vec<_>>>()?
        };
        let group_exprs = aggregate
            .grouping_expressions
            .iter()
            .map(|e| self.named_expr(e, &schema))
            .collect::<ConnectResult<Vec<_>>>()?;
        let outputs = aggregate
            .aggregate_expressions
            .iter()
            .map(|e| self.named_expr(e, &schema))
            .collect::<ConnectResult<Vec<_>>>()?;

        let mut pivoted = Vec::new();
        for value in &values {
            let matches = binary_expr(
                column.clone(),
                Operator::IsNotDistinctFrom,
                lit(value.clone()),
            );
            let present = count(lit(1)).filter(matches.clone()).build()?;
            for output in &outputs {
                let (name, inner) = match output {
                    Expr::Alias(alias) => (alias.name.clone(), alias.expr.as_ref().clone()),
                    other => (other.schema_name().to_string(), other.clone()),
                };
                let filtered = only_where(inner, &matches)?;
                let column_name = if outputs.len() == 1 {
                    value_name(value)?
                } else {
                    format!("{}_{name}", value_name(value)?)
                };
                let guarded = when(present.clone().gt(lit(0)), filtered).end()?;
                pivoted.push(guarded.alias(column_name));
            }
        }
        let group_count = group_exprs.len();
        aggregate_and_project(input, group_exprs, group_count, pivoted)
    }

    /// The distinct values of `column` over `input`, NULL first, then ascending.
    async fn distinct_values(
        &self,
        input: &LogicalPlan,
        column: &Expr,
    ) -> ConnectResult<Vec<ScalarValue>> {
        let plan = LogicalPlanBuilder::from(input.clone())
            .aggregate(vec![column.clone().alias("__pivot")], Vec::<Expr>::new())?
            .sort(vec![SortExpr::new(
                Expr::Column(Column::from_name("__pivot")),
                true,
                true,
            )])?
            .limit(0, Some(MAX_VALUES + 1))?
            .build()?;
        let (_, batches) = self.collect(plan).await?;
        let mut values = Vec::new();
        for batch in &batches {
            let array = batch.column(0);
            for row in 0..array.len() {
                values.push(ScalarValue::try_from_array(array, row)?);
            }
        }
        if values.len() > MAX_VALUES {
            return Err(ConnectError::analysis(
                "PIVOT_VALUE_LIMIT",
                format!(
                    "The pivot column has more than {MAX_VALUES} distinct values; give the \
                     values to pivot on explicitly"
                ),
            ));
        }
        Ok(values)
    }
}

/// `expr` with every aggregate in it restricted to the rows where `matches` holds.
fn only_where(expr: Expr, matches: &Expr) -> ConnectResult<Expr> {
    Ok(expr
        .transform_up(|e| match e {
            Expr::AggregateFunction(mut aggregate) => {
                let filter = match aggregate.params.filter.take() {
                    Some(existing) => existing.and(matches.clone()),
                    None => matches.clone(),
                };
                aggregate.params.filter = Some(Box::new(filter));
                Ok(Transformed::yes(Expr::AggregateFunction(aggregate)))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data)
}

/// A pivot value as Spark names its column: its text, `null` for NULL.
fn value_name(value: &ScalarValue) -> ConnectResult<String> {
    if value.is_null() {
        return Ok("null".to_string());
    }
    let array = value.to_array()?;
    Ok(array_value_to_string(&array, 0)?)
}
