//! Generating CUDA kernels from DataFusion physical expressions.
//!
//! Kernels are CUDA C++ source, compiled at run time by NVRTC (through
//! `aether_gpu::GpuDevice::load_kernel`) and cached by their source text. Generating
//! source needs no GPU, so CI tests what is generated and what is refused; the GPU tests
//! compare what the kernels compute with DataFusion's own evaluation.

pub mod aggregate;
pub mod expr;
pub mod generated;
pub mod kernel;
pub mod key_words;
pub mod pipeline;
pub mod rows;
pub mod types;

pub use kernel::{EVAL_ENTRY, ExprKernel, expr_kernel};
pub use types::CudaType;
