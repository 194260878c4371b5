//! Spark SQL's rules where DataFusion's SQL differs, for `spark.sql(...)`.
//!
//! DataFusion plans the SQL; this module then makes the plan mean what Spark means:
//! - an integer literal that fits in 32 bits is an `int` (DataFusion types every integer
//!   literal `bigint`), so `SELECT 1` is `int` and `int_col + 1` stays `int`;
//! - `/` between two integers is Spark's division (a `double`; DIVIDE_BY_ZERO for a zero
//!   divisor, as under Spark's default ANSI mode), not integer division;
//! - `CREATE [OR REPLACE] TEMP[ORARY] VIEW` creates a session view (each Connect
//!   session has its own catalog, so DataFusion's `CREATE VIEW` is exactly that);
//! - `SET key` with no value shows the key's value, as Spark's does;
//! - `CACHE TABLE t` / `UNCACHE TABLE t` do what `spark.catalog.cacheTable` does.
//!
//! Rewritten expressions keep the names DataFusion gave them, so columns that refer to
//! them by name above still resolve.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, Expr, LogicalPlan, Operator, Values, binary_expr, cast, lit, when,
};
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// `plan`, planned by DataFusion from SQL, with Spark's literal types and division.
pub fn spark_semantics(plan: LogicalPlan) -> Result<LogicalPlan> {
    Ok(plan
        .transform_up_with_subqueries(|node| {
            match node {
                // LIMIT and OFFSET take bigint counts; the schema may still change below.
                LogicalPlan::Limit(_) => Ok(Transformed::yes(node.recompute_schema()?)),
                LogicalPlan::Values(values) => narrow_values(values),
                other => rewrite_node(other),
            }
        })?
        .data)
}

/// A DataFusion expression (`selectExpr`, `F.expr`) with Spark's literal types and
/// division, over `schema`.
pub fn spark_expr(expr: Expr, schema: &DFSchema) -> Result<Expr> {
    let preserver = NamePreserver::new_for_projection();
    let saved = preserver.save(&expr);
    let rewritten = rewrite_expr(expr, schema)?;
    Ok(if rewritten.transformed {
        saved.restore(rewritten.data)
    } else {
        rewritten.data
    })
}

fn rewrite_node(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    let preserver = NamePreserver::new(&node);
    let rewritten = node.map_expressions(|expr| {
        let saved = preserver.save(&expr);
        Ok(rewrite_expr(expr, &schema)?.update_data(|e| saved.restore(e)))
    })?;
    // Recomputed even when nothing changed here: an input's types may have.
    rewritten.map_data(LogicalPlan::recompute_schema)
}

fn rewrite_expr(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), metadata) => match i32::try_from(v) {
            Ok(narrow) => Ok(Transformed::yes(Expr::Literal(
                ScalarValue::Int32(Some(narrow)),
                metadata,
            ))),
            Err(_) => Ok(Transformed::no(Expr::Literal(
                ScalarValue::Int64(Some(v)),
                metadata,
            ))),
        },
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Divide,
            right,
        }) if is_integer(&left, schema) && is_integer(&right, schema) => {
            Ok(Transformed::yes(ansi_divide(*left, *right)?))
        }
        other => Ok(Transformed::no(other)),
    })
}

/// Spark's `/` on integers under ANSI mode (its default): a double quotient, and a
/// DIVIDE_BY_ZERO error for a zero divisor, which the integer division in the zero
/// branch raises (only rows with a zero divisor evaluate that branch).
fn ansi_divide(left: Expr, right: Expr) -> Result<Expr> {
    let zero = right.clone().eq(lit(0));
    let failing = cast(
        binary_expr(left.clone(), Operator::Divide, right.clone()),
        DataType::Float64,
    );
    let quotient = binary_expr(
        cast(left, DataType::Float64),
        Operator::Divide,
        cast(right, DataType::Float64),
    );
    when(zero, failing).otherwise(quotient)
}

fn is_integer(expr: &Expr, schema: &DFSchema) -> bool {
    use datafusion::logical_expr::ExprSchemable;
    expr.get_type(schema).is_ok_and(|t| t.is_integer())
}

/// `VALUES (1), (2)`: a column whose values are all integer literals within 32 bits
/// (or NULL) becomes `int`, as Spark types it.
fn narrow_values(values: Values) -> Result<Transformed<LogicalPlan>> {
    let fits = |e: &Expr| match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), _) => i32::try_from(*v).is_ok(),
        Expr::Literal(ScalarValue::Int64(None) | ScalarValue::Null, _) => true,
        _ => false,
    };
    let width = values.schema.fields().len();
    let narrow: Vec<bool> = (0..width)
        .map(|c| {
            values.values.iter().all(|row| fits(&row[c]))
                && values.schema.field(c).data_type() == &DataType::Int64
        })
        .collect();
    if !narrow.contains(&true) {
        return Ok(Transformed::no(LogicalPlan::Values(values)));
    }
    let rows: Vec<Vec<Expr>> = values
        .values
        .into_iter()
        .map(|row| {
            row.into_iter()
                .zip(&narrow)
                .map(|(e, &narrow)| match e {
                    Expr::Literal(ScalarValue::Int64(v), metadata) if narrow => Expr::Literal(
                        ScalarValue::Int32(v.and_then(|v| i32::try_from(v).ok())),
                        metadata,
                    ),
                    other => other,
                })
                .collect()
        })
        .collect();
    let fields: Vec<_> = values
        .schema
        .iter()
        .zip(&narrow)
        .map(|((qualifier, field), &narrow)| {
            let field = if narrow {
                Arc::new(field.as_ref().clone().with_data_type(DataType::Int32))
            } else {
                Arc::clone(field)
            };
            (qualifier.cloned(), field)
        })
        .collect();
    let schema = DFSchema::new_with_metadata(fields, values.schema.metadata().clone())?;
    Ok(Transformed::yes(LogicalPlan::Values(Values {
        schema: Arc::new(schema),
        values: rows,
    })))
}

/// What a SQL statement asks for before DataFusion plans it.
#[derive(Debug, PartialEq)]
pub enum SqlRewrite {
    /// Plan this text (possibly rewritten) with DataFusion.
    Plan(String),
    /// `SET key`: show the key's value.
    ShowConfig(String),
    /// `CACHE [LAZY] TABLE t` (`cached`) or `UNCACHE TABLE [IF EXISTS] t`.
    Cache {
        table: String,
        cached: bool,
        if_exists: bool,
    },
}

/// Spark statements DataFusion does not parse, rewritten to ones it does.
pub fn rewrite_statement(sql: &str) -> SqlRewrite {
    let trimmed = sql.trim().trim_end_matches(';').trim();
    if let Some(key) = set_key_without_value(trimmed) {
        return SqlRewrite::ShowConfig(key);
    }
    if let Some(cache) = cache_statement(trimmed) {
        return cache;
    }
    let Ok(mut statements) = Parser::parse_sql(&GenericDialect {}, trimmed) else {
        return SqlRewrite::Plan(sql.to_string());
    };
    if let [Statement::CreateView(view)] = statements.as_mut_slice()
        && view.temporary
    {
        view.temporary = false;
        return SqlRewrite::Plan(statements[0].to_string());
    }
    SqlRewrite::Plan(sql.to_string())
}

/// `CACHE [LAZY] TABLE t` and `UNCACHE TABLE [IF EXISTS] t`; other forms (`CACHE TABLE
/// t AS SELECT ...`, OPTIONS) are left to the parser, which rejects them.
fn cache_statement(sql: &str) -> Option<SqlRewrite> {
    let words: Vec<String> = sql
        .split_whitespace()
        .map(|w| w.to_ascii_uppercase())
        .collect();
    let table = || {
        sql.split_whitespace()
            .last()
            .map(|t| t.trim_matches('`').to_string())
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let (cached, if_exists) = match words.as_slice() {
        ["CACHE", "TABLE", _] | ["CACHE", "LAZY", "TABLE", _] => (true, false),
        ["UNCACHE", "TABLE", _] => (false, false),
        ["UNCACHE", "TABLE", "IF", "EXISTS", _] => (false, true),
        _ => return None,
    };
    Some(SqlRewrite::Cache {
        table: table()?,
        cached,
        if_exists,
    })
}

/// `SET spark.sql.shuffle.partitions` (a dotted key and nothing else).
fn set_key_without_value(sql: &str) -> Option<String> {
    let (keyword, rest) = sql.split_once(char::is_whitespace)?;
    if !keyword.eq_ignore_ascii_case("set") {
        return None;
    }
    let key = rest.trim();
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    valid.then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn plan(sql: &str) -> LogicalPlan {
        let ctx = SessionContext::new();
        let plan = ctx.state().create_logical_plan(sql).await.unwrap();
        spark_semantics(plan).unwrap()
    }

    fn types(plan: &LogicalPlan) -> Vec<DataType> {
        plan.schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect()
    }

    #[tokio::test]
    async fn integer_literals_are_int_unless_they_need_64_bits() {
        let plan = plan("SELECT 1 AS a, 3000000000 AS b, 1 + 2 AS c, -5 AS d").await;
        assert_eq!(
            types(&plan),
            [
                DataType::Int32,
                DataType::Int64,
                DataType::Int32,
                DataType::Int32
            ]
        );
    }

    #[tokio::test]
    async fn integer_division_is_double() {
        let plan = plan("SELECT 1 / 3 AS third, 7 / 2 AS half").await;
        assert_eq!(types(&plan), [DataType::Float64, DataType::Float64]);
        let ctx = SessionContext::new();
        let batches = ctx
            .execute_logical_plan(plan)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let half = batches[0]
            .column(1)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Float64Array>()
            .unwrap()
            .value(0);
        assert_eq!(half, 3.5);
    }

    #[tokio::test]
    async fn names_and_limits_survive() {
        let plan = plan(
            "SELECT count(*), x + 1 FROM (VALUES (1), (2), (NULL)) AS t(x) GROUP BY x + 1 LIMIT 2",
        )
        .await;
        let names: Vec<String> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["count(*)", "t.x + Int64(1)"]);
        assert_eq!(types(&plan), [DataType::Int64, DataType::Int32]);
        let ctx = SessionContext::new();
        let rows: usize = ctx
            .execute_logical_plan(plan)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, 2);
    }

    #[test]
    fn temporary_views_and_set_key_are_rewritten() {
        assert_eq!(
            rewrite_statement("CREATE OR REPLACE TEMPORARY VIEW v AS SELECT 1"),
            SqlRewrite::Plan("CREATE OR REPLACE VIEW v AS SELECT 1".to_string())
        );
        assert_eq!(
            rewrite_statement("set spark.sql.shuffle.partitions;"),
            SqlRewrite::ShowConfig("spark.sql.shuffle.partitions".to_string())
        );
        assert_eq!(
            rewrite_statement("cache lazy table `t1`"),
            SqlRewrite::Cache {
                table: "t1".to_string(),
                cached: true,
                if_exists: false
            }
        );
        assert_eq!(
            rewrite_statement("UNCACHE TABLE IF EXISTS t1"),
            SqlRewrite::Cache {
                table: "t1".to_string(),
                cached: false,
                if_exists: true
            }
        );
        assert_eq!(
            rewrite_statement("SET a = 1"),
            SqlRewrite::Plan("SET a = 1".to_string())
        );
        assert_eq!(
            rewrite_statement("SELECT 1"),
            SqlRewrite::Plan("SELECT 1".to_string())
        );
    }
}
