//! The engine behind `aether serve`: each Spark Connect session is an [`AetherContext`]
//! with the server's settings and the tables it was started with (generated or
//! registered once, shared by every session).

use std::sync::Arc;

use aether_connect::{EngineSession, SessionFactory};
use async_trait::async_trait;
use datafusion::catalog::TableProvider;
use datafusion::common::config::ConfigOptions;
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;

use crate::config::{self, AetherConfig};
use crate::context::{AetherContext, Setting};
use crate::error::AetherError;

/// Makes the engine session of each client session.
#[derive(Debug)]
pub struct ConnectBackend {
    settings: Vec<Setting>,
    tables: Vec<(String, Arc<dyn TableProvider>)>,
}

impl ConnectBackend {
    /// A backend whose sessions get `settings` and the tables registered in `template`.
    pub async fn new(settings: Vec<Setting>, template: &AetherContext) -> crate::Result<Self> {
        let session = template.session();
        let mut tables = Vec::new();
        if let Some(catalog) = session.catalog("datafusion")
            && let Some(schema) = catalog.schema("public")
        {
            for name in schema.table_names() {
                if let Some(table) = schema.table(&name).await? {
                    tables.push((name, table));
                }
            }
        }
        Ok(Self { settings, tables })
    }
}

impl SessionFactory for ConnectBackend {
    fn new_session(&self) -> Result<Arc<dyn EngineSession>> {
        let (context, _) = AetherContext::with_settings(&self.settings).map_err(to_datafusion)?;
        for (name, table) in &self.tables {
            context
                .session()
                .register_table(name.as_str(), Arc::clone(table))?;
        }
        Ok(Arc::new(ConnectEngine { context }))
    }
}

/// One client session's [`AetherContext`].
#[derive(Debug)]
struct ConnectEngine {
    context: AetherContext,
}

fn to_datafusion(error: AetherError) -> DataFusionError {
    match error {
        AetherError::DataFusion(error) => error,
        other => DataFusionError::Plan(other.to_string()),
    }
}

/// The value of `key` among `options`' entries.
fn entry_value(options: &ConfigOptions, key: &str) -> Option<String> {
    options
        .entries()
        .into_iter()
        .find(|entry| entry.key == key)
        .map(|entry| entry.value.unwrap_or_default())
}

#[async_trait]
impl EngineSession for ConnectEngine {
    fn context(&self) -> &SessionContext {
        self.context.session()
    }

    async fn sql_plan(&self, sql: &str) -> Result<LogicalPlan> {
        self.context.sql_plan(sql).await.map_err(to_datafusion)
    }

    fn set_config(&self, key: &str, value: &str) -> Result<()> {
        self.context.set(key, value).map_err(to_datafusion)?;
        Ok(())
    }

    fn reset_config(&self, key: &str) -> Result<()> {
        let key = config::canonical_key(key);
        let mut defaults = ConfigOptions::new();
        defaults.extensions.insert(AetherConfig::default());
        match entry_value(&defaults, &key) {
            Some(value) => self.set_config(&key, &value),
            None => Ok(()),
        }
    }

    fn get_config(&self, key: &str) -> Option<String> {
        let key = config::canonical_key(key);
        let state = self.context.session().state();
        entry_value(state.config().options(), &key)
    }

    fn config_entries(&self) -> Vec<(String, String)> {
        let state = self.context.session().state();
        state
            .config()
            .options()
            .entries()
            .into_iter()
            .filter_map(|entry| entry.value.map(|value| (entry.key, value)))
            .collect()
    }

    fn set_gpu_resident(&self, resident: bool) {
        self.context.set_resident(resident);
    }

    async fn physical_plan(&self, plan: LogicalPlan) -> Result<(Arc<dyn ExecutionPlan>, String)> {
        let frame = DataFrame::new(self.context.session().state(), plan);
        let (physical, report) = self
            .context
            .placed_plan(frame)
            .await
            .map_err(to_datafusion)?;
        Ok((physical, report.render(self.context.explain_filter())))
    }
}
