//! GPU sorts and top-k against the CPU engine, on the same data, in order: one and many
//! keys, ASC and DESC, NULLS FIRST and LAST, integers at their extremes, floats with
//! NaN, -0.0 and +-inf (Arrow's total order), decimals (18 and 38 digits), dates,
//! booleans, few- and many-valued strings, a `LIMIT` (top-k), and sorts over a GPU
//! aggregate, a row segment and a join; 0 to 10^6 rows. `id` ends every key list, so
//! each order is total and the rows must come back in exactly the CPU's order.
//!
//! A module of the `gpu_queries` test binary; it runs with `cargo test --release --test
//! gpu_queries -- --include-ignored sorts::`.

use datafusion::physical_plan::displayable;

use super::rows::{compare_rows, engines, random_table};

const SORTS: &[&str] = &[
    "select id, a from t order by a, id",
    "select id, b from t order by b desc, id",
    "select id, a from t order by a nulls first, id desc",
    "select id, f from t order by f, id",
    "select id, f from t order by f desc nulls last, id",
    "select id, p, dt from t order by p desc, dt, id",
    "select id, dt from t order by dt nulls first, id",
    "select id, s, c from t order by s, c desc, id",
    "select id, c from t order by c nulls first, id",
    "select id, ok, a from t order by ok desc, a, id",
    "select s, id, w from t order by s desc nulls last, id",
    // 128-bit decimals (up to +-(10^38 - 1)): two words, high half signed.
    "select id, w from t order by w, id",
    "select id, w, a from t order by w desc nulls first, a, id",
    "select s, sum(p) as total from t group by s order by total desc, s",
    // Top-k: a LIMIT pushed into the sort.
    "select id, c, f from t order by c, id limit 100",
    "select id, p from t order by p desc, id limit 10",
    "select id, a from t order by a, id limit 1",
    // Over a GPU aggregate, a row segment and a join.
    "select s, count(*) as n, sum(p) from t group by s order by n desc, s",
    "select a, min(b), max(dt) from t group by a order by a desc nulls first",
    "select id, a, s from t where a > 10 order by s, a desc, id",
    "select t.id, u.id, t.s from t join t as u on t.a = u.b where t.id % 97 = 0 order by t.s, t.id, u.id limit 500",
];

/// Whether the GPU engine's plan of `sql` holds a GPU sort.
async fn has_gpu_sort(gpu: &aether::AetherContext, sql: &str) -> bool {
    let plan = gpu.physical_plan(sql).await.unwrap();
    displayable(plan.as_ref())
        .indent(true)
        .to_string()
        .contains("GpuSortExec")
}

#[tokio::test]
#[ignore = "needs a GPU"]
async fn sorts_return_the_cpu_order() {
    for rows in [0usize, 1, 1_000, 100_003, 1_000_003] {
        let (cpu, gpu) = engines(random_table(rows, 5 + rows as u64));
        for sql in SORTS {
            let on_gpu = compare_rows(&cpu, &gpu, sql, true).await;
            assert!(
                has_gpu_sort(&gpu, sql).await,
                "no GPU sort in the plan of {sql}"
            );
            if rows > 0 {
                assert!(on_gpu, "the GPU ran no part of {sql}");
            }
        }
        println!(
            "sorts, {rows} rows: {} queries in the CPU's order",
            SORTS.len()
        );
    }
}
