//! Shapes of GPU segments the cost model keeps on the CPU whatever their size.
//!
//! Byte counts do not see two costs that made `auto` slower than the CPU on TPC-H at
//! SF10 on the H200 (2026-12-01, docs/benchmarks.md):
//! - group keys other than strings (order keys, part keys: up to millions of groups):
//!   the GPU table grows through overflow passes and every group comes back over PCIe
//!   to the CPU's final aggregate (Q13, Q15, Q18, Q20 took 1.2-2.6x the CPU's time);
//! - strings that miss the gatherer's fast path (more than a handful of distinct
//!   values, or not `Utf8View`) are coded through hash maps and a shared dictionary
//!   on the host (Q14, Q16, Q22 took 1.3-24x the CPU's time).
//!
//! So `auto` moves a segment only when its keys are strings (or it has none) and, when
//! its input comes from host memory, every string column is a scan of an in-memory
//! table whose first batch shows few distinct strings.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::physical_plan::ExecutionPlan;

use crate::codegen::aggregate::AggregateSpec;
use crate::memory_table::memory_source;

/// Most distinct strings the gatherer's view cache holds per column.
const FEW_DISTINCT: usize = crate::ops::string_codes::ViewCodeCache::MAX_ENTRIES;
/// Rows of the first batch looked at.
const SAMPLE_ROWS: usize = 4096;

/// Why `auto` keeps this segment on the CPU whatever the byte counts say, if it does.
pub fn kept_for_shape(
    spec: &AggregateSpec,
    source: &Arc<dyn ExecutionPlan>,
    resident: bool,
) -> Option<String> {
    for key in &spec.keys {
        let is_string = key
            .data_type(&spec.aggregate_input)
            .is_ok_and(|t| t.is_string());
        if !is_string {
            return Some(format!(
                "group key {key} may make millions of groups, which the GPU's partial \
                 aggregate sends back to the CPU (measured slower than the CPU)"
            ));
        }
    }
    if resident {
        return None;
    }
    let strings: Vec<String> = source
        .schema()
        .fields()
        .iter()
        .filter(|f| f.data_type().is_string())
        .map(|f| f.name().clone())
        .collect();
    if strings.is_empty() {
        return None;
    }
    let Some(first) = first_batch(source) else {
        return Some(format!(
            "string columns ({}) not read from an in-memory table would be coded on the \
             host row by row",
            strings.join(", ")
        ));
    };
    for name in &strings {
        let Some(column) = first.column_by_name(name) else {
            return Some(format!("string column {name} could not be sampled"));
        };
        if !few_distinct(column.as_ref()) {
            return Some(format!(
                "string column {name} holds many distinct values, which the host codes \
                 slowly"
            ));
        }
    }
    None
}

/// Whether the aggregate `spec` describes should make few groups: it has group keys,
/// and each is a string column of the in-memory table `source` scans whose first rows
/// hold few distinct values (TPC-H Q1's flags). A sample, not a bound: it decides only
/// how the groups are merged ([`super::single_partition`]), never a result.
pub fn few_groups(spec: &AggregateSpec, source: &Arc<dyn ExecutionPlan>) -> bool {
    if spec.keys.is_empty() {
        return false;
    }
    let Some(first) = first_batch(source) else {
        return false;
    };
    spec.keys.iter().all(|key| {
        let any: &dyn datafusion::physical_expr::PhysicalExpr = key.as_ref();
        any.downcast_ref::<datafusion::physical_expr::expressions::Column>()
            .and_then(|column| first.column_by_name(column.name()))
            .is_some_and(|column| few_distinct(column.as_ref()))
    })
}

/// The first non-empty batch of the in-memory table `source` reads (through
/// exchanges, which a scan with fewer partitions than cores reads through, and a
/// filter the upload runs on the host); its columns are found by name.
fn first_batch(source: &Arc<dyn ExecutionPlan>) -> Option<datafusion::arrow::array::RecordBatch> {
    let scan = super::scans::scan_below(source);
    let memory = memory_source(scan.as_ref())?;
    memory
        .partitions()
        .iter()
        .flatten()
        .find(|batch| batch.num_rows() > 0)
        .cloned()
}

/// Whether the first rows of `column` are `Utf8View` strings of few distinct values.
fn few_distinct(column: &dyn Array) -> bool {
    let column = column.slice(0, column.len().min(SAMPLE_ROWS));
    // Only `Utf8View` values are coded through the view cache; `Utf8` is hashed per row.
    match column.data_type() {
        DataType::Utf8View => sample(column.as_string_view().iter()),
        _ => false,
    }
}

fn sample<'a>(values: impl Iterator<Item = Option<&'a str>>) -> bool {
    let mut seen: HashSet<&str> = HashSet::new();
    for value in values.flatten() {
        seen.insert(value);
        if seen.len() > FEW_DISTINCT {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{StringArray, StringViewArray};

    use super::*;

    #[test]
    fn only_view_strings_of_few_values_code_cheaply() {
        let flags = StringViewArray::from_iter_values((0..10_000).map(|i| ["A", "N", "R"][i % 3]));
        assert!(few_distinct(&flags));
        let phones = StringViewArray::from_iter_values((0..10_000).map(|i| format!("{i:08}")));
        assert!(!few_distinct(&phones), "many distinct values");
        let long = StringViewArray::from(vec![Some("PROMO BURNISHED COPPER"), None]);
        assert!(
            few_distinct(&long),
            "long values are found by length and prefix"
        );
        let with_nulls = StringViewArray::from(vec![None, Some("x"), None]);
        assert!(few_distinct(&with_nulls));
        let offsets = StringArray::from(vec![Some("x"), Some("y")]);
        assert!(!few_distinct(&offsets), "offset strings are hashed per row");
    }
}
