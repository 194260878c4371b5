//! Aether: GPU-accelerated Spark SQL on Apache DataFusion.
//!
//! This crate ties the workspace together: [`AetherContext`] (a configured DataFusion
//! `SessionContext` that every entry point uses), the `aether.*` configuration keys, the
//! built-in TPC-H tables and queries, and the `aether` command line.

pub mod cli;
pub mod config;
pub mod connect;
pub mod context;
pub mod error;
pub mod output;
pub mod parallel;
pub mod plan_cache;
pub mod table_spec;
pub mod tpch;

pub use context::{AetherContext, ScriptMode, ScriptOutput, Setting};
pub use error::{AetherError, Result};
