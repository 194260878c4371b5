//! Spark's names for unaliased window expressions.
//!
//! Spark names `F.sum("v").over(w)` after the resolved window:
//! `sum(v) OVER (PARTITION BY k ORDER BY t ASC NULLS FIRST RANGE BETWEEN UNBOUNDED
//! PRECEDING AND CURRENT ROW)`. The frame it prints is the one its analyzer picks when
//! the program gives none: ranking functions run over `ROWS ... CURRENT ROW`, `lag` and
//! `lead` over the single row at their offset, everything else over `RANGE ... CURRENT
//! ROW` when ordered and the whole partition when not. Offsets print as `n FOLLOWING`,
//! negative ones included (`-1 FOLLOWING`), as Spark prints them.

use crate::proto::expression::sort_order::{NullOrdering, SortDirection};
use crate::proto::expression::window::window_frame::frame_boundary::Boundary;
use crate::proto::expression::window::window_frame::{FrameBoundary, FrameType};
use crate::proto::expression::{ExprType, Window};

use super::naming::spark_name;

/// The name Spark gives an unaliased window expression.
pub fn window_name(window: &Window) -> String {
    let (function, arguments) = match window
        .window_function
        .as_deref()
        .and_then(|f| f.expr_type.as_ref())
    {
        Some(ExprType::UnresolvedFunction(call)) => (
            call.function_name.to_ascii_lowercase(),
            call.arguments.iter().map(spark_name).collect::<Vec<_>>(),
        ),
        _ => (String::new(), Vec::new()),
    };
    let head = match (function.as_str(), window.window_function.as_deref()) {
        ("percent_rank", _) => "PERCENT_RANK()".to_string(),
        ("lag" | "lead", _) => {
            let mut args = arguments.clone();
            if args.len() == 1 {
                args.push("1".to_string());
            }
            if args.len() == 2 {
                args.push("NULL".to_string());
            }
            format!("{function}({})", args.join(", "))
        }
        (_, Some(expression)) => spark_name(expression),
        (_, None) => String::new(),
    };
    let mut spec = Vec::new();
    if !window.partition_spec.is_empty() {
        let keys: Vec<String> = window.partition_spec.iter().map(spark_name).collect();
        spec.push(format!("PARTITION BY {}", keys.join(", ")));
    }
    if !window.order_spec.is_empty() {
        let keys: Vec<String> = window
            .order_spec
            .iter()
            .map(|order| {
                let key = order.child.as_deref().map_or_else(String::new, spark_name);
                let descending = order.direction == SortDirection::Descending as i32;
                let nulls_first = match NullOrdering::try_from(order.null_ordering) {
                    Ok(NullOrdering::SortNullsFirst) => true,
                    Ok(NullOrdering::SortNullsLast) => false,
                    _ => !descending,
                };
                format!(
                    "{key} {} NULLS {}",
                    if descending { "DESC" } else { "ASC" },
                    if nulls_first { "FIRST" } else { "LAST" }
                )
            })
            .collect();
        spec.push(format!("ORDER BY {}", keys.join(", ")));
    }
    spec.push(frame_text(window, &function, &arguments));
    format!("{head} OVER ({})", spec.join(" "))
}

fn frame_text(window: &Window, function: &str, arguments: &[String]) -> String {
    const ROWS_TO_CURRENT: &str = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW";
    if let Some(frame) = window.frame_spec.as_deref()
        && let Ok(kind @ (FrameType::Row | FrameType::Range)) =
            FrameType::try_from(frame.frame_type)
    {
        let units = if kind == FrameType::Row {
            "ROWS"
        } else {
            "RANGE"
        };
        return format!(
            "{units} BETWEEN {} AND {}",
            boundary_text(frame.lower.as_deref(), "PRECEDING"),
            boundary_text(frame.upper.as_deref(), "FOLLOWING")
        );
    }
    match function {
        "row_number" | "rank" | "dense_rank" | "ntile" | "percent_rank" => {
            ROWS_TO_CURRENT.to_string()
        }
        "lag" | "lead" => {
            let offset: i64 = arguments.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
            let offset = if function == "lag" { -offset } else { offset };
            format!("ROWS BETWEEN {offset} FOLLOWING AND {offset} FOLLOWING")
        }
        _ if !window.order_spec.is_empty() => {
            "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW".to_string()
        }
        _ => "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING".to_string(),
    }
}

fn boundary_text(boundary: Option<&FrameBoundary>, unbounded_side: &str) -> String {
    match boundary.and_then(|b| b.boundary.as_ref()) {
        Some(Boundary::CurrentRow(_)) => "CURRENT ROW".to_string(),
        Some(Boundary::Value(value)) => format!("{} FOLLOWING", spark_name(value)),
        Some(Boundary::Unbounded(_)) | None => format!("UNBOUNDED {unbounded_side}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Expression;
    use crate::proto::expression::literal::LiteralType;
    use crate::proto::expression::window::WindowFrame;
    use crate::proto::expression::{Literal, SortOrder, UnresolvedAttribute, UnresolvedFunction};

    fn column(name: &str) -> Expression {
        Expression {
            expr_type: Some(ExprType::UnresolvedAttribute(UnresolvedAttribute {
                unparsed_identifier: name.to_string(),
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    fn int(value: i32) -> Expression {
        Expression {
            expr_type: Some(ExprType::Literal(Literal {
                literal_type: Some(LiteralType::Integer(value)),
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    fn call(name: &str, arguments: Vec<Expression>) -> Expression {
        Expression {
            expr_type: Some(ExprType::UnresolvedFunction(UnresolvedFunction {
                function_name: name.to_string(),
                arguments,
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    fn window(function: Expression, frame: Option<WindowFrame>) -> Window {
        Window {
            window_function: Some(Box::new(function)),
            partition_spec: vec![column("region")],
            order_spec: vec![SortOrder {
                child: Some(Box::new(column("day"))),
                direction: SortDirection::Ascending as i32,
                null_ordering: NullOrdering::SortNullsFirst as i32,
            }],
            frame_spec: frame.map(Box::new),
        }
    }

    fn boundary(boundary: Boundary) -> Option<Box<FrameBoundary>> {
        Some(Box::new(FrameBoundary {
            boundary: Some(boundary),
        }))
    }

    // Expected names are what Spark 4.2 returned for the same expressions.
    #[test]
    fn names_match_spark() {
        let prefix = "PARTITION BY region ORDER BY day ASC NULLS FIRST";
        let cases = [
            (
                window(call("lag", vec![column("amount"), int(1)]), None),
                format!(
                    "lag(amount, 1, NULL) OVER ({prefix} ROWS BETWEEN -1 FOLLOWING AND -1 FOLLOWING)"
                ),
            ),
            (
                window(call("lead", vec![column("amount"), int(2), int(0)]), None),
                format!(
                    "lead(amount, 2, 0) OVER ({prefix} ROWS BETWEEN 2 FOLLOWING AND 2 FOLLOWING)"
                ),
            ),
            (
                window(call("percent_rank", vec![]), None),
                format!(
                    "PERCENT_RANK() OVER ({prefix} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
                ),
            ),
            (
                window(call("cume_dist", vec![]), None),
                format!(
                    "cume_dist() OVER ({prefix} RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
                ),
            ),
            (
                window(
                    call("sum", vec![column("amount")]),
                    Some(WindowFrame {
                        frame_type: FrameType::Row as i32,
                        lower: boundary(Boundary::Value(Box::new(int(-2)))),
                        upper: boundary(Boundary::Value(Box::new(int(3)))),
                    }),
                ),
                format!("sum(amount) OVER ({prefix} ROWS BETWEEN -2 FOLLOWING AND 3 FOLLOWING)"),
            ),
            (
                window(
                    call("sum", vec![column("amount")]),
                    Some(WindowFrame {
                        frame_type: FrameType::Range as i32,
                        lower: boundary(Boundary::CurrentRow(true)),
                        upper: boundary(Boundary::Unbounded(true)),
                    }),
                ),
                format!(
                    "sum(amount) OVER ({prefix} RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"
                ),
            ),
        ];
        for (window, expected) in cases {
            assert_eq!(window_name(&window), expected);
        }
    }
}
