//! `GpuSortExec`: a sort (and top-k) of a device stream on the GPU.
//!
//! It replaces DataFusion's `SortExec`, with the `SortPreservingMergeExec` above it and
//! any column-selecting projection between them: on one GPU there is one sorted
//! stream, so nothing is left to merge. Its input's batches are concatenated on the
//! device, the rows ordered as a permutation by the sort keys
//! ([`super::sort_kernels`]), cut to the fetch (a `LIMIT` pushed into the sort makes it
//! a top-k) and gathered into one output batch of the selected columns.

use std::fmt;
use std::sync::Arc;

use aether_gpu::{DeviceBatch, GpuDevice};
use datafusion::arrow::datatypes::SchemaRef;
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

use super::gather::{concatenate, gather_column};
use super::join_kernels::JoinKernels;
use super::sort_kernels::SortKernels;
pub use super::sort_kernels::SortKey;
use super::{DeviceExec, DeviceStream, as_device_exec, device_error};

/// What a GPU sort computes.
#[derive(Debug, Clone)]
pub struct GpuSortSpec {
    /// Keys over the input's columns, most significant first.
    pub keys: Vec<SortKey>,
    /// The rows kept from the top (a top-k), or all.
    pub fetch: Option<usize>,
    /// The input column of each output column.
    pub outputs: Vec<usize>,
}

#[derive(Debug, Clone)]
struct SortMetrics {
    compile: Time,
    sort: Time,
    input_rows: Count,
    output_rows: Count,
}

impl SortMetrics {
    fn new(set: &ExecutionPlanMetricsSet) -> Self {
        Self {
            compile: MetricBuilder::new(set).subset_time("compile", 0),
            sort: MetricBuilder::new(set).subset_time("sort", 0),
            input_rows: MetricBuilder::new(set).counter("input_rows", 0),
            output_rows: MetricBuilder::new(set).output_rows(0),
        }
    }
}

/// A sort run on the GPU.
#[derive(Debug)]
pub struct GpuSortExec {
    input: Arc<dyn ExecutionPlan>,
    device: Arc<GpuDevice>,
    spec: GpuSortSpec,
    /// DataFusion's one-line displays of the operators replaced, bottom first.
    replaced: Vec<String>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GpuSortExec {
    /// A sort of the GPU operator `input` returning `schema`.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        device: Arc<GpuDevice>,
        spec: GpuSortSpec,
        schema: SchemaRef,
        replaced: Vec<String>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            input,
            device,
            spec,
            replaced,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    pub fn spec(&self) -> &GpuSortSpec {
        &self.spec
    }
}

/// Sorts the concatenation of `batches` on the device.
fn sort_batches(
    device: &Arc<GpuDevice>,
    spec: &GpuSortSpec,
    input_schema: &SchemaRef,
    schema: &SchemaRef,
    batches: &[Arc<DeviceBatch>],
    metrics: &SortMetrics,
) -> std::result::Result<DeviceBatch, aether_gpu::DeviceError> {
    let start = std::time::Instant::now();
    let gathers = JoinKernels::load(device)?;
    let kernels = SortKernels::load(device)?;
    metrics.compile.add_elapsed(start);
    let start = std::time::Instant::now();
    let input = concatenate(device, &gathers, input_schema, batches)?;
    metrics.input_rows.add(input.num_rows);
    let order = kernels.permutation(device, &input, &spec.keys)?;
    let rows = spec.fetch.map_or(input.num_rows, |k| k.min(input.num_rows));
    let columns = schema
        .fields()
        .iter()
        .zip(&spec.outputs)
        .map(|(field, &index)| {
            let column = &input.columns[index];
            gather_column(
                device,
                &gathers,
                field,
                Some(column),
                &column.form,
                order.as_ref(),
                rows,
            )
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    metrics.sort.add_elapsed(start);
    metrics.output_rows.add(rows);
    Ok(DeviceBatch {
        schema: Arc::clone(schema),
        columns,
        num_rows: rows,
    })
}

impl DisplayAs for GpuSortExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "GpuSortExec: [{}]", self.replaced.join(" -> "))
    }
}

impl ExecutionPlan for GpuSortExec {
    fn name(&self) -> &str {
        "GpuSortExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
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
        let input = super::only_child("GpuSortExec", children)?;
        Ok(Arc::new(Self::new(
            input,
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
            "GpuSortExec feeds a GPU operator or DeviceToHostExec; it has no host output".into(),
        ))
    }
}

impl DeviceExec for GpuSortExec {
    fn execute_device(&self, context: Arc<TaskContext>) -> Result<DeviceStream> {
        let input = as_device_exec(&self.input)
            .ok_or_else(|| {
                DataFusionError::Internal("a GPU sort must sit on a GPU operator".into())
            })?
            .execute_device(context)?;
        let device = Arc::clone(&self.device);
        let spec = self.spec.clone();
        let input_schema = self.input.schema();
        let schema = self.schema();
        let metrics = SortMetrics::new(&self.metrics);
        let sorted = futures::stream::once(async move {
            let batches: Vec<Arc<DeviceBatch>> = input.try_collect().await?;
            let batch = sort_batches(&device, &spec, &input_schema, &schema, &batches, &metrics)
                .map_err(device_error)?;
            Ok::<_, DataFusionError>(Arc::new(batch))
        });
        Ok(sorted
            .try_filter(|batch: &Arc<DeviceBatch>| futures::future::ready(batch.num_rows > 0))
            .boxed())
    }
}
