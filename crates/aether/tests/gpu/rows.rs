//! Row-returning GPU segments against the CPU engine, on the same data: chains of
//! filters and projections that no aggregate consumes run on the GPU (`--engine gpu`)
//! and return rows: strings passed through as dictionary codes, computed numbers,
//! decimals, dates and booleans, NULLs. Random tables (NULLs, NaN, -0.0, +-inf, extreme
//! decimals and dates, few- and many-valued strings; 0 rows to 10^7 rows), faults that
//! only the CPU computes exactly (division by zero, decimal overflow: both engines must
//! fail alike) and order under an ORDER BY. The TPC-H comparison in `gpu_queries.rs`
//! checks that row segments run under joins.
//!
//! A module of the `gpu_queries` test binary (one binary keeps what travels to a GPU
//! host small); it runs with `cargo test --release --test gpu_queries -- --include-ignored
//! rows::`.

use std::sync::Arc;

use aether::{AetherContext, ScriptOutput};
use aether_gpu::random::XorShift64;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringViewArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::physical_plan::displayable;

use super::{context, same_value};

/// Partitions of every random table, as DataFusion would read them on four cores.
const PARTITIONS: usize = 4;
/// Rows per batch: not a multiple of 256, so the write kernel's tiles end mid-batch.
const BATCH_ROWS: usize = 65_521;

/// A CPU and a GPU context, each with `table` registered as `t`.
pub(super) fn engines(table: MemTable) -> (AetherContext, AetherContext) {
    let (cpu, gpu) = (context("cpu"), context("gpu"));
    let table: Arc<dyn TableProvider> = Arc::new(table);
    for context in [&cpu, &gpu] {
        context
            .session()
            .register_table("t", Arc::clone(&table))
            .unwrap();
    }
    (cpu, gpu)
}

/// Rows as text, sorted when `sort`.
pub(super) fn cells(batches: &[RecordBatch], sort: bool) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| array_value_to_string(c, row).unwrap())
                    .collect::<Vec<_>>(),
            );
        }
    }
    if sort {
        rows.sort();
    }
    rows
}

/// Asserts that both engines returned the same rows (sorted first unless `ordered`: the
/// query's ORDER BY fixes their order); returns whether the GPU ran part of the plan.
fn check(sql: &str, expected: &ScriptOutput, actual: &ScriptOutput, ordered: bool) -> bool {
    let on_gpu = actual
        .placements
        .iter()
        .any(|p| p.gpu_nodes() > 0 && p.whole_plan.is_none());
    let (expected, actual) = (
        cells(&expected.batches, !ordered),
        cells(&actual.batches, !ordered),
    );
    for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
        let equal = e.len() == a.len() && e.iter().zip(a).all(|(x, y)| same_value(x, y));
        assert!(equal, "{sql}\nrow {i}\nCPU: {e:?}\nGPU: {a:?}");
    }
    assert_eq!(
        expected.len(),
        actual.len(),
        "row counts (CPU, GPU) of {sql}"
    );
    on_gpu
}

/// Runs `sql` on both engines and asserts the same rows; returns whether the GPU ran
/// part of the plan.
pub(super) async fn compare_rows(
    cpu: &AetherContext,
    gpu: &AetherContext,
    sql: &str,
    ordered: bool,
) -> bool {
    let expected = cpu
        .run_script(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql} failed on the CPU: {e}"));
    let actual = gpu
        .run_script(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql} failed on the GPU engine: {e}"));
    check(sql, &expected, &actual, ordered)
}

/// Whether the GPU engine's plan of `sql` (one statement) holds a row segment.
pub(super) async fn has_row_segment(gpu: &AetherContext, sql: &str) -> bool {
    let plan = gpu.physical_plan(sql).await.unwrap();
    displayable(plan.as_ref())
        .indent(true)
        .to_string()
        .contains("GpuSegmentExec: rows")
}

/// [`compare_rows`], asserting that the GPU ran part of the plan, as a row segment.
async fn compare(cpu: &AetherContext, gpu: &AetherContext, sql: &str, ordered: bool) {
    let on_gpu = compare_rows(cpu, gpu, sql, ordered).await;
    assert!(on_gpu, "the GPU ran no part of {sql}");
    assert!(
        has_row_segment(gpu, sql).await,
        "no GPU row segment in the plan of {sql}"
    );
}

/// Runs `sql` on both engines: both fail with an error mentioning `needle` (returns
/// true), or both succeed with the same rows.
async fn fail_alike(cpu: &AetherContext, gpu: &AetherContext, sql: &str, needle: &str) -> bool {
    let (expected, actual) = (cpu.run_script(sql).await, gpu.run_script(sql).await);
    assert_eq!(
        expected.is_err(),
        actual.is_err(),
        "{sql}: CPU error {:?}, GPU error {:?}",
        expected.as_ref().err().map(|e| e.to_string()),
        actual.as_ref().err().map(|e| e.to_string())
    );
    if let (Ok(expected), Ok(actual)) = (&expected, &actual) {
        check(sql, expected, actual, false);
        return false;
    }
    let cpu_error = expected.err().map(|e| e.to_string()).unwrap_or_default();
    let gpu_error = actual.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(cpu_error.contains(needle), "{sql} on the CPU: {cpu_error}");
    assert!(
        gpu_error.contains(needle),
        "{sql} on the GPU engine: {gpu_error}\n(the CPU said: {cpu_error})"
    );
    true
}

/// On random tables of 0 to 10^6+ rows, each of `queries` runs as a row segment and
/// both engines fail with an error mentioning `needle` (certainly from 1,000 rows on):
/// the kernel faults, the segment reruns on the CPU and DataFusion's error comes back.
async fn fails_alike_on_random_tables(queries: &[&str], needle: &str) {
    for rows in [0usize, 1, 1_000, 1_000_003] {
        let (cpu, gpu) = engines(random_table(rows, 99 + rows as u64));
        for sql in queries {
            assert!(
                has_row_segment(&gpu, sql).await,
                "no GPU row segment in the plan of {sql}"
            );
            let failed = fail_alike(&cpu, &gpu, sql, needle).await;
            assert!(failed || rows < 1_000, "{sql} did not fail on {rows} rows");
        }
    }
}

/// Each draw's value, or NULL for about one draw in 13 (from bits the values use little).
pub(super) fn values<T>(v: &[u64], value: impl Fn(u64) -> T) -> impl Iterator<Item = Option<T>> {
    v.iter()
        .map(move |&v| (!(v >> 40).is_multiple_of(13)).then(|| value(v)))
}

pub(super) fn draws(random: &mut XorShift64, len: usize) -> Vec<u64> {
    (0..len).map(|_| random.next_u64()).collect()
}

/// Row numbers `start..start + len`: a table's unique, non-NULL `id` column.
pub(super) fn ids(start: usize, len: usize) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(
        start as i64..(start + len) as i64,
    ))
}

/// -50..=50, i32::MIN and i32::MAX, NULLs.
fn int32s(v: &[u64]) -> ArrayRef {
    Arc::new(Int32Array::from_iter(values(v, |v| match v % 100 {
        0 => i32::MIN,
        1 => i32::MAX,
        _ => ((v >> 8) % 101) as i32 - 50,
    })))
}

/// -1000..=1000 with zeros one in 20, i64::MIN and i64::MAX, NULLs.
fn int64s(v: &[u64]) -> ArrayRef {
    Arc::new(Int64Array::from_iter(values(v, |v| match v % 100 {
        0 => i64::MAX,
        1 => i64::MIN,
        2..=6 => 0,
        _ => ((v >> 8) % 2001) as i64 - 1000,
    })))
}

/// -10..10 in thousandths, with NaN, -0.0, 0.0, +-inf, 1.0 and NULLs.
pub(super) fn float64s(v: &[u64]) -> ArrayRef {
    Arc::new(Float64Array::from_iter(values(v, |v| match v % 100 {
        0 => f64::NAN,
        1 => -0.0,
        2 => 0.0,
        3 => f64::INFINITY,
        4 => f64::NEG_INFINITY,
        5 => 1.0,
        _ => ((v >> 8) % 20_001) as f64 / 1000.0 - 10.0,
    })))
}

fn decimals(v: &[u64], (precision, scale): (u8, i8), value: fn(u64) -> i128) -> ArrayRef {
    Arc::new(
        Decimal128Array::from_iter(values(v, value))
            .with_precision_and_scale(precision, scale)
            .unwrap(),
    )
}

/// Prices in decimal(15, 2): +-10,000.00, and +-(10^15 - 1) one in 25.
fn price(v: u64) -> i128 {
    let max15 = 10i128.pow(15) - 1;
    match v % 50 {
        0 => max15,
        1 => -max15,
        _ => ((v >> 8) % 2_000_001) as i128 - 1_000_000,
    }
}

/// Decimal(38, 10): about +-10^12, and +-(10^38 - 1) one in 25.
fn wide(v: u64) -> i128 {
    let max38 = 10i128.pow(38) - 1;
    match v % 50 {
        0 => max38,
        1 => -max38,
        _ => ((v >> 8) as i128) * 1_000_003 - (1i128 << 75),
    }
}

/// 1991 to 1999, with 0001-01-01, 9999-12-31, 2000-01-31, 2000-02-29 and NULLs.
pub(super) fn dates(v: &[u64]) -> ArrayRef {
    Arc::new(Date32Array::from_iter(values(v, |v| match v % 100 {
        0 => -719_162,
        1 => 2_932_896,
        2 => 10_987,
        3 => 11_016,
        _ => 8000 + ((v >> 8) % 3000) as i32,
    })))
}

const FLAGS: [&str; 7] = ["A", "B", "X", "N", "", "cab", "longer than twelve bytes"];

pub(super) fn flags(v: &[u64]) -> ArrayRef {
    Arc::new(StringViewArray::from_iter(values(v, |v| {
        FLAGS[((v >> 8) % 7) as usize]
    })))
}

/// Nearly all distinct; "ab" appears in a few percent of them.
pub(super) fn comments(v: &[u64]) -> ArrayRef {
    Arc::new(StringViewArray::from_iter(values(v, |v| match v % 40 {
        0 => format!("ünïcödé ab {}", v >> 32),
        _ => format!("c{:x}", v >> 16),
    })))
}

fn booleans(v: &[u64]) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(values(v, |v| {
        !(v >> 8).is_multiple_of(3)
    })))
}

/// A table of `rows` rows in batches of [`BATCH_ROWS`] spread over [`PARTITIONS`];
/// `columns(random, first row, rows)` makes each batch's columns.
pub(super) fn table(
    schema: SchemaRef,
    rows: usize,
    seed: u64,
    columns: impl Fn(&mut XorShift64, usize, usize) -> Vec<ArrayRef>,
) -> MemTable {
    let mut random = XorShift64::new(seed);
    let mut partitions = vec![Vec::new(); PARTITIONS];
    let mut start = 0;
    while start < rows {
        let len = (rows - start).min(BATCH_ROWS);
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), columns(&mut random, start, len)).unwrap();
        partitions[(start / BATCH_ROWS) % PARTITIONS].push(batch);
        start += len;
    }
    MemTable::try_new(schema, partitions).unwrap()
}

/// A random table with every type a row segment handles; `id` numbers the rows.
pub(super) fn random_table(rows: usize, seed: u64) -> MemTable {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("p", DataType::Decimal128(15, 2), true),
        Field::new("q", DataType::Decimal128(15, 2), true),
        Field::new("w", DataType::Decimal128(38, 10), true),
        Field::new("dt", DataType::Date32, true),
        Field::new("s", DataType::Utf8View, true),
        Field::new("c", DataType::Utf8View, true),
        Field::new("ok", DataType::Boolean, true),
    ]));
    table(schema, rows, seed, |random, start, len| {
        let mut draw = || draws(random, len);
        vec![
            ids(start, len),
            int32s(&draw()),
            int64s(&draw()),
            float64s(&draw()),
            decimals(&draw(), (15, 2), price),
            // Discounts: 0.00 to 0.10, zero one in 11.
            decimals(&draw(), (15, 2), |v| ((v >> 8) % 11) as i128),
            decimals(&draw(), (38, 10), wide),
            dates(&draw()),
            flags(&draw()),
            comments(&draw()),
            booleans(&draw()),
        ]
    })
}

/// Queries returning rows; the filters and projections are the GPU's part.
const ROW_QUERIES: &[&str] = &[
    "select a, b, s from t where a > 10",
    "select id, a, b from t where (a > 0 and b < 0) or not (a <= 5 or b is null)",
    "select id, p, s from t where a is null or (f is not null and not ok)",
    "select id, b, ok from t where ok",
    "select id, a, s from t where s = 'X'",
    "select id, s, b from t where s like '%ab%'",
    "select id, c, a from t where c like '%ab%'",
    "select id, s, b from t where s in ('A', 'B')",
    "select id, c from t where s is null and c is not null",
    "select id, a + b, f * 2, p * 2, s from t where id % 3 <> 1",
    "select id, p * (1 - q), p - q, q from t where q < 0.05",
    "select id, case when a > 0 then p else -p end, case when f > 0 then 1 when f < 0 then -1 else 0 end, case when s = 'A' then a end from t where b > 0",
    "select id, dt, extract(year from dt), extract(month from dt), extract(day from dt) from t where dt >= date '1995-01-01' or dt < date '1900-01-01'",
    "select id, dt + interval '1' month, dt - interval '10' day, s from t where a < 0",
    "select id, a > b, f = f, f < 1.5, s = 'A', ok and a > 0, not ok from t where id % 4 = 0",
    // No row, every row, every other row.
    "select id, a, s from t where a between 51 and 1000000",
    "select id, b, f, s, ok from t where id >= 0",
    "select id, a, w, c from t where id % 2 = 0",
    // NaN and -0.0: Arrow's comparisons decide.
    "select id, f from t where f = 0.0",
    "select id, f from t where f = -0.0",
    "select id, f from t where f > 1.0",
    "select id, f from t where f <> f",
    "select id, f, -f, f * 0.5 from t where f <= 0.0 or f is null",
    // Columns passed through behind a filter; a filter over a filter.
    "select c, s, id from t where b < 0",
    "select * from (select a, a * 2 as b from t where a > 0) where b < 100",
    // 38-digit decimals: compared, passed through, added to without overflow.
    "select id, w, w > 0, w + 1, w - w from t where w is not null and a < 0",
    // Divisions no kept row divides by zero in (a guarded CASE faults, and reruns).
    "select id, a / b, a % b, p / q from t where b <> 0 and q <> 0",
    "select id, case when b <> 0 then a / b end from t where a > 0",
    "select id, cast(a as double) / 2, cast(p as double) from t where a is not null",
    // Casts to decimals: from floats (rounded half away from zero), to a larger scale
    // with every value fitting, and checked against a smaller precision.
    "select id, cast(f * 0.2 as decimal(30, 15)) as f15, cast(f as decimal(10, 3)) as f3, cast(f as decimal(38, 20)) as f20 from t where f > -100 and f < 100",
    "select id, cast(p as decimal(38, 12)) as p12, cast(q as decimal(16, 4)) as q4, cast(q as decimal(3, 2)) as q2 from t where a > 0",
    // Scalar subqueries, read by every row: decimals, 38 digits, integers, NULL (no
    // row), in filters and projections.
    "select id, p from t where p > (select avg(p) from t where a > 0)",
    "select id, w from t where w >= (select max(w) from t where a > 0) and a < 0",
    "select id, a + (select min(a) from t), f from t where b > (select max(b) from t) - 500",
    "select id, a from t where a > (select max(a) from t where a < -2147483648)",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn filters_and_projections_return_the_cpu_rows() {
    for rows in [0usize, 1, 1_000, 1_000_003] {
        let (cpu, gpu) = engines(random_table(rows, 42 + rows as u64));
        for sql in ROW_QUERIES {
            compare(&cpu, &gpu, sql, false).await;
        }
        println!(
            "row segments, {rows} rows: {} queries identical",
            ROW_QUERIES.len()
        );
    }
}

/// Sorts above the segment (on the GPU too, `sorts::`); `id` makes each order total.
const ORDERED: &[&str] = &[
    "select id, a, b, s from t where a > 10 order by a, b desc, id",
    "select id, f, p from t where f > 1.0 or f is null order by f desc nulls last, id limit 100",
    "select s, c, id, dt + interval '1' month from t where s like '%ab%' or a < -40 order by c nulls first, id",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn rows_under_order_by_keep_the_cpu_order() {
    for rows in [1_000usize, 1_000_003] {
        let (cpu, gpu) = engines(random_table(rows, 7 + rows as u64));
        for sql in ORDERED {
            compare(&cpu, &gpu, sql, true).await;
        }
    }
}

/// Queries some kept row of the larger tables divides by zero in.
const DIVIDING_BY_ZERO: &[&str] = &[
    "select id, a / b from t where a > 10",
    "select id, a % b from t where a < 0",
    "select id, p / q from t where b > 0",
    "select * from (select id, a / b as r from t where a is not null) where r > 0",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn division_by_zero_fails_like_the_cpu() {
    fails_alike_on_random_tables(DIVIDING_BY_ZERO, "Divide by zero").await;
    // Guarded so that no kept row divides by zero: the same rows.
    let (cpu, gpu) = engines(random_table(1_000_003, 98));
    compare(&cpu, &gpu, "select id, a / b from t where b <> 0", false).await;
}

/// 128-bit decimal products and sums past i128: Arrow's checked operations fail.
const OVERFLOWING: &[&str] = &[
    "select id, w * w from t where a > 0",
    "select id, w + w from t where b > 0",
    "select id, p * p * p from t where a > 0",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn decimal_overflow_fails_like_the_cpu() {
    fails_alike_on_random_tables(OVERFLOWING, "verflow").await;
}

/// Casts to decimals that some kept row cannot take: NaN and infinities (Arrow:
/// "Overflowing on NaN"), and prices of 13 integer digits into 12 (Arrow's precision
/// check: "too large" or "too small to store", whichever row fails first).
#[tokio::test]
#[ignore = "needs a GPU"]
async fn casts_past_a_decimals_range_fail_like_the_cpu() {
    fails_alike_on_random_tables(
        &["select id, cast(f as decimal(10, 3)) from t where a > 0"],
        "verflow",
    )
    .await;
    fails_alike_on_random_tables(
        &["select id, cast(p as decimal(20, 8)) from t where b > 0"],
        "to store in a Decimal128 of precision 20",
    )
    .await;
}

/// Selecting columns computes nothing: the plan stays on the CPU on purpose.
#[tokio::test]
#[ignore = "needs a GPU"]
async fn columns_only_selected_stay_on_the_cpu() {
    let (cpu, gpu) = engines(random_table(1_000, 3));
    for sql in ["select s, id, c from t", "select id as k, a, w from t"] {
        compare_rows(&cpu, &gpu, sql, false).await;
        assert!(
            !has_row_segment(&gpu, sql).await,
            "{sql} moved a selection to the GPU"
        );
    }
}

#[tokio::test]
#[ignore = "needs a GPU"]
async fn ten_million_rows_match_the_cpu() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Int64, true),
    ]));
    let (cpu, gpu) = engines(table(schema, 10_000_000, 11, |random, _, len| {
        vec![int32s(&draws(random, len)), int64s(&draws(random, len))]
    }));
    for sql in [
        "select a, b, a + b from t where a > 40",
        "select a, b from t where b < -900 or (a is null and b > 900)",
        "select b * 2, a from t where a = 7 and b between 0 and 100",
        "select a, b from t where a between 51 and 1000000",
    ] {
        compare(&cpu, &gpu, sql, false).await;
    }
}

/// Mostly distinct strings of words that the predicates below look for, multi-byte
/// characters, `%` and `_` as data, empty strings and NULLs.
fn memos(v: &[u64]) -> ArrayRef {
    const WORDS: [&str; 10] = [
        "special",
        "requests",
        "ab",
        "é",
        "€",
        "x",
        "_",
        "%",
        "sp€cial",
        "𝄞",
    ];
    Arc::new(StringViewArray::from_iter(values(v, |v| {
        if v % 97 == 0 {
            return String::new();
        }
        let words = 1 + (v % 5) as usize;
        let mut memo = String::new();
        for k in 0..words {
            memo.push_str(WORDS[((v >> (8 + 4 * k)) % 10) as usize]);
            if (v >> (30 + k)) & 1 == 1 {
                memo.push(' ');
            }
        }
        if v % 3 != 0 {
            memo.push_str(&format!("{}", v >> 44));
        }
        memo
    })))
}

/// Predicates over a many-valued string column that only the predicates read: the
/// upload sends it as offsets and bytes and the kernels test its bytes.
const BYTES_QUERIES: &[&str] = &[
    "select id from t where m like '%special%requests%'",
    "select id, a from t where m not like '%special%requests%'",
    "select id from t where m like 'sp_cial%'",
    "select id from t where m like '%é_€%' or m like '_' or m like '__'",
    "select id from t where m like '' or m like '%' or m like '%%ab'",
    "select id from t where m like '%\u{1d11e}%_' or m like 'x%x%x'",
    "select id from t where m = 'special' or m = ''",
    "select id from t where m <> 'ab' and a > 0",
    "select id from t where m < 'r' and m >= 'ab'",
    "select id from t where m > 'special' or m <= 'é'",
    "select id from t where m in ('ab', 'x', 'special')",
    "select id from t where m in ('ab', null) or a is null",
    "select id from t where m not in ('ab', 'x')",
    "select id from t where (m not in ('ab', null)) is null",
    "select id from t where starts_with(m, 'req') or ends_with(m, 'ab')",
    "select id from t where m is null or (m like '%x%' and a > 0)",
    "select id, case when m like 'sp%' then 1 when m is null then 2 else 0 end from t where a > 0",
    "select id from t where substring(m from 1 for 2) in ('sp', 'ab', 'é€', '𝄞s')",
    "select id from t where substr(m, 3) like 'ec%' or substr(m, 2, 0) = '' and a < 0",
    "select id from t where substr(m, 40, 5) = '' and m is not null",
    // A second many-valued column passed through goes as codes beside it.
    "select id, c from t where m like '%ab%'",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn string_predicates_on_bytes_match_the_cpu() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("a", DataType::Int32, true),
        Field::new("m", DataType::Utf8View, true),
        Field::new("c", DataType::Utf8View, true),
    ]));
    for rows in [0usize, 1, 1_000, 1_000_003] {
        let table = table(
            Arc::clone(&schema),
            rows,
            5 + rows as u64,
            |random, start, len| {
                let mut draw = || draws(random, len);
                vec![
                    ids(start, len),
                    int32s(&draw()),
                    memos(&draw()),
                    comments(&draw()),
                ]
            },
        );
        let (cpu, gpu) = engines(table);
        for sql in BYTES_QUERIES {
            let plan = gpu.physical_plan(sql).await.unwrap();
            let text = displayable(plan.as_ref()).indent(true).to_string();
            if rows > 0 {
                assert!(
                    text.contains("strings as bytes=[m]"),
                    "{sql}: m should be uploaded as bytes\n{text}"
                );
            }
            compare(&cpu, &gpu, sql, false).await;
        }
        println!(
            "string bytes, {rows} rows: {} queries identical",
            BYTES_QUERIES.len()
        );
    }
}
