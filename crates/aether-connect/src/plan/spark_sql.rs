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
//! - `CACHE TABLE t` / `UNCACHE TABLE t` do what `spark.catalog.cacheTable` does;
//! - `count(DISTINCT a, b)` counts the distinct tuples without NULLs.
//!
//! Rewritten expressions keep the names DataFusion gave them, so columns that refer to
//! them by name above still resolve.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, Expr, LogicalPlan, Operator, Union, Values, binary_expr, cast, lit, when,
};
use datafusion::sql::sqlparser::ast::{
    DuplicateTreatment, Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments,
    Statement, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// `plan`, planned by DataFusion from SQL, with Spark's literal types and division.
///
/// Statements (INSERT, CREATE, ...) are left as DataFusion typed them: an INSERT's
/// source is already cast to its target's types. Plans with subqueries or recursive
/// CTEs keep their literals `bigint`: outer references carry the types they were
/// planned with, which narrowing underneath would contradict.
pub fn spark_semantics(plan: LogicalPlan) -> Result<LogicalPlan> {
    if matches!(
        plan,
        LogicalPlan::Dml(_)
            | LogicalPlan::Ddl(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Copy(_)
    ) {
        return Ok(plan);
    }
    let narrow = !has_subquery_or_recursion(&plan)?;
    Ok(plan
        .transform_up_with_subqueries(|node| {
            match node {
                // LIMIT and OFFSET take bigint counts; the schema may still change below.
                LogicalPlan::Limit(_) => Ok(Transformed::yes(node.recompute_schema()?)),
                LogicalPlan::Values(values) if narrow => narrow_values(values),
                // A union's schema is its inputs' (coerced), not the one it was built with.
                LogicalPlan::Union(union) => Ok(Transformed::yes(LogicalPlan::Union(
                    Union::try_new_with_loose_types(union.inputs)?,
                ))),
                other => rewrite_node(other, narrow),
            }
        })?
        .data)
}

fn has_subquery_or_recursion(plan: &LogicalPlan) -> Result<bool> {
    plan.exists(|node| {
        if matches!(
            node,
            LogicalPlan::RecursiveQuery(_) | LogicalPlan::Subquery(_)
        ) {
            return Ok(true);
        }
        let mut found = false;
        node.apply_expressions(|expr| {
            found |= expr.exists(|e| {
                Ok(matches!(
                    e,
                    Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
                ))
            })?;
            Ok(if found {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })?;
        Ok(found)
    })
}

/// A DataFusion expression (`selectExpr`, `F.expr`) with Spark's literal types and
/// division, over `schema`.
pub fn spark_expr(expr: Expr, schema: &DFSchema) -> Result<Expr> {
    let preserver = NamePreserver::new_for_projection();
    let saved = preserver.save(&expr);
    let rewritten = rewrite_expr(expr, schema, true)?;
    Ok(if rewritten.transformed {
        saved.restore(rewritten.data)
    } else {
        rewritten.data
    })
}

fn rewrite_node(node: LogicalPlan, narrow: bool) -> Result<Transformed<LogicalPlan>> {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    let preserver = NamePreserver::new(&node);
    let rewritten = node.map_expressions(|expr| {
        // ROLLUP / CUBE / GROUPING SETS: their members name the aggregate's columns,
        // which the nodes above refer to; an alias around the set would hide it.
        if matches!(expr, Expr::GroupingSet(_)) {
            return Ok(Transformed::no(expr));
        }
        let saved = preserver.save(&expr);
        Ok(rewrite_expr(expr, &schema, narrow)?.update_data(|e| saved.restore(e)))
    })?;
    // Recomputed even when nothing changed here: an input's types may have.
    rewritten.map_data(LogicalPlan::recompute_schema)
}

fn rewrite_expr(expr: Expr, schema: &DFSchema, narrow: bool) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), metadata) if narrow => match i32::try_from(v) {
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
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::Plus | Operator::Minus | Operator::Multiply)
                && is_type(&left, schema, &DataType::Int32)
                && is_type(&right, schema, &DataType::Int32) =>
        {
            Ok(Transformed::yes(checked_int_arithmetic(*left, op, *right)))
        }
        // Aggregate and window arguments stay bigint: `count(1)` is DataFusion's
        // `count(*)`, and `nth_value`, `ntile`, `lead`, ... read their counts as such.
        Expr::AggregateFunction(mut aggregate) => {
            let widened = widen_literals(&mut aggregate.params.args);
            Ok(Transformed::new_transformed(
                Expr::AggregateFunction(aggregate),
                widened,
            ))
        }
        Expr::WindowFunction(mut window) => {
            let widened = widen_literals(&mut window.params.args);
            Ok(Transformed::new_transformed(
                Expr::WindowFunction(window),
                widened,
            ))
        }
        other => Ok(Transformed::no(other)),
    })
}

/// Turns the `int` literals among `args` back into `bigint` ones; whether any changed.
fn widen_literals(args: &mut [Expr]) -> bool {
    let mut widened = false;
    for arg in args {
        if let Expr::Literal(ScalarValue::Int32(Some(v)), _) = arg {
            *arg = lit(i64::from(*v));
            widened = true;
        }
    }
    widened
}

/// `int` `+ - *` that fails on overflow, as Spark's ANSI mode does, where DataFusion
/// wraps around: computed in `bigint`, then cast back to `int` (a cast that errors when
/// the value does not fit).
fn checked_int_arithmetic(left: Expr, op: Operator, right: Expr) -> Expr {
    let wide = binary_expr(
        cast(left, DataType::Int64),
        op,
        cast(right, DataType::Int64),
    );
    cast(wide, DataType::Int32)
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

fn is_type(expr: &Expr, schema: &DFSchema, wanted: &DataType) -> bool {
    use datafusion::logical_expr::ExprSchemable;
    expr.get_type(schema).is_ok_and(|t| &t == wanted)
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
    let mut changed = false;
    if let [Statement::CreateView(view)] = statements.as_mut_slice()
        && view.temporary
    {
        view.temporary = false;
        changed = true;
    }
    changed |= rewrite_multi_column_count_distinct(&mut statements);
    match statements.as_slice() {
        [statement] if changed => SqlRewrite::Plan(statement.to_string()),
        _ => SqlRewrite::Plan(sql.to_string()),
    }
}

/// `count(DISTINCT a, b)`, which DataFusion does not implement, as
/// `count(DISTINCT CASE WHEN a IS NOT NULL AND b IS NOT NULL THEN struct(a, b) END)`:
/// Spark counts the distinct tuples with no NULL in them. Returns whether it rewrote any.
fn rewrite_multi_column_count_distinct(statements: &mut Vec<Statement>) -> bool {
    let mut changed = false;
    let _ = visit_expressions_mut(statements, |expr| {
        if let SqlExpr::Function(function) = expr
            && function
                .name
                .0
                .last()
                .and_then(|part| part.as_ident())
                .is_some_and(|ident| ident.value.eq_ignore_ascii_case("count"))
            && let FunctionArguments::List(list) = &mut function.args
            && matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct))
            && list.args.len() > 1
        {
            let arguments: Vec<String> = list.args.iter().map(ToString::to_string).collect();
            let present: Vec<String> = arguments
                .iter()
                .map(|a| format!("({a}) IS NOT NULL"))
                .collect();
            let text = format!(
                "CASE WHEN {} THEN struct({}) END",
                present.join(" AND "),
                arguments.join(", ")
            );
            if let Ok(tuple) = Parser::new(&GenericDialect {})
                .try_with_sql(&text)
                .and_then(|mut parser| parser.parse_expr())
            {
                list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(tuple))];
                changed = true;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    changed
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
        let SqlRewrite::Plan(text) =
            rewrite_statement("SELECT count(DISTINCT a, b) AS m, count(DISTINCT a) FROM t")
        else {
            panic!("a query is planned");
        };
        assert_eq!(
            text,
            "SELECT count(DISTINCT CASE WHEN (a) IS NOT NULL AND (b) IS NOT NULL THEN \
             STRUCT(a, b) END) AS m, count(DISTINCT a) FROM t"
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
