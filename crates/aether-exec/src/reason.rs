//! Why something stays on the CPU: a structured code for tools and tests, and text for
//! people. Every reason is kept, not just the first, so a user sees all that stands
//! between a plan and the GPU.

use std::fmt;

/// The kind of obstacle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReasonCode {
    /// A data type the GPU layout does not hold.
    UnsupportedType,
    /// An expression the code generator does not translate.
    UnsupportedExpression,
    /// An operator with no GPU implementation.
    UnsupportedOperator,
    /// An operator the GPU runs only inside a segment that ends in a GPU aggregate.
    NeedsGpuAggregate,
    /// The cost model predicts the CPU is faster.
    CostModel,
}

impl ReasonCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnsupportedType => "unsupported_type",
            Self::UnsupportedExpression => "unsupported_expression",
            Self::UnsupportedOperator => "unsupported_operator",
            Self::NeedsGpuAggregate => "needs_gpu_aggregate",
            Self::CostModel => "cost_model",
        }
    }
}

/// One reason a node or expression cannot run on the GPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlacementReason {
    pub code: ReasonCode,
    pub message: String,
}

impl PlacementReason {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for PlacementReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
