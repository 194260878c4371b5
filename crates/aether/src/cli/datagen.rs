//! `aether datagen tpch`: TPC-H as Parquet files, one directory per table.
//!
//! Layout: `OUT/<table>/part-<k>.parquet`, the layout `aether bench --data OUT` and
//! `aether sql --table lineitem=OUT/lineitem` read. Each file is written under a
//! temporary name and renamed when complete, so an interrupted run leaves no partial
//! Parquet file behind.

use std::fs::File;
use std::path::{Path, PathBuf};

use clap::Args;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;
use indicatif::{ProgressBar, ProgressStyle};

use super::{Benchmark, CommonArgs};
use crate::error::{AetherError, Result};
use crate::parallel::{available_threads, map_parallel};
use crate::tpch::{QUERY_NUMBERS, TpchTable, generation_jobs, query_sql, validate_scale_factor};

#[derive(Debug, Args)]
pub struct DatagenArgs {
    /// Which benchmark's data to generate.
    benchmark: Benchmark,
    /// Scale factor (1 is about 1 GB of data as text).
    #[arg(long, value_name = "SF")]
    sf: f64,
    /// Directory to write into; created if missing.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Files per large table (default: one per core).
    #[arg(long, value_name = "K")]
    parts: Option<usize>,
    /// Also write the 22 queries, with the validation parameters for this scale factor,
    /// as `OUT/queries/q<N>.sql`.
    #[arg(long)]
    queries: bool,
    #[command(flatten)]
    common: CommonArgs,
}

pub async fn run(args: DatagenArgs) -> Result<()> {
    let Benchmark::Tpch = args.benchmark;
    // Validates --conf and --engine like every other subcommand.
    args.common.context()?;
    let scale_factor = validate_scale_factor(args.sf)?;
    let parts = match args.parts {
        Some(0) => return Err(AetherError::Usage("--parts must be at least 1".into())),
        Some(k) => k,
        None => available_threads(),
    };
    for table in TpchTable::ALL {
        prepare_table_dir(&args.out.join(table.name()))?;
    }

    if args.queries {
        write_queries(&args.out.join("queries"), scale_factor)?;
    }

    let jobs = generation_jobs(scale_factor, parts);
    let expected_rows: f64 = TpchTable::ALL
        .iter()
        .map(|t| t.rows_at_sf1() as f64 * scale_factor)
        .sum();
    let progress = ProgressBar::new(expected_rows.ceil() as u64);
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let out = args.out.clone();
    let written = tokio::task::spawn_blocking(move || {
        let results = map_parallel(&jobs, available_threads(), |(table, part, parts)| {
            let path = out.join(table.name()).join(format!("part-{part}.parquet"));
            write_part(*table, scale_factor, *part, *parts, &path, &progress)
        });
        progress.finish_and_clear();
        results.into_iter().sum::<Result<usize>>()
    })
    .await
    .map_err(|e| AetherError::Failed(format!("data generation stopped: {e}")))??;
    eprintln!(
        "Wrote TPC-H scale factor {scale_factor}: {written} rows in {} tables under {}",
        TpchTable::ALL.len(),
        args.out.display()
    );
    Ok(())
}

/// Creates `dir`, removing the parts of an earlier run so that a run with fewer
/// `--parts` does not leave extra files that would duplicate rows.
fn prepare_table_dir(dir: &Path) -> Result<()> {
    let output_error = |source| AetherError::Output {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(output_error)?;
    for entry in std::fs::read_dir(dir).map_err(output_error)?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("part-") && (name.ends_with(".parquet") || name.ends_with(".tmp")) {
            std::fs::remove_file(entry.path()).map_err(output_error)?;
        }
    }
    Ok(())
}

/// Writes one part of `table` to `path` and returns its row count.
fn write_part(
    table: TpchTable,
    scale_factor: f64,
    part: usize,
    parts: usize,
    path: &Path,
    progress: &ProgressBar,
) -> Result<usize> {
    let output_error = |source| AetherError::Output {
        path: path.to_path_buf(),
        source,
    };
    let parquet_error = |e: datafusion::parquet::errors::ParquetError| {
        AetherError::Failed(format!("writing {}: {e}", path.display()))
    };
    let temporary = path.with_extension("parquet.tmp");
    let file = File::create(&temporary).map_err(output_error)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer =
        ArrowWriter::try_new(file, table.schema(), Some(properties)).map_err(parquet_error)?;
    let mut rows = 0;
    for batch in table.generate(scale_factor, part, parts) {
        let batch = batch.map_err(|e| AetherError::DataFusion(e.into()))?;
        writer.write(&batch).map_err(parquet_error)?;
        rows += batch.num_rows();
        progress.inc(batch.num_rows() as u64);
    }
    writer.close().map_err(parquet_error)?;
    std::fs::rename(&temporary, path).map_err(output_error)?;
    Ok(rows)
}

/// Writes each TPC-H query's SQL text to `dir/q<N>.sql`.
fn write_queries(dir: &Path, scale_factor: f64) -> Result<()> {
    let output_error = |path: &Path, source| AetherError::Output {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
    for n in QUERY_NUMBERS {
        let path = dir.join(format!("q{n}.sql"));
        std::fs::write(&path, query_sql(n, scale_factor)?).map_err(|e| output_error(&path, e))?;
    }
    Ok(())
}
