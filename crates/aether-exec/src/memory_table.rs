//! In-memory tables whose scans answer statistics without visiting every batch.
//!
//! DataFusion's `MemorySourceConfig` computes a scan's statistics (rows, bytes, null
//! counts) by visiting every batch each time a plan node asks, and while one query is
//! planned its filters, projections and optimizer rules ask many times: with TPC-H's
//! lineitem at SF10 in 915 batches that was about 4 ms of Q1's planning on a 2-core
//! build machine (docs/benchmarks.md). [`CachedStatsMemTable`] wraps DataFusion's
//! `MemTable`; its scans are
//! `DataSourceExec`s over a [`CachedStatsMemorySource`], which delegates everything to
//! the `MemorySourceConfig` inside except statistics. Those come from per-batch figures
//! kept in a cache the table's scans share, keyed by the identity of the batch's arrays
//! (Arrow arrays are immutable, and an insert, delete or update makes new ones), so a
//! batch is visited once however many times statistics are asked for. The answers are
//! exactly DataFusion's.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, Constraints, Result, Statistics};
use datafusion::config::ConfigOptions;
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::{DataSource, DataSourceExec};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::SchedulingType;
use datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};

/// The in-memory batches `plan` scans, when it is a scan of an in-memory table (a
/// [`CachedStatsMemTable`]'s or a plain `MemTable`'s).
pub fn memory_source(plan: &dyn ExecutionPlan) -> Option<&MemorySourceConfig> {
    let source = plan.downcast_ref::<DataSourceExec>()?.data_source();
    match source.downcast_ref::<CachedStatsMemorySource>() {
        Some(cached) => Some(&cached.inner),
        None => source.downcast_ref::<MemorySourceConfig>(),
    }
}

/// DataFusion's `MemTable` with scans whose statistics are cached per batch.
#[derive(Debug)]
pub struct CachedStatsMemTable {
    inner: MemTable,
    cache: Arc<BatchStatsCache>,
}

impl CachedStatsMemTable {
    pub fn new(inner: MemTable) -> Self {
        Self {
            inner,
            cache: Arc::default(),
        }
    }

    /// A fingerprint of the table's contents: the length and the arrays of every batch
    /// of every partition. Arrow arrays are immutable and every insert, delete or
    /// update adds or replaces batches, so equal fingerprints mean the same rows for as
    /// long as the arrays fingerprinted are kept alive (their addresses are not reused
    /// while something holds them, as a plan over them does).
    pub async fn content_fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        for partition in &self.inner.batches {
            let batches = partition.read().await;
            batches.len().hash(&mut hasher);
            for batch in batches.iter() {
                batch.num_rows().hash(&mut hasher);
                for column in batch.columns() {
                    (Arc::as_ptr(column) as *const u8 as usize).hash(&mut hasher);
                }
            }
        }
        hasher.finish()
    }
}

#[async_trait]
impl TableProvider for CachedStatsMemTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.inner.get_column_default(column)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = self.inner.scan(state, projection, filters, limit).await?;
        let Some(scan) = plan.downcast_ref::<DataSourceExec>() else {
            return Ok(plan);
        };
        match wrap(Arc::clone(scan.data_source()), &self.cache) {
            Some(source) => Ok(Arc::new(DataSourceExec::new(source))),
            None => Ok(plan),
        }
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.insert_into(state, input, insert_op).await
    }

    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.delete_from(state, filters).await
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.update(state, assignments, filters).await
    }
}

/// `source` as a [`CachedStatsMemorySource`] sharing `cache`, when it is a
/// `MemorySourceConfig`.
fn wrap(source: Arc<dyn DataSource>, cache: &Arc<BatchStatsCache>) -> Option<Arc<dyn DataSource>> {
    let any: Arc<dyn Any + Send + Sync> = source;
    let inner = any.downcast::<MemorySourceConfig>().ok()?;
    Some(Arc::new(CachedStatsMemorySource {
        inner,
        cache: Arc::clone(cache),
    }))
}

/// A `MemorySourceConfig` whose statistics come from its table's [`BatchStatsCache`].
#[derive(Debug, Clone)]
pub struct CachedStatsMemorySource {
    inner: Arc<MemorySourceConfig>,
    cache: Arc<BatchStatsCache>,
}

impl CachedStatsMemorySource {
    /// A source that the inner one turned into (another projection, limit or
    /// partitioning), wrapped again.
    fn rewrap(&self, source: Arc<dyn DataSource>) -> Arc<dyn DataSource> {
        wrap(Arc::clone(&source), &self.cache).unwrap_or(source)
    }
}

impl DataSource for CachedStatsMemorySource {
    fn open(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.inner.open(partition, context)
    }

    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_as(t, f)
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        repartition_file_min_size: usize,
        output_ordering: Option<LexOrdering>,
    ) -> Result<Option<Arc<dyn DataSource>>> {
        Ok(self
            .inner
            .repartitioned(
                target_partitions,
                repartition_file_min_size,
                output_ordering,
            )?
            .map(|source| self.rewrap(source)))
    }

    fn output_partitioning(&self) -> Partitioning {
        self.inner.output_partitioning()
    }

    fn eq_properties(&self) -> EquivalenceProperties {
        self.inner.eq_properties()
    }

    fn scheduling_type(&self) -> SchedulingType {
        self.inner.scheduling_type()
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let partitions = self.inner.partitions();
        let batches = match partition {
            None => partitions,
            Some(p) if p < partitions.len() => &partitions[p..=p],
            // Out of range: DataFusion's own answer.
            Some(_) => return self.inner.partition_statistics(partition),
        };
        let columns = self.inner.original_schema().fields().len();
        let projection: Vec<usize> = match self.inner.projection() {
            Some(projection) => projection.clone(),
            None => (0..columns).collect(),
        };
        Ok(Arc::new(self.cache.statistics(batches, &projection)))
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn DataSource>> {
        self.inner
            .with_fetch(limit)
            .map(|source| self.rewrap(source))
    }

    fn fetch(&self) -> Option<usize> {
        self.inner.fetch()
    }

    fn metrics(&self) -> ExecutionPlanMetricsSet {
        self.inner.metrics()
    }

    fn try_swapping_with_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn DataSource>>> {
        Ok(self
            .inner
            .try_swapping_with_projection(projection)?
            .map(|source| self.rewrap(source)))
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn DataSource>>> {
        let mut pushed = self.inner.try_pushdown_filters(filters, config)?;
        pushed.updated_node = pushed.updated_node.map(|source| self.rewrap(source));
        Ok(pushed)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }
}

/// What DataFusion's statistics need of one batch, for every column of the table.
#[derive(Debug)]
struct BatchFigures {
    /// The batch's arrays, held weakly: while an entry lives no other array can take
    /// the address of one of these, so equal addresses mean the same arrays.
    columns: Vec<Weak<dyn Array>>,
    rows: usize,
    bytes: Vec<usize>,
    nulls: Vec<usize>,
}

impl BatchFigures {
    fn of(batch: &RecordBatch) -> Self {
        let columns = batch.columns();
        Self {
            columns: columns.iter().map(Arc::downgrade).collect(),
            rows: batch.num_rows(),
            bytes: columns.iter().map(|c| c.get_array_memory_size()).collect(),
            nulls: columns
                .iter()
                .map(|c| c.logical_nulls().map(|n| n.null_count()).unwrap_or(0))
                .collect(),
        }
    }

    fn describes(&self, batch: &RecordBatch) -> bool {
        self.columns.len() == batch.num_columns()
            && self
                .columns
                .iter()
                .zip(batch.columns())
                .all(|(kept, column)| std::ptr::addr_eq(kept.as_ptr(), Arc::as_ptr(column)))
    }
}

/// Per-batch figures of one table, keyed by the address of the batch's first array.
#[derive(Default)]
struct BatchStatsCache {
    entries: Mutex<Entries>,
}

/// Plans print their sources with `{:?}`; the cache shows its size, not its entries.
impl fmt::Debug for BatchStatsCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: printing must not wait on (or deadlock against) a computation.
        let batches = self
            .entries
            .try_lock()
            .map(|entries| entries.by_first_array.len())
            .ok();
        f.debug_struct("BatchStatsCache")
            .field("batches", &batches)
            .finish()
    }
}

#[derive(Default)]
struct Entries {
    by_first_array: HashMap<usize, BatchFigures>,
    /// Entries that were live at the last pruning; dead ones are dropped when the map
    /// has grown well past it.
    live_at_last_prune: usize,
}

impl BatchStatsCache {
    /// DataFusion's statistics of `partitions` (batches of the whole table) projected
    /// to `projection` (column indices of the table), as
    /// `datafusion::physical_plan::common::compute_record_batch_statistics` gives them.
    fn statistics(&self, partitions: &[Vec<RecordBatch>], projection: &[usize]) -> Statistics {
        let mut rows = 0;
        let mut bytes = 0;
        let mut nulls = vec![0; projection.len()];
        let mut add = |figures: &BatchFigures| {
            rows += figures.rows;
            for (i, &column) in projection.iter().enumerate() {
                bytes += figures.bytes.get(column).copied().unwrap_or(0);
                nulls[i] += figures.nulls.get(column).copied().unwrap_or(0);
            }
        };
        {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            for batch in partitions.iter().flatten() {
                match batch.columns().first() {
                    Some(first) => add(entries.figures(first, batch)),
                    None => add(&BatchFigures::of(batch)),
                }
            }
            entries.prune();
        }
        Statistics {
            num_rows: Precision::Exact(rows),
            total_byte_size: Precision::Exact(bytes),
            column_statistics: nulls
                .into_iter()
                .map(|null_count| ColumnStatistics {
                    null_count: Precision::Exact(null_count),
                    ..ColumnStatistics::new_unknown()
                })
                .collect(),
        }
    }
}

impl Entries {
    fn figures(&mut self, first: &ArrayRef, batch: &RecordBatch) -> &BatchFigures {
        let key = Arc::as_ptr(first) as *const () as usize;
        let entry = self
            .by_first_array
            .entry(key)
            .or_insert_with(|| BatchFigures::of(batch));
        if !entry.describes(batch) {
            *entry = BatchFigures::of(batch);
        }
        entry
    }

    fn prune(&mut self) {
        if self.by_first_array.len() > 2 * self.live_at_last_prune + 1024 {
            self.by_first_array
                .retain(|_, figures| figures.columns.iter().all(|c| c.strong_count() > 0));
            self.live_at_last_prune = self.by_first_array.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_plan::common::compute_record_batch_statistics;
    use datafusion::prelude::SessionContext;

    fn batch(schema: &SchemaRef, start: i64, rows: i64) -> RecordBatch {
        let numbers =
            Int64Array::from_iter((start..start + rows).map(|v| (v % 3 != 0).then_some(v)));
        let names = StringArray::from_iter(
            (start..start + rows).map(|v| (v % 5 != 0).then(|| format!("n{v}"))),
        );
        RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(numbers), Arc::new(names)]).unwrap()
    }

    fn table() -> (SchemaRef, CachedStatsMemTable) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let partitions = vec![
            vec![batch(&schema, 0, 10), batch(&schema, 10, 7)],
            vec![batch(&schema, 17, 30)],
        ];
        let table = MemTable::try_new(Arc::clone(&schema), partitions).unwrap();
        (schema, CachedStatsMemTable::new(table))
    }

    async fn scan(
        table: &CachedStatsMemTable,
        projection: Option<Vec<usize>>,
    ) -> Arc<dyn ExecutionPlan> {
        let ctx = SessionContext::new();
        table
            .scan(&ctx.state(), projection.as_ref(), &[], None)
            .await
            .unwrap()
    }

    fn expected(plan: &dyn ExecutionPlan, partition: Option<usize>) -> Statistics {
        let memory = memory_source(plan).unwrap();
        let partitions = memory.partitions();
        let batches = match partition {
            Some(p) => &partitions[p..=p],
            None => partitions,
        };
        compute_record_batch_statistics(
            batches,
            &memory.original_schema(),
            memory.projection().clone(),
        )
    }

    #[tokio::test]
    async fn statistics_equal_datafusions_for_every_projection_and_partition() {
        let (_, table) = table();
        for projection in [None, Some(vec![1]), Some(vec![1, 0])] {
            let plan = scan(&table, projection).await;
            let source = plan.downcast_ref::<DataSourceExec>().unwrap().data_source();
            assert!(source.downcast_ref::<CachedStatsMemorySource>().is_some());
            for partition in [None, Some(0), Some(1)] {
                // Twice: computed, then from the cache.
                for _ in 0..2 {
                    let got = source.partition_statistics(partition).unwrap();
                    assert_eq!(*got, expected(plan.as_ref(), partition));
                }
            }
        }
    }

    #[tokio::test]
    async fn new_batches_after_an_insert_are_counted() {
        let (schema, table) = table();
        let ctx = SessionContext::new();
        let before = scan(&table, None).await;
        let more =
            MemTable::try_new(Arc::clone(&schema), vec![vec![batch(&schema, 100, 9)]]).unwrap();
        let input = more.scan(&ctx.state(), None, &[], None).await.unwrap();
        let insert = table
            .insert_into(&ctx.state(), input, InsertOp::Append)
            .await
            .unwrap();
        datafusion::physical_plan::collect(insert, ctx.task_ctx())
            .await
            .unwrap();
        let after = scan(&table, None).await;
        let statistics = |plan: &Arc<dyn ExecutionPlan>| {
            let scan = plan.downcast_ref::<DataSourceExec>().unwrap();
            scan.data_source().partition_statistics(None).unwrap()
        };
        assert_eq!(statistics(&before).num_rows, Precision::Exact(47));
        assert_eq!(statistics(&after).num_rows, Precision::Exact(56));
        assert_eq!(*statistics(&after), expected(after.as_ref(), None));
    }
}
