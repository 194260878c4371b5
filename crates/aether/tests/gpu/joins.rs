//! GPU hash joins against the CPU engine, on the same data: inner, left, right and full
//! outer, semi (EXISTS, IN) and anti (NOT EXISTS) joins on integer, date, decimal and
//! multi-column keys, with NULL keys, duplicate keys (skew: 50 distinct values), empty
//! sides and 0 to 10^6 rows a side; string columns of both sides pass through. An
//! aggregate over a join reads the join's batches on the device. Residual conditions
//! (`l.id < r.id`, Q21's `<>` under EXISTS) run on the device for every join type.
//!
//! A module of the `gpu_queries` test binary; it runs with `cargo test --release --test
//! gpu_queries -- --include-ignored joins::`.

use std::sync::Arc;

use aether::AetherContext;
use aether_gpu::random::XorShift64;
use datafusion::arrow::array::{ArrayRef, Decimal128Array, Int32Array, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::physical_plan::displayable;

use super::context;
use super::rows::{comments, compare_rows, dates, draws, flags, float64s, ids, table, values};

/// A random table of `rows` rows whose keys take about `domain` values: `k` (Int64),
/// `g` (Int32, 50 values: every key repeats), `d` (Date32), `m` (Decimal(12, 2)), each
/// NULL about one row in 13.
fn join_table(rows: usize, seed: u64, domain: u64) -> MemTable {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int64, true),
        Field::new("g", DataType::Int32, true),
        Field::new("d", DataType::Date32, true),
        Field::new("m", DataType::Decimal128(12, 2), true),
        Field::new("s", DataType::Utf8View, true),
        Field::new("c", DataType::Utf8View, true),
        Field::new("f", DataType::Float64, true),
    ]));
    table(
        schema,
        rows,
        seed,
        move |random: &mut XorShift64, start, len| {
            let v = draws(random, len);
            let ids = ids(start, len);
            let keys: ArrayRef = Arc::new(Int64Array::from_iter(values(&v, |v| {
                ((v >> 8) % domain) as i64
            })));
            let groups: ArrayRef = Arc::new(Int32Array::from_iter(values(&v, |v| {
                ((v >> 20) % 50) as i32 - 25
            })));
            let money: ArrayRef = Arc::new(
                Decimal128Array::from_iter(values(&v, |v| ((v >> 12) % domain) as i128 * 7 - 300))
                    .with_precision_and_scale(12, 2)
                    .unwrap(),
            );
            vec![
                ids,
                keys,
                groups,
                dates(&v),
                money,
                flags(&v),
                comments(&v),
                float64s(&v),
            ]
        },
    )
}

/// A CPU and a GPU context with `l` and `r` registered.
fn engines(left: MemTable, right: MemTable) -> (AetherContext, AetherContext) {
    let (cpu, gpu) = (context("cpu"), context("gpu"));
    let (left, right): (Arc<dyn TableProvider>, Arc<dyn TableProvider>) =
        (Arc::new(left), Arc::new(right));
    for context in [&cpu, &gpu] {
        let session = context.session();
        session.register_table("l", Arc::clone(&left)).unwrap();
        session.register_table("r", Arc::clone(&right)).unwrap();
    }
    (cpu, gpu)
}

/// Whether the GPU engine's plan of `sql` holds a GPU join.
async fn has_gpu_join(gpu: &AetherContext, sql: &str) -> bool {
    let plan = gpu.physical_plan(sql).await.unwrap();
    displayable(plan.as_ref())
        .indent(true)
        .to_string()
        .contains("GpuHashJoinExec")
}

/// Every join type on one key, where each key matches about one row per side.
const ONE_KEY: &[&str] = &[
    "select l.id, r.id, l.s, r.c, l.m, r.f from l join r on l.k = r.k",
    "select l.id, r.id, l.s, r.s from l left join r on l.k = r.k",
    "select l.id, r.id, l.c, r.d from l right join r on l.k = r.k",
    "select l.id, r.id, l.g, r.g from l full join r on l.k = r.k",
    "select l.id, l.c from l where exists (select 1 from r where r.k = l.k)",
    "select l.id, l.s from l where not exists (select 1 from r where r.k = l.k)",
    "select r.id, r.s from r where r.k in (select k from l)",
    "select r.id from r where not exists (select 1 from l where l.k = r.k)",
    "select l.id, r.id from l join r on l.k = r.k and l.d = r.d",
    "select l.id, r.id, r.m from l join r on l.m = r.m",
    "select count(*), sum(l.id + r.id), min(r.c) from l join r on l.k = r.k",
    "select l.s, count(*), sum(r.m) from l join r on l.k = r.k group by l.s",
];

/// Joins on `g`: 50 distinct keys, so each key matches a fiftieth of the other side.
const DUPLICATE_KEYS: &[&str] = &[
    "select l.id, r.id, l.g from l join r on l.g = r.g",
    "select l.id, r.id from l left join r on l.g = r.g and l.d = r.d",
    "select l.id, r.id from l full join r on l.g = r.g and l.k = r.k",
    "select r.id from r where r.g in (select g from l where l.id % 7 = 0)",
];

async fn compare_joins(left_rows: usize, right_rows: usize, queries: &[&str]) {
    let domain = (left_rows.max(right_rows) as u64).max(10);
    let (cpu, gpu) = engines(
        join_table(left_rows, 7 + left_rows as u64, domain),
        join_table(right_rows, 11 + right_rows as u64, domain),
    );
    for sql in queries {
        let on_gpu = compare_rows(&cpu, &gpu, sql, false).await;
        if left_rows >= 1000 && right_rows >= 1000 {
            assert!(on_gpu, "the GPU ran no part of {sql}");
            assert!(
                has_gpu_join(&gpu, sql).await,
                "no GPU join in the plan of {sql}"
            );
        }
    }
}

#[tokio::test]
#[ignore = "needs a GPU"]
async fn joins_on_one_key_match_the_cpu() {
    for (left, right) in [
        (0, 0),
        (0, 1_000),
        (1_000, 0),
        (1, 1),
        (1_000, 3_000),
        (100_003, 30_011),
        (1_000_003, 500_001),
    ] {
        compare_joins(left, right, ONE_KEY).await;
    }
}

#[tokio::test]
#[ignore = "needs a GPU"]
async fn joins_on_duplicate_keys_match_the_cpu() {
    for (left, right) in [(0, 1_000), (1_000, 0), (1_000, 3_000), (5_000, 2_000)] {
        compare_joins(left, right, DUPLICATE_KEYS).await;
    }
}

/// Joins with a residual (non-equality) condition, on one key and on duplicate keys:
/// every join type, comparisons across the sides of integers, dates, decimals, floats
/// and strings, and the EXISTS / NOT EXISTS with `<>` that TPC-H Q21 plans.
const RESIDUAL: &[&str] = &[
    "select l.id, r.id from l join r on l.g = r.g and l.id < r.id",
    "select l.id, r.id, r.s from l left join r on l.g = r.g and l.f > r.f",
    "select l.id, r.id, l.c from l right join r on l.g = r.g and l.m < r.m",
    "select l.id, r.id from l full join r on l.k = r.k and l.d <> r.d",
    "select l.id, l.s from l where exists (select 1 from r where r.g = l.g and r.id <> l.id)",
    "select l.id from l where not exists (select 1 from r where r.g = l.g and r.d > l.d)",
    "select r.id from r where exists (select 1 from l where l.k = r.k and l.s = 'A')",
    "select r.id from r where not exists (select 1 from l where l.g = r.g and l.m + r.m > 100)",
    "select count(*), sum(l.m) from l join r on l.g = r.g \
     where (l.s = 'A' and r.s in ('B', 'X') and r.m > 10) or (l.s = 'cab' and r.f < 0.5)",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn joins_with_residual_filters_match_the_cpu() {
    for (left, right) in [(0, 1_000), (1_000, 0), (1_000, 3_000), (5_000, 2_000)] {
        compare_joins(left, right, RESIDUAL).await;
    }
}
