//! Spark's names for unaliased expressions.
//!
//! `df.select(F.col("a") + 1)` yields a column named `(a + 1)` in Spark, and
//! `groupBy("k").agg(F.sum("v"))` one named `sum(v)`; programs read results by these
//! names and `show()` prints them, so projections are aliased to them.

use crate::proto::expression::ExprType;
use crate::proto::{Expression, expression};

use super::literal::literal_display;

/// Binary operators Spark prints infix, with the symbol it prints.
fn infix(name: &str) -> Option<&'static str> {
    Some(match name {
        "+" => "+",
        "-" => "-",
        "*" => "*",
        "/" => "/",
        "%" => "%",
        "==" => "=",
        "!=" => "!=",
        "<" => "<",
        "<=" => "<=",
        ">" => ">",
        ">=" => ">=",
        "<=>" => "<=>",
        "and" => "AND",
        "or" => "OR",
        "&" => "&",
        "|" => "|",
        "^" => "^",
        _ => return None,
    })
}

/// The name Spark gives `expression` as an output column.
pub fn spark_name(expression: &Expression) -> String {
    match &expression.expr_type {
        Some(ExprType::UnresolvedAttribute(attribute)) => last_part(&attribute.unparsed_identifier),
        Some(ExprType::Literal(literal)) => literal_display(literal),
        Some(ExprType::Alias(alias)) => alias.name.join("."),
        Some(ExprType::Cast(cast)) => {
            let inner = cast.expr.as_deref().map_or_else(String::new, spark_name);
            let type_name = match &cast.cast_to_type {
                Some(expression::cast::CastToType::TypeStr(text)) => text.to_uppercase(),
                Some(expression::cast::CastToType::Type(data_type)) => {
                    crate::types::from_spark(data_type)
                        .map(|t| sql_type_name(&t))
                        .unwrap_or_default()
                }
                None => String::new(),
            };
            format!("CAST({inner} AS {type_name})")
        }
        Some(ExprType::UnresolvedFunction(function)) => function_name(
            &function.function_name,
            &function.arguments,
            function.is_distinct,
        ),
        Some(ExprType::CallFunction(function)) => {
            function_name(&function.function_name, &function.arguments, false)
        }
        Some(ExprType::ExpressionString(text)) => text.expression.clone(),
        Some(ExprType::UnresolvedStar(_)) => "*".to_string(),
        Some(ExprType::SortOrder(order)) => {
            order.child.as_deref().map_or_else(String::new, spark_name)
        }
        Some(ExprType::Window(window)) => super::window_naming::window_name(window),
        _ => "expr".to_string(),
    }
}

fn function_name(name: &str, arguments: &[Expression], distinct: bool) -> String {
    let args: Vec<String> = arguments.iter().map(spark_name).collect();
    if let (Some(symbol), [left, right]) = (infix(name), args.as_slice()) {
        return format!("({left} {symbol} {right})");
    }
    match (name, args.as_slice()) {
        ("not", [x]) => format!("(NOT {x})"),
        ("negative", [x]) => format!("(- {x})"),
        ("isNull", [x]) => format!("({x} IS NULL)"),
        ("isNotNull", [x]) => format!("({x} IS NOT NULL)"),
        ("in", [x, rest @ ..]) => format!("({x} IN ({}))", rest.join(", ")),
        ("like", [x, p]) => format!("{x} LIKE {p}"),
        ("when", _) => case_when_name(&args),
        ("count", [x]) if x == "*" => "count(1)".to_string(),
        _ => {
            let shown = match name {
                "mean" => "avg",
                "countDistinct" | "count_distinct" => "count",
                other => other,
            };
            let distinct = distinct || matches!(name, "countDistinct" | "count_distinct");
            let prefix = if distinct { "DISTINCT " } else { "" };
            format!("{shown}({prefix}{})", args.join(", "))
        }
    }
}

fn case_when_name(args: &[String]) -> String {
    let mut text = String::from("CASE");
    let mut pairs = args.chunks_exact(2);
    for pair in &mut pairs {
        text.push_str(&format!(" WHEN {} THEN {}", pair[0], pair[1]));
    }
    if let [otherwise] = pairs.remainder() {
        text.push_str(&format!(" ELSE {otherwise}"));
    }
    text.push_str(" END");
    text
}

/// The last part of a dotted identifier, without backticks.
fn last_part(identifier: &str) -> String {
    super::expression::split_identifier(identifier)
        .pop()
        .unwrap_or_else(|| identifier.to_string())
}

/// Spark's SQL name of an Arrow type (`INT`, `DECIMAL(10,2)`, ...).
pub fn sql_type_name(data_type: &arrow::datatypes::DataType) -> String {
    use arrow::datatypes::DataType as T;
    match data_type {
        T::Boolean => "BOOLEAN".into(),
        T::Int8 => "TINYINT".into(),
        T::Int16 => "SMALLINT".into(),
        T::Int32 => "INT".into(),
        T::Int64 => "BIGINT".into(),
        T::Float32 => "FLOAT".into(),
        T::Float64 => "DOUBLE".into(),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => "STRING".into(),
        T::Binary => "BINARY".into(),
        T::Date32 => "DATE".into(),
        T::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        T::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        T::Decimal128(p, s) => format!("DECIMAL({p},{s})"),
        other => other.to_string().to_uppercase(),
    }
}
