//! [`AetherContext`]: the configured DataFusion `SessionContext` behind every entry point.
//!
//! The CLI, the benchmark and (later) the Spark Connect server all plan and run through
//! this one type, so configuration, registered tables and the placement of work on the
//! GPU behave the same wherever a query comes from.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use aether_exec::Engine;
use aether_exec::ops::ResidentTables;
use aether_exec::placement::{ExplainFilter, GpuPlacement, PlacementReport, PlacementSettings};
use aether_gpu::{DeviceOptions, shared_device};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::logical_expr::{LogicalPlan, SetVariable, Statement};
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

use crate::config::{self, AetherConfig, ExplainLevel, KeyEffect, SqlMode};
use crate::error::{AetherError, Result};
use crate::plan_cache::{self, CachedPlan, PlanCache};

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
    /// Where the parts of each query ran (or would run, in explain-only mode).
    pub placements: Vec<Arc<PlacementReport>>,
}

/// A DataFusion `SessionContext` configured for Aether.
#[derive(Clone)]
pub struct AetherContext {
    session: SessionContext,
    placement: Arc<GpuPlacement>,
    gpu: Arc<GpuState>,
    plans: Arc<PlanCache>,
}

/// What the placement rule of one context shares with it.
#[derive(Debug, Default)]
struct GpuState {
    /// Keep uploaded inputs on the GPU across queries (`bench --resident`).
    resident: AtomicBool,
    tables: Arc<ResidentTables>,
}

/// Whether the "no GPU" notice was printed; it is said once per process.
static NO_GPU_SAID: OnceLock<()> = OnceLock::new();

/// The placement settings the session's configuration asks for.
fn placement_settings(options: &ConfigOptions, state: &GpuState) -> PlacementSettings {
    let config = options
        .extensions
        .get::<AetherConfig>()
        .cloned()
        .unwrap_or_default();
    let mut settings = PlacementSettings {
        engine: config.engine,
        batch_bytes: usize::try_from(config.gpu_batch_size_bytes).unwrap_or(usize::MAX),
        resident: state
            .resident
            .load(Ordering::Relaxed)
            .then(|| Arc::clone(&state.tables)),
        ..PlacementSettings::default()
    };
    if !config.gpu_enabled {
        settings.off_reason = Some("the GPU is disabled (aether.gpu.enabled=false)".into());
        return settings;
    }
    // Explain-only plans as if a GPU were present and never opens one.
    if config.sql_mode == SqlMode::ExplainOnly || config.engine == Engine::Cpu {
        return settings;
    }
    let device_options = DeviceOptions {
        kernel_cache_dir: if config.gpu_kernel_cache_dir.is_empty() {
            DeviceOptions::default().kernel_cache_dir
        } else {
            Some(config.gpu_kernel_cache_dir.clone().into())
        },
        alloc_fraction: config.gpu_memory_alloc_fraction,
        reserve_bytes: config.gpu_memory_reserve_bytes,
        ..DeviceOptions::default()
    };
    match shared_device(&device_options) {
        Ok(device) => settings.device = Some(device),
        Err(e) => settings.off_reason = Some(e.to_string()),
    }
    settings
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
        let gpu = Arc::new(GpuState::default());
        let rule_state = Arc::clone(&gpu);
        let placement = Arc::new(GpuPlacement::new(Arc::new(
            move |options: &ConfigOptions| placement_settings(options, &rule_state),
        )));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_physical_optimizer_rule(Arc::clone(&placement) as _)
            .build();
        Self {
            session: SessionContext::new_with_state(state),
            placement,
            gpu,
            plans: Arc::default(),
        }
    }

    /// Keeps the inputs of GPU segments on the device across queries (or stops, and
    /// releases them).
    pub fn set_resident(&self, resident: bool) {
        self.gpu.resident.store(resident, Ordering::Relaxed);
        if !resident {
            self.gpu.tables.clear();
        }
    }

    /// Bytes of resident inputs on the GPU.
    pub fn resident_bytes(&self) -> usize {
        self.gpu.tables.device_bytes()
    }

    /// The physical plan of `frame` (GPU placement applied) and its placement report.
    pub async fn placed_plan(
        &self,
        frame: datafusion::dataframe::DataFrame,
    ) -> Result<(Arc<dyn ExecutionPlan>, Arc<PlacementReport>)> {
        let physical = frame.create_physical_plan().await?;
        let report = self.placement.report_for(&physical).unwrap_or_default();
        if let Some(why) = &report.whole_plan
            && why.starts_with("no GPU")
            && NO_GPU_SAID.set(()).is_ok()
        {
            eprintln!("{why}");
        }
        Ok((physical, report))
    }

    /// The explain level the configuration asks for.
    pub fn explain_filter(&self) -> ExplainFilter {
        match self.aether_config().sql_explain {
            ExplainLevel::All => ExplainFilter::All,
            ExplainLevel::NotOnGpu => ExplainFilter::NotOnGpu,
            ExplainLevel::None => ExplainFilter::None,
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

    /// The logical plan of one SQL statement, without running it (DDL included).
    pub async fn sql_plan(&self, sql: &str) -> Result<LogicalPlan> {
        let mut statements = self.parse(sql)?;
        match (statements.pop(), statements.is_empty()) {
            (Some(statement), true) => self.plan_statement(statement).await,
            (None, _) => Err(AetherError::Usage("no SQL statement was given".into())),
            (Some(_), false) => Err(AetherError::Usage(
                "expected one SQL statement; use a script for several".into(),
            )),
        }
    }

    /// Runs every statement of `sql` in order and returns the rows of the last query.
    pub async fn run_script(&self, sql: &str) -> Result<ScriptOutput> {
        self.script(sql, ScriptMode::Run).await
    }

    /// Runs or explains every statement of `sql` in order; see [`ScriptMode`].
    pub async fn script(&self, sql: &str, mode: ScriptMode) -> Result<ScriptOutput> {
        let mut output = ScriptOutput::default();
        for statement in self.parse(sql)? {
            let cache_key = match mode {
                ScriptMode::Run if self.aether_config().sql_plan_cache => {
                    let resident = self.gpu.resident.load(Ordering::Relaxed);
                    plan_cache::plan_key(&self.session, &statement, resident).await
                }
                ScriptMode::Run | ScriptMode::Explain => None,
            };
            if let Some(cached) = cache_key.as_ref().and_then(|key| self.plans.get(key)) {
                let reusing = std::time::Instant::now();
                let physical = reset_plan_states(cached.plan)?;
                aether_exec::trace::phase("cached plan", reusing, String::new);
                output.batches = self.execute_placed(physical).await?;
                output.schema = Some(cached.schema);
                output.placements.push(cached.report);
                continue;
            }
            let plan = self.plan_statement(statement).await?;
            let cache_key = cache_key.filter(|_| plan_cache::is_time_independent(&plan));
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
            let explained = match &plan {
                LogicalPlan::Explain(explain) => Some(Arc::clone(&explain.plan)),
                _ => None,
            };
            let frame = self.session.execute_logical_plan(plan).await?;
            if returns_rows && mode == ScriptMode::Explain {
                let (physical, report) = self.placed_plan(frame).await?;
                output
                    .plans
                    .push(displayable(physical.as_ref()).indent(true).to_string());
                output.placements.push(report);
            } else if returns_rows {
                let schema = Arc::clone(frame.schema().inner());
                let planning = std::time::Instant::now();
                let (physical, report) = self.placed_plan(frame).await?;
                aether_exec::trace::phase("physical planning", planning, String::new);
                if let Some(key) = cache_key
                    && explained.is_none()
                    && plan_cache::is_rerunnable(&physical)
                {
                    let cached = CachedPlan {
                        plan: Arc::clone(&physical),
                        report: Arc::clone(&report),
                        schema: Arc::clone(&schema),
                    };
                    self.plans.insert(key, cached);
                }
                let mut batches = self.execute_placed(physical).await?;
                if let Some(inner) = explained {
                    batches.push(self.placement_rows(&inner, &schema).await?);
                }
                output.batches = batches;
                output.schema = Some(schema);
                output.placements.push(report);
            } else {
                // DDL, DML and SET change what later queries mean or read.
                self.plans.clear();
                frame.collect().await?;
            }
        }
        Ok(output)
    }

    /// Runs a placed physical plan and returns its rows.
    async fn execute_placed(&self, physical: Arc<dyn ExecutionPlan>) -> Result<Vec<RecordBatch>> {
        let running = std::time::Instant::now();
        let batches = datafusion::physical_plan::collect(physical, self.session.task_ctx()).await?;
        aether_exec::trace::phase("execution", running, String::new);
        Ok(batches)
    }

    /// Queries that ran from a cached plan (see [`crate::plan_cache`]).
    pub fn plan_cache_hits(&self) -> u64 {
        self.plans.hits()
    }

    /// The row SQL `EXPLAIN` adds to DataFusion's: the GPU placement report of the
    /// explained statement, in the RAPIDS format (every node, `aether.sql.explain`
    /// permitting).
    async fn placement_rows(&self, inner: &LogicalPlan, schema: &SchemaRef) -> Result<RecordBatch> {
        let frame = self.session.execute_logical_plan(inner.clone()).await?;
        let (_, report) = self.placed_plan(frame).await?;
        let filter = match self.explain_filter() {
            ExplainFilter::None => ExplainFilter::None,
            _ => ExplainFilter::All,
        };
        let text = report.render(filter);
        let columns = vec![
            Arc::new(StringArray::from(vec!["gpu_placement"])) as _,
            Arc::new(StringArray::from(vec![text.trim_end().to_string()])) as _,
        ];
        RecordBatch::try_new(Arc::clone(schema), columns)
            .map_err(|e| AetherError::Failed(format!("building the EXPLAIN placement row: {e}")))
    }

    /// The physical plan of one SQL statement, as Aether runs it (GPU placement applied).
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
