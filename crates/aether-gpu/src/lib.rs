//! Aether's CUDA runtime.
//!
//! Everything that touches the device lives here: discovery through `cudarc` with
//! dynamic loading (one binary runs with and without a GPU), NVRTC kernel compilation
//! to CUBIN and its cache, the device memory budget, pinned staging, Arrow-layout
//! device columns and batches with transfers both ways, and the measurements and
//! self-test `aether doctor` reports.
//!
//! It deliberately does not depend on DataFusion, so its tests build quickly and it can
//! be embedded on its own.

pub mod column;
pub mod compile;
pub mod device;
pub mod dictionary;
pub mod doctor;
mod error;
pub mod kernel_cache;
pub mod launch;
pub mod layout;
pub mod memory;
pub mod pinned_slabs;
pub mod random;
pub mod staging;

pub use column::{DeviceBatch, DeviceBuffer, DeviceColumn};
pub use cudarc::driver::CudaFunction;
pub use device::{DeviceInfo, DeviceOptions, GpuDevice, shared_device};
pub use error::DeviceError;
pub use kernel_cache::{CacheStats, CubinSource, KernelCache, KernelKey};
pub use layout::{DeviceForm, HostColumn, LayoutError, LayoutOptions};
pub use memory::{MemoryBudget, Reservation};
pub use pinned_slabs::{PinnedSlab, SlabPool};
