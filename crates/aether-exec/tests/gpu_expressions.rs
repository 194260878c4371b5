//! Every supported expression on the GPU against DataFusion's CPU evaluation of the
//! same physical expression on the same random batch (nulls, NaN, -0.0, extreme
//! integers and decimals; empty, one-row and million-row batches). Where DataFusion
//! raises an error on a batch (a zero divisor), the GPU must report a row fault. Needs
//! a GPU (`--include-ignored`).

use std::sync::Arc;

use aether_exec::codegen::expr_kernel;
use aether_exec::gpu_eval::evaluate_on_gpu;
use aether_gpu::random::XorShift64;
use aether_gpu::{DeviceBatch, DeviceError, DeviceOptions, GpuDevice, LayoutOptions};
use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array,
    Int64Array, RecordBatch,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;

/// Expressions over the columns of [`random_batch`], as SQL.
const EXPRESSIONS: &[&str] = &[
    "a + 1",
    "b * b",
    "b - a",
    "-b",
    "x + y",
    "x * 2.5 - y",
    "x / y",
    "-x",
    "p * d",
    "p + d",
    "p - d",
    "-p",
    "a < 10",
    "b >= 0",
    "x > y",
    "x = y",
    "x <> 0.0",
    "x <= y",
    "p < d",
    "p = d",
    "dt >= date '1994-01-01'",
    // Real plans arrive with `date '1994-01-01' + interval '1' year` folded by the
    // logical optimizer; this test plans expressions without it, so it writes the result.
    "dt < date '1995-01-01'",
    "d between 0.05 and 0.07",
    "flag and a > 0",
    "flag or x > 0",
    "not flag",
    "a is null",
    "x is not null",
    "a in (1, 2, 3, null)",
    "a not in (1, 2)",
    "x in (0.0, 1.5)",
    "x not in (-0.0, 2.0)",
    "cast(a as bigint) + b",
    "cast(a as double) * x",
    "cast(p as decimal(20, 4))",
    "x is distinct from y",
    "a is not distinct from 3",
    "(a > 5 and b < 0) or x is null",
    "p * (1 - d)",
    "case when a > 0 then b when x is null then -b else 0 end",
    "case a when 1 then x when 2 then y end",
    "case when flag then p * d else p end",
    "case when dt < date '1995-01-01' then 1.5 else x end",
    "extract(year from dt)",
    "extract(month from dt)",
    "extract(day from dt)",
    "date_part('year', dt) * 100 + date_part('month', dt)",
    "dt + interval '3' day",
    "dt - interval '1' month",
    "dt + interval '1' year",
    "dt + interval '13 months 2 days'",
    "dt - interval '2' year < date '1994-01-01'",
    "a / 3",
    "b / -7",
    "a / 2 + 1",
    // Division and remainder by columns and by -1 or 0: where Arrow raises an error on
    // a batch (a zero divisor, `MIN / -1`), the kernel must fault.
    "a / a",
    "b / (a * a + 1)",
    "b % (a * a + 1)",
    "a % 7",
    "a % -1",
    "a / -1",
    "b / -1",
    "b % 0",
    "x % y",
    "p / (d + 1)",
    "p / d",
    "q / (d + 1)",
    "q / q",
    "p * d / (d + 1)",
    "d / 3.5",
    "p / 0.01",
    // Casts between decimals and integers or floats (past the precision: a fault).
    "cast(p as double)",
    "cast(q as float)",
    "cast(p / (d + 1) as double)",
    "cast(cast(b as decimal(38, 0)) * 100000000000 as double)",
    "cast(a as decimal(12, 2))",
    "cast(b as decimal(20, 1))",
    "cast(a as decimal(5, 2))",
    // 128-bit decimal arithmetic past 128 bits (rows where b is i64::MIN or MAX): Arrow
    // reports an overflow, the kernel must fault.
    "cast(b as decimal(38, 0)) * 1000000000 * cast(b as decimal(38, 0))",
    "cast(b as decimal(38, 0)) * 1000000000 * 10000000000 + cast(b as decimal(38, 0)) * 1000000000 * 10000000000",
    "cast(b as decimal(38, 0)) * 1000000000 * 10000000000 - cast(b as decimal(38, 0)) * -1000000000 * 10000000000",
    "cast(b as decimal(38, 0)) * 1000000000 * 10000000000 + p",
    "cast(b as decimal(38, 0)) * 1000 + p * d",
];

#[expect(
    clippy::expect_used,
    reason = "a test helper building fixed, valid data"
)]
fn random_batch(rows: usize, seed: u64) -> RecordBatch {
    let mut nulls = XorShift64::new(seed);
    let mut next = move || nulls.next_u64();
    let special = [
        f64::NAN,
        -0.0,
        0.0,
        1.5,
        -1.5,
        f64::INFINITY,
        f64::MIN_POSITIVE,
        1e300,
    ];
    let mut values = XorShift64::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut rng = move || values.next_u64();
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut x = Vec::new();
    let mut y = Vec::new();
    let mut p = Vec::new();
    let mut d = Vec::new();
    let mut dt = Vec::new();
    let mut flag = Vec::new();
    let mut q = Vec::new();
    for i in 0..rows {
        let r = rng();
        // One in nine values of each column is NULL.
        let keep: [bool; 9] = std::array::from_fn(|_| next() % 9 != 0);
        a.push(keep[0].then_some(if i % 97 == 0 {
            i32::MAX
        } else {
            (r % 21) as i32 - 10
        }));
        b.push(keep[1].then_some(match i % 50 {
            0 => i64::MAX,
            1 => i64::MIN,
            _ => (r >> 8) as i64 % 1_000_000_007,
        }));
        x.push(keep[2].then_some(if i % 3 == 0 {
            special[(r >> 3) as usize % special.len()]
        } else {
            (r % 10_000) as f64 / 7.0 - 500.0
        }));
        y.push(keep[3].then_some(if i % 5 == 0 {
            special[(r >> 5) as usize % special.len()]
        } else {
            (r >> 20) as f64 % 997.0 - 400.0
        }));
        p.push(keep[4].then_some(if i % 101 == 0 {
            999_999_999_999_999i128
        } else {
            (r % 10_000_000) as i128 - 100_000
        }));
        d.push(keep[5].then_some((r >> 30) as i128 % 11));
        dt.push(keep[6].then_some(8_000 + (r >> 40) as i32 % 2_600));
        flag.push(keep[7].then_some(r % 2 == 0));
        q.push(keep[8].then_some(if i % 89 == 0 {
            0
        } else {
            (r >> 12) as i128 % 2_000_001 - 1_000_000
        }));
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("a", Arc::new(Int32Array::from(a))),
        ("b", Arc::new(Int64Array::from(b))),
        ("x", Arc::new(Float64Array::from(x))),
        ("y", Arc::new(Float64Array::from(y))),
        (
            "p",
            Arc::new(
                Decimal128Array::from(p)
                    .with_precision_and_scale(15, 2)
                    .expect("valid decimal"),
            ),
        ),
        (
            "d",
            Arc::new(
                Decimal128Array::from(d)
                    .with_precision_and_scale(15, 2)
                    .expect("valid decimal"),
            ),
        ),
        ("dt", Arc::new(Date32Array::from(dt))),
        ("flag", Arc::new(BooleanArray::from(flag))),
        (
            "q",
            Arc::new(
                Decimal128Array::from(q)
                    .with_precision_and_scale(7, 3)
                    .expect("valid decimal"),
            ),
        ),
    ];
    RecordBatch::try_from_iter(columns).expect("a valid batch")
}

/// Each row as text (NULL, NaN and -0.0 spelled out), so NaN equals NaN.
#[expect(
    clippy::expect_used,
    reason = "a test helper: every result type formats"
)]
fn rows_as_text(array: &dyn Array) -> Vec<String> {
    let options = FormatOptions::default().with_null("NULL");
    let formatter = ArrayFormatter::try_new(array, &options).expect("formattable");
    (0..array.len())
        .map(|i| formatter.value(i).to_string())
        .collect()
}

#[test]
#[ignore = "needs a GPU"]
fn every_supported_expression_matches_datafusion() {
    let device = GpuDevice::discover(
        0,
        &DeviceOptions {
            kernel_cache_dir: None,
            ..DeviceOptions::default()
        },
    )
    .expect("this test needs a GPU");
    let context = SessionContext::new();
    let mut failures = Vec::new();
    let mut faulted = 0;
    for rows in [0, 1, 7, 1000, 1_000_003] {
        let batch = random_batch(rows, 1 + rows as u64);
        let schema = batch.schema();
        let df_schema = DFSchema::try_from(schema.as_ref().clone()).expect("schema");
        let on_gpu = DeviceBatch::upload(&device, "test", &batch, &LayoutOptions::default())
            .expect("upload");
        for sql in EXPRESSIONS {
            let logical = context.parse_sql_expr(sql, &df_schema).expect("parses");
            let expr = context
                .create_physical_expr(logical, &df_schema)
                .expect("plans");
            let kernel = match expr_kernel(&expr, &schema) {
                Ok(kernel) => kernel,
                Err(reasons) => {
                    failures.push(format!("{sql}: not generated: {reasons:?}"));
                    continue;
                }
            };
            let cpu = expr.evaluate(&batch).and_then(|v| v.into_array(rows));
            let gpu = evaluate_on_gpu(&device, &kernel, &on_gpu);
            let (cpu, gpu) = match (cpu, gpu) {
                (Ok(cpu), Ok(gpu)) => (cpu, gpu),
                (Err(_), Err(DeviceError::RowFault(_))) => {
                    faulted += 1;
                    continue;
                }
                (Err(e), Ok(_)) => {
                    failures.push(format!(
                        "{sql} ({rows} rows): CPU failed ({e}), GPU did not fault"
                    ));
                    continue;
                }
                (_, Err(e)) => {
                    failures.push(format!("{sql} ({rows} rows): GPU failed: {e}"));
                    continue;
                }
            };
            if gpu.data_type() != cpu.data_type() {
                failures.push(format!(
                    "{sql}: GPU type {} != CPU type {}",
                    gpu.data_type(),
                    cpu.data_type()
                ));
                continue;
            }
            let (gpu_rows, cpu_rows) = (rows_as_text(&gpu), rows_as_text(&cpu));
            if let Some(i) = (0..rows).find(|i| gpu_rows[*i] != cpu_rows[*i]) {
                failures.push(format!(
                    "{sql} ({rows} rows): row {i}: GPU {} != CPU {}",
                    gpu_rows[i], cpu_rows[i]
                ));
            }
        }
    }
    println!(
        "{} expressions x 5 batch sizes checked; {faulted} failed alike on both (a zero divisor or an overflow)",
        EXPRESSIONS.len()
    );
    // `a / a`, `b / -1`, `b % 0`, `p / d` and `q / q` fail on the larger batches.
    assert!(faulted >= 10, "only {faulted} row faults");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
