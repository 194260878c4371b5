//! Projected values computed where they are first read.
//!
//! A projection stage of a fused pipeline compiles each expression when the stage is
//! compiled, which is when support is decided, but its statements wait: they go into
//! the kernel's body at the value's first read. An aggregate's argument is read after
//! the group's slot is found, so a value computed only for it (TPC-H Q1's
//! `l_extendedprice * (1 - l_discount)`) is not live in registers across the slot probe:
//! computed early, it took Q1's fold kernel from 40 to 48 registers, one block fewer
//! per multiprocessor (NVRTC 13.0, sm_90).
//!
//! What a row computes stays what DataFusion computes: every deferred value is emitted
//! before the next filter (`ExprCompiler::emit_all_deferred`), so a value that can fault
//! is computed for every row the projection saw, and consumers emit what is left once
//! they have read what they need.

use std::sync::Arc;

use datafusion::physical_plan::PhysicalExpr;

use super::{Binding, ExprCompiler, Value};

/// A projected value and the statements that compute it.
#[derive(Debug)]
pub(super) struct Deferred {
    value: Value,
    statements: String,
    emitted: bool,
}

impl ExprCompiler {
    /// Compiles `expr` as [`Self::compile`] does, returning a binding whose statements
    /// are placed in the body when the value is first read (or by
    /// [`Self::emit_all_deferred`]). `None` when the expression is not supported, with
    /// its reasons recorded.
    pub fn compile_deferred(&mut self, expr: &Arc<dyn PhysicalExpr>) -> Option<Binding> {
        // Deferred values this expression reads go to the kernel's body, ahead of it.
        let body = std::mem::take(&mut self.body);
        self.held_body = Some(body);
        let value = self.compile(expr);
        let statements = std::mem::take(&mut self.body);
        self.body = self.held_body.take().unwrap_or_default();
        let value = value?;
        if statements.is_empty() {
            return Some(Binding::Value(value));
        }
        self.deferred.push(Deferred {
            value,
            statements,
            emitted: false,
        });
        Some(Binding::Deferred(self.deferred.len() - 1))
    }

    /// The value of deferred binding `id`, its statements emitted on the first call.
    pub(super) fn emit_deferred(&mut self, id: usize) -> Option<Value> {
        let entry = self.deferred.get_mut(id)?;
        if !entry.emitted {
            entry.emitted = true;
            let target = self.held_body.as_mut().unwrap_or(&mut self.body);
            target.push_str(&entry.statements);
        }
        Some(entry.value.clone())
    }

    /// Emits every deferred value not read yet, in the order they were compiled.
    pub fn emit_all_deferred(&mut self) {
        for id in 0..self.deferred.len() {
            let _ = self.emit_deferred(id);
        }
    }
}
