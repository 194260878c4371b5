//! Aether's CUDA runtime.
//!
//! This crate will own everything that touches the device: discovery through `cudarc`
//! with dynamic loading (so one binary runs with and without a GPU), NVRTC kernel
//! compilation and its cache, the device memory pool and budget, pinned staging, and
//! `DeviceColumn` / `DeviceBatch` in Arrow layout with transfers both ways.
//!
//! It deliberately does not depend on DataFusion, so its tests build quickly and it can
//! be embedded on its own. The first piece is [`DeviceError`], the one error type every
//! device operation returns.

mod error;

pub use error::DeviceError;
