//! `aether serve`: the Spark Connect server, so unchanged PySpark programs
//! (`SparkSession.builder.remote("sc://localhost:15002")`) run on Aether.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use aether_connect::{ServeOptions, serve};
use clap::Args;

use super::CommonArgs;
use crate::connect::ConnectBackend;
use crate::error::{AetherError, Result};
use crate::table_spec::{TableSpec, register_table};
use crate::tpch::register_tpch;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on (Spark Connect's default is 15002; 0 picks a free one).
    #[arg(long, default_value_t = 15002)]
    port: u16,
    /// Register the TPC-H tables in every session, generated in memory at this scale factor.
    #[arg(long, value_name = "SF")]
    tpch: Option<f64>,
    /// Register a table from a Parquet, CSV (with header) or JSON-lines file or directory
    /// in every session; repeatable.
    #[arg(long = "table", value_name = "NAME=PATH")]
    tables: Vec<TableSpec>,
    /// Require clients to connect with this token (`sc://host:port/;token=...`).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    #[command(flatten)]
    common: CommonArgs,
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let template = args.common.context()?;
    if let Some(scale_factor) = args.tpch {
        let load = register_tpch(&template, scale_factor)?;
        eprintln!(
            "Generated TPC-H scale factor {}: {} rows in {:.1} s",
            load.scale_factor,
            load.rows,
            load.elapsed.as_secs_f64()
        );
    }
    for spec in &args.tables {
        register_table(&template, spec).await?;
    }
    let backend = ConnectBackend::new(args.common.settings(), &template).await?;
    let options = ServeOptions {
        address: SocketAddr::new(args.host, args.port),
        token: args.token,
    };
    let ready = |address: SocketAddr| {
        eprintln!("Aether Spark Connect server listening on sc://{address}");
    };
    serve(options, Arc::new(backend), ready, shutdown_signal())
        .await
        .map_err(|e| AetherError::Failed(format!("the Spark Connect server stopped: {e}")))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
    eprintln!("Aether Spark Connect server stopping");
}
