//! Spark Connect relations as DataFusion logical plans.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::common::{Column, JoinType};
use datafusion::datasource::provider_as_source;
use datafusion::functions::core::expr_fn::coalesce;
use datafusion::logical_expr::expr::Sort;
use datafusion::logical_expr::{Expr, GroupingSet, LogicalPlan, LogicalPlanBuilder};
use futures::future::BoxFuture;

use crate::error::{ConnectError, ConnectResult};
use crate::proto::relation::RelType;
use crate::proto::{self, Relation};
use crate::show::{ShowOptions, html_string, show_string};

use super::Translator;
use super::literal::literal_sql;
use super::multiset::{MultisetOp, multiset_operation};
use super::spark_sql::{SqlRewrite, rewrite_statement, spark_semantics};
use super::sql_naming::spark_column_names;
use super::window::project_with_windows;

impl Translator {
    /// The logical plan of `relation`.
    pub fn relation<'a>(
        &'a mut self,
        relation: &'a Relation,
    ) -> BoxFuture<'a, ConnectResult<LogicalPlan>> {
        Box::pin(async move {
            let plan_id = relation.common.as_ref().and_then(|c| c.plan_id);
            let rel = relation
                .rel_type
                .as_ref()
                .ok_or_else(|| ConnectError::invalid("a relation without a type"))?;
            let plan = self.relation_type(rel).await?;
            self.record(plan_id, &plan);
            Ok(plan)
        })
    }

    /// The input relation of a unary relation.
    async fn input(&mut self, input: Option<&Relation>) -> ConnectResult<LogicalPlan> {
        let input = input.ok_or_else(|| ConnectError::invalid("a relation without its input"))?;
        self.relation(input).await
    }

    async fn relation_type(&mut self, rel: &RelType) -> ConnectResult<LogicalPlan> {
        match rel {
            RelType::Read(read) => self.read(read).await,
            RelType::Sql(sql) => self.sql(sql).await,
            RelType::LocalRelation(local) => self.local_relation(local),
            RelType::Range(range) => self.range(range).await,
            RelType::Project(project) => {
                let input = match project.input.as_deref() {
                    Some(input) => self.relation(input).await?,
                    // `spark.sql`-less `select(lit(1))`: one row, no columns.
                    None => LogicalPlanBuilder::empty(true).build()?,
                };
                let exprs = self.projection(&project.expressions, input.schema())?;
                let aggregates =
                    datafusion::logical_expr::utils::find_aggregate_exprs(exprs.iter());
                if aggregates.is_empty() {
                    return project_with_windows(input, exprs);
                }
                // `df.select(F.sum("x"))` is a global aggregate, as in Spark.
                let plan = LogicalPlanBuilder::from(input)
                    .aggregate(Vec::<Expr>::new(), aggregates.clone())?
                    .build()?;
                let projection = exprs
                    .into_iter()
                    .map(|e| rebase_on_columns(e, &aggregates))
                    .collect::<ConnectResult<Vec<_>>>()?;
                Ok(LogicalPlanBuilder::from(plan)
                    .project(projection)?
                    .build()?)
            }
            RelType::Filter(filter) => {
                let input = self.input(filter.input.as_deref()).await?;
                let condition = filter
                    .condition
                    .as_ref()
                    .ok_or_else(|| ConnectError::invalid("a filter without a condition"))?;
                match self.expr(condition, input.schema()) {
                    Ok(predicate) => {
                        Ok(LogicalPlanBuilder::from(input).filter(predicate)?.build()?)
                    }
                    // `df.select("a").where("b > 1")`: Spark resolves `b` below the
                    // projection, so the filter runs there.
                    Err(error) => match &input {
                        LogicalPlan::Projection(projection) => {
                            let predicate = self
                                .expr(condition, projection.input.schema())
                                .map_err(|_| error)?;
                            let filtered =
                                LogicalPlanBuilder::from(projection.input.as_ref().clone())
                                    .filter(predicate)?
                                    .build()?;
                            Ok(LogicalPlanBuilder::from(filtered)
                                .project(projection.expr.clone())?
                                .build()?)
                        }
                        _ => Err(error),
                    },
                }
            }
            RelType::WithColumns(with) => {
                let input = self.input(with.input.as_deref()).await?;
                self.with_columns(input, &with.aliases)
            }
            RelType::WithColumnsRenamed(renamed) => {
                let input = self.input(renamed.input.as_deref()).await?;
                let mut renames: Vec<(String, String)> = renamed
                    .rename_columns_map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                renames.extend(
                    renamed
                        .renames
                        .iter()
                        .map(|r| (r.col_name.clone(), r.new_col_name.clone())),
                );
                rename_columns(input, &renames)
            }
            RelType::Drop(drop) => {
                let input = self.input(drop.input.as_deref()).await?;
                self.drop_columns(input, drop)
            }
            RelType::ToDf(to_df) => {
                let input = self.input(to_df.input.as_deref()).await?;
                let width = input.schema().fields().len();
                if to_df.column_names.len() != width {
                    return Err(ConnectError::analysis(
                        "INVALID_COLUMN_NAME_AS_PATH",
                        format!(
                            "The number of columns doesn't match. Old column names ({width}): \
                             {}; new column names ({}): {}",
                            column_names(&input).join(", "),
                            to_df.column_names.len(),
                            to_df.column_names.join(", ")
                        ),
                    ));
                }
                let exprs: Vec<Expr> = input
                    .schema()
                    .columns()
                    .into_iter()
                    .zip(&to_df.column_names)
                    .map(|(column, name)| Expr::Column(column).alias(name))
                    .collect();
                Ok(LogicalPlanBuilder::from(input).project(exprs)?.build()?)
            }
            RelType::SubqueryAlias(alias) => {
                let input = self.input(alias.input.as_deref()).await?;
                Ok(LogicalPlanBuilder::from(input)
                    .alias(alias.alias.as_str())?
                    .build()?)
            }
            RelType::Limit(limit) => {
                let input = self.input(limit.input.as_deref()).await?;
                let fetch = usize::try_from(limit.limit)
                    .map_err(|_| ConnectError::invalid("a negative limit"))?;
                Ok(LogicalPlanBuilder::from(input)
                    .limit(0, Some(fetch))?
                    .build()?)
            }
            RelType::Offset(offset) => {
                let input = self.input(offset.input.as_deref()).await?;
                let skip = usize::try_from(offset.offset)
                    .map_err(|_| ConnectError::invalid("a negative offset"))?;
                Ok(LogicalPlanBuilder::from(input).limit(skip, None)?.build()?)
            }
            RelType::Tail(tail) => {
                let input = self.input(tail.input.as_deref()).await?;
                let count = usize::try_from(tail.limit)
                    .map_err(|_| ConnectError::invalid("a negative tail count"))?;
                self.tail(input, count).await
            }
            RelType::Sort(sort) => {
                let input = self.input(sort.input.as_deref()).await?;
                let exprs = sort
                    .order
                    .iter()
                    .map(|order| self.sort_with_hidden(order, &input))
                    .collect::<ConnectResult<Vec<Sort>>>()?;
                Ok(LogicalPlanBuilder::from(input).sort(exprs)?.build()?)
            }
            RelType::Deduplicate(dedup) => {
                let input = self.input(dedup.input.as_deref()).await?;
                self.deduplicate(input, dedup)
            }
            RelType::Aggregate(aggregate) => {
                let input = self.input(aggregate.input.as_deref()).await?;
                if aggregate.group_type == proto::aggregate::GroupType::Pivot as i32 {
                    return self.pivot(input, aggregate).await;
                }
                self.aggregate(input, aggregate)
            }
            RelType::Join(join) => self.join(join).await,
            RelType::SetOp(set_op) => self.set_operation(set_op).await,
            RelType::ShowString(show) => {
                let input = self.input(show.input.as_deref()).await?;
                let options = self.show_options(show.num_rows, show.truncate, show.vertical);
                self.show(input, options, "show_string", show_string).await
            }
            RelType::HtmlString(html) => {
                let input = self.input(html.input.as_deref()).await?;
                let options = self.show_options(html.num_rows, html.truncate, false);
                self.show(input, options, "html_string", html_string).await
            }
            // Partitioning and hints do not change results; DataFusion partitions itself.
            RelType::Repartition(repartition) => self.input(repartition.input.as_deref()).await,
            RelType::RepartitionByExpression(repartition) => {
                self.input(repartition.input.as_deref()).await
            }
            RelType::Hint(hint) => self.input(hint.input.as_deref()).await,
            RelType::Catalog(catalog) => self.catalog(catalog).await,
            other => Err(ConnectError::unsupported(format!(
                "the relation '{}'",
                relation_name(other)
            ))),
        }
    }

    async fn sql(&mut self, sql: &proto::Sql) -> ConnectResult<LogicalPlan> {
        let text = substitute_parameters(sql)?;
        match rewrite_statement(&text) {
            SqlRewrite::ShowConfig(key) => {
                let value = crate::config::get(self.session(), &key)
                    .unwrap_or_else(|| "<undefined>".to_string());
                string_row(&[("key", key), ("value", value)])
            }
            SqlRewrite::Cache {
                table,
                cached,
                if_exists,
            } => {
                self.cache_table(&table, cached, if_exists)?;
                Ok(LogicalPlanBuilder::empty(false).build()?)
            }
            SqlRewrite::Plan(rewritten) => {
                let plan = spark_semantics(self.session().engine.sql_plan(&rewritten).await?)?;
                // Names come from the statement as written, before any rewrite.
                match spark_column_names(&text) {
                    Some(names) => rename_outputs(plan, &names),
                    None => Ok(plan),
                }
            }
        }
    }

    fn local_relation(&mut self, local: &proto::LocalRelation) -> ConnectResult<LogicalPlan> {
        let declared = local
            .schema
            .as_deref()
            .map(crate::types::parse_schema)
            .transpose()?;
        let (schema, batches) = match &local.data {
            Some(data) => {
                let (schema, batches) = crate::arrow_ipc::decode(data)?;
                match &declared {
                    Some(declared) => {
                        let target = Arc::new(conform_schema(&schema, declared)?);
                        let batches = batches
                            .iter()
                            .map(|b| crate::arrow_ipc::cast_batch(b, &target))
                            .collect::<ConnectResult<Vec<_>>>()?;
                        (target, batches)
                    }
                    None => (schema, batches),
                }
            }
            None => (Arc::new(declared.unwrap_or_else(Schema::empty)), Vec::new()),
        };
        let table = MemTable::try_new(Arc::clone(&schema), vec![batches])?;
        unqualified_scan("local_relation", Arc::new(table))
    }

    async fn range(&mut self, range: &proto::Range) -> ConnectResult<LogicalPlan> {
        let start = range.start.unwrap_or(0);
        if range.step == 0 {
            return Err(ConnectError::invalid("the step of a range must not be 0"));
        }
        let sql = format!(
            "SELECT id AS id FROM range({start}, {}, {})",
            range.end, range.step
        );
        Ok(self.session().engine.sql_plan(&sql).await?)
    }

    fn with_columns(
        &self,
        input: LogicalPlan,
        aliases: &[proto::expression::Alias],
    ) -> ConnectResult<LogicalPlan> {
        let schema = Arc::clone(input.schema());
        let mut exprs: Vec<(String, Expr)> = schema
            .iter()
            .map(|(q, f)| {
                (
                    f.name().clone(),
                    Expr::Column(Column::new(q.cloned(), f.name())),
                )
            })
            .collect();
        for alias in aliases {
            let name = alias
                .name
                .first()
                .ok_or_else(|| ConnectError::invalid("withColumns without a column name"))?;
            let value = alias
                .expr
                .as_deref()
                .ok_or_else(|| ConnectError::invalid("withColumns without an expression"))?;
            let expr = self.expr(value, &schema)?.alias(name);
            match exprs
                .iter_mut()
                .find(|(existing, _)| existing.eq_ignore_ascii_case(name))
            {
                Some(slot) => *slot = (name.clone(), expr),
                None => exprs.push((name.clone(), expr)),
            }
        }
        project_with_windows(input, exprs.into_iter().map(|(_, e)| e).collect())
    }

    fn drop_columns(&self, input: LogicalPlan, drop: &proto::Drop) -> ConnectResult<LogicalPlan> {
        let schema = Arc::clone(input.schema());
        let mut dropped: Vec<Column> = Vec::new();
        for expression in &drop.columns {
            // Dropping a column that does not exist is not an error in Spark.
            if let Ok(Expr::Column(column)) = self.expr(expression, &schema) {
                dropped.push(column);
            }
        }
        let keep: Vec<Expr> = schema
            .iter()
            .filter(|(q, f)| {
                !drop
                    .column_names
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(f.name()))
                    && !dropped
                        .iter()
                        .any(|c| c.name == *f.name() && c.relation.as_ref() == *q)
            })
            .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
            .collect();
        Ok(LogicalPlanBuilder::from(input).project(keep)?.build()?)
    }

    fn deduplicate(
        &self,
        input: LogicalPlan,
        dedup: &proto::Deduplicate,
    ) -> ConnectResult<LogicalPlan> {
        if dedup.all_columns_as_keys.unwrap_or(false) || dedup.column_names.is_empty() {
            return Ok(LogicalPlanBuilder::from(input).distinct()?.build()?);
        }
        let schema = Arc::clone(input.schema());
        let mut keys = Vec::new();
        for name in &dedup.column_names {
            let expression = attribute_expression(name);
            keys.push(self.expr(&expression, &schema)?);
        }
        let all: Vec<Expr> = schema.columns().into_iter().map(Expr::Column).collect();
        let plan = LogicalPlanBuilder::from(input)
            .distinct_on(keys, all, None)?
            .build()?;
        Ok(plan)
    }

    fn aggregate(
        &self,
        input: LogicalPlan,
        aggregate: &proto::Aggregate,
    ) -> ConnectResult<LogicalPlan> {
        use proto::aggregate::GroupType;
        let schema = Arc::clone(input.schema());
        let group_exprs = aggregate
            .grouping_expressions
            .iter()
            .map(|e| self.named_expr(e, &schema))
            .collect::<ConnectResult<Vec<_>>>()?;
        let grouping = match GroupType::try_from(aggregate.group_type) {
            Ok(GroupType::Groupby | GroupType::Unspecified) => group_exprs.clone(),
            Ok(GroupType::Rollup) => {
                vec![Expr::GroupingSet(GroupingSet::Rollup(group_exprs.clone()))]
            }
            Ok(GroupType::Cube) => vec![Expr::GroupingSet(GroupingSet::Cube(group_exprs.clone()))],
            Ok(GroupType::GroupingSets) => {
                let sets = aggregate
                    .grouping_sets
                    .iter()
                    .map(|set| {
                        set.grouping_set
                            .iter()
                            .map(|e| self.named_expr(e, &schema))
                            .collect::<ConnectResult<Vec<_>>>()
                    })
                    .collect::<ConnectResult<Vec<_>>>()?;
                vec![Expr::GroupingSet(GroupingSet::GroupingSets(sets))]
            }
            Ok(GroupType::Pivot) | Err(_) => {
                return Err(ConnectError::unsupported("pivot"));
            }
        };
        let outputs = aggregate
            .aggregate_expressions
            .iter()
            .map(|e| self.named_expr(e, &schema))
            .collect::<ConnectResult<Vec<_>>>()?;
        aggregate_and_project(input, grouping, group_exprs.len(), outputs)
    }

    async fn join(&mut self, join: &proto::Join) -> ConnectResult<LogicalPlan> {
        use proto::join::JoinType as SparkJoin;
        let mark = self.mark();
        let mut left = self.input(join.left.as_deref()).await?;
        let right_mark = self.mark();
        let mut right = self.input(join.right.as_deref()).await?;
        if super::names_collide(left.schema(), right.schema()) {
            let after = self.mark();
            right = self.requalify(right, right_mark, after)?;
            left = self.requalify(left, mark, right_mark)?;
        }
        let join_type = match SparkJoin::try_from(join.join_type) {
            Ok(SparkJoin::Inner | SparkJoin::Unspecified) => JoinType::Inner,
            Ok(SparkJoin::FullOuter) => JoinType::Full,
            Ok(SparkJoin::LeftOuter) => JoinType::Left,
            Ok(SparkJoin::RightOuter) => JoinType::Right,
            Ok(SparkJoin::LeftAnti) => JoinType::LeftAnti,
            Ok(SparkJoin::LeftSemi) => JoinType::LeftSemi,
            Ok(SparkJoin::Cross) => {
                if join.join_condition.is_none() && join.using_columns.is_empty() {
                    return Ok(LogicalPlanBuilder::from(left).cross_join(right)?.build()?);
                }
                JoinType::Inner
            }
            Err(_) => return Err(ConnectError::invalid("an unknown join type")),
        };
        if !join.using_columns.is_empty() {
            return using_join(left, right, join_type, &join.using_columns);
        }
        let builder = LogicalPlanBuilder::from(left);
        match &join.join_condition {
            Some(condition) => {
                let schema = builder.schema().join(right.schema())?;
                let predicate = self.expr(condition, &schema)?;
                Ok(builder.join_on(right, join_type, [predicate])?.build()?)
            }
            None if join_type == JoinType::Inner => Ok(builder.cross_join(right)?.build()?),
            None => Ok(builder
                .join_on(right, join_type, [datafusion::logical_expr::lit(true)])?
                .build()?),
        }
    }

    async fn set_operation(&mut self, op: &proto::SetOperation) -> ConnectResult<LogicalPlan> {
        use proto::set_operation::SetOpType;
        let left = self.input(op.left_input.as_deref()).await?;
        let right = self.input(op.right_input.as_deref()).await?;
        let all = op.is_all.unwrap_or(false);
        let builder = LogicalPlanBuilder::from(left);
        let plan = match SetOpType::try_from(op.set_op_type) {
            Ok(SetOpType::Union) if op.by_name.unwrap_or(false) => {
                if !op.allow_missing_columns.unwrap_or(false) {
                    check_same_names(builder.schema(), right.schema())?;
                }
                let plan = builder.union_by_name(right)?;
                if all { plan } else { plan.distinct()? }
            }
            Ok(SetOpType::Union) => {
                check_same_width(builder.schema(), right.schema(), "UNION")?;
                let plan = builder.union(right)?;
                if all { plan } else { plan.distinct()? }
            }
            Ok(SetOpType::Intersect) => {
                check_same_width(builder.schema(), right.schema(), "INTERSECT")?;
                if all {
                    return multiset_operation(builder.build()?, right, MultisetOp::IntersectAll);
                }
                LogicalPlanBuilder::intersect(builder.build()?, right, false)?.into()
            }
            Ok(SetOpType::Except) => {
                check_same_width(builder.schema(), right.schema(), "EXCEPT")?;
                if all {
                    return multiset_operation(builder.build()?, right, MultisetOp::ExceptAll);
                }
                LogicalPlanBuilder::except(builder.build()?, right, false)?.into()
            }
            _ => return Err(ConnectError::invalid("an unknown set operation")),
        };
        Ok(plan.build()?)
    }

    /// A sort key over `input`, or, as Spark allows, over the input of `input`'s
    /// projection (`df.select("a").orderBy("b")`); DataFusion then carries the column
    /// through the sort and drops it after.
    fn sort_with_hidden(
        &self,
        order: &proto::expression::SortOrder,
        input: &LogicalPlan,
    ) -> ConnectResult<Sort> {
        match self.sort(order, input.schema()) {
            Ok(sort) => Ok(sort),
            Err(error) => match input {
                LogicalPlan::Projection(projection) => self
                    .sort(order, projection.input.schema())
                    .map_err(|_| error),
                _ => Err(error),
            },
        }
    }

    fn show_options(&self, num_rows: i32, truncate: i32, vertical: bool) -> ShowOptions {
        ShowOptions {
            num_rows: usize::try_from(num_rows).unwrap_or(0),
            truncate: usize::try_from(truncate).unwrap_or(0),
            vertical,
            time_zone: crate::config::time_zone(self.session()),
        }
    }

    async fn show(
        &mut self,
        input: LogicalPlan,
        options: ShowOptions,
        column: &str,
        format: fn(
            &Schema,
            &[RecordBatch],
            &ShowOptions,
        ) -> Result<String, arrow::error::ArrowError>,
    ) -> ConnectResult<LogicalPlan> {
        let limited = LogicalPlanBuilder::from(input)
            .limit(0, Some(options.num_rows.saturating_add(1)))?
            .build()?;
        let (schema, batches) = self.collect(limited).await?;
        let text = format(&schema, &batches, &options)?;
        one_string(column, text)
    }

    async fn tail(&mut self, input: LogicalPlan, count: usize) -> ConnectResult<LogicalPlan> {
        let (schema, batches) = self.collect(input).await?;
        let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let mut skip = total.saturating_sub(count);
        let mut kept = Vec::new();
        for batch in batches {
            if skip >= batch.num_rows() {
                skip -= batch.num_rows();
                continue;
            }
            kept.push(batch.slice(skip, batch.num_rows() - skip));
            skip = 0;
        }
        let table = MemTable::try_new(Arc::new(schema), vec![kept])?;
        unqualified_scan("tail", Arc::new(table))
    }

    /// Runs `plan` to completion.
    pub async fn collect(&self, plan: LogicalPlan) -> ConnectResult<(Schema, Vec<RecordBatch>)> {
        let schema = plan.schema().as_arrow().clone();
        let engine = &self.session().engine;
        let (physical, _) = engine.physical_plan(plan).await?;
        let batches =
            datafusion::physical_plan::collect(physical, engine.context().task_ctx()).await?;
        Ok((schema, batches))
    }
}

/// An attribute expression for a column name given as text.
pub fn attribute_expression(name: &str) -> proto::Expression {
    proto::Expression {
        common: None,
        expr_type: Some(proto::expression::ExprType::UnresolvedAttribute(
            proto::expression::UnresolvedAttribute {
                unparsed_identifier: name.to_string(),
                plan_id: None,
                is_metadata_column: None,
            },
        )),
    }
}

/// A one-row, one-column plan holding `text`.
fn one_string(column: &str, text: String) -> ConnectResult<LogicalPlan> {
    string_row(&[(column, text)])
}

/// `plan` with its output columns renamed where `names` gives a new name; unchanged
/// when the count differs or the new names would collide.
fn rename_outputs(plan: LogicalPlan, names: &[Option<String>]) -> ConnectResult<LogicalPlan> {
    let schema = Arc::clone(plan.schema());
    if names.len() != schema.fields().len() {
        return Ok(plan);
    }
    let finals: Vec<&str> = schema
        .iter()
        .zip(names)
        .map(|((_, field), name)| name.as_deref().unwrap_or(field.name()))
        .collect();
    let distinct: std::collections::HashSet<&str> = finals.iter().copied().collect();
    let renamed = schema
        .iter()
        .zip(&finals)
        .any(|((_, field), name)| field.name() != name);
    if !renamed || distinct.len() != finals.len() {
        return Ok(plan);
    }
    let exprs: Vec<Expr> = schema
        .iter()
        .zip(finals)
        .map(|((qualifier, field), name)| {
            let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
            if field.name() == name {
                column
            } else {
                column.alias(name)
            }
        })
        .collect();
    Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
}

/// One row of non-null strings, one column per `(name, value)`.
fn string_row(columns: &[(&str, String)]) -> ConnectResult<LogicalPlan> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, _)| Field::new(*name, DataType::Utf8, false))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let arrays = columns
        .iter()
        .map(|(_, value)| Arc::new(StringArray::from(vec![value.as_str()])) as _)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)?;
    let table = MemTable::try_new(schema, vec![vec![batch]])?;
    unqualified_scan(columns[0].0, Arc::new(table))
}

/// A scan of `table` whose columns carry no qualifier, as Spark's anonymous relations.
pub fn unqualified_scan(
    name: &str,
    table: Arc<dyn datafusion::catalog::TableProvider>,
) -> ConnectResult<LogicalPlan> {
    unqualify(LogicalPlanBuilder::scan(name, provider_as_source(table), None)?.build()?)
}

/// `plan` with its columns' qualifiers removed.
pub(super) fn unqualify(plan: LogicalPlan) -> ConnectResult<LogicalPlan> {
    let exprs: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .map(|c| {
            let name = c.name.clone();
            Expr::Column(c).alias(name)
        })
        .collect();
    Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
}

/// `declared`'s names and nullability over the data's columns, by position.
fn conform_schema(data: &Schema, declared: &Schema) -> ConnectResult<Schema> {
    if data.fields().len() != declared.fields().len() {
        return Err(ConnectError::invalid(format!(
            "the data has {} columns but the schema {}",
            data.fields().len(),
            declared.fields().len()
        )));
    }
    Ok(Schema::new(
        declared
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect::<Vec<_>>(),
    ))
}

fn column_names(plan: &LogicalPlan) -> Vec<String> {
    plan.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

fn rename_columns(input: LogicalPlan, renames: &[(String, String)]) -> ConnectResult<LogicalPlan> {
    let exprs: Vec<Expr> = input
        .schema()
        .iter()
        .map(|(q, f)| {
            let column = Expr::Column(Column::new(q.cloned(), f.name()));
            match renames
                .iter()
                .find(|(from, _)| from.eq_ignore_ascii_case(f.name()))
            {
                Some((_, to)) => column.alias(to),
                None => column,
            }
        })
        .collect();
    Ok(LogicalPlanBuilder::from(input).project(exprs)?.build()?)
}

/// A join on equal `using` columns, which appear once in the output (first), as in Spark.
fn using_join(
    left: LogicalPlan,
    right: LogicalPlan,
    join_type: JoinType,
    using: &[String],
) -> ConnectResult<LogicalPlan> {
    let find = |plan: &LogicalPlan, name: &str| -> ConnectResult<Column> {
        plan.schema()
            .columns()
            .into_iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                ConnectError::analysis(
                    "UNRESOLVED_USING_COLUMN_FOR_JOIN",
                    format!(
                        "[UNRESOLVED_USING_COLUMN_FOR_JOIN] USING column `{name}` cannot be \
                         resolved on the side of the join. Columns: [{}]",
                        column_names(plan).join(", ")
                    ),
                )
            })
    };
    let mut left_keys = Vec::new();
    let mut right_keys = Vec::new();
    for name in using {
        left_keys.push(find(&left, name)?);
        right_keys.push(find(&right, name)?);
    }
    let left_columns = left.schema().columns();
    let right_columns = right.schema().columns();
    let joined = LogicalPlanBuilder::from(left)
        .join(
            right,
            join_type,
            (left_keys.clone(), right_keys.clone()),
            None,
        )?
        .build()?;
    let mut exprs: Vec<Expr> = Vec::new();
    for (l, r) in left_keys.iter().zip(&right_keys) {
        let key = match join_type {
            JoinType::Right => Expr::Column(r.clone()),
            JoinType::Full => coalesce(vec![Expr::Column(l.clone()), Expr::Column(r.clone())]),
            _ => Expr::Column(l.clone()),
        };
        exprs.push(key.alias(l.name.clone()));
    }
    exprs.extend(
        left_columns
            .into_iter()
            .filter(|c| !left_keys.contains(c))
            .map(Expr::Column),
    );
    if !matches!(join_type, JoinType::LeftSemi | JoinType::LeftAnti) {
        exprs.extend(
            right_columns
                .into_iter()
                .filter(|c| !right_keys.contains(c))
                .map(Expr::Column),
        );
    }
    Ok(LogicalPlanBuilder::from(joined).project(exprs)?.build()?)
}

fn check_same_width(
    left: &datafusion::common::DFSchema,
    right: &datafusion::common::DFSchema,
    operation: &str,
) -> ConnectResult<()> {
    if left.fields().len() == right.fields().len() {
        return Ok(());
    }
    Err(ConnectError::analysis(
        "NUM_COLUMNS_MISMATCH",
        format!(
            "[NUM_COLUMNS_MISMATCH] {operation} can only be performed on inputs with the same \
             number of columns, but the first input has {} columns and the second input has {} \
             columns.",
            left.fields().len(),
            right.fields().len()
        ),
    ))
}

fn check_same_names(
    left: &datafusion::common::DFSchema,
    right: &datafusion::common::DFSchema,
) -> ConnectResult<()> {
    for (_, field) in right.iter() {
        if !left
            .iter()
            .any(|(_, f)| f.name().eq_ignore_ascii_case(field.name()))
        {
            return Err(ConnectError::analysis(
                "NUM_COLUMNS_MISMATCH",
                format!(
                    "[UNRESOLVED_COLUMN] Cannot resolve column name \"{}\" among ({})",
                    field.name(),
                    left.fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    check_same_width(left, right, "UNION")
}

/// `input` aggregated by `grouping`, computing the aggregate calls inside `outputs`;
/// the result has one column per grouping expression (`group_count` of them), then one
/// per output. Outputs that are more than one aggregate call (`sum(x) + 1`) are computed
/// over the aggregate's columns.
pub(super) fn aggregate_and_project(
    input: LogicalPlan,
    grouping: Vec<Expr>,
    group_count: usize,
    outputs: Vec<Expr>,
) -> ConnectResult<LogicalPlan> {
    let aggregates = datafusion::logical_expr::utils::find_aggregate_exprs(outputs.iter());
    let plan = LogicalPlanBuilder::from(input)
        .aggregate(grouping, aggregates.clone())?
        .build()?;
    // The aggregate's output starts with one column per grouping expression (grouping
    // sets add their internal id after those).
    let mut projection: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .take(group_count)
        .map(Expr::Column)
        .collect();
    for output in outputs {
        projection.push(rebase_on_columns(output, &aggregates)?);
    }
    Ok(LogicalPlanBuilder::from(plan)
        .project(projection)?
        .build()?)
}

/// Replaces the calls inside `expr` that a node below computed (aggregates, window
/// functions) with that node's output columns.
pub(super) fn rebase_on_columns(expr: Expr, computed: &[Expr]) -> ConnectResult<Expr> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    let (name, inner) = match expr {
        Expr::Alias(alias) => (Some(alias.name), *alias.expr),
        other => (None, other),
    };
    let rebased = inner
        .transform_down(|e| {
            if computed.contains(&e) {
                let column = Expr::Column(Column::from_name(e.schema_name().to_string()));
                Ok(Transformed::yes(column))
            } else {
                Ok(Transformed::no(e))
            }
        })?
        .data;
    Ok(match name {
        Some(name) => rebased.alias(name),
        None => rebased,
    })
}

/// `sql` with its positional (`?`) and named (`:name`) parameters replaced by literals.
fn substitute_parameters(sql: &proto::Sql) -> ConnectResult<String> {
    let mut positional: Vec<String> = sql
        .pos_args
        .iter()
        .map(literal_sql)
        .collect::<ConnectResult<_>>()?;
    for argument in &sql.pos_arguments {
        positional.push(expression_sql(argument)?);
    }
    let mut named: Vec<(String, String)> = sql
        .args
        .iter()
        .map(|(k, v)| Ok((k.clone(), literal_sql(v)?)))
        .collect::<ConnectResult<_>>()?;
    for (key, value) in &sql.named_arguments {
        named.push((key.clone(), expression_sql(value)?));
    }
    if positional.is_empty() && named.is_empty() {
        return Ok(sql.query.clone());
    }
    super::sql_parameters::substitute(&sql.query, &positional, &named)
}

/// The SQL text of a parameter given as an expression (a literal).
fn expression_sql(expression: &proto::Expression) -> ConnectResult<String> {
    match &expression.expr_type {
        Some(proto::expression::ExprType::Literal(literal)) => literal_sql(literal),
        _ => Err(ConnectError::unsupported(
            "SQL parameters that are not literals",
        )),
    }
}

/// The name of a relation type Aether does not translate, as Spark's protocol calls it.
fn relation_name(rel: &RelType) -> &'static str {
    match rel {
        RelType::Sample(_) => "sample",
        RelType::Unpivot(_) => "unpivot",
        RelType::ToSchema(_) => "to_schema",
        RelType::MapPartitions(_) => "map_partitions",
        RelType::CollectMetrics(_) => "collect_metrics",
        RelType::Parse(_) => "parse",
        RelType::GroupMap(_) => "group_map",
        RelType::CoGroupMap(_) => "co_group_map",
        RelType::WithWatermark(_) => "with_watermark",
        RelType::ApplyInPandasWithState(_) => "apply_in_pandas_with_state",
        RelType::CachedLocalRelation(_) => "cached_local_relation",
        RelType::CachedRemoteRelation(_) => "cached_remote_relation",
        RelType::CommonInlineUserDefinedTableFunction(_) => {
            "common_inline_user_defined_table_function"
        }
        RelType::AsOfJoin(_) => "as_of_join",
        RelType::CommonInlineUserDefinedDataSource(_) => "common_inline_user_defined_data_source",
        RelType::WithRelations(_) => "with_relations",
        RelType::Transpose(_) => "transpose",
        RelType::UnresolvedTableValuedFunction(_) => "unresolved_table_valued_function",
        RelType::LateralJoin(_) => "lateral_join",
        RelType::ChunkedCachedLocalRelation(_) => "chunked_cached_local_relation",
        RelType::RelationChanges(_) => "relation_changes",
        RelType::NearestByJoin(_) => "nearest_by_join",
        RelType::FillNa(_) => "fill_na",
        RelType::DropNa(_) => "drop_na",
        RelType::Replace(_) => "replace",
        RelType::Summary(_) => "summary",
        RelType::Crosstab(_) => "crosstab",
        RelType::Describe(_) => "describe",
        RelType::Cov(_) => "cov",
        RelType::Corr(_) => "corr",
        RelType::ApproxQuantile(_) => "approx_quantile",
        RelType::FreqItems(_) => "freq_items",
        RelType::SampleBy(_) => "sample_by",
        RelType::MlRelation(_) => "ml_relation",
        RelType::Extension(_) => "extension",
        RelType::Unknown(_) => "unknown",
        _ => "relation",
    }
}
