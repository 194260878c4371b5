//! Physical plans of queries that are run again unchanged.
//!
//! Planning a query (SQL to a logical plan, DataFusion's optimizer rules, physical
//! planning and GPU placement) costs milliseconds whatever the data: on the H200 host
//! it was 5.6-7.1 ms of resident TPC-H Q1's 12 ms (docs/benchmarks.md). A dashboard or
//! a benchmark sends the same statement again and again, so [`PlanCache`] keeps the
//! placed physical plan of each query and runs it again through DataFusion's
//! `reset_plan_states`, which gives every operator fresh execution state.
//!
//! A plan is reused only when nothing it was built from has changed: the statement (its
//! parsed form, so spacing and comments do not matter), every setting of the session
//! (DataFusion's and `aether.*`), the registered functions, whether GPU inputs are kept
//! resident, and the identity and contents of every table it reads. Only queries over
//! Aether's in-memory tables are kept, because their contents can be fingerprinted for
//! free (the arrays of every batch, which an insert, delete or update replaces). Not
//! kept either: queries whose result depends on when they are planned (`now()`,
//! `current_date`, any function that is not immutable, placeholders, variables) and
//! plans in which a dynamic filter reached an operator other than the one that
//! updates it. Every statement that is not a query (DDL, DML, `SET`) empties the
//! cache.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use aether_exec::memory_table::CachedStatsMemTable;
use aether_exec::placement::PlacementReport;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;

/// Plans kept; the least recently used is dropped first.
const CAPACITY: usize = 32;

/// What a cached plan was built from; equal keys mean the plan gives the same rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanKey {
    statement: String,
    settings: u64,
    /// Per table read: the provider's address and its contents' fingerprint.
    tables: Vec<(usize, u64)>,
}

/// A placed physical plan ready to run again.
#[derive(Debug, Clone)]
pub struct CachedPlan {
    pub plan: Arc<dyn ExecutionPlan>,
    pub report: Arc<PlacementReport>,
    pub schema: SchemaRef,
}

/// The plans of one context, most recently used first.
#[derive(Debug, Default)]
pub struct PlanCache {
    entries: Mutex<VecDeque<(PlanKey, CachedPlan)>>,
    hits: AtomicU64,
}

impl PlanCache {
    /// The plan cached under `key`, if any.
    pub fn get(&self, key: &PlanKey) -> Option<CachedPlan> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let at = entries.iter().position(|(k, _)| k == key)?;
        let entry = entries.remove(at)?;
        let plan = entry.1.clone();
        entries.push_front(entry);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(plan)
    }

    /// Keeps `plan` under `key`, replacing the plans of the same statement (they were
    /// built from other settings or contents, which are unlikely to come back).
    pub fn insert(&self, key: PlanKey, plan: CachedPlan) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(k, _)| k.statement != key.statement);
        entries.push_front((key, plan));
        entries.truncate(CAPACITY);
    }

    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Queries that ran from a cached plan so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

/// The key of `statement` in `session`, or `None` when its plan must not be reused: it
/// is not a query, or it reads something other than Aether's in-memory tables.
/// `resident` is whether GPU inputs are kept resident (it changes the placed plan).
pub async fn plan_key(
    session: &SessionContext,
    statement: &DFStatement,
    resident: bool,
) -> Option<PlanKey> {
    let DFStatement::Statement(inner) = statement else {
        return None;
    };
    if !matches!(**inner, SqlStatement::Query(_)) {
        return None;
    }
    let state = session.state();
    let references = state.resolve_table_references(statement).ok()?;
    let mut tables = Vec::with_capacity(references.len());
    for reference in references {
        let provider = session.table_provider(reference).await.ok()?;
        let table = provider.as_ref().downcast_ref::<CachedStatsMemTable>()?;
        let address = Arc::as_ptr(&provider) as *const u8 as usize;
        tables.push((address, table.content_fingerprint().await));
    }
    let mut hasher = DefaultHasher::new();
    resident.hash(&mut hasher);
    // `auto` weighs whether string columns' codes are kept; a plan made before they
    // were is made again once they are.
    aether_exec::ops::StringCodeCache::shared()
        .generation()
        .hash(&mut hasher);
    for entry in state.config().options().entries() {
        entry.key.hash(&mut hasher);
        entry.value.hash(&mut hasher);
    }
    // Registered functions, independent of the maps' order: a function registered or
    // replaced under a name changes what the statement means.
    let mut functions = 0u64;
    let mut add = |name: &str, address: usize| {
        let mut hasher = DefaultHasher::new();
        (name, address).hash(&mut hasher);
        functions = functions.wrapping_add(hasher.finish());
    };
    for (name, f) in state.scalar_functions() {
        add(name, Arc::as_ptr(f) as *const u8 as usize);
    }
    for (name, f) in state.aggregate_functions() {
        add(name, Arc::as_ptr(f) as *const u8 as usize);
    }
    for (name, f) in state.window_functions() {
        add(name, Arc::as_ptr(f) as *const u8 as usize);
    }
    functions.hash(&mut hasher);
    Some(PlanKey {
        statement: statement.to_string(),
        settings: hasher.finish(),
        tables,
    })
}

/// Whether `plan` gives the same rows whenever it is planned: every function in it is
/// immutable, and it has no placeholders or variables. (`now()` and `current_date` are
/// folded into constants while planning.)
pub fn is_time_independent(plan: &LogicalPlan) -> bool {
    let mut independent = true;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                independent &= match e {
                    Expr::ScalarFunction(f) => {
                        f.func.signature().volatility == Volatility::Immutable
                    }
                    Expr::Placeholder(_) | Expr::ScalarVariable(..) => false,
                    _ => true,
                };
                Ok(if independent {
                    TreeNodeRecursion::Continue
                } else {
                    TreeNodeRecursion::Stop
                })
            })
        })
    });
    independent
}

/// Whether `plan` can run again after `reset_plan_states`: no dynamic filter reached an
/// operator other than the one that updates it (a sort's top-k, a hash join, an
/// aggregate), whose reset would leave the other holding a filter of the last run.
pub fn is_rerunnable(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut rerunnable = true;
    let _ = plan.apply(|node| {
        let node = node.as_ref();
        let owner = node.downcast_ref::<SortExec>().is_some()
            || node.downcast_ref::<HashJoinExec>().is_some()
            || node.downcast_ref::<AggregateExec>().is_some();
        if !owner {
            let _ = node.apply_expressions(&mut |expr| {
                expr.apply(|e| {
                    if e.as_ref()
                        .downcast_ref::<DynamicFilterPhysicalExpr>()
                        .is_some()
                    {
                        rerunnable = false;
                        return Ok(TreeNodeRecursion::Stop);
                    }
                    Ok(TreeNodeRecursion::Continue)
                })
            });
        }
        Ok(if rerunnable {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    rerunnable
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::catalog::MemTable;

    use super::*;
    use crate::context::AetherContext;

    /// A context with table `t (x BIGINT)` holding 1, 2, 3 as an Aether in-memory
    /// table, and `plain` with the same rows as a plain `MemTable`.
    fn context() -> AetherContext {
        let context = AetherContext::new();
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from(vec![1, 2, 3]))],
        )
        .unwrap();
        let table = |batch: &RecordBatch| {
            MemTable::try_new(Arc::clone(&schema), vec![vec![batch.clone()]]).unwrap()
        };
        let session = context.session();
        session
            .register_table("t", Arc::new(CachedStatsMemTable::new(table(&batch))))
            .unwrap();
        session
            .register_table("plain", Arc::new(table(&batch)))
            .unwrap();
        context
    }

    async fn single_value(context: &AetherContext, sql: &str) -> i64 {
        let output = context.run_script(sql).await.unwrap();
        let column = output.batches[0].column(0);
        let values = column.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(values.len(), 1);
        values.value(0)
    }

    #[tokio::test]
    async fn a_repeated_query_reuses_its_plan_until_the_table_changes() {
        let context = context();
        let query = "select sum(x) from t";
        assert_eq!(single_value(&context, query).await, 6);
        assert_eq!(context.plan_cache_hits(), 0);
        // The same statement, spelled differently.
        assert_eq!(single_value(&context, "SELECT  sum(x)\nFROM t").await, 6);
        assert_eq!(context.plan_cache_hits(), 1);

        // An insert through the context empties the cache.
        context
            .run_script("insert into t values (4)")
            .await
            .unwrap();
        assert_eq!(single_value(&context, query).await, 10);
        assert_eq!(context.plan_cache_hits(), 1);
        assert_eq!(single_value(&context, query).await, 10);
        assert_eq!(context.plan_cache_hits(), 2);

        // One made behind the context's back changes the table's fingerprint.
        let insert = context.session().sql("insert into t values (5)").await;
        insert.unwrap().collect().await.unwrap();
        assert_eq!(single_value(&context, query).await, 15);
        assert_eq!(context.plan_cache_hits(), 2);
    }

    #[tokio::test]
    async fn a_changed_setting_plans_again() {
        let context = context();
        let query = "select count(*) from t where x > 1";
        assert_eq!(single_value(&context, query).await, 2);
        context
            .set("datafusion.execution.batch_size", "1024")
            .unwrap();
        assert_eq!(single_value(&context, query).await, 2);
        assert_eq!(context.plan_cache_hits(), 0);
        assert_eq!(single_value(&context, query).await, 2);
        assert_eq!(context.plan_cache_hits(), 1);
        context
            .set("aether.sql.planCache.enabled", "false")
            .unwrap();
        assert_eq!(single_value(&context, query).await, 2);
        assert_eq!(context.plan_cache_hits(), 1);
    }

    #[tokio::test]
    async fn time_dependent_queries_and_other_tables_are_planned_every_time() {
        let context = context();
        for query in [
            "select count(*) from t where now() is not null",
            "select sum(x) from plain",
            "select count(*) from information_schema.tables where table_name = 't'",
        ] {
            for _ in 0..2 {
                single_value(&context, query).await;
            }
        }
        assert_eq!(context.plan_cache_hits(), 0);
    }
}
