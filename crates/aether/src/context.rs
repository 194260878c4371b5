//! [`AetherContext`]: the configured DataFusion `SessionContext` behind every entry point.
//!
//! The CLI, the benchmark and (later) the Spark Connect server all plan and run through
//! this one type, so configuration, registered tables and the placement of work on the
//! GPU behave the same wherever a query comes from.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::logical_expr::{LogicalPlan, SetVariable, Statement};
use datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

use crate::config::{self, AetherConfig, KeyEffect};
use crate::error::{AetherError, Result};

/// A `key=value` setting as given to `--conf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    pub value: String,
}

impl std::str::FromStr for Setting {
    type Err = String;

    fn from_str(spec: &str) -> std::result::Result<Self, Self::Err> {
        match spec.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => Ok(Self {
                key: key.trim().to_string(),
                value: value.trim().to_string(),
            }),
            _ => Err(format!("expected KEY=VALUE, got '{spec}'")),
        }
    }
}

/// What to do with the queries of a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptMode {
    /// Run every statement and keep the rows of the last query.
    Run,
    /// Run the statements that change state (DDL, `SET`) and plan the queries without
    /// running them, keeping each query's physical plan.
    Explain,
}

/// What running a script of statements produced.
#[derive(Debug, Clone, Default)]
pub struct ScriptOutput {
    /// Schema of the last statement that returns rows (a query), if any.
    pub schema: Option<SchemaRef>,
    /// That statement's rows.
    pub batches: Vec<RecordBatch>,
    /// In [`ScriptMode::Explain`], each query's physical plan, indented.
    pub plans: Vec<String>,
    /// Notices for the user, such as a setting that has no effect in this build.
    pub notices: Vec<String>,
}

/// A DataFusion `SessionContext` configured for Aether.
#[derive(Clone)]
pub struct AetherContext {
    session: SessionContext,
}

impl std::fmt::Debug for AetherContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AetherContext")
            .field("session_id", &self.session.session_id())
            .finish()
    }
}

impl Default for AetherContext {
    fn default() -> Self {
        Self::new()
    }
}

impl AetherContext {
    /// A context with Aether's defaults.
    pub fn new() -> Self {
        let mut config = SessionConfig::new()
            .with_information_schema(true)
            .with_option_extension(AetherConfig::default());
        // Spans let planning errors point at the offending part of the statement.
        config.options_mut().sql_parser.collect_spans = true;
        Self {
            session: SessionContext::new_with_config(config),
        }
    }

    /// A context with Aether's defaults and then `settings` applied in order.
    ///
    /// Returns the context and the notices the settings produced (see [`Self::set`]).
    pub fn with_settings(settings: &[Setting]) -> Result<(Self, Vec<String>)> {
        let context = Self::new();
        let mut notices = Vec::new();
        for setting in settings {
            notices.extend(context.set(&setting.key, &setting.value)?);
        }
        Ok((context, notices))
    }

    /// The underlying DataFusion session.
    pub fn session(&self) -> &SessionContext {
        &self.session
    }

    /// The current values of the `aether.*` keys.
    pub fn aether_config(&self) -> AetherConfig {
        self.session
            .state()
            .config()
            .options()
            .extensions
            .get::<AetherConfig>()
            .cloned()
            .unwrap_or_default()
    }

    /// Sets a configuration key: `aether.*`, a RAPIDS alias of one, or any DataFusion key.
    ///
    /// Returns a notice when the key is accepted but has no effect in this build.
    pub fn set(&self, key: &str, value: &str) -> Result<Option<String>> {
        let key = config::canonical_key(key);
        self.session
            .state_ref()
            .write()
            .config_mut()
            .options_mut()
            .set(&key, value)?;
        Ok(no_effect_notice(&key))
    }

    /// Plans one SQL statement and returns the DataFrame DataFusion would run.
    ///
    /// Unlike `SessionContext::sql`, a `SET` of a RAPIDS alias sets its `aether.*` key.
    pub async fn sql(&self, sql: &str) -> Result<datafusion::dataframe::DataFrame> {
        let mut statements = self.parse(sql)?;
        let statement = match (statements.pop(), statements.is_empty()) {
            (Some(statement), true) => statement,
            (None, _) => {
                return Err(AetherError::Usage("no SQL statement was given".into()));
            }
            (Some(_), false) => {
                return Err(AetherError::Usage(
                    "expected one SQL statement; use a script for several".into(),
                ));
            }
        };
        let plan = self.plan_statement(statement).await?;
        Ok(self.session.execute_logical_plan(plan).await?)
    }

    /// Runs every statement of `sql` in order and returns the rows of the last query.
    pub async fn run_script(&self, sql: &str) -> Result<ScriptOutput> {
        self.script(sql, ScriptMode::Run).await
    }

    /// Runs or explains every statement of `sql` in order; see [`ScriptMode`].
    pub async fn script(&self, sql: &str, mode: ScriptMode) -> Result<ScriptOutput> {
        let mut output = ScriptOutput::default();
        for statement in self.parse(sql)? {
            let plan = self.plan_statement(statement).await?;
            if let LogicalPlan::Statement(Statement::SetVariable(set)) = &plan {
                output.notices.extend(no_effect_notice(&set.variable));
            }
            let returns_rows = !matches!(
                plan,
                LogicalPlan::Ddl(_)
                    | LogicalPlan::Statement(_)
                    | LogicalPlan::Dml(_)
                    | LogicalPlan::Copy(_)
            );
            let frame = self.session.execute_logical_plan(plan).await?;
            if returns_rows && mode == ScriptMode::Explain {
                let physical = frame.create_physical_plan().await?;
                output
                    .plans
                    .push(displayable(physical.as_ref()).indent(true).to_string());
            } else if returns_rows {
                let schema = Arc::clone(frame.schema().inner());
                output.batches = frame.collect().await?;
                output.schema = Some(schema);
            } else {
                frame.collect().await?;
            }
        }
        Ok(output)
    }

    /// The physical plan of one SQL statement, as DataFusion (and later Aether's GPU
    /// placement) would run it.
    pub async fn physical_plan(&self, sql: &str) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self.sql(sql).await?.create_physical_plan().await?)
    }

    fn parse(&self, sql: &str) -> Result<Vec<DFStatement>> {
        let state = self.session.state();
        let options = state.config().options();
        let dialect_name = options.sql_parser.dialect;
        let dialect = dialect_from_str(dialect_name).ok_or_else(|| {
            AetherError::Usage(format!("unsupported SQL dialect: {dialect_name}"))
        })?;
        let statements = DFParserBuilder::new(sql)
            .with_dialect(dialect.as_ref())
            .with_recursion_limit(options.sql_parser.recursion_limit.get())
            .build()?
            .parse_statements()?;
        Ok(statements.into())
    }

    async fn plan_statement(&self, statement: DFStatement) -> Result<LogicalPlan> {
        let plan = self.session.state().statement_to_plan(statement).await?;
        Ok(match plan {
            LogicalPlan::Statement(Statement::SetVariable(set)) => {
                LogicalPlan::Statement(Statement::SetVariable(SetVariable {
                    variable: config::canonical_key(&set.variable),
                    value: set.value,
                }))
            }
            other => other,
        })
    }
}

/// The notice for setting `key`, when the key is accepted but does nothing yet.
fn no_effect_notice(key: &str) -> Option<String> {
    match config::lookup(key)?.effect {
        KeyEffect::Active => None,
        KeyEffect::NoEffectYet(why) => {
            Some(format!("note: {key} is accepted but has no effect: {why}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExplainLevel;

    #[tokio::test]
    async fn rapids_aliases_set_aether_keys_from_sql() {
        let context = AetherContext::new();
        context
            .run_script("SET spark.rapids.sql.explain = 'ALL'")
            .await
            .unwrap();
        assert_eq!(context.aether_config().sql_explain, ExplainLevel::All);
        context.set("spark.rapids.sql.enabled", "false").unwrap();
        assert!(!context.aether_config().gpu_enabled);
    }

    #[tokio::test]
    async fn scripts_return_the_last_query() {
        let context = AetherContext::new();
        let output = context
            .run_script("create view v (x) as select 1; select x + 1 as y from v; drop view v;")
            .await
            .unwrap();
        let schema = output.schema.unwrap();
        assert_eq!(schema.field(0).name(), "y");
        assert_eq!(
            output.batches.iter().map(|b| b.num_rows()).sum::<usize>(),
            1
        );
    }

    #[tokio::test]
    async fn a_bad_statement_is_a_usage_error() {
        let context = AetherContext::new();
        let err = context.sql("selec 1").await.unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("Line: 1, Column: 1"), "{err}");
    }

    #[test]
    fn settings_parse_from_key_value() {
        let setting: Setting = "aether.gpu.enabled = false".parse().unwrap();
        assert_eq!(setting.key, "aether.gpu.enabled");
        assert_eq!(setting.value, "false");
        assert!("novalue".parse::<Setting>().is_err());
        assert!("=x".parse::<Setting>().is_err());
    }
}
