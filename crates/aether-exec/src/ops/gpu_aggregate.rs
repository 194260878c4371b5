//! `GpuHashAggregateExec`: the hash aggregate of a GPU segment, fused with the filters
//! and projections below it into one kernel per batch. It folds every input partition
//! into one device table, so it writes either DataFusion's partial states (a CPU final
//! aggregate merges them) or, when placement moved the final aggregate too, the final
//! values (`mode=Single`).

use std::fmt;
use std::sync::Arc;

use aether_gpu::GpuDevice;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;

use super::group_table::GroupTable;
use super::{
    DeviceExec, DeviceStream, GpuFilterExec, GpuProjectExec, HostToDeviceExec, device_error,
};
use crate::codegen::aggregate::AggregateKernels;

/// Groups its input on the GPU and produces one row per group: the group keys, then
/// each function's partial state or final value (as its kernels were generated).
#[derive(Debug)]
pub struct GpuHashAggregateExec {
    input: Arc<dyn ExecutionPlan>,
    device: Arc<GpuDevice>,
    kernels: AggregateKernels,
    /// How DataFusion displayed the aggregate this replaces (`mode=Partial, gby=...`).
    description: String,
    properties: Arc<PlanProperties>,
}

impl GpuHashAggregateExec {
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        device: Arc<GpuDevice>,
        kernels: AggregateKernels,
        schema: SchemaRef,
        description: String,
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
            kernels,
            description,
            properties: Arc::new(properties),
        }
    }

    /// The generated CUDA source, for EXPLAIN VERBOSE-style inspection and tests.
    pub fn kernel_source(&self) -> &str {
        &self.kernels.source
    }
}

/// The upload at the bottom of a chain of fused GPU stages.
fn source_of(plan: &Arc<dyn ExecutionPlan>) -> Option<&HostToDeviceExec> {
    let mut plan = plan;
    loop {
        if let Some(source) = plan.downcast_ref::<HostToDeviceExec>() {
            return Some(source);
        }
        plan = if let Some(filter) = plan.downcast_ref::<GpuFilterExec>() {
            filter.input()
        } else if let Some(project) = plan.downcast_ref::<GpuProjectExec>() {
            project.input()
        } else {
            return None;
        };
    }
}

impl DisplayAs for GpuHashAggregateExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "GpuHashAggregateExec: {}", self.description)
    }
}

impl ExecutionPlan for GpuHashAggregateExec {
    fn name(&self) -> &str {
        "GpuHashAggregateExec"
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
        let input = super::only_child("GpuHashAggregateExec", children)?;
        Ok(Arc::new(Self {
            input,
            device: Arc::clone(&self.device),
            kernels: self.kernels.clone(),
            description: self.description.clone(),
            properties: Arc::clone(&self.properties),
        }))
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "GpuHashAggregateExec feeds DeviceToHostExec; it has no host output".into(),
        ))
    }
}

impl DeviceExec for GpuHashAggregateExec {
    fn execute_device(&self, context: Arc<TaskContext>) -> Result<DeviceStream> {
        let source = source_of(&self.input).ok_or_else(|| {
            DataFusionError::Internal(
                "a GPU aggregate must sit on filters and projections over HostToDeviceExec".into(),
            )
        })?;
        let mut batches = source.execute_device(context)?;
        let device = Arc::clone(&self.device);
        let kernels = self.kernels.clone();
        let schema = self.schema();
        let result = async move {
            let mut table = GroupTable::new(device, kernels).map_err(device_error)?;
            let mut waiting = std::time::Duration::ZERO;
            let mut folding = std::time::Duration::ZERO;
            loop {
                let start = std::time::Instant::now();
                let Some(batch) = batches.next().await else {
                    break;
                };
                let batch = batch?;
                waiting += start.elapsed();
                let start = std::time::Instant::now();
                table.fold(&batch).map_err(device_error)?;
                folding += start.elapsed();
            }
            if crate::trace::enabled() {
                eprintln!(
                    "gpu-trace: aggregate input wait: {:.3} ms, folds: {:.3} ms",
                    waiting.as_secs_f64() * 1e3,
                    folding.as_secs_f64() * 1e3
                );
            }
            Ok::<_, DataFusionError>(Arc::new(table.emit(&schema).map_err(device_error)?))
        };
        Ok(futures::stream::once(result).boxed())
    }
}
