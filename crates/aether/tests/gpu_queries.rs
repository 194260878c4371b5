//! Queries on the GPU engine against the CPU engine, on the same data: random tables
//! (NULLs, NaN, -0.0, extreme decimals, strings, 1 to 10^6+ groups) and TPC-H. The
//! `rows` module tests segments that return rows (filters and projections), the `joins`
//! module hash joins, the `sorts` module sorts and top-k.
//!
//! Needs a GPU: every test is `#[ignore = "needs a GPU"]`, so CI lists them as ignored.
//! On a GPU host: `cargo test --release --test gpu_queries -- --include-ignored`
//! (`AETHER_GPU_TPCH_SF` sets the TPC-H scale factor, 1 by default).

#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "gpu/joins.rs"]
mod joins;
#[path = "gpu/rows.rs"]
mod rows;
#[path = "gpu/sorts.rs"]
mod sorts;

use std::sync::Arc;

use aether::tpch::{QUERY_NUMBERS, query_sql, register_tpch};
use aether::{AetherContext, Setting};
use aether_gpu::random::XorShift64;
use datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringViewArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;

fn context(engine: &str) -> AetherContext {
    let settings = [Setting {
        key: "aether.engine".into(),
        value: engine.into(),
    }];
    AetherContext::with_settings(&settings).unwrap().0
}

/// Rows as text, sorted, with float columns kept apart for a tolerant comparison.
fn rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    rows::cells(batches, true)
}

fn same_value(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if a.contains('.') || a.contains('e') || b.contains('e') => {
            (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => false,
    }
}

/// Runs `sql` on both engines and asserts equal results; returns whether the GPU ran
/// part of it.
async fn compare(cpu: &AetherContext, gpu: &AetherContext, sql: &str) -> bool {
    let expected = cpu.run_script(sql).await.unwrap();
    let actual = gpu.run_script(sql).await.unwrap();
    let on_gpu = actual
        .placements
        .iter()
        .any(|p| p.gpu_nodes() > 0 && p.whole_plan.is_none());
    let (expected, actual) = (rows(&expected.batches), rows(&actual.batches));
    if expected.len() != actual.len() {
        let extra: Vec<_> = actual
            .iter()
            .filter(|row| expected.binary_search(row).is_err())
            .take(5)
            .collect();
        let missing: Vec<_> = expected
            .iter()
            .filter(|row| actual.binary_search(row).is_err())
            .take(5)
            .collect();
        panic!(
            "row counts differ for {sql}: CPU {}, GPU {}\nonly on the GPU: {extra:?}\nonly on the CPU: {missing:?}",
            expected.len(),
            actual.len()
        );
    }
    for (e, a) in expected.iter().zip(&actual) {
        let equal = e.len() == a.len() && e.iter().zip(a).all(|(x, y)| same_value(x, y));
        assert!(equal, "{sql}\nCPU: {e:?}\nGPU: {a:?}");
    }
    on_gpu
}

/// A random table of `rows` rows: NULLs everywhere, NaN and -0.0 among the floats,
/// decimals at the edges of precision 15 and 38, few- and many-valued keys.
fn random_table(rows: usize, seed: u64) -> MemTable {
    let mut random = XorShift64::new(seed);
    let mut next = move || random.next_u64();
    let schema = Arc::new(Schema::new(vec![
        Field::new("k_small", DataType::Int32, true),
        Field::new("k_large", DataType::Int64, false),
        Field::new("flag", DataType::Utf8View, true),
        Field::new("d", DataType::Date32, true),
        Field::new("price", DataType::Decimal128(15, 2), true),
        Field::new("wide", DataType::Decimal128(38, 4), true),
        Field::new("x", DataType::Float64, true),
        Field::new("n", DataType::Int64, true),
    ]));
    let mut batches = Vec::new();
    let mut made = 0;
    while made < rows {
        let len = (rows - made).min(65_536);
        let mut cols: Vec<ArrayRef> = Vec::new();
        let null = |v: u64| v.is_multiple_of(13);
        cols.push(Arc::new(Int32Array::from_iter((0..len).map(|_| {
            let v = next();
            (!null(v)).then_some((v % 7) as i32 - 3)
        }))));
        cols.push(Arc::new(Int64Array::from_iter_values(
            (0..len).map(|_| (next() % 1_500_000) as i64),
        )));
        let flags = ["A", "N", "R", "", "a longer flag value than twelve bytes"];
        cols.push(Arc::new(StringViewArray::from_iter((0..len).map(|_| {
            let v = next();
            (!null(v)).then(|| flags[(v % 5) as usize])
        }))));
        cols.push(Arc::new(Date32Array::from_iter((0..len).map(|_| {
            let v = next();
            (!null(v)).then_some((v % 3000) as i32 + 8000)
        }))));
        let max15 = 999_999_999_999_999i128;
        cols.push(Arc::new(
            Decimal128Array::from_iter((0..len).map(|_| {
                let v = next();
                (!null(v)).then(|| match v % 50 {
                    0 => max15,
                    1 => -max15,
                    _ => (v % 10_000_000) as i128 - 5_000_000,
                })
            }))
            .with_precision_and_scale(15, 2)
            .unwrap(),
        ));
        cols.push(Arc::new(
            Decimal128Array::from_iter((0..len).map(|_| {
                let v = next();
                (!null(v)).then(|| (v as i128) * 1_000_000_007 - (1i128 << 90))
            }))
            .with_precision_and_scale(38, 4)
            .unwrap(),
        ));
        cols.push(Arc::new(Float64Array::from_iter((0..len).map(|_| {
            let v = next();
            (!null(v)).then(|| match v % 100 {
                0 => f64::NAN,
                1 => -0.0,
                2 => 0.0,
                3 => f64::INFINITY,
                _ => (v % 1_000_000) as f64 / 7.0 - 70_000.0,
            })
        }))));
        cols.push(Arc::new(Int64Array::from_iter((0..len).map(|_| {
            let v = next();
            (!null(v)).then_some(v as i64 >> 3)
        }))));
        batches.push(RecordBatch::try_new(Arc::clone(&schema), cols).unwrap());
        made += len;
    }
    // Eight partitions, as DataFusion would read them on eight cores.
    let mut partitions = vec![Vec::new(); 8];
    for (i, batch) in batches.into_iter().enumerate() {
        partitions[i % 8].push(batch);
    }
    MemTable::try_new(schema, partitions).unwrap()
}

const AGGREGATES: &[&str] = &[
    "select count(*), sum(price), sum(n), sum(x), min(x), max(x), avg(price), avg(x), min(d), max(price) from t",
    "select k_small, count(*), sum(price), avg(price), min(price), max(price), count(x) from t group by k_small",
    "select flag, k_small, sum(wide), count(wide), sum(n), min(n), max(n), avg(n) from t group by flag, k_small",
    "select d, sum(price * 2), count(*) from t where x > 0 group by d",
    "select flag, sum(price) from t where price between -100000 and 100000 and flag is not null group by flag",
    "select k_large, sum(price), count(*) from t group by k_large",
    // Grouped float MIN/MAX compare without NaN: DataFusion's grouped accumulator lets
    // the value after a NaN replace it (row-order dependent), while the GPU follows
    // Spark's order, NaN largest (as DataFusion's ungrouped MIN/MAX also do).
    "select k_large, flag, count(*), max(x), min(x) from t where n is not null and x < 1e300 group by k_large, flag",
    "select x, count(*) from t where k_small = 1 group by x",
    "select sum(price) from t where d < date '1900-01-01'",
    "select k_small, sum(case when x > 0 then price else 0 end), count(case when n > 0 then 1 end) from t group by k_small",
    "select k_small, count(*), sum(price) from t where flag = 'A' or flag like '%twelve%' group by k_small",
    "select flag, sum(price), count(*) from t where flag in ('N', 'R', '') and x > 0 group by flag",
    "select count(case when flag like 'a%' then 1 end), sum(case when flag is null then n end) from t",
    "select k_small, sum(price) from t where d < date '1900-01-01' group by k_small",
    // Division and remainder by columns that are never zero, and by constants.
    "select flag, sum(price / 7), sum(price / (k_small * k_small + 1)), sum(n / (k_small * k_small + 1)), sum(n % 5), sum(x % 3.5) from t where k_small is not null group by flag",
    "select k_small, sum(price / (k_small + 4)), count(*) from t where k_small > -4 group by k_small",
    // Casts compared exactly through MIN and MAX (a float sum's order would blur them);
    // `wide` reaches past 64 bits.
    "select flag, max(cast(price as double)), min(cast(wide as double)), max(cast(wide as float)), sum(cast(k_small as decimal(12, 2))), max(cast(n as double)) from t group by flag",
    // A zero divisor in a CASE branch the CPU never takes: the kernel faults and the
    // segment runs on the CPU, which returns its result.
    "select k_small, sum(case when k_small <> 0 then n / k_small end), sum(case when k_small <> 0 then price / k_small end) from t group by k_small",
    // MIN and MAX of 38-digit decimals (values past 64 bits, negative, NULL): few
    // groups (contended 128-bit compare-and-swap), none, many, and over a sum (Q15).
    "select flag, k_small, min(wide), max(wide), count(*) from t group by flag, k_small",
    "select min(wide), max(wide), count(wide) from t",
    "select k_large, min(wide), max(wide) from t group by k_large",
    "select max(s), min(s) from (select k_large, sum(wide) s from t group by k_large)",
    // String functions of a coded column as group keys: grouped by their results'
    // codes, decoded through the results' own dictionary (NULL flags stay NULL).
    "select substr(flag, 1, 2), count(*), sum(price) from t group by substr(flag, 1, 2)",
    "select upper(flag) u, k_small, min(n), count(x) from t where x > 0 group by upper(flag), k_small",
    // A whole aggregate on the GPU under a join: its hash partitioning is restored.
    "select count(*), sum(s.c), sum(s.p), min(s.a), max(s.a) from t join (select k_large, count(*) c, sum(price) p, avg(price) a from t group by k_large) s on t.k_large = s.k_large where t.k_small = 1",
];

/// Queries that divide by zero on some row of the larger tables: both engines must
/// fail with the same error (or, on tables without such a row, agree).
const DIVIDING_BY_ZERO: &[&str] = &[
    "select k_small, sum(n / k_small) from t group by k_small",
    "select sum(price / k_small) from t",
    "select flag, sum(n % k_small) from t group by flag",
];

#[tokio::test]
#[ignore = "needs a GPU"]
async fn random_aggregates_match_the_cpu() {
    for rows in [0usize, 1, 1_000, 1_000_003, 3_000_000] {
        let (cpu, gpu) = (context("cpu"), context("gpu"));
        for context in [&cpu, &gpu] {
            context
                .session()
                .register_table("t", Arc::new(random_table(rows, 42 + rows as u64)))
                .unwrap();
        }
        for sql in AGGREGATES {
            let on_gpu = compare(&cpu, &gpu, sql).await;
            assert!(on_gpu, "{sql} did not run on the GPU");
        }
        let mut failed_alike = 0;
        for sql in DIVIDING_BY_ZERO {
            match (cpu.run_script(sql).await, gpu.run_script(sql).await) {
                (Err(cpu_error), Err(gpu_error)) => {
                    let (cpu_error, gpu_error) = (cpu_error.to_string(), gpu_error.to_string());
                    assert!(cpu_error.contains("Divide by zero"), "{sql}: {cpu_error}");
                    assert!(gpu_error.contains("Divide by zero"), "{sql}: {gpu_error}");
                    failed_alike += 1;
                }
                (Ok(_), Ok(_)) => assert!(compare(&cpu, &gpu, sql).await),
                (cpu_result, gpu_result) => panic!(
                    "{sql}: CPU {:?}, GPU {:?}",
                    cpu_result.map(|_| "ok"),
                    gpu_result.map(|_| "ok")
                ),
            }
        }
        if rows >= 1_000 {
            assert_eq!(failed_alike, DIVIDING_BY_ZERO.len(), "{rows} rows");
        }
        println!(
            "random aggregates, {rows} rows: {} queries identical, {failed_alike} failing alike",
            AGGREGATES.len()
        );
    }
}

/// A table of `rows` rows with a many-valued name (three rows each), a
/// few-valued flag with NULLs and a number; its name arrays are returned too.
fn named_table(rows: usize, tag: &str) -> (MemTable, Vec<ArrayRef>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8View, true),
        Field::new("flag", DataType::Utf8View, true),
        Field::new("n", DataType::Int64, false),
    ]));
    let mut partitions = vec![Vec::new(); 4];
    let mut names = Vec::new();
    for start in (0..rows).step_by(10_000) {
        let range = start..(start + 10_000).min(rows);
        let name: ArrayRef =
            Arc::new(StringViewArray::from_iter(range.clone().map(|i| {
                (i % 17 != 5).then(|| format!("{tag} customer {:>9}", i - i % 3))
            })));
        let flag: ArrayRef = Arc::new(StringViewArray::from_iter(
            range
                .clone()
                .map(|i| (i % 11 != 0).then(|| ["F", "O", "P"][i % 3])),
        ));
        let n: ArrayRef = Arc::new(Int64Array::from_iter_values(range.map(|i| i as i64)));
        names.push(Arc::clone(&name));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![name, flag, n]).unwrap();
        partitions[start / 10_000 % 4].push(batch);
    }
    (MemTable::try_new(schema, partitions).unwrap(), names)
}

/// An in-memory table's string codes are kept after its first upload and serve the
/// next queries; a table registered again under the same name is coded anew.
#[tokio::test]
#[ignore = "needs a GPU"]
async fn kept_string_codes_serve_later_queries_and_never_a_replaced_table() {
    use aether_exec::ops::StringCodeCache;
    let queries = [
        "select name, count(*), sum(n) from t group by name",
        "select flag, name, max(n) from t where n % 7 = 1 group by flag, name",
        "select flag, count(*) from t where name like '%customer   1%' group by flag",
    ];
    let (cpu, gpu) = (context("cpu"), context("gpu"));
    for (tag, rows) in [("first", 250_003), ("second", 120_000)] {
        let (table, names) = named_table(rows, tag);
        let table: Arc<dyn datafusion::catalog::TableProvider> = Arc::new(table);
        for context in [&cpu, &gpu] {
            let _ = context.session().deregister_table("t");
            context
                .session()
                .register_table("t", Arc::clone(&table))
                .unwrap();
        }
        for _ in 0..2 {
            for sql in queries {
                assert!(
                    compare(&cpu, &gpu, sql).await,
                    "{sql} did not run on the GPU"
                );
            }
        }
        assert!(
            StringCodeCache::shared().contains(&names),
            "the {tag} table's names are not kept"
        );
    }
}

/// A filter testing a many-valued string column it does not return runs on the host
/// as the upload reads the table (the column is never sent), under an aggregate, a
/// join and a sort alike, with the CPU's answers.
#[tokio::test]
#[ignore = "needs a GPU"]
async fn filters_testing_strings_they_drop_run_as_the_table_is_read() {
    let queries = [
        "select flag, count(*), sum(n) from t where name not like '%customer   1%' group by flag",
        "select a.flag, count(*) from t a join t b on a.n = b.n + 1 \
         where a.name like '%7%' group by a.flag",
        "select n, flag from t where name like '%customer%2' and n > 1000 order by n limit 50",
    ];
    let (cpu, gpu) = (context("cpu"), context("gpu"));
    let (table, _) = named_table(180_001, "host");
    let table: Arc<dyn datafusion::catalog::TableProvider> = Arc::new(table);
    for context in [&cpu, &gpu] {
        context
            .session()
            .register_table("t", Arc::clone(&table))
            .unwrap();
    }
    for sql in queries {
        assert!(
            compare(&cpu, &gpu, sql).await,
            "{sql} did not run on the GPU"
        );
        let explained = gpu.run_script(&format!("explain {sql}")).await.unwrap();
        let text = rows(&explained.batches).concat().join("\n");
        assert!(
            text.contains("its filter on the host"),
            "{sql}: no filter on the host in\n{text}"
        );
    }
}

/// A context on `engine` with more target partitions than the random table has, so
/// DataFusion puts a round-robin exchange between the scan and the aggregate.
fn wide_context(engine: &str) -> AetherContext {
    let settings = [
        ("aether.engine", engine),
        ("datafusion.execution.target_partitions", "32"),
    ]
    .map(|(key, value)| Setting {
        key: key.into(),
        value: value.into(),
    });
    AetherContext::with_settings(&settings).unwrap().0
}

/// A segment whose input is a round-robin exchange, shared by every output partition
/// (on the GPU the exchange collapses into the upload; the CPU fallback keeps it):
/// when the kernel faults, the CPU fallback runs the whole input again (after the plan's
/// state is reset) and returns DataFusion's answer or error, never a partial one.
#[tokio::test]
#[ignore = "needs a GPU"]
async fn a_fault_over_a_round_robin_exchange_falls_back_whole() {
    let (cpu, gpu) = (wide_context("cpu"), wide_context("gpu"));
    for context in [&cpu, &gpu] {
        context
            .session()
            .register_table("t", Arc::new(random_table(1_000_003, 7)))
            .unwrap();
    }
    let guarded = "select k_small, sum(case when k_small <> 0 then n / k_small end), count(*) from t group by k_small";
    let plan = gpu.physical_plan(guarded).await.unwrap();
    let mut fallbacks = String::new();
    datafusion::common::tree_node::TreeNode::apply(&plan, |node| {
        if let Some(exit) = node.downcast_ref::<aether_exec::ops::DeviceToHostExec>() {
            let fallback = datafusion::physical_plan::displayable(exit.fallback().as_ref());
            fallbacks.push_str(&fallback.indent(true).to_string());
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    })
    .unwrap();
    let plan = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    assert!(
        fallbacks.contains("RoundRobinBatch(32)") && plan.contains("GpuSegmentExec: aggregate"),
        "{plan}\nfallbacks:\n{fallbacks}"
    );
    for _ in 0..2 {
        assert!(
            compare(&cpu, &gpu, guarded).await,
            "{guarded} did not run on the GPU"
        );
        for sql in DIVIDING_BY_ZERO {
            let error = gpu
                .run_script(sql)
                .await
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(error.contains("Divide by zero"), "{sql}: {error}");
        }
    }
    println!("a fault over a round-robin exchange: the CPU's answer and errors, twice");
}

#[tokio::test]
#[ignore = "needs a GPU"]
async fn tpch_on_the_gpu_matches_the_cpu() {
    let sf: f64 = std::env::var("AETHER_GPU_TPCH_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let (cpu, gpu) = (context("cpu"), context("gpu"));
    register_tpch(&cpu, sf).unwrap();
    register_tpch(&gpu, sf).unwrap();
    let (mut moved, mut with_rows) = (Vec::new(), Vec::new());
    for n in QUERY_NUMBERS {
        let sql = query_sql(n, sf).unwrap();
        if compare(&cpu, &gpu, &sql).await {
            moved.push(n);
        }
        // Q15 is a script (create view, query, drop view): no single plan to look at.
        if n != 15 && rows::has_row_segment(&gpu, &sql).await {
            with_rows.push(n);
        }
    }
    println!(
        "TPC-H SF{sf}: 22 queries identical on both engines; parts on the GPU: {moved:?}; row segments: {with_rows:?}"
    );
    assert!(moved.contains(&1) && moved.contains(&6), "{moved:?}");
    assert!(
        with_rows.iter().any(|n| ![1, 6].contains(n)),
        "no row segment under a join: {with_rows:?}"
    );

    // Run twice more (Q15's view emptied the cache): the second run of each comes
    // from the plan cache and gives the same rows.
    let hits = gpu.plan_cache_hits();
    for n in [1, 6] {
        let sql = query_sql(n, sf).unwrap();
        for _ in 0..2 {
            assert!(compare(&cpu, &gpu, &sql).await);
        }
    }
    assert_eq!(gpu.plan_cache_hits(), hits + 2);

    // Q1's aggregate is whole on the GPU: no exchange, no CPU final aggregate.
    let q1 = gpu.physical_plan(&query_sql(1, sf).unwrap()).await.unwrap();
    let q1 = datafusion::physical_plan::displayable(q1.as_ref())
        .indent(true)
        .to_string();
    assert!(
        q1.contains("GpuSegmentExec: aggregate")
            && q1.contains("AggregateExec: mode=Single,")
            && !q1.contains("AggregateExec: mode=Final")
            && !q1.contains("RepartitionExec"),
        "{q1}"
    );
}
