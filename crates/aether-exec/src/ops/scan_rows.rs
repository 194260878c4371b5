//! The rows an upload reads: pieces of an in-memory table with their kept string
//! codes, spread over the gathering tasks, and filtered on the host when the segment's
//! first filter keeps few of them.
//!
//! A selective filter right above a table's scan (TPC-H Q14's one month of
//! `l_shipdate`: 1.2% of 60 M rows) would otherwise have every row gathered and sent
//! over PCIe for the GPU to drop almost all of them; evaluated on the host first, by
//! DataFusion's own kernels on the gathering tasks, only the rows it keeps are
//! gathered and sent. The GPU segment still runs the filter (it passes everything
//! left), so its results do not depend on where the rows were dropped. The predicate
//! reads the table's own values, or for a test of one coded column the codes, looked
//! up in its results for the dictionary's values (`host_predicate.rs`).
//!
//! A filter the upload runs in place of the segment (`placement/host_prefilter.rs`)
//! is the upload's input itself: its predicate keeps the rows and its projection
//! picks the columns gathered, so the strings it only tests are never sent.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::error::{DataFusionError, Result};

use super::host_predicate::HostPredicate;

/// Rows that can be counted and cut without copying.
pub(super) trait Rows: Sized {
    fn num_rows(&self) -> usize;
    fn slice(&self, offset: usize, len: usize) -> Self;
}

impl Rows for RecordBatch {
    fn num_rows(&self) -> usize {
        RecordBatch::num_rows(self)
    }

    fn slice(&self, offset: usize, len: usize) -> Self {
        RecordBatch::slice(self, offset, len)
    }
}

/// Rows on their way to a gathering task: a batch of the input and, for the coded
/// string columns of a scanned table, their kept codes (by column of the batch).
#[derive(Debug, Clone)]
pub(super) struct ScanPiece {
    pub batch: RecordBatch,
    pub codes: Vec<(usize, Int32Array)>,
}

impl Rows for ScanPiece {
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    fn slice(&self, offset: usize, len: usize) -> Self {
        Self {
            batch: self.batch.slice(offset, len),
            codes: self
                .codes
                .iter()
                .map(|(i, codes)| (*i, codes.slice(offset, len)))
                .collect(),
        }
    }
}

impl ScanPiece {
    /// A batch without kept codes.
    pub fn plain(batch: RecordBatch) -> Self {
        Self {
            batch,
            codes: Vec::new(),
        }
    }

    /// The rows as gathered: those `filter` keeps (evaluated on the batch's own values;
    /// a NULL result drops the row, as `FilterExec` does), only the columns `passed_on`
    /// names when it names some (a filter's projection), and each coded column's
    /// strings replaced by their codes.
    pub fn prepare(
        self,
        filter: Option<&HostPredicate>,
        passed_on: Option<&[usize]>,
    ) -> Result<RecordBatch> {
        let width = self.batch.num_columns();
        let coded: Vec<usize> = self.codes.iter().map(|(i, _)| *i).collect();
        let mut kept_columns: Vec<usize> =
            passed_on.map_or_else(|| (0..width).collect(), <[usize]>::to_vec);
        let passed = kept_columns.len();
        // The codes ride along as extra columns, filtered with the values they code.
        kept_columns.extend(width..width + coded.len());
        let batch = with_codes_appended(self.batch, self.codes)?;
        let batch = match filter {
            Some(predicate) if batch.num_rows() > 0 => {
                predicate.filter(batch, Some(&kept_columns))?
            }
            _ => batch.project(&kept_columns)?,
        };
        if coded.is_empty() {
            return Ok(batch);
        }
        // The passed-on columns, then the codes: each code column takes its column's place.
        let schema = batch.schema();
        let mut fields: Vec<Field> = schema.fields()[..passed]
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut columns: Vec<ArrayRef> = batch.columns()[..passed].to_vec();
        for (k, scanned) in coded.into_iter().enumerate() {
            // Every place the column is passed on to (a projection may name it twice).
            let places: Vec<usize> = (0..passed)
                .filter(|j| kept_columns[*j] == scanned)
                .collect();
            if places.is_empty() {
                return Err(DataFusionError::Internal(format!(
                    "kept codes of column {scanned}, which is not passed on"
                )));
            }
            for at in places {
                fields[at] =
                    Field::new(fields[at].name(), DataType::Int32, fields[at].is_nullable());
                columns[at] = Arc::clone(batch.column(passed + k));
            }
        }
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }
}

/// `batch` with `codes` appended as `Int32` columns after its own.
fn with_codes_appended(batch: RecordBatch, codes: Vec<(usize, Int32Array)>) -> Result<RecordBatch> {
    if codes.is_empty() {
        return Ok(batch);
    }
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns = batch.columns().to_vec();
    for (i, codes) in codes {
        fields.push(Field::new(
            format!("codes of column {i}"),
            DataType::Int32,
            true,
        ));
        columns.push(Arc::new(codes));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// Fewest rows a part of [`spread_rows`] gets: below this, another task costs more
/// than the rows it would gather.
const MIN_ROWS_PER_PART: usize = 4 * 1024;

/// `partitions` cut into `parallelism` parts of contiguous rows (zero-copy slices)
/// when there are fewer partitions than that and rows enough for each part to get
/// [`MIN_ROWS_PER_PART`]; otherwise unchanged. Each part is gathered by its own task,
/// so a table kept in one partition (TPC-H's `supplier`: 100,000 rows at SF10, four
/// many-valued string columns) is coded by every core, not one. An upload promises
/// no row order, so the parts may finish in any order.
pub(super) fn spread_rows<R: Rows>(partitions: Vec<Vec<R>>, parallelism: usize) -> Vec<Vec<R>> {
    let rows: usize = partitions.iter().flatten().map(Rows::num_rows).sum();
    let parts = parallelism.min(rows / MIN_ROWS_PER_PART);
    if partitions.len() >= parts {
        return partitions;
    }
    let per_part = rows.div_ceil(parts);
    let mut spread: Vec<Vec<R>> = Vec::with_capacity(parts);
    let mut part = Vec::new();
    let mut filled = 0;
    for batch in partitions.into_iter().flatten() {
        let mut offset = 0;
        while offset < batch.num_rows() {
            let take = (per_part - filled).min(batch.num_rows() - offset);
            part.push(batch.slice(offset, take));
            offset += take;
            filled += take;
            if filled == per_part {
                spread.push(std::mem::take(&mut part));
                filled = 0;
            }
        }
    }
    if !part.is_empty() {
        spread.push(part);
    }
    spread
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, Int32Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::PhysicalExpr;
    use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
    use datafusion::scalar::ScalarValue;

    fn batch(start: i32, rows: i32) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, false)]));
        let values = Int32Array::from_iter_values(start..start + rows);
        RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap()
    }

    fn values(parts: &[Vec<RecordBatch>]) -> Vec<i32> {
        parts
            .iter()
            .flatten()
            .flat_map(|b| {
                let column = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                column.values().to_vec()
            })
            .collect()
    }

    #[test]
    fn one_large_partition_is_spread_over_the_cores_without_losing_a_row() {
        let rows = 100_000;
        let one = vec![vec![batch(0, 50_000), batch(50_000, rows - 50_000)]];
        let spread = spread_rows(one, 16);
        assert_eq!(spread.len(), 16);
        assert!(
            spread
                .iter()
                .all(|p| p.iter().map(|b| b.num_rows()).sum::<usize>() == 6_250)
        );
        assert_eq!(values(&spread), (0..rows).collect::<Vec<_>>());
        // 20,000 rows give four parts of at least 4,096 rows, not sixteen.
        let few = spread_rows(vec![vec![batch(0, 20_000)]], 16);
        assert_eq!(few.len(), 4);
        assert_eq!(values(&few), (0..20_000).collect::<Vec<_>>());
    }

    #[test]
    fn small_or_already_spread_tables_are_left_alone() {
        let small = vec![vec![batch(0, 25)]];
        assert_eq!(spread_rows(small, 16).len(), 1);
        let many: Vec<Vec<RecordBatch>> =
            (0..16).map(|p| vec![batch(p * 100_000, 100_000)]).collect();
        assert_eq!(spread_rows(many, 16).len(), 16);
        let none: Vec<Vec<RecordBatch>> = Vec::new();
        assert!(spread_rows(none, 16).is_empty());
    }

    #[test]
    fn a_host_filter_reads_the_strings_and_keeps_the_codes_of_the_rows_it_passes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("n", DataType::Int32, false),
        ]));
        let strings = datafusion::arrow::array::StringArray::from(vec![
            Some("keep"),
            None,
            Some("drop"),
            Some("keep"),
        ]);
        let numbers = Int32Array::from(vec![1, 2, 3, 4]);
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(strings), Arc::new(numbers)],
        )
        .unwrap();
        let codes = Int32Array::from(vec![Some(0), None, Some(1), Some(0)]);
        let piece = ScanPiece {
            batch,
            codes: vec![(0, codes)],
        };
        let predicate: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("s", 0)),
            Operator::Eq,
            Arc::new(Literal::new(ScalarValue::Utf8(Some("keep".into())))),
        ));
        // The last three rows, cut as a spreading task would.
        let kept = piece
            .slice(1, 3)
            .prepare(
                Some(&HostPredicate::new(&predicate, &schema, None, &[])),
                None,
            )
            .unwrap();
        assert_eq!(kept.num_rows(), 1);
        let codes = kept
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let numbers = kept
            .column(1)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        assert_eq!((codes.value(0), numbers.value(0)), (0, 4));
        // Without a filter every row goes, as codes.
        let all = ScanPiece::plain(kept.clone()).prepare(None, None).unwrap();
        assert_eq!(all.num_rows(), 1);
        // A filter run in place of the segment's passes on only its projection: the
        // tested strings are not gathered at all.
        let piece = ScanPiece::plain(
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(datafusion::arrow::array::StringArray::from(vec![
                        "keep", "drop", "keep",
                    ])),
                    Arc::new(Int32Array::from(vec![7, 8, 9])),
                ],
            )
            .unwrap(),
        );
        let numbers_only = piece
            .prepare(
                Some(&HostPredicate::new(&predicate, &schema, None, &[])),
                Some(&[1]),
            )
            .unwrap();
        assert_eq!(numbers_only.num_columns(), 1);
        let numbers = numbers_only
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        assert_eq!(numbers.values().to_vec(), vec![7, 9]);
    }
}
