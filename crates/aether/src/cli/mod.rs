//! The `aether` command line: argument definitions and dispatch to each subcommand.

mod bench;
mod datagen;
mod demo;
mod doctor;
mod serve;
mod sql;

use aether_exec::Engine;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::context::{AetherContext, Setting};
use crate::error::{AetherError, Result};

/// GPU-accelerated Spark SQL on DataFusion.
#[derive(Debug, Parser)]
#[command(name = "aether", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate TPC-H in memory and run the 22 queries, showing where each one ran.
    Demo(demo::DemoArgs),
    /// Run SQL against the built-in TPC-H tables or Parquet, CSV and JSON files.
    Sql(sql::SqlArgs),
    /// Generate benchmark data as Parquet files.
    Datagen(datagen::DatagenArgs),
    /// Time benchmark queries: a warm-up, then several timed runs of each.
    Bench(bench::BenchArgs),
    /// Check the GPU: driver, memory, measured bandwidth, kernel cache and a self-test.
    Doctor(doctor::DoctorArgs),
    /// Serve Spark Connect, so unchanged PySpark programs run on Aether.
    Serve(serve::ServeArgs),
}

/// The benchmarks Aether has built in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Benchmark {
    /// TPC-H: eight tables, 22 queries.
    Tpch,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
struct CommonArgs {
    /// Set a configuration key (`aether.*`, `spark.rapids.*` or `datafusion.*`); repeatable.
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    conf: Vec<Setting>,
    /// Where queries run: auto (the cost model decides; the default), gpu (everything the
    /// GPU supports) or cpu. Sets `aether.engine`.
    #[arg(long, value_name = "ENGINE")]
    engine: Option<Engine>,
}

impl CommonArgs {
    /// The settings these options make (`--engine` first, so `--conf` can override it).
    fn settings(&self) -> Vec<Setting> {
        let mut settings = Vec::with_capacity(self.conf.len() + 1);
        if let Some(engine) = self.engine {
            settings.push(Setting {
                key: "aether.engine".into(),
                value: engine.to_string(),
            });
        }
        settings.extend(self.conf.iter().cloned());
        settings
    }

    /// A context with these settings.
    fn context(&self) -> Result<AetherContext> {
        let (context, notices) = AetherContext::with_settings(&self.settings())?;
        for notice in notices {
            eprintln!("{notice}");
        }
        Ok(context)
    }
}

impl Cli {
    /// Runs the parsed command.
    pub async fn run(self) -> Result<()> {
        match self.command {
            Command::Demo(args) => demo::run(args).await,
            Command::Sql(args) => sql::run(args).await,
            Command::Datagen(args) => datagen::run(args).await,
            Command::Bench(args) => bench::run(args).await,
            Command::Doctor(args) => doctor::run(args).await,
            Command::Serve(args) => serve::run(args).await,
        }
    }
}

/// Writes to standard output; a closed pipe (`aether sql ... | head`) ends output
/// quietly instead of failing.
fn ignore_broken_pipe(result: Result<()>) -> Result<()> {
    match result {
        Err(AetherError::Output { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Milliseconds with a precision that suits the value.
fn format_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}
