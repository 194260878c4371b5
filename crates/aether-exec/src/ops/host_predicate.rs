//! An upload's host filter, evaluated one conjunct at a time, the cheapest and most
//! selective first, on the rows the ones before it kept.
//!
//! DataFusion evaluates each side of `a AND b AND c` over the whole batch. TPC-H Q6's
//! host filter (`l_shipdate` in one year, two tests of `l_discount` and one of
//! `l_quantity`, 128-bit decimals) took 1.44 s summed over 16 gathering tasks at SF10
//! (H100, 2026-12-07, EXPLAIN ANALYZE), about as long as the CPU's whole query. Here
//! each conjunct is ranked by what it reads over the share of rows it drops on a
//! sample, and the rows kept are cut out as soon as copying them costs less than the
//! tests left would read of the others, so Q6's decimal tests read about 40% of the
//! rows (86 ms for the query against 100, H100, SF10).
//!
//! A conjunct testing one string column whose codes the table keeps
//! (`string_code_cache.rs`) and whose dictionary is small is evaluated once per value
//! of the dictionary, as the GPU's string predicates are; each row then looks its code
//! up (TPC-H Q19's `l_shipmode` and `l_shipinstruct`, Q12's `l_shipmode`).
//!
//! Conjuncts move only when none of them can fail: comparisons, `IN`, `LIKE` and
//! null tests of columns and literals. A predicate with any other conjunct
//! (arithmetic, casts, functions: they may raise an error, and DataFusion's `AND`
//! decides from the rows which side sees which rows) is evaluated whole, by
//! DataFusion, as `FilterExec` would, so the same input fails the same way.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Int32Array, RecordBatch, StringArray,
};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::{cast, filter_record_batch, prep_null_mask_filter};
use datafusion::arrow::datatypes::{DataType, Int32Type, Schema};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr, Literal, NotExpr,
};
use datafusion::physical_expr::split_conjunction;
use datafusion::physical_expr::utils::collect_columns;

use crate::one_column::{on_column_zero, only_column};

/// Rows of the sample each conjunct is tried on.
const SAMPLE_ROWS: usize = 4096;

/// Most values a kept dictionary may have for a conjunct to be evaluated on it.
pub(super) const MAX_LOOKUP_VALUES: usize = 64 * 1024;

/// A predicate split into conjuncts in the order they are evaluated.
#[derive(Debug, Clone)]
pub(super) struct HostPredicate {
    tests: Vec<Test>,
    /// Bytes a row each test reads, in the same order.
    test_bytes: Vec<f64>,
    /// Columns of the batches filtered, before any appended codes.
    width: usize,
    /// Bytes a row of those columns (what cutting out rows copies).
    row_bytes: f64,
}

/// How one conjunct is evaluated.
#[derive(Debug, Clone)]
enum Test {
    /// On the rows' values.
    Rows(Arc<dyn PhysicalExpr>),
    /// By looking up the rows' codes, appended to the batch as column `width +
    /// appended`, in `keeps`: one entry per code, then one for NULL.
    Codes { appended: usize, keeps: Vec<bool> },
}

impl HostPredicate {
    /// `predicate`'s conjuncts by rank (bytes read a row over the share of `sample`'s
    /// rows dropped), or the whole predicate when a conjunct may fail. `coded`
    /// names, in the order their codes are appended to each batch, the columns with
    /// kept codes and their dictionaries' values (`None`: too many to test each).
    pub fn new(
        predicate: &Arc<dyn PhysicalExpr>,
        schema: &Schema,
        sample: Option<&RecordBatch>,
        coded: &[(usize, Option<Arc<StringArray>>)],
    ) -> Self {
        let width = schema.fields().len();
        let row_bytes: f64 = schema
            .fields()
            .iter()
            .map(|field| type_bytes(field.data_type()))
            .sum();
        let conjuncts: Vec<Arc<dyn PhysicalExpr>> = split_conjunction(predicate)
            .into_iter()
            .map(Arc::clone)
            .collect();
        if !conjuncts.iter().all(|c| cannot_fail(c.as_ref())) {
            return Self {
                tests: vec![Test::Rows(Arc::clone(predicate))],
                test_bytes: vec![bytes_read(predicate, schema)],
                width,
                row_bytes,
            };
        }
        let sample = sample.map(|batch| batch.slice(0, batch.num_rows().min(SAMPLE_ROWS)));
        let mut ranked: Vec<(f64, f64, Test)> = conjuncts
            .into_iter()
            .map(|conjunct| {
                let dropped = sample
                    .as_ref()
                    .and_then(|batch| dropped_share(&conjunct, batch))
                    .unwrap_or(0.5);
                let (bytes, test) = match code_test(&conjunct, schema, coded) {
                    Some(test) => (4.0, test),
                    None => (bytes_read(&conjunct, schema), Test::Rows(conjunct)),
                };
                (bytes / dropped.max(0.01), bytes, test)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        Self {
            test_bytes: ranked.iter().map(|(_, bytes, _)| *bytes).collect(),
            tests: ranked.into_iter().map(|(_, _, test)| test).collect(),
            width,
            row_bytes,
        }
    }

    /// The rows of `batch` the predicate keeps (a NULL drops the row, as `FilterExec`
    /// does), with only the columns `keep` names when it names some (projected before
    /// the last cut, so columns only tested are not copied).
    pub fn filter(&self, batch: RecordBatch, keep: Option<&[usize]>) -> Result<RecordBatch> {
        let project = |batch: RecordBatch| -> Result<RecordBatch> {
            Ok(match keep {
                Some(columns) => batch.project(columns)?,
                None => batch,
            })
        };
        let mut batch = batch;
        let mut pending: Option<BooleanArray> = None;
        for (at, test) in self.tests.iter().enumerate() {
            let rows = batch.num_rows();
            if rows == 0 {
                return project(batch);
            }
            let kept = match test {
                Test::Rows(conjunct) => keeps(conjunct, &batch)?,
                Test::Codes { appended, keeps } => {
                    let codes = batch
                        .column(self.width + appended)
                        .as_primitive_opt::<Int32Type>()
                        .ok_or_else(|| {
                            DataFusionError::Internal("kept codes are not Int32".into())
                        })?;
                    looked_up(codes, keeps)
                }
            };
            let kept = match pending.take() {
                Some(before) => and(&before, &kept)?,
                None => kept,
            };
            // Rows are cut out when copying the kept ones costs less than the tests
            // left would read of the dropped ones (TPC-H Q6: a date test keeping 42%,
            // then three decimal tests); otherwise the masks are combined and the
            // rows cut once, at the end (Q14's two tests of one date).
            let share = kept.true_count() as f64 / rows as f64;
            let left: f64 = self.test_bytes[at + 1..].iter().sum();
            if share * self.row_bytes < (1.0 - share) * left {
                batch = filter_record_batch(&batch, &kept)?;
            } else {
                pending = Some(kept);
            }
        }
        let batch = project(batch)?;
        match pending {
            Some(kept) if kept.true_count() < kept.len() => Ok(filter_record_batch(&batch, &kept)?),
            _ => Ok(batch),
        }
    }
}

/// A test of `conjunct` by code, when it reads one column only, that column's codes
/// are kept (`coded`) and its dictionary is small: its result for each value and for
/// NULL.
fn code_test(
    conjunct: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
    coded: &[(usize, Option<Arc<StringArray>>)],
) -> Option<Test> {
    let column = only_column(conjunct)?;
    let (appended, (_, values)) = coded
        .iter()
        .enumerate()
        .find(|(_, (i, _))| *i == column.index())?;
    let values = values.as_ref().filter(|v| v.len() <= MAX_LOOKUP_VALUES)?;
    let field = schema.fields().get(column.index())?;
    // The values and one NULL, typed as the column, as the conjunct's only column.
    let with_null: StringArray = values.iter().chain(std::iter::once(None)).collect();
    let array = cast(&with_null, field.data_type()).ok()?;
    // Nullable, whatever the column is: the last value is the NULL.
    let one = Arc::new(Schema::new(vec![
        field.as_ref().clone().with_nullable(true),
    ]));
    let batch = RecordBatch::try_new(one, vec![array]).ok()?;
    let rebased = on_column_zero(conjunct, column.name())?;
    let kept = keeps(&rebased, &batch).ok()?;
    Some(Test::Codes {
        appended,
        keeps: kept.values().iter().collect(),
    })
}

/// The rows whose code `keeps` says the conjunct keeps (its last entry for NULL).
fn looked_up(codes: &Int32Array, keeps: &[bool]) -> BooleanArray {
    let null = keeps.last().copied().unwrap_or(false);
    let values = codes.values();
    let kept = BooleanBuffer::collect_bool(codes.len(), |r| {
        if codes.is_null(r) {
            null
        } else {
            keeps.get(values[r] as usize).copied().unwrap_or(false)
        }
    });
    BooleanArray::new(kept, None)
}

/// Which rows of `batch` `conjunct` keeps, NULL as false.
fn keeps(conjunct: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<BooleanArray> {
    let value = conjunct.evaluate(batch)?.into_array(batch.num_rows())?;
    let mask = value.as_boolean_opt().ok_or_else(|| {
        DataFusionError::Internal(format!(
            "a host filter returned {}, not booleans",
            value.data_type()
        ))
    })?;
    Ok(if mask.null_count() > 0 {
        prep_null_mask_filter(mask)
    } else {
        mask.clone()
    })
}

/// The share of `sample`'s rows `conjunct` drops.
fn dropped_share(conjunct: &Arc<dyn PhysicalExpr>, sample: &RecordBatch) -> Option<f64> {
    if sample.num_rows() == 0 {
        return None;
    }
    let kept = keeps(conjunct, sample).ok()?;
    Some(1.0 - kept.true_count() as f64 / sample.num_rows() as f64)
}

/// Bytes `conjunct` reads a row: the widths of its columns.
fn bytes_read(conjunct: &Arc<dyn PhysicalExpr>, schema: &Schema) -> f64 {
    collect_columns(conjunct)
        .iter()
        .filter_map(|column| schema.fields().get(column.index()))
        .map(|field| type_bytes(field.data_type()))
        .sum::<f64>()
        .max(1.0)
}

/// Bytes a value of `data_type` takes, strings counted as their views plus a short
/// value.
fn type_bytes(data_type: &DataType) -> f64 {
    match data_type {
        DataType::Boolean => 1.0,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => 32.0,
        other => other.primitive_width().unwrap_or(16) as f64,
    }
}

/// Whether `expr` can only return a value: comparisons, boolean logic, `IN`, `LIKE`
/// and null tests over columns and literals.
fn cannot_fail(expr: &dyn PhysicalExpr) -> bool {
    let children_cannot_fail = || expr.children().iter().all(|c| cannot_fail(c.as_ref()));
    if expr.downcast_ref::<Column>().is_some() || expr.downcast_ref::<Literal>().is_some() {
        return true;
    }
    if let Some(binary) = expr.downcast_ref::<BinaryExpr>() {
        return matches!(
            binary.op(),
            Operator::Eq
                | Operator::NotEq
                | Operator::Lt
                | Operator::LtEq
                | Operator::Gt
                | Operator::GtEq
                | Operator::And
                | Operator::Or
                | Operator::IsDistinctFrom
                | Operator::IsNotDistinctFrom
        ) && children_cannot_fail();
    }
    (expr.downcast_ref::<InListExpr>().is_some()
        || expr.downcast_ref::<IsNullExpr>().is_some()
        || expr.downcast_ref::<IsNotNullExpr>().is_some()
        || expr.downcast_ref::<NotExpr>().is_some()
        || expr.downcast_ref::<LikeExpr>().is_some())
        && children_cannot_fail()
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Date32Array, Decimal128Array, Int64Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::scalar::ScalarValue;

    use super::*;

    fn compare(column: (&str, usize), op: Operator, value: ScalarValue) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(
            Arc::new(Column::new(column.0, column.1)),
            op,
            Arc::new(Literal::new(value)),
        ))
    }

    fn and_all(conjuncts: Vec<Arc<dyn PhysicalExpr>>) -> Arc<dyn PhysicalExpr> {
        conjuncts
            .into_iter()
            .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::And, b)))
            .unwrap()
    }

    /// `d` (dates 0..n), `price` (decimals with NULLs), `k` (integers).
    fn table(rows: i32) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("d", DataType::Date32, false),
            Field::new("price", DataType::Decimal128(15, 2), true),
            Field::new("k", DataType::Int64, false),
        ]));
        let prices =
            Decimal128Array::from_iter((0..rows).map(|i| (i % 7 != 3).then_some(i as i128 % 1000)))
                .with_precision_and_scale(15, 2)
                .unwrap();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Date32Array::from_iter_values(0..rows)),
                Arc::new(prices),
                Arc::new(Int64Array::from_iter_values((0..rows).map(i64::from))),
            ],
        )
        .unwrap()
    }

    #[test]
    fn conjuncts_in_any_order_keep_the_rows_the_whole_predicate_keeps() {
        let batch = table(50_000);
        let price = |op, v| compare(("price", 1), op, ScalarValue::Decimal128(Some(v), 15, 2));
        let predicate = and_all(vec![
            price(Operator::GtEq, 100),
            compare(("d", 0), Operator::GtEq, ScalarValue::Date32(Some(10_000))),
            price(Operator::LtEq, 700),
            compare(("d", 0), Operator::Lt, ScalarValue::Date32(Some(17_000))),
        ]);
        let ranked = HostPredicate::new(&predicate, &batch.schema(), Some(&batch), &[]);
        // The date tests read four bytes a row and drop more: they go first.
        assert!(matches!(&ranked.tests[0], Test::Rows(c) if c.to_string().starts_with("d@0")));
        let mask = keeps(&predicate, &batch).unwrap();
        let expected = filter_record_batch(&batch, &mask).unwrap();
        assert_eq!(ranked.filter(batch.clone(), None).unwrap(), expected);
        assert_eq!(
            HostPredicate::new(&predicate, &batch.schema(), None, &[])
                .filter(batch, None)
                .unwrap(),
            expected
        );
    }

    #[test]
    fn tests_of_a_kept_column_look_its_codes_up() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Utf8View, true),
            Field::new("n", DataType::Int32, false),
        ]));
        let strings = datafusion::arrow::array::StringViewArray::from(vec![
            Some("keep"),
            None,
            Some("drop"),
            Some("keep"),
            None,
        ]);
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(strings),
                Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5])),
            ],
        )
        .unwrap();
        // As an upload hands it over: the codes appended after the table's columns.
        let with_codes = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                schema.field(0).clone(),
                schema.field(1).clone(),
                Field::new("codes", DataType::Int32, true),
            ])),
            vec![
                Arc::clone(batch.column(0)),
                Arc::clone(batch.column(1)),
                Arc::new(Int32Array::from(vec![
                    Some(0),
                    None,
                    Some(1),
                    Some(0),
                    None,
                ])),
            ],
        )
        .unwrap();
        let dictionary = Arc::new(StringArray::from(vec!["keep", "drop"]));
        let coded = [(0, Some(dictionary))];
        let s = || Arc::new(Column::new("s", 0)) as Arc<dyn PhysicalExpr>;
        let equal = compare(
            ("s", 0),
            Operator::Eq,
            ScalarValue::Utf8View(Some("keep".into())),
        );
        let null: Arc<dyn PhysicalExpr> = Arc::new(IsNullExpr::new(s()));
        for (predicate, rows) in [(equal, vec![1, 4]), (null, vec![2, 5])] {
            let ranked = HostPredicate::new(&predicate, &schema, Some(&batch), &coded);
            assert!(matches!(ranked.tests[0], Test::Codes { appended: 0, .. }));
            let kept = ranked.filter(with_codes.clone(), None).unwrap();
            let numbers = kept.column(1).as_primitive::<Int32Type>();
            assert_eq!(numbers.values().to_vec(), rows, "{predicate}");
        }
    }

    #[test]
    fn a_column_declared_not_null_is_looked_up_too() {
        let schema = Schema::new(vec![Field::new("f", DataType::Utf8View, false)]);
        let flags = datafusion::arrow::array::StringViewArray::from(vec!["A", "B", "A"]);
        let batch = RecordBatch::try_new(Arc::new(schema.clone()), vec![Arc::new(flags)]).unwrap();
        let coded = [(0, Some(Arc::new(StringArray::from(vec!["A", "B"]))))];
        let predicate = compare(
            ("f", 0),
            Operator::Eq,
            ScalarValue::Utf8View(Some("A".into())),
        );
        let ranked = HostPredicate::new(&predicate, &schema, Some(&batch), &coded);
        assert!(matches!(
            ranked.tests[..],
            [Test::Codes { appended: 0, .. }]
        ));
    }

    #[test]
    fn a_predicate_that_may_fail_is_evaluated_whole() {
        let batch = table(1000);
        // `k / (k - k)` divides by zero on every row; the date test drops them all.
        let k = || Arc::new(Column::new("k", 2)) as Arc<dyn PhysicalExpr>;
        let zero = Arc::new(BinaryExpr::new(k(), Operator::Minus, k()));
        let quotient = Arc::new(BinaryExpr::new(k(), Operator::Divide, zero));
        let fails = Arc::new(BinaryExpr::new(
            quotient,
            Operator::Gt,
            Arc::new(Literal::new(ScalarValue::Int64(Some(1)))),
        ));
        let none = compare(("d", 0), Operator::Lt, ScalarValue::Date32(Some(-1)));
        // DataFusion's AND skips its right side when the left keeps nothing: the
        // division fails only when written first, and so it does here.
        for (predicate, fails_here) in [
            (
                and_all(vec![Arc::clone(&fails) as _, Arc::clone(&none)]),
                true,
            ),
            (and_all(vec![none, fails]), false),
        ] {
            let ranked = HostPredicate::new(&predicate, &batch.schema(), Some(&batch), &[]);
            assert!(matches!(&ranked.tests[..], [Test::Rows(c)] if Arc::ptr_eq(c, &predicate)));
            assert_eq!(ranked.filter(batch.clone(), None).is_err(), fails_here);
        }
    }
}
