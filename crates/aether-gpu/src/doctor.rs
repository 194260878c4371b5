//! What `aether doctor` measures on the GPU: copy bandwidths and a GPU-vs-CPU self-test.
//!
//! Bandwidths are timed with CUDA events around repeated copies after a warm-up copy, so
//! they exclude allocation and first-touch costs. The host side of PCIe copies is one
//! pinned buffer (`cuMemHostAlloc` without write-combining, so the CPU can read what
//! comes back).

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, LaunchConfig, PushKernelArg};

use crate::device::GpuDevice;
use crate::error::DeviceError;
use crate::kernel_cache::CubinSource;
use crate::random::XorShift64;
use crate::staging::PinnedBuffer;

/// The self-test kernel's source, compiled at run time like every Aether kernel.
pub const SELFTEST_SOURCE: &str = include_str!("../kernels/selftest.cu");

/// Measured copy rates, in GB/s (10^9 bytes per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth {
    /// Bytes per copy.
    pub bytes: usize,
    pub host_to_device: f64,
    pub device_to_host: f64,
    /// Host-to-device from ordinary (pageable) memory, straight and through the pinned
    /// staging pool: what uploads of Arrow buffers get.
    pub pageable_to_device: f64,
    pub staged_to_device: f64,
    /// Device-to-device copy, counting bytes read plus bytes written.
    pub device_copy: f64,
}

fn timing_event(device: &GpuDevice) -> Result<CudaEvent, DeviceError> {
    device
        .context()
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(DeviceError::driver("creating a timing event"))
}

/// Runs `copy` `repeats` times between two events and returns the seconds it took.
fn time_copies(
    device: &GpuDevice,
    repeats: usize,
    mut copy: impl FnMut() -> Result<(), DeviceError>,
) -> Result<f64, DeviceError> {
    copy()?; // warm-up
    let (start, end) = (timing_event(device)?, timing_event(device)?);
    start
        .record(device.stream())
        .map_err(DeviceError::driver("recording an event"))?;
    for _ in 0..repeats {
        copy()?;
    }
    end.record(device.stream())
        .map_err(DeviceError::driver("recording an event"))?;
    end.synchronize()
        .map_err(DeviceError::driver("waiting for copies"))?;
    let ms = start
        .elapsed_ms(&end)
        .map_err(DeviceError::driver("reading an event timer"))?;
    Ok(f64::from(ms) / 1e3)
}

/// Measures host-to-device, device-to-host and device-to-device copy rates with buffers
/// of `bytes` bytes.
pub fn measure_bandwidth(device: &GpuDevice, bytes: usize) -> Result<Bandwidth, DeviceError> {
    const REPEATS: usize = 10;
    let stream = device.stream();
    let mut host = PinnedBuffer::new(bytes)?;
    for (i, byte) in host.as_mut_slice().iter_mut().enumerate() {
        *byte = (i % 251) as u8;
    }
    let mut first = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(DeviceError::driver("allocating GPU memory"))?;
    let mut second = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(DeviceError::driver("allocating GPU memory"))?;

    let seconds = time_copies(device, REPEATS, || {
        stream
            .memcpy_htod(host.as_mut_slice(), &mut first)
            .map_err(DeviceError::driver("copying to the GPU"))
    })?;
    let host_to_device = (bytes * REPEATS) as f64 / seconds / 1e9;

    let seconds = time_copies(device, REPEATS, || {
        stream
            .memcpy_dtoh(&first, host.as_mut_slice())
            .map_err(DeviceError::driver("copying from the GPU"))
    })?;
    let device_to_host = (bytes * REPEATS) as f64 / seconds / 1e9;

    let seconds = time_copies(device, REPEATS, || {
        stream
            .memcpy_dtod(&first, &mut second)
            .map_err(DeviceError::driver("copying on the GPU"))
    })?;
    let device_copy = (2 * bytes * REPEATS) as f64 / seconds / 1e9;

    let pageable: Vec<u8> = (0..bytes).map(|i| (i % 253) as u8).collect();
    let seconds = time_copies(device, REPEATS, || {
        stream
            .memcpy_htod(&pageable, &mut first)
            .map_err(DeviceError::driver("copying to the GPU"))
    })?;
    let pageable_to_device = (bytes * REPEATS) as f64 / seconds / 1e9;
    let seconds = time_copies(device, REPEATS, || {
        device.staging().upload(stream, &pageable, &mut first)
    })?;
    let staged_to_device = (bytes * REPEATS) as f64 / seconds / 1e9;

    Ok(Bandwidth {
        bytes,
        host_to_device,
        device_to_host,
        pageable_to_device,
        staged_to_device,
        device_copy,
    })
}

/// The outcome of the GPU-vs-CPU self-test.
#[derive(Debug, Clone, PartialEq)]
pub struct SelfTest {
    pub rows: usize,
    pub gpu_result: i64,
    pub cpu_result: i64,
    /// Kernel time, from CUDA events.
    pub gpu_ms: f64,
    /// Single-threaded CPU time for the same loop.
    pub cpu_ms: f64,
    /// Where the kernel's CUBIN came from (compiled, or found in the cache).
    pub kernel_source: CubinSource,
}

impl SelfTest {
    pub fn passed(&self) -> bool {
        self.gpu_result == self.cpu_result
    }
}

/// Deterministic pseudo-random columns shaped like TPC-H's lineitem (prices in cents,
/// discounts and quantities as small integers), never all zeros.
pub fn selftest_columns(rows: usize, seed: u64) -> (Vec<i64>, Vec<i32>, Vec<i32>) {
    let mut random = XorShift64::new(seed);
    let mut next = move || random.next_u64();
    let mut price = Vec::with_capacity(rows);
    let mut discount = Vec::with_capacity(rows);
    let mut quantity = Vec::with_capacity(rows);
    for _ in 0..rows {
        let r = next();
        price.push(90_000 + (r % 10_500_000) as i64 - 1_000 * ((r >> 40) % 2) as i64);
        discount.push(((r >> 24) % 11) as i32);
        quantity.push(1 + ((r >> 32) % 50) as i32);
    }
    (price, discount, quantity)
}

/// The self-test's answer on the CPU.
pub fn selftest_on_cpu(price: &[i64], discount: &[i32], quantity: &[i32]) -> i64 {
    price
        .iter()
        .zip(discount)
        .zip(quantity)
        .filter(|((_, d), q)| **q < 24 && (5..=7).contains(*d))
        .map(|((p, d), _)| p.wrapping_mul(i64::from(*d)))
        .fold(0i64, i64::wrapping_add)
}

/// Runs the self-test kernel over `rows` rows and compares it with the CPU.
pub fn run_selftest(device: &GpuDevice, rows: usize) -> Result<SelfTest, DeviceError> {
    let (price, discount, quantity) = selftest_columns(rows, 0x5eed_a37e);
    let cpu_start = Instant::now();
    let cpu_result = selftest_on_cpu(&price, &discount, &quantity);
    let cpu_ms = cpu_start.elapsed().as_secs_f64() * 1e3;

    let (function, kernel_source) = device.load_kernel(SELFTEST_SOURCE, "aether_selftest_q6")?;
    let stream = device.stream();
    // CUDA cannot allocate zero bytes; an empty input uploads one unused element.
    fn at_least_one<T: Copy + Default>(values: &[T]) -> Vec<T> {
        if values.is_empty() {
            vec![T::default()]
        } else {
            values.to_vec()
        }
    }
    let upload = || DeviceError::driver("copying self-test data to the GPU");
    let price_d = stream.clone_htod(&at_least_one(&price)).map_err(upload())?;
    let discount_d = stream
        .clone_htod(&at_least_one(&discount))
        .map_err(upload())?;
    let quantity_d = stream
        .clone_htod(&at_least_one(&quantity))
        .map_err(upload())?;
    let mut revenue_d = stream
        .alloc_zeros::<u64>(1)
        .map_err(DeviceError::driver("allocating GPU memory"))?;

    let rows_arg = rows as i64;
    let blocks = (device.info().multiprocessors.max(1) as u32) * 8;
    let config = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (start, end) = (timing_event(device)?, timing_event(device)?);
    start
        .record(stream)
        .map_err(DeviceError::driver("recording an event"))?;
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&price_d)
        .arg(&discount_d)
        .arg(&quantity_d)
        .arg(&rows_arg)
        .arg(&mut revenue_d);
    // SAFETY: the kernel's parameters are (const i64*, const i32*, const i32*, i64,
    // u64*), matching the arguments in order; each input buffer holds `rows` elements
    // and the kernel reads indices below `rows` only; `revenue_d` holds the one u64 it
    // adds into.
    unsafe { launch.launch(config) }.map_err(DeviceError::driver("launching the self-test"))?;
    end.record(stream)
        .map_err(DeviceError::driver("recording an event"))?;
    let revenue = stream
        .clone_dtoh(&revenue_d)
        .map_err(DeviceError::driver("copying the self-test result back"))?;
    let gpu_ms = f64::from(
        start
            .elapsed_ms(&end)
            .map_err(DeviceError::driver("reading an event timer"))?,
    );
    Ok(SelfTest {
        rows,
        gpu_result: revenue.first().copied().unwrap_or_default() as i64,
        cpu_result,
        gpu_ms,
        cpu_ms,
        kernel_source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selftest_data_is_varied_and_the_cpu_answer_is_stable() {
        let (price, discount, quantity) = selftest_columns(10_000, 7);
        assert!(price.iter().any(|p| *p != price[0]));
        assert!(discount.contains(&0) && discount.contains(&10));
        assert!(quantity.iter().all(|q| (1..=50).contains(q)));
        let answer = selftest_on_cpu(&price, &discount, &quantity);
        assert_ne!(answer, 0);
        assert_eq!(answer, selftest_on_cpu(&price, &discount, &quantity));
    }
}
