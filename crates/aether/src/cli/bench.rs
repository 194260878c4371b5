//! `aether bench tpch`: a warm-up, then timed runs of each query; a table for people and
//! JSON for machines.
//!
//! Tables come from memory (generated at `--sf`) or from Parquet written by
//! `aether datagen` (`--data DIR`). Every run goes through the same query text as the
//! answer tests, and at scale factor 1 each result is checked against the official
//! answer, so a fast wrong answer never reads as a win.

use std::path::PathBuf;
use std::time::Instant;

use aether_exec::ops::StringCodeCache;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::{Benchmark, CommonArgs, format_ms};
use crate::context::AetherContext;
use crate::error::{AetherError, Result};
use crate::table_spec::{TableSpec, register_table};
use crate::tpch::{
    TpchTable, check_sf1_answer, explain_analyze, parse_query_list, register_tpch, run_query,
};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark to run.
    benchmark: Benchmark,
    /// Scale factor of generated data; with --data it is read from the data instead.
    #[arg(long, value_name = "SF", default_value_t = 1.0)]
    sf: f64,
    /// Read the tables from Parquet written by `aether datagen` instead of generating them.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Queries to run, e.g. 1,6 or 1-5,9 (default: all 22).
    #[arg(long, value_name = "LIST")]
    queries: Option<String>,
    /// Timed runs per query, after one warm-up run.
    #[arg(long, value_name = "K", default_value_t = 3)]
    iterations: usize,
    /// Keep the inputs of GPU segments on the GPU across runs (uploaded by the warm-up),
    /// so timed runs skip PCIe: the GPU-resident case.
    #[arg(long)]
    resident: bool,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// After the timed runs, run each query once more under `EXPLAIN ANALYZE` and write
    /// its annotated plan (rows and time per operator) to DIR/qN.txt.
    #[arg(long, value_name = "DIR")]
    explain_analyze: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

/// One query's timings, as written to the JSON report.
#[derive(Debug, Serialize)]
struct QueryReport {
    query: usize,
    rows: usize,
    times_ms: Vec<f64>,
    min_ms: f64,
    median_ms: f64,
    max_ms: f64,
    /// `ok`, `wrong: ...`, or `unchecked` (answers exist only for SF1).
    answer: String,
    /// `GPU+CPU` when part of the query ran on the GPU, else `CPU`.
    ran_on: &'static str,
    /// The placement report (every node).
    placement: String,
}

/// The whole JSON report.
#[derive(Debug, Serialize)]
struct BenchReport {
    benchmark: &'static str,
    scale_factor: f64,
    engine: String,
    resident: bool,
    data: String,
    iterations: usize,
    cores: usize,
    target_partitions: usize,
    aether_version: &'static str,
    datafusion_version: &'static str,
    load_seconds: f64,
    /// Host bytes of in-memory tables' string codes kept for GPU uploads after the
    /// run, and their budget (`aether_exec::ops::StringCodeCache`).
    kept_string_code_bytes: usize,
    string_code_budget_bytes: usize,
    queries: Vec<QueryReport>,
    total_min_ms: f64,
    total_median_ms: f64,
}

pub async fn run(args: BenchArgs) -> Result<()> {
    let Benchmark::Tpch = args.benchmark;
    if args.iterations == 0 {
        return Err(AetherError::Usage("--iterations must be at least 1".into()));
    }
    let queries = match &args.queries {
        Some(list) => parse_query_list(list)?,
        None => crate::tpch::QUERY_NUMBERS.collect(),
    };
    let context = args.common.context()?;
    context.set_resident(args.resident);
    let load_start = Instant::now();
    let (scale_factor, data) = match &args.data {
        Some(dir) => (
            register_parquet_tpch(&context, dir).await?,
            dir.display().to_string(),
        ),
        None => {
            eprintln!("Generating TPC-H at scale factor {} in memory...", args.sf);
            (
                register_tpch(&context, args.sf)?.scale_factor,
                "memory".to_string(),
            )
        }
    };
    let load_seconds = load_start.elapsed().as_secs_f64();
    eprintln!("Tables ready in {load_seconds:.1} s (scale factor {scale_factor}).");

    let progress = ProgressBar::new((queries.len() * (args.iterations + 1)) as u64);
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut reports = Vec::new();
    for &n in &queries {
        progress.set_message(format!("Q{n}"));
        let warm_up = run_query(&context, n, scale_factor).await?;
        progress.inc(1);
        let answer = if scale_factor == 1.0 {
            match check_sf1_answer(n, &warm_up.batches) {
                Ok(()) => "ok".to_string(),
                Err(why) => format!("wrong: {why}"),
            }
        } else {
            "unchecked".to_string()
        };
        let mut times_ms = Vec::with_capacity(args.iterations);
        for _ in 0..args.iterations {
            let run = run_query(&context, n, scale_factor).await?;
            times_ms.push(run.elapsed.as_secs_f64() * 1e3);
            progress.inc(1);
        }
        if let Some(dir) = &args.explain_analyze {
            write_explain_analyze(&context, dir, n, scale_factor).await?;
        }
        let mut sorted = times_ms.clone();
        sorted.sort_by(f64::total_cmp);
        reports.push(QueryReport {
            query: n,
            rows: warm_up.num_rows(),
            min_ms: sorted[0],
            median_ms: median(&sorted),
            max_ms: sorted[sorted.len() - 1],
            times_ms,
            answer,
            ran_on: warm_up.ran_on(),
            placement: warm_up
                .placement
                .render(aether_exec::placement::ExplainFilter::All),
        });
    }
    progress.finish_and_clear();

    let report = BenchReport {
        benchmark: "tpch",
        scale_factor,
        engine: context.aether_config().engine.to_string(),
        resident: args.resident,
        data,
        iterations: args.iterations,
        cores: crate::parallel::available_threads(),
        target_partitions: context.session().state().config().target_partitions(),
        aether_version: env!("CARGO_PKG_VERSION"),
        datafusion_version: datafusion::DATAFUSION_VERSION,
        load_seconds,
        kept_string_code_bytes: StringCodeCache::shared().held_bytes(),
        string_code_budget_bytes: StringCodeCache::shared().budget_bytes(),
        total_min_ms: reports.iter().map(|r| r.min_ms).sum(),
        total_median_ms: reports.iter().map(|r| r.median_ms).sum(),
        queries: reports,
    };
    print_table(&report);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| AetherError::Failed(format!("cannot encode the report: {e}")))?;
        std::fs::write(path, text + "\n").map_err(|source| AetherError::Output {
            path: path.clone(),
            source,
        })?;
    }
    let wrong = report
        .queries
        .iter()
        .filter(|q| q.answer.starts_with("wrong"))
        .count();
    if wrong > 0 {
        return Err(AetherError::Failed(format!(
            "{wrong} queries differ from the official TPC-H answers"
        )));
    }
    Ok(())
}

/// Registers the TPC-H tables from `aether datagen`'s layout and returns the scale
/// factor, read from the supplier table (10,000 rows per unit of scale).
async fn register_parquet_tpch(context: &AetherContext, dir: &std::path::Path) -> Result<f64> {
    for table in TpchTable::ALL {
        let spec = TableSpec {
            name: table.name().to_string(),
            path: dir.join(table.name()),
        };
        register_table(context, &spec).await?;
    }
    let batches = context
        .sql("select count(*) from supplier")
        .await?
        .collect()
        .await?;
    let suppliers = batches
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Int64Array>()
                .map(|a| a.value(0))
        })
        .unwrap_or(0);
    if suppliers <= 0 {
        return Err(AetherError::Usage(format!(
            "{} has no supplier rows; is it a directory written by `aether datagen tpch`?",
            dir.display()
        )));
    }
    Ok(suppliers as f64 / 10_000.0)
}

/// Writes query `n`'s `EXPLAIN ANALYZE` to `dir/qN.txt`.
async fn write_explain_analyze(
    context: &AetherContext,
    dir: &std::path::Path,
    n: usize,
    scale_factor: f64,
) -> Result<()> {
    let text = explain_analyze(context, n, scale_factor).await?;
    let path = dir.join(format!("q{n}.txt"));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| AetherError::Output { path, source })
}

fn median(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

fn print_table(report: &BenchReport) {
    println!(
        "TPC-H SF {} on {} ({} data, {} timed runs per query after a warm-up)",
        report.scale_factor, report.engine, report.data, report.iterations
    );
    println!(
        "{:<6} {:>8} {:>10} {:>10} {:>10}  {:<7}  answer",
        "query", "rows", "min ms", "median ms", "max ms", "ran on"
    );
    for q in &report.queries {
        println!(
            "{:<6} {:>8} {:>10} {:>10} {:>10}  {:<7}  {}",
            format!("Q{}", q.query),
            q.rows,
            format_ms(q.min_ms),
            format_ms(q.median_ms),
            format_ms(q.max_ms),
            q.ran_on,
            q.answer
        );
    }
    println!(
        "{:<6} {:>8} {:>10} {:>10}",
        "total",
        "",
        format_ms(report.total_min_ms),
        format_ms(report.total_median_ms)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_runs() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 9.0]), 2.5);
    }
}
