//! What the server needs from the engine, implemented by the `aether` crate.
//!
//! `aether-connect` sits below the crate that owns `AetherContext` (configuration keys,
//! TPC-H tables, the GPU placement rule), so it asks for sessions through these traits
//! instead of building DataFusion sessions itself. Each Spark Connect session gets its own
//! [`EngineSession`]: its own configuration and temporary views, shared registered tables.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;

/// One client session's engine.
#[async_trait]
pub trait EngineSession: Send + Sync + std::fmt::Debug + 'static {
    /// The DataFusion session: catalog, functions and configuration.
    fn context(&self) -> &SessionContext;

    /// The logical plan of one SQL statement, as the engine plans SQL (for example, a
    /// `SET` of a RAPIDS alias sets its `aether.*` key).
    async fn sql_plan(&self, sql: &str) -> Result<LogicalPlan>;

    /// Sets an engine key (`aether.*`, a RAPIDS alias or `datafusion.*`).
    fn set_config(&self, key: &str, value: &str) -> Result<()>;

    /// Returns an engine key to its default.
    fn reset_config(&self, key: &str) -> Result<()>;

    /// The value of an engine key, or `None` when `key` is not one.
    fn get_config(&self, key: &str) -> Option<String>;

    /// Every engine key with its current value, for `spark.conf.getAll`.
    fn config_entries(&self) -> Vec<(String, String)>;

    /// The physical plan that runs `plan` (GPU placement applied) and the placement
    /// report in the RAPIDS format, as `aether.sql.explain` asks.
    async fn physical_plan(&self, plan: LogicalPlan) -> Result<(Arc<dyn ExecutionPlan>, String)>;

    /// Keeps the inputs of this session's GPU segments on the GPU across queries, or
    /// releases them: `cacheTable` / `CACHE TABLE` on an engine with GPU-resident tables.
    fn set_gpu_resident(&self, resident: bool);
}

/// Makes the engine of each new Spark Connect session.
pub trait SessionFactory: Send + Sync + 'static {
    /// A new session with the server's tables registered and its settings applied.
    fn new_session(&self) -> Result<Arc<dyn EngineSession>>;
}
