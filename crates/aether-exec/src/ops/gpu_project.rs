//! `GpuProjectExec`: a projection inside a GPU segment, fused into the kernel above it.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use super::{DeviceExec, DeviceStream};
use crate::codegen::pipeline::Stage;

/// Computes a projection's expressions on the GPU, as the `ProjectionExec` it replaces.
#[derive(Debug)]
pub struct GpuProjectExec {
    input: Arc<dyn ExecutionPlan>,
    exprs: Vec<(Arc<dyn PhysicalExpr>, String)>,
    properties: Arc<PlanProperties>,
}

impl GpuProjectExec {
    /// The GPU form of `projection`, over the GPU operator `input`.
    pub fn new(projection: &ProjectionExec, input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = PlanProperties::new(
            projection.properties().equivalence_properties().clone(),
            datafusion::physical_plan::Partitioning::UnknownPartitioning(1),
            datafusion::physical_plan::execution_plan::EmissionType::Incremental,
            datafusion::physical_plan::execution_plan::Boundedness::Bounded,
        );
        Self {
            input,
            exprs: projection
                .expr()
                .iter()
                .map(|e| (Arc::clone(&e.expr), e.alias.clone()))
                .collect(),
            properties: Arc::new(properties),
        }
    }

    /// The fused-pipeline stage this projection is.
    pub fn stage(&self) -> Stage {
        Stage::Project {
            input: self.input.schema(),
            exprs: self.exprs.iter().map(|(e, _)| Arc::clone(e)).collect(),
        }
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

impl DisplayAs for GpuProjectExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let exprs: Vec<String> = self
            .exprs
            .iter()
            .map(|(e, name)| format!("{e} as {name}"))
            .collect();
        write!(f, "GpuProjectExec: expr=[{}]", exprs.join(", "))
    }
}

impl ExecutionPlan for GpuProjectExec {
    fn name(&self) -> &str {
        "GpuProjectExec"
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
        for (expr, _) in &self.exprs {
            if f(expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child("GpuProjectExec", children)?;
        Ok(Arc::new(Self {
            input,
            exprs: self.exprs.clone(),
            properties: Arc::clone(&self.properties),
        }))
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "GpuProjectExec runs fused into the GPU operator above it, not on its own".into(),
        ))
    }
}

impl DeviceExec for GpuProjectExec {
    fn execute_device(&self, _: Arc<TaskContext>) -> Result<DeviceStream> {
        Err(DataFusionError::Internal(
            "GpuProjectExec runs fused into the GPU operator above it, not on its own".into(),
        ))
    }
}
