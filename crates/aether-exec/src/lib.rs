//! Aether's execution layer between DataFusion and the GPU.
//!
//! It holds the engine choice every entry point offers (`--engine cpu|gpu|auto`), the
//! generator that turns DataFusion `PhysicalExpr` trees into CUDA kernels (with a reason
//! for everything it refuses), and GPU evaluation of those kernels. The `Gpu*Exec`
//! operators, the `GpuPlacement` optimizer rule and its cost model build on these; see
//! docs/status.md for where they stand. Only the CPU engine runs queries yet, and asking
//! for another is a clear error rather than a silent fallback.

pub mod codegen;
pub mod engine;
pub mod gpu_eval;
pub mod reason;

pub use engine::Engine;
pub use reason::{PlacementReason, ReasonCode};
