//! Which string columns an upload sends as offsets and bytes instead of codes.
//!
//! Codes suit strings of few distinct values (flags, modes, types): four bytes a row
//! and one table lookup per distinct value. A column of mostly distinct values
//! (comments, names, phone numbers) makes the host build a dictionary as large as the
//! column, which cost TPC-H Q13 58.7 s at SF10 for 15 M distinct `o_comment`s. Such a
//! column goes as bytes when the segment reads it only in predicates the device
//! evaluates on bytes (`codegen/expr/string_bytes.rs`).
//!
//! Distinctness is sampled from the first batch of an in-memory table; a column that
//! cannot be sampled (a file scan, a CPU operator's output) goes as bytes, whose cost
//! is linear in its size, where codes risk a host dictionary of every row.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;

use super::scans::below_exchanges;
use crate::memory_table::memory_source;

/// Rows of the first batch sampled for distinct values.
const SAMPLE_ROWS: usize = 4096;

/// A sampled column goes as bytes when more than this share of its rows is distinct.
const DISTINCT_SHARE: f64 = 0.25;

/// The string columns of `source` an upload would rather send as bytes.
pub(super) fn candidates(source: &Arc<dyn ExecutionPlan>) -> Vec<usize> {
    let schema = source.schema();
    let first = first_batch(&below_exchanges(Arc::clone(source)));
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, field)| field.data_type().is_string())
        .filter(|(i, _)| match &first {
            Some(batch) => batch.columns().get(*i).is_none_or(|c| mostly_distinct(c)),
            None => true,
        })
        .map(|(i, _)| i)
        .collect()
}

/// The first batch of the in-memory table `scanned` reads, as `scanned` returns its
/// columns: the scan itself, or a filter the upload runs on the host over it
/// (`placement/host_prefilter.rs`; sampled before filtering).
fn first_batch(scanned: &Arc<dyn ExecutionPlan>) -> Option<RecordBatch> {
    let (scan, passed_on) = match scanned.downcast_ref::<FilterExec>() {
        Some(filter) => (
            below_exchanges(Arc::clone(filter.input())),
            filter.projection().clone(),
        ),
        None => (Arc::clone(scanned), None),
    };
    let memory = memory_source(scan.as_ref())?;
    let batch = memory.partitions().iter().flatten().next()?.clone();
    let batch = match memory.projection() {
        Some(columns) => batch.project(columns).ok()?,
        None => batch,
    };
    match passed_on {
        Some(columns) => batch.project(&columns).ok(),
        None => Some(batch),
    }
}

/// Whether more than [`DISTINCT_SHARE`] of the first [`SAMPLE_ROWS`] values differ.
fn mostly_distinct(column: &dyn Array) -> bool {
    let rows = column.len().min(SAMPLE_ROWS);
    if rows == 0 {
        return false;
    }
    let sample = column.slice(0, rows);
    let distinct = match sample.data_type() {
        DataType::Utf8View => count_distinct(sample.as_string_view().iter()),
        DataType::Utf8 => count_distinct(sample.as_string::<i32>().iter()),
        DataType::LargeUtf8 => count_distinct(sample.as_string::<i64>().iter()),
        _ => return false,
    };
    distinct as f64 > DISTINCT_SHARE * rows as f64
}

fn count_distinct<'a>(values: impl Iterator<Item = Option<&'a str>>) -> usize {
    values.collect::<HashSet<_>>().len()
}

/// The kernels reading the most of `candidates` as bytes: each candidate that compiles
/// alone, then all of those together. `None` when no candidate compiles as bytes.
pub(super) fn choose<K, E>(
    candidates: &[usize],
    compile: impl Fn(&[usize]) -> Result<K, E>,
) -> Option<(K, Vec<usize>)> {
    let readable: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|c| compile(&[*c]).is_ok())
        .collect();
    if readable.is_empty() {
        return None;
    }
    compile(&readable).ok().map(|kernels| (kernels, readable))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::StringViewArray;

    use super::*;

    #[test]
    fn distinct_values_are_sampled() {
        let flags = StringViewArray::from_iter_values((0..1000).map(|i| ["A", "N", "R"][i % 3]));
        assert!(!mostly_distinct(&flags));
        let comments = StringViewArray::from_iter_values((0..1000).map(|i| format!("c{i}")));
        assert!(mostly_distinct(&comments));
        assert!(!mostly_distinct(&StringViewArray::from_iter_values(Vec::<
            String,
        >::new(
        ))));
    }

    #[test]
    fn only_candidates_that_compile_alone_are_chosen() {
        let compile = |columns: &[usize]| {
            if columns.contains(&2) {
                Err(())
            } else {
                Ok(columns.to_vec())
            }
        };
        assert_eq!(choose(&[1, 2, 3], compile), Some((vec![1, 3], vec![1, 3])));
        assert_eq!(choose(&[2], compile), None);
    }
}
