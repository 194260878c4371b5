//! Aether's Spark Connect server.
//!
//! A gRPC service (`spark.connect.SparkConnectService`) that lets unchanged PySpark
//! programs (`SparkSession.builder.remote("sc://host:15002")`) run on Aether. Requests are
//! decoded with Aether's own subset of Spark's `.proto` files (`proto/spark/connect`),
//! relations and expressions become DataFusion logical plans (`plan`), and every query runs
//! through an [`EngineSession`] that the `aether` crate provides, so placement on the GPU,
//! configuration and explain behave as they do from the CLI.

mod analyze;
mod arrow_ipc;
pub mod backend;
mod command;
mod config;
mod error;
mod execute;
mod interruptible;
mod plan;
pub mod proto;
mod server;
mod session;
mod show;
mod types;

pub use backend::{EngineSession, SessionFactory};
pub use error::ConnectError;
pub use server::{ServeOptions, serve};
