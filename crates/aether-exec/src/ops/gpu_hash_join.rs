//! `GpuHashJoinExec`: a hash join on the GPU between two device streams.
//!
//! The build side (DataFusion's left input) is collected and concatenated on the
//! device, its keys hashed into one table ([`super::join_table`]); each probe batch
//! (the right input) is probed against it and its output rows gathered into a new
//! device batch, in the probe batch's row order, so the operators above (a GPU
//! aggregate or row segment, or the download) read it without the host. Joins that
//! return build rows the probes did not match (left and full outer, left anti) or did
//! (left semi) emit them in one last batch.
//!
//! Keys are integers, dates or narrow decimals (the planner checks); rows with a NULL
//! key never match, as DataFusion's `NullEqualsNothing`. A residual (non-equality)
//! condition runs on the device over the key matches ([`super::join_filter`]).

use std::fmt;
use std::sync::Arc;

use aether_gpu::{DeviceBatch, DeviceBuffer, GpuDevice};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::JoinType;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::gather::{concatenate, default_form, gather_column};
use super::join_filter::{JoinResidual, ResidualFilter};
use super::join_kernels::{Emit, JoinKernels};
use super::join_table::{JoinTable, ProbeRows};
use super::{DeviceExec, DeviceStream, as_device_exec, device_error};

/// Which input an output column comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinSide {
    /// The input hashed into the table: the plan's left one, or its right one when
    /// placement found that one smaller.
    Build,
    /// The input streamed through the table.
    Probe,
}

impl JoinSide {
    pub fn other(self) -> Self {
        match self {
            Self::Build => Self::Probe,
            Self::Probe => Self::Build,
        }
    }
}

/// What a GPU hash join computes.
#[derive(Debug, Clone)]
pub struct GpuJoinSpec {
    pub join_type: JoinType,
    /// Key columns of the build input, pairwise equal to `probe_keys`.
    pub build_keys: Vec<usize>,
    pub probe_keys: Vec<usize>,
    /// Each output column: its side and column there.
    pub outputs: Vec<(JoinSide, usize)>,
    /// The join's residual filter, when its condition has one.
    pub residual: Option<JoinResidual>,
}

impl GpuJoinSpec {
    /// What each probe row emits.
    fn emit(&self) -> Emit {
        match self.join_type {
            JoinType::Inner | JoinType::Left => Emit::Matches,
            JoinType::Right | JoinType::Full => Emit::MatchesOrPad,
            JoinType::RightSemi => Emit::IfAny,
            JoinType::RightAnti => Emit::IfNone,
            _ => Emit::Nothing,
        }
    }

    /// The build rows returned after the probes: matched (`true`) or not.
    fn build_rows_after(&self) -> Option<bool> {
        match self.join_type {
            JoinType::Left | JoinType::Full | JoinType::LeftAnti => Some(false),
            JoinType::LeftSemi => Some(true),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct JoinMetrics {
    compile: Time,
    build: Time,
    probe: Time,
    build_rows: Count,
    probe_rows: Count,
    output_rows: Count,
}

impl JoinMetrics {
    fn new(set: &ExecutionPlanMetricsSet) -> Self {
        Self {
            compile: MetricBuilder::new(set).subset_time("compile", 0),
            build: MetricBuilder::new(set).subset_time("build", 0),
            probe: MetricBuilder::new(set).subset_time("probe", 0),
            build_rows: MetricBuilder::new(set).counter("build_input_rows", 0),
            probe_rows: MetricBuilder::new(set).counter("probe_input_rows", 0),
            output_rows: MetricBuilder::new(set).output_rows(0),
        }
    }
}

/// A hash join run on the GPU.
#[derive(Debug)]
pub struct GpuHashJoinExec {
    build: Arc<dyn ExecutionPlan>,
    probe: Arc<dyn ExecutionPlan>,
    device: Arc<GpuDevice>,
    spec: GpuJoinSpec,
    /// DataFusion's one-line display of the join replaced.
    replaced: String,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GpuHashJoinExec {
    /// A join of the GPU operators `build` and `probe` returning `schema`.
    pub fn new(
        build: Arc<dyn ExecutionPlan>,
        probe: Arc<dyn ExecutionPlan>,
        device: Arc<GpuDevice>,
        spec: GpuJoinSpec,
        schema: SchemaRef,
        replaced: String,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            build,
            probe,
            device,
            spec,
            replaced,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// What the join computes.
    pub fn spec(&self) -> &GpuJoinSpec {
        &self.spec
    }
}

/// What the output batches are assembled from, shared by the probe batches and the
/// last batch.
struct Assembly {
    device: Arc<GpuDevice>,
    spec: GpuJoinSpec,
    schema: SchemaRef,
    probe_schema: SchemaRef,
}

impl Assembly {
    /// The output batch of `rows` (`probe` the batch probed, `None` for the build
    /// rows returned last, whose probe columns are NULL).
    fn batch(
        &self,
        table: &JoinTable,
        probe: Option<&DeviceBatch>,
        rows: &ProbeRows,
    ) -> std::result::Result<DeviceBatch, aether_gpu::DeviceError> {
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for (field, &(side, index)) in self.schema.fields().iter().zip(&self.spec.outputs) {
            let source: Option<(&aether_gpu::DeviceColumn, &DeviceBuffer)> = match side {
                JoinSide::Build => rows
                    .build
                    .as_ref()
                    .map(|rows| (&table.build.columns[index], rows)),
                JoinSide::Probe => probe.map(|batch| (&batch.columns[index], &rows.probe)),
            };
            let form = match side {
                JoinSide::Build => table.build.columns[index].form.clone(),
                JoinSide::Probe => default_form(self.probe_schema.field(index))?,
            };
            let column = match source {
                Some((column, numbers)) => gather_column(
                    &self.device,
                    table.kernels(),
                    field,
                    Some(column),
                    &form,
                    Some(numbers),
                    rows.rows,
                )?,
                None => gather_column(
                    &self.device,
                    table.kernels(),
                    field,
                    None,
                    &form,
                    None,
                    rows.rows,
                )?,
            };
            columns.push(column);
        }
        Ok(DeviceBatch {
            schema: Arc::clone(&self.schema),
            columns,
            num_rows: rows.rows,
        })
    }

    /// The build rows returned after every probe, as an output batch.
    fn last_batch(
        &self,
        table: &JoinTable,
        matched: bool,
    ) -> std::result::Result<DeviceBatch, aether_gpu::DeviceError> {
        let (numbers, count) = table.marked_rows(matched)?;
        // The last batch's output rows name build rows; its probe columns are NULL.
        let rows = ProbeRows {
            probe: aether_gpu::DeviceBuffer::alloc(&self.device, "GpuHashJoinExec", 0)?,
            build: Some(numbers),
            rows: count,
        };
        self.batch(table, None, &rows)
    }
}

impl DisplayAs for GpuHashJoinExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "GpuHashJoinExec: [{}]", self.replaced)
    }
}

impl ExecutionPlan for GpuHashJoinExec {
    fn name(&self) -> &str {
        "GpuHashJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.build, &self.probe]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [build, probe]: [Arc<dyn ExecutionPlan>; 2] = children
            .try_into()
            .map_err(|_| DataFusionError::Internal("GpuHashJoinExec needs two children".into()))?;
        Ok(Arc::new(Self::new(
            build,
            probe,
            Arc::clone(&self.device),
            self.spec.clone(),
            self.schema(),
            self.replaced.clone(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "GpuHashJoinExec feeds a GPU operator or DeviceToHostExec; it has no host output"
                .into(),
        ))
    }
}

fn device_stream_of(
    plan: &Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
) -> Result<DeviceStream> {
    as_device_exec(plan)
        .ok_or_else(|| DataFusionError::Internal("a GPU join must sit on GPU operators".into()))?
        .execute_device(context)
}

impl DeviceExec for GpuHashJoinExec {
    fn execute_device(&self, context: Arc<TaskContext>) -> Result<DeviceStream> {
        let build = device_stream_of(&self.build, Arc::clone(&context))?;
        let probe = device_stream_of(&self.probe, context)?;
        let metrics = JoinMetrics::new(&self.metrics);
        let assembly = Arc::new(Assembly {
            device: Arc::clone(&self.device),
            spec: self.spec.clone(),
            schema: self.schema(),
            probe_schema: self.probe.schema(),
        });
        let build_schema = self.build.schema();
        let table = {
            let assembly = Arc::clone(&assembly);
            let metrics = metrics.clone();
            async move {
                let batches: Vec<Arc<DeviceBatch>> = build.try_collect().await?;
                let device = &assembly.device;
                let start = std::time::Instant::now();
                let kernels = JoinKernels::load(device).map_err(device_error)?;
                metrics.compile.add_elapsed(start);
                let start = std::time::Instant::now();
                let batch =
                    concatenate(device, &kernels, &build_schema, &batches).map_err(device_error)?;
                drop(batches);
                metrics.build_rows.add(batch.num_rows);
                let marks = assembly.spec.build_rows_after().is_some();
                let table = JoinTable::build(
                    Arc::clone(device),
                    kernels,
                    batch,
                    &assembly.spec.build_keys,
                    marks,
                )
                .map_err(device_error)?;
                metrics.build.add_elapsed(start);
                let start = std::time::Instant::now();
                let residual = match &assembly.spec.residual {
                    Some(residual) => Some(
                        ResidualFilter::load(Arc::clone(device), residual.clone())
                            .map_err(device_error)?,
                    ),
                    None => None,
                };
                metrics.compile.add_elapsed(start);
                Ok::<_, DataFusionError>((Arc::new(table), residual))
            }
        };
        let joined = futures::stream::once(async move {
            let (table, mut residual) = match table.await {
                Ok(loaded) => loaded,
                Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
            };
            let probed = {
                let (table, assembly, metrics) =
                    (Arc::clone(&table), Arc::clone(&assembly), metrics.clone());
                probe.map(move |batch| {
                    let batch = batch?;
                    let start = std::time::Instant::now();
                    metrics.probe_rows.add(batch.num_rows);
                    let spec = &assembly.spec;
                    let rows = match &mut residual {
                        Some(filter) => table
                            .probe(&batch, &spec.probe_keys, Emit::Matches, false)
                            .and_then(|pairs| filter.apply(&table, &batch, pairs, spec.join_type)),
                        None => table.probe(&batch, &spec.probe_keys, spec.emit(), true),
                    }
                    .map_err(device_error)?;
                    let output = assembly
                        .batch(&table, Some(&batch), &rows)
                        .map_err(device_error)?;
                    metrics.probe.add_elapsed(start);
                    metrics.output_rows.add(output.num_rows);
                    Ok(Arc::new(output))
                })
            };
            let last = futures::stream::once(async move {
                let matched = assembly.spec.build_rows_after()?;
                let start = std::time::Instant::now();
                let output = assembly
                    .last_batch(&table, matched)
                    .map_err(device_error)
                    .map(Arc::new);
                metrics.probe.add_elapsed(start);
                if let Ok(batch) = &output {
                    metrics.output_rows.add(batch.num_rows);
                }
                Some(output)
            })
            .filter_map(|batch| async move { batch });
            probed
                .chain(last)
                .try_filter(|batch| futures::future::ready(batch.num_rows > 0))
                .boxed()
        });
        Ok(joined.flatten().boxed())
    }
}
