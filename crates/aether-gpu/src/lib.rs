//! Aether's CUDA runtime.
//!
//! Everything that touches the device lives here: discovery through `cudarc` with
//! dynamic loading (one binary runs with and without a GPU), NVRTC kernel compilation
//! to CUBIN and its cache, and the measurements and self-test `aether doctor` reports.
//! Device memory, pinned staging and Arrow-layout device batches join as the GPU
//! operators land (see docs/status.md).
//!
//! It deliberately does not depend on DataFusion, so its tests build quickly and it can
//! be embedded on its own.

pub mod compile;
pub mod device;
pub mod doctor;
mod error;
pub mod kernel_cache;

pub use device::{DeviceInfo, GpuDevice, shared_device};
pub use error::DeviceError;
pub use kernel_cache::{CacheStats, CubinSource, KernelCache, KernelKey};
