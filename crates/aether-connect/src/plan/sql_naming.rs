//! Spark's names for the unaliased columns of a SQL query.
//!
//! `spark.sql("SELECT k, sum(v), count(*), 1 + 2 FROM t")` has the columns `k`,
//! `sum(v)`, `count(1)` and `(1 + 2)` in Spark; DataFusion names them `t.k`,
//! `sum(t.v)`, `count(*)` and `Int64(1) + Int64(2)`. Programs read columns by these names
//! and `show()` prints them, so the outermost SELECT's unaliased items are renamed to
//! Spark's text of them: lower-case function names, binary operators in parentheses,
//! columns without qualifiers, `count(*)` as `count(1)`, `a <> b` as `(NOT (a = b))`,
//! a top-level `CAST(a AS T)` of a column `a` as `a`. An item this printer does not
//! know keeps DataFusion's name; a `*` in the list leaves every name as it is.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, SelectItem, SetExpr, Statement, UnaryOperator, Value,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// For each output column of `sql` (a query), Spark's name, or `None` where the name
/// is the query's own (an alias) or unknown here; `None` for the whole query when the
/// columns cannot be matched to SELECT items (a `*`, not a query).
pub fn spark_column_names(sql: &str) -> Option<Vec<Option<String>>> {
    let statements = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return None;
    };
    let mut body = query.body.as_ref();
    // A set operation takes its names from its first SELECT.
    while let SetExpr::SetOperation { left, .. } = body {
        body = left.as_ref();
    }
    let SetExpr::Select(select) = body else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(expr) => Some(item_name(expr)),
            SelectItem::ExprWithAlias { .. } => Some(None),
            _ => None,
        })
        .collect()
}

/// Spark's name of a SELECT item: a cast of a column at the top is named after the
/// column; everything else is its text.
fn item_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Cast {
            kind: CastKind::Cast,
            expr: inner,
            format: None,
            ..
        } if matches!(
            inner.as_ref(),
            Expr::Identifier(_) | Expr::CompoundIdentifier(_)
        ) =>
        {
            expression_name(inner)
        }
        other => expression_name(other),
    }
}

/// Spark's text of `expr`, when this printer knows its form.
fn expression_name(expr: &Expr) -> Option<String> {
    Some(match expr {
        Expr::Identifier(ident) => ident.value.clone(),
        Expr::CompoundIdentifier(parts) => parts.last()?.value.clone(),
        Expr::Nested(inner) => expression_name(inner)?,
        Expr::Value(value) => match &value.value {
            Value::Number(text, _) => text.clone(),
            Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => text.clone(),
            Value::Boolean(b) => b.to_string(),
            Value::Null => "NULL".to_string(),
            _ => return None,
        },
        Expr::BinaryOp { left, op, right } => {
            let (l, r) = (expression_name(left)?, expression_name(right)?);
            match op {
                BinaryOperator::NotEq => format!("(NOT ({l} = {r}))"),
                BinaryOperator::StringConcat => format!("concat({l}, {r})"),
                other => format!("({l} {} {r})", operator(other)?),
            }
        }
        Expr::UnaryOp { op, expr } => match op {
            UnaryOperator::Minus => match expr.as_ref() {
                // `-5` is a literal in Spark.
                Expr::Value(_) => format!("-{}", expression_name(expr)?),
                _ => format!("(- {})", expression_name(expr)?),
            },
            UnaryOperator::Not => format!("(NOT {})", expression_name(expr)?),
            _ => return None,
        },
        Expr::IsNull(inner) => format!("({} IS NULL)", expression_name(inner)?),
        Expr::IsNotNull(inner) => format!("({} IS NOT NULL)", expression_name(inner)?),
        Expr::Cast {
            kind: CastKind::Cast,
            expr,
            data_type,
            format: None,
            ..
        } => format!(
            "CAST({} AS {})",
            expression_name(expr)?,
            data_type.to_string().to_uppercase()
        ),
        Expr::Case {
            operand: None,
            conditions,
            else_result,
            ..
        } => {
            let mut text = String::from("CASE");
            for when in conditions {
                text.push_str(&format!(
                    " WHEN {} THEN {}",
                    expression_name(&when.condition)?,
                    expression_name(&when.result)?
                ));
            }
            if let Some(otherwise) = else_result {
                text.push_str(&format!(" ELSE {}", expression_name(otherwise)?));
            }
            text.push_str(" END");
            text
        }
        Expr::Function(function) => {
            if function.over.is_some() || function.filter.is_some() {
                return None;
            }
            let name = function
                .name
                .0
                .last()?
                .as_ident()?
                .value
                .to_ascii_lowercase();
            let FunctionArguments::List(list) = &function.args else {
                return None;
            };
            if !list.clauses.is_empty() {
                return None;
            }
            let mut args = Vec::with_capacity(list.args.len());
            for arg in &list.args {
                args.push(match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => expression_name(e)?,
                    // count(*) is count(1) in Spark.
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if name == "count" => {
                        "1".to_string()
                    }
                    _ => return None,
                });
            }
            let distinct = match list.duplicate_treatment {
                Some(DuplicateTreatment::Distinct) => "DISTINCT ",
                _ => "",
            };
            format!("{name}({distinct}{})", args.join(", "))
        }
        _ => return None,
    })
}

/// Spark's text of a binary operator.
fn operator(op: &BinaryOperator) -> Option<&'static str> {
    Some(match op {
        BinaryOperator::Plus => "+",
        BinaryOperator::Minus => "-",
        BinaryOperator::Multiply => "*",
        BinaryOperator::Divide => "/",
        BinaryOperator::Modulo => "%",
        BinaryOperator::Eq => "=",
        BinaryOperator::Lt => "<",
        BinaryOperator::LtEq => "<=",
        BinaryOperator::Gt => ">",
        BinaryOperator::GtEq => ">=",
        BinaryOperator::And => "AND",
        BinaryOperator::Or => "OR",
        BinaryOperator::Spaceship => "<=>",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Option<Vec<Option<String>>> {
        spark_column_names(sql)
    }

    fn some(names: &[&str]) -> Option<Vec<Option<String>>> {
        Some(names.iter().map(|n| Some(n.to_string())).collect())
    }

    // The expected names are the ones Spark 4.2 gives these queries.
    #[test]
    fn names_follow_spark() {
        assert_eq!(
            names("SELECT 1 + 2, count(*), SUM(id), avg(t.id), max(id) FROM t"),
            some(&["(1 + 2)", "count(1)", "sum(id)", "avg(id)", "max(id)"])
        );
        assert_eq!(
            names("SELECT a * (b - 1), -a, -1, NOT x, a IS NULL, count(DISTINCT a) FROM t"),
            some(&[
                "(a * (b - 1))",
                "(- a)",
                "-1",
                "(NOT x)",
                "(a IS NULL)",
                "count(DISTINCT a)"
            ])
        );
        assert_eq!(
            names(
                "SELECT CAST(a AS BIGINT), CASE WHEN a > 1 THEN 'x' ELSE 'y' END, a || s, \
                 mean(a), a = 1 AND b <> 2, 1.50, NULL FROM t"
            ),
            some(&[
                "a",
                "CASE WHEN (a > 1) THEN x ELSE y END",
                "concat(a, s)",
                "mean(a)",
                "((a = 1) AND (NOT (b = 2)))",
                "1.50",
                "NULL"
            ])
        );
        assert_eq!(
            names("SELECT CAST(1 AS STRING), sum(CAST(a AS BIGINT)) FROM t"),
            some(&["CAST(1 AS STRING)", "sum(CAST(a AS BIGINT))"])
        );
    }

    #[test]
    fn aliases_unknown_forms_and_stars() {
        assert_eq!(
            names("SELECT a AS b, upper(s), rank() OVER (ORDER BY a) FROM t"),
            Some(vec![None, Some("upper(s)".to_string()), None])
        );
        assert_eq!(names("SELECT *, a FROM t"), None);
        assert_eq!(names("CREATE VIEW v AS SELECT 1"), None);
        assert_eq!(
            names("SELECT a + 1 FROM t UNION ALL SELECT b FROM u"),
            some(&["(a + 1)"])
        );
    }
}
