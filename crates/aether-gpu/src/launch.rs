//! Launching generated row kernels over a device batch.
//!
//! Generated kernels share one signature (see `aether-exec`'s code generator):
//! `(const u64* columns, long long rows, unsigned char* out_values,
//! unsigned char* out_valid)`, with two pointers per input column in `columns` (values,
//! then the validity bitmap or 0), then any extra pointers the kernel takes (its fault
//! word). Keeping the launch here keeps every `unsafe` kernel
//! launch in this crate.

pub use cudarc::driver::LaunchConfig;
use cudarc::driver::{DevicePtr, PushKernelArg};

use crate::column::{DeviceBatch, DeviceBuffer};
use crate::device::GpuDevice;
use crate::error::DeviceError;

/// The result of a row kernel: `rows * width` value bytes and one validity byte a row.
#[derive(Debug)]
pub struct RowKernelOutput {
    pub values: DeviceBuffer,
    pub valid: DeviceBuffer,
    pub rows: usize,
}

/// Compiles (or finds cached) `source`, and runs its `entry` over every row of `batch`,
/// writing `width`-byte values. `extra_pointers` follow the columns' pointers. Memory
/// is reserved under `owner`.
pub fn run_row_kernel(
    device: &GpuDevice,
    source: &str,
    entry: &str,
    batch: &DeviceBatch,
    width: usize,
    owner: &str,
    extra_pointers: &[u64],
) -> Result<RowKernelOutput, DeviceError> {
    let (function, _) = device.load_kernel(source, entry)?;
    let stream = device.stream();
    let rows = batch.num_rows;
    let mut pointers = Vec::with_capacity(2 * batch.columns.len());
    for column in &batch.columns {
        let (values, _) = column.values.slice().device_ptr(stream);
        pointers.push(values);
        pointers.push(match &column.validity {
            Some(validity) => validity.slice().device_ptr(stream).0,
            None => 0,
        });
    }
    pointers.extend_from_slice(extra_pointers);
    if pointers.is_empty() {
        pointers.push(0);
    }
    let pointers = stream
        .clone_htod(&pointers)
        .map_err(DeviceError::driver("copying column pointers to the GPU"))?;
    let values = DeviceBuffer::alloc(device, owner, rows * width)?;
    let valid = DeviceBuffer::alloc(device, owner, rows)?;
    if rows > 0 {
        let config = grid_for(device, rows, 256);
        let rows_arg = rows as i64;
        let mut launch = stream.launch_builder(&function);
        launch
            .arg(&pointers)
            .arg(&rows_arg)
            .arg(values.slice())
            .arg(valid.slice());
        // SAFETY: the generated kernel takes (const u64*, long long, unsigned char*,
        // unsigned char*), matching these arguments in order. `pointers` holds two valid
        // device pointers (or 0 for "no bitmap") for every column of `batch`, then the
        // caller's extra pointers (live device buffers the kernel expects), each
        // buffer holding at least `rows` values of its type; the kernel reads rows below
        // `rows` only, and writes `rows * width` bytes to `values` and `rows` bytes to
        // `valid`, which is what was allocated.
        unsafe { launch.launch(config) }
            .map_err(DeviceError::driver("launching a generated kernel"))?;
    }
    Ok(RowKernelOutput {
        values,
        valid,
        rows,
    })
}

/// One argument of a hand-assembled kernel launch.
#[derive(Debug, Clone, Copy)]
pub enum KernelArg<'a> {
    /// A device buffer, passed as its device pointer.
    Buffer(&'a DeviceBuffer),
    /// A raw device address (0 for "none"), as `const u64*` style parameters take it.
    Address(u64),
    /// A `long long` parameter.
    I64(i64),
    /// An `unsigned long long` parameter.
    U64(u64),
}

/// A one-dimensional launch covering `items` with `threads` per block, capped at 16
/// blocks per multiprocessor: kernels use grid-stride loops, so any grid covers any count.
pub fn grid_for(device: &GpuDevice, items: usize, threads: u32) -> LaunchConfig {
    grid_capped(device, items, threads, 16)
}

/// [`grid_for`] with at most `blocks_per_multiprocessor` blocks a multiprocessor, for
/// kernels whose best grid was measured (a fold's blocks merge into shared state once
/// each, so their count trades per-block cost against latency hiding).
pub fn grid_capped(
    device: &GpuDevice,
    items: usize,
    threads: u32,
    blocks_per_multiprocessor: usize,
) -> LaunchConfig {
    let wanted = items.div_ceil(threads as usize).max(1);
    let most = (device.info().multiprocessors.max(1) as usize) * blocks_per_multiprocessor.max(1);
    LaunchConfig {
        grid_dim: (wanted.min(most) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Launches `function` with `args` on the device's stream.
///
/// # Safety
/// The kernel's parameters must match `args` in number, order and type (buffers and
/// addresses as pointers, `I64` as `long long`, `U64` as `unsigned long long`), and the
/// kernel must only access memory inside the buffers and addresses it is given, within
/// their lengths.
pub unsafe fn launch_kernel(
    device: &GpuDevice,
    function: &cudarc::driver::CudaFunction,
    config: LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<(), DeviceError> {
    let stream = device.stream();
    let mut launch = stream.launch_builder(function);
    for arg in args {
        match arg {
            KernelArg::Buffer(buffer) => launch.arg(buffer.slice()),
            KernelArg::Address(address) | KernelArg::U64(address) => launch.arg(address),
            KernelArg::I64(value) => launch.arg(value),
        };
    }
    // SAFETY: the caller guarantees the parameter list matches `args` and that the
    // kernel stays inside the memory it is given (this function's contract).
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(DeviceError::driver("launching a kernel"))
}
