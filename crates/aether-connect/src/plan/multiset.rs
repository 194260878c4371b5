//! `intersectAll` and `exceptAll` with Spark's multiset semantics.
//!
//! Spark keeps `min(m, n)` copies of a row that occurs `m` times on the left and `n`
//! times on the right for INTERSECT ALL, and `max(m - n, 0)` for EXCEPT ALL. DataFusion's
//! ALL variants are semi and anti joins, which keep all `m` copies or none. Numbering the
//! copies of each distinct row on both sides (1..m and 1..n) makes every row unique; the
//! distinct INTERSECT / EXCEPT of the numbered rows then keeps exactly copies 1..min(m, n)
//! or n+1..m, and the numbers are dropped.

use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, LogicalPlan, LogicalPlanBuilder};

use crate::error::ConnectResult;

use super::window::project_with_windows;

const OCCURRENCE: &str = "__aether_occurrence";

/// Which multiset operation.
#[derive(Debug, Clone, Copy)]
pub enum MultisetOp {
    IntersectAll,
    ExceptAll,
}

/// `left INTERSECT ALL right` or `left EXCEPT ALL right`, by position, as Spark.
pub fn multiset_operation(
    left: LogicalPlan,
    right: LogicalPlan,
    op: MultisetOp,
) -> ConnectResult<LogicalPlan> {
    let output: Vec<Expr> = left
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let left = numbered(left)?;
    let right = numbered(right)?;
    let combined = match op {
        MultisetOp::IntersectAll => LogicalPlanBuilder::intersect(left, right, false)?,
        MultisetOp::ExceptAll => LogicalPlanBuilder::except(left, right, false)?,
    };
    Ok(LogicalPlanBuilder::from(combined)
        .project(output)?
        .build()?)
}

/// `plan` with each copy of a row numbered 1, 2, ... among the identical rows.
fn numbered(plan: LogicalPlan) -> ConnectResult<LogicalPlan> {
    let columns: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let occurrence = row_number()
        .partition_by(columns.clone())
        .build()?
        .alias(OCCURRENCE);
    let mut exprs = columns;
    exprs.push(occurrence);
    project_with_windows(plan, exprs)
}
