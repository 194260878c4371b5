//! Aether's Spark Connect server.
//!
//! The gRPC service (`spark.connect.SparkConnectService`) that lets unchanged PySpark
//! programs run on Aether lands here; it translates Spark Connect relations and
//! expressions into DataFusion logical plans and runs them through the same
//! `AetherContext` the CLI uses. This crate is empty until that work begins, so that
//! the workspace keeps the dependency order of the design: `aether-connect` sits on
//! `aether-exec`, never the other way round.
