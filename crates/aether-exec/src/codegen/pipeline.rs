//! Fusing a chain of filters and projections into the body of one kernel.
//!
//! A pipeline `Filter -> Projection -> Filter ...` over the kernel's input columns is
//! compiled stage by stage into one straight-line body: a filter ends with
//! `if (!keep) continue;` (so later stages only run for kept rows), and a projection
//! re-binds the next stage's columns to the values it computed. Columns a projection
//! passes through stay bound to the input and are loaded only where used, so no
//! intermediate result is ever written to memory.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;

use super::expr::{Binding, ExprCompiler};
use super::types::CudaType;
use crate::reason::{PlacementReason, ReasonCode};

/// One stage of a fused pipeline.
#[derive(Debug, Clone)]
pub enum Stage {
    /// Keep rows where `predicate` is TRUE, then keep the columns in `projection`
    /// (all when `None`), as DataFusion's `FilterExec` does.
    Filter {
        input: SchemaRef,
        predicate: Arc<dyn PhysicalExpr>,
        projection: Option<Vec<usize>>,
    },
    /// Compute `exprs` over the stage's input columns.
    Project {
        input: SchemaRef,
        exprs: Vec<Arc<dyn PhysicalExpr>>,
    },
}

impl Stage {
    /// The schema the stage's expressions read.
    pub fn input(&self) -> &SchemaRef {
        match self {
            Self::Filter { input, .. } | Self::Project { input, .. } => input,
        }
    }
}

/// Compiles `stages` in order into `compiler`; afterwards the compiler's bindings are
/// the last stage's output columns. Returns false when a stage cannot run on the GPU
/// (the reasons are in the compiler).
///
/// Projected values are emitted where first read (`codegen/expr/deferred.rs`): a caller
/// reads what it needs, then calls [`ExprCompiler::emit_all_deferred`], so a projected
/// value nothing reads is still computed (and still faults where DataFusion would fail).
pub fn compile_stages(compiler: &mut ExprCompiler, stages: &[Stage]) -> bool {
    let mut ok = true;
    for stage in stages {
        let bindings = compiler.bindings().to_vec();
        compiler.rebind(Arc::clone(stage.input()), bindings.clone());
        match stage {
            Stage::Filter {
                predicate,
                projection,
                ..
            } => {
                // Rows a filter drops must still have run the projections below it.
                compiler.emit_all_deferred();
                match compiler.compile(predicate) {
                    Some(keep) if keep.ty == CudaType::Bool => {
                        compiler.push_statement(&format!(
                            "if (!({} && {})) continue;",
                            keep.valid, keep.value
                        ));
                    }
                    Some(_) => {
                        compiler.add_reason(PlacementReason::new(
                            ReasonCode::UnsupportedExpression,
                            format!("filter predicate {predicate} is not boolean"),
                        ));
                        ok = false;
                    }
                    None => ok = false,
                }
                if let Some(projection) = projection {
                    let kept = projection
                        .iter()
                        .map(|i| bindings.get(*i).cloned().unwrap_or(Binding::Input(*i)))
                        .collect();
                    let input = Arc::clone(stage.input());
                    let schema = match input.project(projection) {
                        Ok(schema) => Arc::new(schema),
                        Err(_) => input,
                    };
                    compiler.rebind(schema, kept);
                }
            }
            Stage::Project { exprs, .. } => {
                let mut next = Vec::with_capacity(exprs.len());
                for expr in exprs {
                    let any: &dyn PhysicalExpr = expr.as_ref();
                    // A column passed through keeps its binding (and stays unloaded).
                    if let Some(column) = any.downcast_ref::<Column>()
                        && let Some(binding) = bindings.get(column.index())
                    {
                        next.push(binding.clone());
                        continue;
                    }
                    match compiler.compile_deferred(expr) {
                        Some(binding) => next.push(binding),
                        None => {
                            ok = false;
                            next.push(Binding::Refused);
                        }
                    }
                }
                let schema = Arc::clone(stage.input());
                compiler.rebind(schema, next);
            }
        }
    }
    ok
}
