//! Values known only when the kernels run, read by every row: the results of
//! uncorrelated scalar subqueries (`scalar_subquery(...)` in DataFusion's plans, TPC-H
//! Q11, Q15 and Q22).
//!
//! DataFusion's `ScalarSubqueryExec` runs each subquery before it executes its input,
//! so when a GPU segment under it starts, the value is in the shared results container
//! that the expression reads. The kernel is generated before then, so the value cannot
//! be a literal: it travels like a lookup table, one small device buffer per batch in
//! the kernel's column pointers ([`HostTable::Scalar`]), holding the value in its
//! device form at byte 0 and a validity byte at [`SCALAR_VALIDITY_OFFSET`].

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::physical_expr::PhysicalExpr;

use super::{ExprCompiler, HostTable, Value, column_word};
use crate::codegen::types::CudaType;

/// Where a scalar parameter's validity byte sits, after a value of up to 16 bytes.
pub const SCALAR_VALIDITY_OFFSET: usize = 16;

/// Bytes of a scalar parameter's device buffer.
pub const SCALAR_PARAMETER_BYTES: usize = 32;

/// An expression of no columns evaluated on the host when the kernels run.
#[derive(Debug, Clone)]
pub struct ScalarParameter {
    pub expr: Arc<dyn PhysicalExpr>,
    pub data_type: DataType,
}

impl ExprCompiler {
    /// Reads the value of `expr` (of type `data_type`) from a scalar parameter.
    pub(super) fn scalar_parameter(
        &mut self,
        expr: &Arc<dyn PhysicalExpr>,
        data_type: DataType,
    ) -> Option<Value> {
        let ty = match CudaType::of(&data_type) {
            Ok(ty) => ty,
            Err(reason) => return self.refuse(reason),
        };
        let word = column_word(self.push_host_table(HostTable::Scalar(ScalarParameter {
            expr: Arc::clone(expr),
            data_type,
        })));
        let value = if ty == CudaType::Bool {
            format!("(((const unsigned char*){word})[0] != 0)")
        } else {
            format!("((const {}*){word})[0]", ty.c_name())
        };
        let valid = format!("(((const unsigned char*){word})[{SCALAR_VALIDITY_OFFSET}] != 0)");
        Some(self.emit(ty, &value, &valid))
    }
}
