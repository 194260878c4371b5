//! Spark Connect relations and expressions as DataFusion logical plans.
//!
//! [`Translator`] walks a `Relation` tree bottom-up. It keeps, for every relation that
//! carries a `plan_id`, the columns that relation produced, so that a column reference
//! such as `df1["id"]` (an attribute tagged with `df1`'s plan id) resolves to the right
//! side of a join even when both sides have a column of that name.

mod catalog;
mod expression;
mod functions;
mod literal;
mod multiset;
mod naming;
mod pivot;
mod range_function;
mod read;
mod relation;
mod spark_sql;
mod sql_naming;
mod sql_parameters;
mod window;
mod window_naming;

use std::sync::Arc;

use datafusion::common::{Column, DFSchema, TableReference};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};

use crate::error::ConnectResult;
use crate::session::Session;

pub use naming::sql_type_name;
pub use range_function::install_spark_range;

/// Translates the relations of one request.
#[derive(Debug)]
pub struct Translator {
    session: Arc<Session>,
    /// Columns produced by each relation with a plan id, in translation order.
    plan_columns: Vec<(i64, Vec<Column>)>,
    /// Counter for the aliases given to join sides whose names collide.
    aliases: usize,
}

impl Translator {
    pub fn new(session: Arc<Session>) -> Self {
        Self {
            session,
            plan_columns: Vec::new(),
            aliases: 0,
        }
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Records the columns `plan` produces under `plan_id`.
    fn record(&mut self, plan_id: Option<i64>, plan: &LogicalPlan) {
        if let Some(id) = plan_id {
            let columns = plan.schema().columns();
            self.plan_columns.push((id, columns));
        }
    }

    /// The columns of the relation `plan_id` named `name` (case-insensitively).
    fn plan_id_columns(&self, plan_id: i64, name: &str) -> Vec<Column> {
        self.plan_columns
            .iter()
            .rev()
            .filter(|(id, _)| *id == plan_id)
            .flat_map(|(_, columns)| columns.iter())
            .filter(|column| column.name.eq_ignore_ascii_case(name))
            .cloned()
            .collect()
    }

    /// Gives `plan` a fresh qualifier, updating what the relations recorded in
    /// `from..to` (those inside `plan`) produced, so their plan-id references follow.
    fn requalify(
        &mut self,
        plan: LogicalPlan,
        from: usize,
        to: usize,
    ) -> ConnectResult<LogicalPlan> {
        self.aliases += 1;
        let alias = format!("__side{}", self.aliases);
        let names: Vec<String> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        for (_, columns) in &mut self.plan_columns[from..to] {
            for column in columns.iter_mut() {
                if names.contains(&column.name) {
                    column.relation = Some(TableReference::bare(alias.as_str()));
                }
            }
        }
        Ok(LogicalPlanBuilder::from(plan).alias(alias)?.build()?)
    }

    /// A position in the record of plan ids, for [`Self::requalify`].
    fn mark(&self) -> usize {
        self.plan_columns.len()
    }
}

/// Whether two schemas have a column name in common that DataFusion could not tell apart
/// (same qualifier, or either side unqualified).
fn names_collide(left: &DFSchema, right: &DFSchema) -> bool {
    left.iter().any(|(lq, lf)| {
        right
            .iter()
            .any(|(rq, rf)| lf.name() == rf.name() && (lq.is_none() || rq.is_none() || lq == rq))
    })
}
