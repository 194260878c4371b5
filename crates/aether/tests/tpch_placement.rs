//! The GPU placement of the 22 TPC-H queries, snapshot-tested.
//!
//! Plans are made in explain-only mode with `--engine gpu` (every supported part moves,
//! no cost model), so the report is the same with or without a GPU and CI checks it.
//! Every node kept on the CPU must say why. After an intended change, regenerate with
//! `UPDATE_SNAPSHOTS=1 cargo test --release --test tpch_placement` and review the diff.

#![allow(clippy::unwrap_used, clippy::panic)]

use aether::tpch::{QUERY_NUMBERS, query_sql, register_tpch};
use aether::{AetherContext, ScriptMode, Setting};
use aether_exec::placement::ExplainFilter;

const SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/snapshots/tpch_placement.txt"
);

#[tokio::test]
async fn every_tpch_query_shows_its_placement_with_reasons() {
    let context = explain_only_gpu_context("4");
    let mut text = String::new();
    let (mut on_gpu, mut operators) = (0, 0);
    for n in QUERY_NUMBERS {
        let sql = query_sql(n, 0.01).unwrap();
        let output = context.script(&sql, ScriptMode::Explain).await.unwrap();
        let report = output
            .placements
            .iter()
            .max_by_key(|r| r.lines.len())
            .unwrap();
        let rendered = report.render(ExplainFilter::All);
        for line in rendered.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('!') || trimmed.starts_with('$') {
                let (_, why) = line.split_once(" because ").unwrap_or(("", ""));
                assert!(
                    !why.trim().is_empty(),
                    "Q{n}: a CPU node without a reason: {line}"
                );
            }
        }
        on_gpu += report.gpu_nodes();
        operators += report.exec_nodes();
        text.push_str(&format!("-- Q{n}\n{rendered}\n"));
    }
    text.push_str(&format!(
        "-- all 22 queries: {on_gpu} of {operators} operators will run on GPU\n"
    ));
    assert!(
        text.contains("*Exec <AggregateExec> will run on GPU"),
        "{text}"
    );
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(SNAPSHOT, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
    if expected != text {
        let first = expected
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "the TPC-H placement changed (first difference at line {}): now\n{}\n\
             rerun with UPDATE_SNAPSHOTS=1 if intended",
            first + 1,
            text.lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Every kernel the 22 TPC-H plans generate, and the fixed hash-join and sort kernels,
/// compile with NVRTC for the H100's and H200's architecture (sm_90): NVRTC needs no
/// GPU, so a change generating invalid CUDA fails here, not first on a GPU host. Runs
/// where NVRTC can be loaded (CI installs it from PyPI, see `.ci/run`, and sets
/// `AETHER_REQUIRE_NVRTC`, which turns a missing NVRTC into a failure).
#[tokio::test]
async fn every_generated_kernel_compiles_with_nvrtc() {
    if !aether_gpu::compile::nvrtc_present() {
        assert!(
            std::env::var_os("AETHER_REQUIRE_NVRTC").is_none(),
            "AETHER_REQUIRE_NVRTC is set, but NVRTC (libnvrtc.so) cannot be loaded: \
             is its directory on LD_LIBRARY_PATH?"
        );
        eprintln!("NVRTC not found: the generated kernels were not compiled (see .ci/run)");
        return;
    }
    aether_exec::codegen::generated::start_keeping();
    let context = explain_only_gpu_context("4");
    for n in QUERY_NUMBERS {
        let sql = query_sql(n, 0.01).unwrap();
        context.script(&sql, ScriptMode::Explain).await.unwrap();
    }
    let generated = aether_exec::codegen::generated::take_kept();
    // At least one kernel a query (placement generates several for most).
    assert!(generated.len() >= 22, "{} kernels", generated.len());
    let mut sources: Vec<(String, &str)> = generated
        .iter()
        .enumerate()
        .map(|(i, source)| (format!("generated_{i}"), source.as_str()))
        .collect();
    sources.extend(
        aether_exec::ops::FIXED_KERNEL_SOURCES
            .iter()
            .map(|(name, source)| ((*name).to_string(), *source)),
    );
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .chunks(sources.len().div_ceil(threads))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(name, source)| {
                            aether_gpu::compile::compile_cubin(source, name, "sm_90")
                                .err()
                                .map(|e| format!("{name}: {e}\n{source}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} kernels failed to compile:\n{}",
        failures.len(),
        sources.len(),
        failures.join("\n\n")
    );
    println!("{} kernels compiled for sm_90", sources.len());
}

/// A context placing with `--engine gpu` in explain-only mode over `partitions`
/// partitions, with TPC-H at SF 0.01 registered.
fn explain_only_gpu_context(partitions: &str) -> AetherContext {
    let settings: Vec<Setting> = [
        ("aether.engine", "gpu"),
        ("aether.sql.mode", "explainOnly"),
        ("datafusion.execution.target_partitions", partitions),
    ]
    .iter()
    .map(|(key, value)| Setting {
        key: (*key).into(),
        value: (*value).into(),
    })
    .collect();
    let (context, _) = AetherContext::with_settings(&settings).unwrap();
    register_tpch(&context, 0.01).unwrap();
    context
}

/// The placement report of `sql` with `--engine gpu` in explain-only mode, one partition.
async fn gpu_report(sql: &str) -> String {
    let context = explain_only_gpu_context("1");
    let output = context.script(sql, ScriptMode::Explain).await.unwrap();
    output
        .placements
        .iter()
        .max_by_key(|r| r.lines.len())
        .unwrap()
        .render(ExplainFilter::All)
}

#[tokio::test]
async fn a_filter_and_projection_return_rows_from_the_gpu() {
    let report = gpu_report(
        "select l_orderkey, l_extendedprice * (1 - l_discount) from lineitem where l_shipmode = 'AIR'",
    )
    .await;
    assert!(
        report.contains("*Exec <FilterExec> will run on GPU"),
        "{report}"
    );
    assert!(
        report.contains("*Exec <ProjectionExec> will run on GPU"),
        "{report}"
    );
    assert!(
        report.contains("*Exec <DataSourceExec> will run on GPU"),
        "{report}"
    );
    assert!(
        report.contains("3 of 3 operators will run on GPU"),
        "{report}"
    );
}

#[tokio::test]
async fn a_limit_pushed_into_a_filter_keeps_it_on_the_cpu() {
    // On one partition DataFusion moves the LIMIT into the filter (`fetch=5`) and drops
    // the limit operator: a segment ignoring the limit would return every row.
    let report =
        gpu_report("select l_orderkey + 1 from lineitem where l_quantity > 10 limit 5").await;
    assert!(
        report.contains("stops after a row limit") || report.contains("LimitExec"),
        "{report}"
    );
}

#[tokio::test]
async fn an_equi_join_on_integer_keys_runs_on_the_gpu_with_its_exchanges() {
    let report =
        gpu_report("select o_orderkey, c_name from orders join customer on o_custkey = c_custkey")
            .await;
    assert!(
        report.contains("*Exec <HashJoinExec> will run on GPU"),
        "{report}"
    );
}

#[tokio::test]
async fn joins_the_gpu_cannot_run_say_why() {
    let strings =
        gpu_report("select o_orderkey from orders join customer on o_comment = c_comment").await;
    assert!(
        strings.contains("!Exec <HashJoinExec>") && strings.contains("codes shared by both sides"),
        "{strings}"
    );
    let residual = gpu_report(
        "select o_orderkey from orders join customer on o_custkey = c_custkey \
         and o_comment < c_comment",
    )
    .await;
    assert!(
        residual.contains("!Exec <HashJoinExec>") && residual.contains("its residual filter"),
        "{residual}"
    );
}

#[tokio::test]
async fn a_join_with_a_residual_condition_runs_on_the_gpu() {
    let report = gpu_report(
        "select o_orderkey from orders join customer on o_custkey = c_custkey and o_totalprice > c_acctbal",
    )
    .await;
    assert!(
        report.contains("*Exec <HashJoinExec> will run on GPU"),
        "{report}"
    );
}

#[tokio::test]
async fn a_sort_runs_on_the_gpu_with_its_merge() {
    let report = gpu_report(
        "select o_orderkey, o_orderdate from orders where o_totalprice > 1000 \
         order by o_orderdate desc, o_orderkey limit 10",
    )
    .await;
    for operator in ["SortExec(TopK)", "FilterExec", "DataSourceExec"] {
        assert!(
            report.contains(&format!("*Exec <{operator}> will run on GPU")),
            "{operator}: {report}"
        );
    }
    let four = explain_only_gpu_context("4");
    let output = four
        .script(
            "select o_orderpriority, count(*) from orders group by o_orderpriority order by 1",
            ScriptMode::Explain,
        )
        .await
        .unwrap();
    let report = output.placements[0].render(ExplainFilter::All);
    assert!(
        report.contains("*Exec <SortPreservingMergeExec> will run on GPU")
            && report.contains("*Exec <SortExec> will run on GPU")
            && !report.contains("!Exec"),
        "{report}"
    );
}

#[tokio::test]
async fn sorts_the_gpu_cannot_run_say_why() {
    let report = gpu_report("select o_orderkey from orders order by o_totalprice * 2").await;
    assert!(
        report.contains("!Exec <SortExec>") && report.contains("computed"),
        "{report}"
    );
}

#[tokio::test]
async fn a_complete_aggregate_runs_on_the_gpu() {
    // With one partition DataFusion plans `mode=Single`: partial and final in one step,
    // which the GPU aggregate computes as it computes a final aggregate.
    let report =
        gpu_report("select o_custkey, count(*), avg(o_totalprice) from orders group by o_custkey")
            .await;
    assert!(
        report.contains("*Exec <AggregateExec> will run on GPU"),
        "{report}"
    );
}

#[tokio::test]
async fn a_one_row_placeholder_stays_on_the_cpu() {
    // `SELECT` without `FROM` reads DataFusion's placeholder row, whose batch holds a
    // column its schema does not name: nothing for the GPU to upload.
    let report = gpu_report("select 1 + 2 as three").await;
    assert!(
        !report
            .lines()
            .any(|line| line.trim_start().starts_with('*'))
            && report.contains("its input has no columns"),
        "{report}"
    );
}
