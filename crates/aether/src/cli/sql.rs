//! `aether sql`: one statement or a script against TPC-H or files.

use std::io::Write;
use std::path::PathBuf;

use aether_exec::placement::ExplainFilter;
use clap::Args;

use super::{CommonArgs, ignore_broken_pipe};
use crate::context::ScriptMode;
use crate::error::{AetherError, Result};
use crate::output::{OutputFormat, write_results};
use crate::table_spec::{TableSpec, register_table};
use crate::tpch::register_tpch;

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The SQL to run; several statements separated by `;` run in order.
    #[arg(value_name = "QUERY", conflicts_with = "file")]
    query: Option<String>,
    /// Read the SQL from this file instead.
    #[arg(long, short = 'f', value_name = "FILE")]
    file: Option<PathBuf>,
    /// Register the TPC-H tables, generated in memory at this scale factor.
    #[arg(long, value_name = "SF")]
    tpch: Option<f64>,
    /// Register a table from a Parquet, CSV (with header) or JSON-lines file or directory.
    #[arg(long = "table", value_name = "NAME=PATH")]
    tables: Vec<TableSpec>,
    /// Print the physical plan of each query and where each part runs (the GPU placement
    /// report, every node unless `aether.sql.explain=NONE`) instead of running it.
    #[arg(long)]
    explain: bool,
    /// How to print results: table, csv or json (one object per line).
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    format: OutputFormat,
    #[command(flatten)]
    common: CommonArgs,
}

pub async fn run(args: SqlArgs) -> Result<()> {
    let sql = match (&args.query, &args.file) {
        (Some(query), None) => query.clone(),
        (None, Some(path)) => {
            std::fs::read_to_string(path).map_err(|source| AetherError::Input {
                path: path.clone(),
                source,
            })?
        }
        _ => {
            return Err(AetherError::Usage(
                "give the SQL to run, as an argument or with --file FILE".into(),
            ));
        }
    };
    let context = args.common.context()?;
    if let Some(scale_factor) = args.tpch {
        register_tpch(&context, scale_factor)?;
    }
    for spec in &args.tables {
        register_table(&context, spec).await?;
    }

    let mode = if args.explain {
        ScriptMode::Explain
    } else {
        ScriptMode::Run
    };
    let output = context.script(&sql, mode).await?;
    for notice in &output.notices {
        eprintln!("{notice}");
    }
    let filter = context.explain_filter();
    if !args.explain && filter != ExplainFilter::None {
        // As RAPIDS logs it: what did not go to the GPU, and why.
        for report in &output.placements {
            if report.whole_plan.is_none() {
                eprint!("{}", report.render(filter));
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let printed = if args.explain {
        let filter = match filter {
            ExplainFilter::None => ExplainFilter::None,
            _ => ExplainFilter::All,
        };
        output
            .plans
            .iter()
            .zip(&output.placements)
            .try_for_each(|(plan, report)| {
                let placement = report.render(filter);
                let text = if placement.is_empty() {
                    plan.to_string()
                } else {
                    format!("{plan}\nGPU placement:\n{placement}")
                };
                writeln!(out, "{text}").map_err(|source| AetherError::Output {
                    path: "standard output".into(),
                    source,
                })
            })
    } else {
        match &output.schema {
            Some(schema) => write_results(&mut out, schema, &output.batches, args.format),
            None => Ok(()),
        }
    };
    ignore_broken_pipe(printed)
}
