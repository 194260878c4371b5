//! Aether's execution layer between DataFusion and the GPU.
//!
//! It holds the engine choice every entry point offers (`--engine cpu|gpu|auto`), the
//! generator that turns DataFusion `PhysicalExpr` trees into CUDA kernels (with a reason
//! for everything it refuses), and GPU evaluation of those kernels. The `Gpu*Exec`
//! operators ([`ops`]) and the [`placement::GpuPlacement`] optimizer rule with its cost
//! model build on these; docs/status.md says where each stands.

pub mod codegen;
pub mod engine;
pub mod gpu_eval;
pub mod memory_table;
pub mod one_column;
pub mod reason;

pub use engine::Engine;
pub use reason::{PlacementReason, ReasonCode};
pub mod ops;
pub mod placement;
pub mod trace;
