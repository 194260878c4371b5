//! Spark Connect expressions as DataFusion expressions.

use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::logical_expr::expr::Sort;
use datafusion::logical_expr::{Expr, cast, lit, try_cast};

use crate::error::{ConnectError, ConnectResult};
use crate::proto::Expression;
use crate::proto::expression::cast::{CastToType, EvalMode};
use crate::proto::expression::sort_order::{NullOrdering, SortDirection};
use crate::proto::expression::{ExprType, SortOrder};
use crate::types;

use super::Translator;
use super::functions::{FunctionError, spark_function};
use super::literal::literal_to_scalar;
use super::naming::spark_name;

/// Splits `a.b.c` (with backtick quoting) into its parts.
pub fn split_identifier(identifier: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = identifier.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                current.push('`');
                chars.next();
            }
            '`' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            other => current.push(other),
        }
    }
    parts.push(current);
    parts
}

impl Translator {
    /// The DataFusion expression of `expression` over `schema`.
    pub fn expr(&self, expression: &Expression, schema: &DFSchema) -> ConnectResult<Expr> {
        let Some(kind) = &expression.expr_type else {
            return Err(ConnectError::invalid("an expression without a type"));
        };
        match kind {
            ExprType::Literal(literal) => Ok(lit(literal_to_scalar(literal)?)),
            ExprType::UnresolvedAttribute(attribute) => {
                self.attribute(&attribute.unparsed_identifier, attribute.plan_id, schema)
            }
            ExprType::UnresolvedFunction(function) => self.function(
                &function.function_name,
                &function.arguments,
                function.is_distinct,
                schema,
            ),
            ExprType::CallFunction(function) => {
                self.function(&function.function_name, &function.arguments, false, schema)
            }
            ExprType::ExpressionString(text) => {
                let state = self.session().engine.context().state();
                let expr = state.create_logical_expr(&text.expression, schema)?;
                Ok(super::spark_sql::spark_expr(expr, schema)?)
            }
            ExprType::Alias(alias) => {
                let inner = alias
                    .expr
                    .as_deref()
                    .ok_or_else(|| ConnectError::invalid("an alias without an expression"))?;
                let name = match alias.name.as_slice() {
                    [name] => name.clone(),
                    _ => {
                        return Err(ConnectError::unsupported(
                            "aliases with several names (multi-column aliases)",
                        ));
                    }
                };
                Ok(self.expr(inner, schema)?.alias(name))
            }
            ExprType::Cast(cast_expr) => {
                let inner = cast_expr
                    .expr
                    .as_deref()
                    .ok_or_else(|| ConnectError::invalid("a cast without an expression"))?;
                let target = match &cast_expr.cast_to_type {
                    Some(CastToType::Type(data_type)) => types::from_spark(data_type)?,
                    Some(CastToType::TypeStr(text)) => types::parse_type(text)?,
                    None => return Err(ConnectError::invalid("a cast without a type")),
                };
                let inner = self.expr(inner, schema)?;
                Ok(if cast_expr.eval_mode == EvalMode::Try as i32 {
                    try_cast(inner, target)
                } else {
                    cast(inner, target)
                })
            }
            ExprType::Window(window) => self.window(window, schema),
            ExprType::UnresolvedStar(_) => Err(ConnectError::analysis(
                "INVALID_USAGE_OF_STAR_OR_REGEX",
                "[INVALID_USAGE_OF_STAR_OR_REGEX] Invalid usage of '*' in this expression",
            )),
            ExprType::SortOrder(_) => Err(ConnectError::analysis(
                "UNSUPPORTED_EXPR_FOR_OPERATOR",
                "a sort order can only be used to sort",
            )),
            other => Err(ConnectError::unsupported(format!(
                "the expression kind {}",
                expression_kind_name(other)
            ))),
        }
    }

    /// Expressions for a projection list: `*` expands to the input's columns, and
    /// unaliased computed expressions get Spark's names.
    pub fn projection(
        &self,
        expressions: &[Expression],
        schema: &DFSchema,
    ) -> ConnectResult<Vec<Expr>> {
        let mut exprs = Vec::with_capacity(expressions.len());
        for expression in expressions {
            if let Some(ExprType::UnresolvedStar(star)) = &expression.expr_type {
                exprs.extend(self.star(star.unparsed_target.as_deref(), star.plan_id, schema)?);
                continue;
            }
            exprs.push(self.named_expr(expression, schema)?);
        }
        Ok(exprs)
    }

    /// `expression` under the name Spark gives it.
    pub fn named_expr(&self, expression: &Expression, schema: &DFSchema) -> ConnectResult<Expr> {
        let expr = self.expr(expression, schema)?;
        Ok(match (&expression.expr_type, &expr) {
            (_, Expr::Alias(_) | Expr::Column(_)) => expr,
            _ => expr.alias(spark_name(expression)),
        })
    }

    fn star(
        &self,
        target: Option<&str>,
        plan_id: Option<i64>,
        schema: &DFSchema,
    ) -> ConnectResult<Vec<Expr>> {
        let qualifier = target.map(|t| t.trim_end_matches(".*").trim_end_matches('*'));
        let columns: Vec<Expr> = schema
            .iter()
            .filter(|(q, field)| match (plan_id, qualifier) {
                (Some(id), _) => !self
                    .plan_id_columns(id, field.name())
                    .iter()
                    .all(|c| c.relation.as_ref() != *q),
                (None, Some(wanted)) if !wanted.is_empty() => {
                    q.is_some_and(|q| q.table().eq_ignore_ascii_case(wanted))
                }
                _ => true,
            })
            .map(|(q, field)| Expr::Column(Column::new(q.cloned(), field.name())))
            .collect();
        if columns.is_empty() && qualifier.is_some_and(|q| !q.is_empty()) {
            return Err(ConnectError::analysis(
                "CANNOT_RESOLVE_STAR_EXPAND",
                format!(
                    "[CANNOT_RESOLVE_STAR_EXPAND] Cannot resolve {}.* given input columns",
                    qualifier.unwrap_or_default()
                ),
            ));
        }
        Ok(columns)
    }

    /// A column reference: `name`, `qualifier.name`, `name.field`, or one tagged with the
    /// plan id of the DataFrame it was taken from (`df["name"]`).
    fn attribute(
        &self,
        identifier: &str,
        plan_id: Option<i64>,
        schema: &DFSchema,
    ) -> ConnectResult<Expr> {
        let parts = split_identifier(identifier);
        if let Some(id) = plan_id {
            let found: Vec<Column> = self
                .plan_id_columns(id, &parts[0])
                .into_iter()
                .filter(|column| schema.has_column(column))
                .collect();
            if let [column] = found.as_slice() {
                return Ok(fields(Expr::Column(column.clone()), &parts[1..]));
            }
        }
        // `qualifier.name[.field...]` first, then `name[.field...]`.
        if parts.len() >= 2
            && let Some(column) = find_column(schema, Some(&parts[0]), &parts[1])?
        {
            return Ok(fields(Expr::Column(column), &parts[2..]));
        }
        match find_column(schema, None, &parts[0])? {
            Some(column) => Ok(fields(Expr::Column(column), &parts[1..])),
            None => Err(unresolved_column(identifier, schema)),
        }
    }

    fn function(
        &self,
        name: &str,
        arguments: &[Expression],
        distinct: bool,
        schema: &DFSchema,
    ) -> ConnectResult<Expr> {
        let mut args = Vec::with_capacity(arguments.len());
        for argument in arguments {
            match &argument.expr_type {
                // count(*) counts rows.
                Some(ExprType::UnresolvedStar(_)) if name.eq_ignore_ascii_case("count") => {
                    args.push(lit(ScalarValue::Int32(Some(1))));
                }
                _ => args.push(self.expr(argument, schema)?),
            }
        }
        spark_function(name, args, distinct, schema).map_err(|error| match error {
            FunctionError::Unknown { name } => ConnectError::analysis(
                "UNRESOLVED_ROUTINE",
                format!(
                    "[UNRESOLVED_ROUTINE] Cannot resolve routine `{name}` on search path \
                     [`system`.`builtin`, `system`.`session`]."
                ),
            ),
            FunctionError::WrongArguments { name, message } => ConnectError::analysis(
                "WRONG_NUM_ARGS",
                format!("[WRONG_NUM_ARGS] `{name}`: {message}"),
            ),
            FunctionError::Unsupported { name, message } => {
                ConnectError::unsupported(format!("the function `{name}`: {message}"))
            }
            FunctionError::DataFusion(error) => error.into(),
        })
    }

    /// A sort expression from a Spark sort order (or a plain expression, ascending).
    pub fn sort(&self, order: &SortOrder, schema: &DFSchema) -> ConnectResult<Sort> {
        let child = order
            .child
            .as_deref()
            .ok_or_else(|| ConnectError::invalid("a sort order without an expression"))?;
        let expr = self.expr(child, schema)?;
        Ok(sort_expr(expr, order.direction, order.null_ordering))
    }
}

/// A DataFusion sort expression with Spark's defaults: ascending sorts put nulls first,
/// descending ones last.
pub fn sort_expr(expr: Expr, direction: i32, null_ordering: i32) -> Sort {
    let asc = direction != SortDirection::Descending as i32;
    let nulls_first = match NullOrdering::try_from(null_ordering) {
        Ok(NullOrdering::SortNullsFirst) => true,
        Ok(NullOrdering::SortNullsLast) => false,
        _ => asc,
    };
    Sort::new(expr, asc, nulls_first)
}

/// The column of `schema` named `name` (and qualified by `qualifier` when given):
/// an exact match first, then a case-insensitive one, as Spark resolves names.
fn find_column(
    schema: &DFSchema,
    qualifier: Option<&str>,
    name: &str,
) -> ConnectResult<Option<Column>> {
    let qualifier_matches = |q: Option<&datafusion::common::TableReference>| match qualifier {
        None => true,
        Some(wanted) => q.is_some_and(|q| q.table().eq_ignore_ascii_case(wanted)),
    };
    for exact in [true, false] {
        let matches: Vec<Column> = schema
            .iter()
            .filter(|(q, field)| {
                qualifier_matches(*q)
                    && if exact {
                        field.name() == name
                    } else {
                        field.name().eq_ignore_ascii_case(name)
                    }
            })
            .map(|(q, field)| Column::new(q.cloned(), field.name()))
            .collect();
        match matches.len() {
            0 => continue,
            1 => return Ok(matches.into_iter().next()),
            _ => {
                return Err(ConnectError::analysis(
                    "AMBIGUOUS_REFERENCE",
                    format!(
                        "[AMBIGUOUS_REFERENCE] Reference `{name}` is ambiguous, could be: [{}].",
                        matches
                            .iter()
                            .map(|c| format!("`{}`", c.flat_name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    Ok(None)
}

/// Struct field access: `expr.a.b`.
fn fields(expr: Expr, path: &[String]) -> Expr {
    path.iter().fold(expr, |expr, field| {
        datafusion::functions::core::expr_fn::get_field(expr, field.as_str())
    })
}

fn unresolved_column(identifier: &str, schema: &DFSchema) -> ConnectError {
    let names: Vec<String> = schema
        .iter()
        .map(|(q, f)| match q {
            Some(q) if !q.table().starts_with("__side") => {
                format!("`{}`.`{}`", q.table(), f.name())
            }
            _ => format!("`{}`", f.name()),
        })
        .collect();
    ConnectError::analysis(
        "UNRESOLVED_COLUMN.WITH_SUGGESTION",
        format!(
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with \
             name `{identifier}` cannot be resolved. Did you mean one of the following? [{}].",
            names.join(", ")
        ),
    )
}

fn expression_kind_name(kind: &ExprType) -> &'static str {
    match kind {
        ExprType::UnresolvedRegex(_) => "colRegex (UnresolvedRegex)",
        ExprType::LambdaFunction(_) => "lambda function",
        ExprType::Window(_) => "window (over)",
        ExprType::UnresolvedExtractValue(_) => "extract value (getItem/getField)",
        ExprType::UpdateFields(_) => "withField/dropFields",
        ExprType::UnresolvedNamedLambdaVariable(_) => "lambda variable",
        ExprType::CommonInlineUserDefinedFunction(_) => "Python user-defined function",
        ExprType::NamedArgumentExpression(_) => "named argument",
        ExprType::MergeAction(_) => "merge action",
        ExprType::TypedAggregateExpression(_) => "typed aggregate",
        ExprType::SubqueryExpression(_) => "subquery expression",
        ExprType::DirectShufflePartitionId(_) => "shuffle partition id",
        ExprType::Extension(_) => "extension",
        _ => "expression",
    }
}
