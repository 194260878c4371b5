//! Aether's execution layer between DataFusion and the GPU.
//!
//! It will hold the `Gpu*Exec` operators, the `PhysicalExpr` to CUDA code generator,
//! the `GpuPlacement` optimizer rule and its cost model. Today it holds the engine
//! choice every entry point offers (`--engine cpu|gpu|auto`); only the CPU engine
//! exists yet, and asking for another is a clear error rather than a silent fallback.

pub mod engine;

pub use engine::Engine;
