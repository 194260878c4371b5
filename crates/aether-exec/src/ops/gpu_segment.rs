//! `GpuSegmentExec`: the operators of one placed subtree, run on the GPU as one plan
//! node over the device batches of the upload below it.
//!
//! The filters and projections it replaced are fused into its kernels, ending either
//! in a hash aggregate (one device table that every input batch folds into, emitting
//! DataFusion's partial states or the final values) or in rows (stream compaction:
//! the kept rows in their input order, [`super::row_compaction`]). EXPLAIN shows the
//! replaced operators in its line, bottom first; EXPLAIN ANALYZE shows its metrics:
//! compile (kernel load, NVRTC on first use), input wait (the upload below), kernels,
//! input and output rows.

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
use futures::StreamExt;

use super::group_table::GroupTable;
use super::row_compaction::RowCompactor;
use super::{DeviceExec, DeviceStream, as_device_exec, device_error};
use crate::codegen::aggregate::AggregateKernels;
use crate::codegen::rows::RowKernels;

/// What a segment's kernels end in.
#[derive(Debug, Clone)]
pub enum SegmentOutput {
    /// A hash aggregate: one batch of groups at the end.
    Aggregate(AggregateKernels),
    /// The kept rows of every input batch, one output batch each.
    Rows(RowKernels),
}

/// The segment's metrics, shown by EXPLAIN ANALYZE.
#[derive(Debug, Clone)]
struct SegmentMetrics {
    compile: Time,
    input_wait: Time,
    kernels: Time,
    input_rows: Count,
    output_rows: Count,
}

impl SegmentMetrics {
    fn new(set: &ExecutionPlanMetricsSet) -> Self {
        Self {
            compile: MetricBuilder::new(set).subset_time("compile", 0),
            input_wait: MetricBuilder::new(set).subset_time("input_wait", 0),
            kernels: MetricBuilder::new(set).subset_time("kernels", 0),
            input_rows: MetricBuilder::new(set).counter("input_rows", 0),
            output_rows: MetricBuilder::new(set).output_rows(0),
        }
    }
}

/// A placed subtree run on the GPU.
#[derive(Debug)]
pub struct GpuSegmentExec {
    input: Arc<dyn ExecutionPlan>,
    device: Arc<GpuDevice>,
    output: SegmentOutput,
    /// DataFusion's one-line display of each operator the segment replaced, bottom
    /// first.
    stages: Vec<String>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GpuSegmentExec {
    /// A segment over the GPU operator `input`, returning `schema`.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        device: Arc<GpuDevice>,
        output: SegmentOutput,
        schema: SchemaRef,
        stages: Vec<String>,
    ) -> Self {
        let emission = match output {
            SegmentOutput::Aggregate(_) => EmissionType::Final,
            SegmentOutput::Rows(_) => EmissionType::Incremental,
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            emission,
            Boundedness::Bounded,
        );
        Self {
            input,
            device,
            output,
            stages,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The generated CUDA source, for inspection and tests.
    pub fn kernel_source(&self) -> &str {
        match &self.output {
            SegmentOutput::Aggregate(kernels) => &kernels.source,
            SegmentOutput::Rows(kernels) => &kernels.source,
        }
    }

    /// What the kernels end in.
    pub fn output(&self) -> &SegmentOutput {
        &self.output
    }

    fn execute_aggregate(
        &self,
        kernels: AggregateKernels,
        mut batches: DeviceStream,
        metrics: SegmentMetrics,
    ) -> DeviceStream {
        let device = Arc::clone(&self.device);
        let schema = self.schema();
        let result = async move {
            let start = std::time::Instant::now();
            let mut table = GroupTable::new(device, kernels).map_err(device_error)?;
            metrics.compile.add_elapsed(start);
            loop {
                let start = std::time::Instant::now();
                let Some(batch) = batches.next().await else {
                    break;
                };
                let batch = batch?;
                metrics.input_wait.add_elapsed(start);
                metrics.input_rows.add(batch.num_rows);
                let start = std::time::Instant::now();
                table.fold(&batch).map_err(device_error)?;
                metrics.kernels.add_elapsed(start);
            }
            let start = std::time::Instant::now();
            let groups = table.emit(&schema).map_err(device_error)?;
            metrics.kernels.add_elapsed(start);
            metrics.output_rows.add(groups.num_rows);
            Ok::<_, DataFusionError>(Arc::new(groups))
        };
        futures::stream::once(result).boxed()
    }

    fn execute_rows(
        &self,
        kernels: RowKernels,
        batches: DeviceStream,
        metrics: SegmentMetrics,
    ) -> DeviceStream {
        let device = Arc::clone(&self.device);
        let start = std::time::Instant::now();
        let compactor = RowCompactor::new(device, kernels).map_err(device_error);
        metrics.compile.add_elapsed(start);
        let mut compactor = match compactor {
            Ok(compactor) => compactor,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        if !compactor.can_fault() {
            return batches
                .map(move |batch| {
                    let batch = batch?;
                    compact(&mut compactor, &batch, &metrics).map(Arc::new)
                })
                .boxed();
        }
        // A row that faults hands the whole segment to the CPU, which can only happen
        // before any row has left: every batch is compacted and checked first.
        let all = async move {
            let mut kept = Vec::new();
            let mut batches = batches;
            while let Some(batch) = batches.next().await {
                let batch = batch?;
                kept.push(Arc::new(compact(&mut compactor, &batch, &metrics)?));
            }
            compactor.check_faults().map_err(device_error)?;
            Ok::<_, DataFusionError>(futures::stream::iter(kept.into_iter().map(Ok)))
        };
        futures::stream::once(all)
            .map(|result| match result {
                Ok(stream) => stream.boxed(),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            })
            .flatten()
            .boxed()
    }
}

/// One batch through a row segment's kernels, counted in its metrics.
fn compact(
    compactor: &mut RowCompactor,
    batch: &DeviceBatch,
    metrics: &SegmentMetrics,
) -> Result<DeviceBatch> {
    let start = std::time::Instant::now();
    let output = compactor.compact(batch).map_err(device_error)?;
    metrics.kernels.add_elapsed(start);
    metrics.input_rows.add(batch.num_rows);
    metrics.output_rows.add(output.num_rows);
    Ok(output)
}

impl DisplayAs for GpuSegmentExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let ends_in = match self.output {
            SegmentOutput::Aggregate(_) => "aggregate",
            SegmentOutput::Rows(_) => "rows",
        };
        write!(
            f,
            "GpuSegmentExec: {ends_in} [{}]",
            self.stages.join(" -> ")
        )
    }
}

impl ExecutionPlan for GpuSegmentExec {
    fn name(&self) -> &str {
        "GpuSegmentExec"
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
        let input = super::only_child("GpuSegmentExec", children)?;
        Ok(Arc::new(Self::new(
            input,
            Arc::clone(&self.device),
            self.output.clone(),
            self.schema(),
            self.stages.clone(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "GpuSegmentExec feeds DeviceToHostExec; it has no host output".into(),
        ))
    }
}

impl DeviceExec for GpuSegmentExec {
    fn execute_device(&self, context: Arc<TaskContext>) -> Result<DeviceStream> {
        let source = as_device_exec(&self.input).ok_or_else(|| {
            DataFusionError::Internal("a GPU segment must sit on a GPU operator".into())
        })?;
        let batches = source.execute_device(context)?;
        let metrics = SegmentMetrics::new(&self.metrics);
        Ok(match &self.output {
            SegmentOutput::Aggregate(kernels) => {
                self.execute_aggregate(kernels.clone(), batches, metrics)
            }
            SegmentOutput::Rows(kernels) => self.execute_rows(kernels.clone(), batches, metrics),
        })
    }
}
