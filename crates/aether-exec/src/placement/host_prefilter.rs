//! Filters run on the host by the upload that reads their table, instead of in the
//! GPU segment above.
//!
//! A filter testing a string column of mostly distinct values (comments, names) that
//! nothing above it reads would otherwise have that column gathered as offsets and
//! bytes and sent over PCIe only to be tested. TPC-H Q13's `o_comment NOT LIKE
//! '%special%requests%'` keeps 99% of `orders`: at SF10 its upload gathered 730 MB of
//! comments for 1.68 s summed over the tasks (H100, 2026-12-07, EXPLAIN ANALYZE), and
//! the query took 197 ms on the GPU against 173 ms on the CPU. Evaluated by
//! DataFusion's kernels on the tasks that read the table (`ops/host_to_device.rs`),
//! the filter sends only its output columns for the rows it keeps.
//!
//! The `FilterExec` stays in the plan as the upload's input, so whatever reads it
//! another way (the CPU plan a segment falls back to) runs it unchanged. Not for
//! tables kept resident on the GPU: their columns are on the device already.

use std::sync::Arc;

use datafusion::datasource::source::DataSource;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;

use super::scans::below_exchanges;

/// Fewest rows a table needs for its filters to run on the host: below this, sending
/// its strings costs next to nothing, and the filter stays in the GPU segment
/// (TPC-H's `nation` and `region`, whose names are all distinct).
const MIN_TABLE_ROWS: usize = 64 * 1024;
use super::string_bytes;
use crate::memory_table::memory_source;

/// The names of the many-valued string columns `plan` tests and does not pass on,
/// when it is a filter to run on the host as its table is read: a filter above the
/// scan of an in-memory table of at least [`MIN_TABLE_ROWS`] rows (through exchanges
/// at most; without a pushed-down LIMIT), with a deterministic predicate that reads
/// such a column. `None` otherwise.
pub(super) fn tested_only(plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<String>> {
    let filter = plan.downcast_ref::<FilterExec>()?;
    if plan.fetch().is_some() || is_volatile(filter.predicate()) {
        return None;
    }
    // A table of fewer partitions than cores is read through a round-robin exchange
    // (which must not hold a LIMIT either).
    let scan = below_exchanges(Arc::clone(filter.input()));
    let mut node = Arc::clone(filter.input());
    while !Arc::ptr_eq(&node, &scan) {
        if node.fetch().is_some() {
            return None;
        }
        node = Arc::clone(node.children()[0]);
    }
    let memory = memory_source(scan.as_ref())?;
    if DataSource::fetch(memory).is_some() {
        return None;
    }
    let rows: usize = memory
        .partitions()
        .iter()
        .flatten()
        .map(|b| b.num_rows())
        .sum();
    if rows < MIN_TABLE_ROWS {
        return None;
    }
    let passed_on = filter.projection().as_ref()?;
    let many_valued = string_bytes::candidates(&scan);
    let schema = filter.input().schema();
    let mut tested: Vec<usize> = collect_columns(filter.predicate())
        .iter()
        .map(|column| column.index())
        .filter(|i| many_valued.contains(i) && !passed_on.contains(i))
        .collect();
    tested.sort_unstable();
    tested.dedup();
    let names: Vec<String> = tested
        .into_iter()
        .map(|i| schema.field(i).name().clone())
        .collect();
    (!names.is_empty()).then_some(names)
}

/// The report's reason for a filter [`tested_only`] names `columns` of.
pub(super) fn reason_text(columns: &[String]) -> String {
    format!(
        "it runs on the host as the GPU upload reads its table: it tests {}, of mostly \
         distinct values, which nothing above reads; sending them to the GPU would cost \
         more than testing them",
        columns.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, RecordBatch, StringViewArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// The bottom filter of `sql`'s plan over `notes(k, flag, note)` of `rows` rows:
    /// few flags, and a distinct note on every row.
    async fn filter_of(sql: &str, rows: i64) -> Arc<dyn ExecutionPlan> {
        let ctx = SessionContext::new();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("flag", DataType::Utf8View, false),
            Field::new("note", DataType::Utf8View, false),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringViewArray::from_iter_values(
                    (0..rows).map(|i| ["A", "N", "R"][(i % 3) as usize]),
                )),
                Arc::new(StringViewArray::from_iter_values(
                    (0..rows).map(|i| format!("note number {i} of many")),
                )),
            ],
        )
        .unwrap();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("notes", Arc::new(table)).unwrap();
        let plan = ctx
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let mut node = plan;
        loop {
            if node.is::<FilterExec>() {
                return node;
            }
            node = Arc::clone(node.children()[0]);
        }
    }

    #[tokio::test]
    async fn a_filter_on_comments_it_does_not_return_runs_on_the_host() {
        let filter = filter_of(
            "select k from notes where note not like '%special%'",
            100_000,
        )
        .await;
        assert_eq!(tested_only(&filter), Some(vec!["note".to_string()]));
        // A small table's strings cost next to nothing to send.
        let small = filter_of("select k from notes where note not like '%special%'", 1000).await;
        assert_eq!(tested_only(&small), None);
    }

    #[tokio::test]
    async fn a_filter_returning_its_comments_or_testing_flags_stays_in_the_segment() {
        let returned = filter_of(
            "select k, note from notes where note like '%special%'",
            100_000,
        )
        .await;
        assert_eq!(tested_only(&returned), None);
        let flags = filter_of("select k from notes where flag = 'A'", 100_000).await;
        assert_eq!(tested_only(&flags), None);
        let volatile = filter_of(
            "select k from notes where note like '%a%' and random() < 0.5",
            100_000,
        )
        .await;
        assert_eq!(tested_only(&volatile), None);
    }
}
