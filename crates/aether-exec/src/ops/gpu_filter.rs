//! `GpuFilterExec`: a filter inside a GPU segment, fused into the kernel above it.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use super::{DeviceExec, DeviceStream};
use crate::codegen::pipeline::Stage;

/// Keeps the rows where a predicate is TRUE, on the GPU, as the `FilterExec` it
/// replaces (same predicate, same projection, same schema).
#[derive(Debug)]
pub struct GpuFilterExec {
    input: Arc<dyn ExecutionPlan>,
    predicate: Arc<dyn PhysicalExpr>,
    projection: Option<Vec<usize>>,
    properties: Arc<PlanProperties>,
}

impl GpuFilterExec {
    /// The GPU form of `filter`, over the GPU operator `input`.
    pub fn new(filter: &FilterExec, input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = PlanProperties::new(
            filter.properties().equivalence_properties().clone(),
            datafusion::physical_plan::Partitioning::UnknownPartitioning(1),
            datafusion::physical_plan::execution_plan::EmissionType::Incremental,
            datafusion::physical_plan::execution_plan::Boundedness::Bounded,
        );
        Self {
            input,
            predicate: Arc::clone(filter.predicate()),
            projection: filter.projection().as_ref().map(|p| p.to_vec()),
            properties: Arc::new(properties),
        }
    }

    /// The fused-pipeline stage this filter is.
    pub fn stage(&self) -> Stage {
        Stage::Filter {
            input: self.input.schema(),
            predicate: Arc::clone(&self.predicate),
            projection: self.projection.clone(),
        }
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

impl DisplayAs for GpuFilterExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "GpuFilterExec: {}", self.predicate)?;
        if let Some(projection) = &self.projection {
            write!(f, ", projection={projection:?}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for GpuFilterExec {
    fn name(&self) -> &str {
        "GpuFilterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        f(&self.predicate)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child("GpuFilterExec", children)?;
        Ok(Arc::new(Self {
            input,
            predicate: Arc::clone(&self.predicate),
            projection: self.projection.clone(),
            properties: Arc::clone(&self.properties),
        }))
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "GpuFilterExec runs fused into the GPU operator above it, not on its own".into(),
        ))
    }
}

impl DeviceExec for GpuFilterExec {
    fn execute_device(&self, _: Arc<TaskContext>) -> Result<DeviceStream> {
        Err(DataFusionError::Internal(
            "GpuFilterExec runs fused into the GPU operator above it, not on its own".into(),
        ))
    }
}
