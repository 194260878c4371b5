//! `aether doctor`: what GPU Aether sees, how fast it moves data, the state of the kernel
//! cache, and a short GPU-vs-CPU self-test with a pass/fail line.
//!
//! Without a GPU it says why in one line and exits 0: a CPU-only machine is a valid
//! setup. A self-test whose GPU answer differs from the CPU's exits 1.

use std::path::PathBuf;

use aether_gpu::doctor::{measure_bandwidth, run_selftest};
use aether_gpu::{DeviceError, DeviceOptions, GpuDevice, KernelCache};
use clap::Args;

use super::CommonArgs;
use crate::error::{AetherError, Result};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Rows in the self-test (a TPC-H Q6-shaped filter and sum).
    #[arg(long, value_name = "ROWS", default_value_t = 16 << 20)]
    selftest_rows: usize,
    /// Bytes per copy when measuring bandwidth.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    copy_bytes: usize,
    #[command(flatten)]
    common: CommonArgs,
}

/// The kernel cache directory `aether.gpu.kernelCacheDir` names, else the default.
pub fn kernel_cache_dir(configured: &str) -> Option<PathBuf> {
    if configured.trim().is_empty() {
        KernelCache::default_dir()
    } else {
        Some(PathBuf::from(configured.trim()))
    }
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

pub async fn run(args: DoctorArgs) -> Result<()> {
    let context = args.common.context()?;
    let config = context.aether_config();
    let cache_dir = kernel_cache_dir(&config.gpu_kernel_cache_dir);
    println!(
        "host:       {} cores, {} {}",
        crate::parallel::available_threads(),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    let options = DeviceOptions {
        kernel_cache_dir: cache_dir.clone(),
        alloc_fraction: config.gpu_memory_alloc_fraction,
        reserve_bytes: config.gpu_memory_reserve_bytes,
        ..DeviceOptions::default()
    };
    let device = match GpuDevice::discover(0, &options) {
        Ok(device) => device,
        Err(e @ DeviceError::Unavailable(_)) => {
            println!("GPU:        {e}");
            return Ok(());
        }
        Err(e) => return Err(AetherError::Failed(e.to_string())),
    };
    let gpu_error = |e: DeviceError| AetherError::Failed(e.to_string());
    let info = device.info();
    println!(
        "driver:     CUDA {} (NVRTC {}.{})",
        info.driver_version_text(),
        info.nvrtc_version.0,
        info.nvrtc_version.1
    );
    println!(
        "GPU {}:      {}, {}, {} SMs, {:.1} GiB memory ({:.1} GiB free)",
        info.ordinal,
        info.name,
        info.arch(),
        info.multiprocessors,
        gib(info.total_memory),
        gib(info.free_memory)
    );
    println!(
        "budget:     {:.1} GiB for Aether (aether.gpu.memory.allocFraction {} of free memory after a {} MiB reserve); {} MiB pinned staging",
        gib(device.memory().limit() as usize),
        config.gpu_memory_alloc_fraction,
        config.gpu_memory_reserve_bytes >> 20,
        device.staging().pinned_bytes() >> 20
    );

    let bandwidth = measure_bandwidth(&device, args.copy_bytes).map_err(gpu_error)?;
    println!(
        "PCIe:       host->device {:.1} GB/s, device->host {:.1} GB/s (pinned, {} MiB copies)",
        bandwidth.host_to_device,
        bandwidth.device_to_host,
        bandwidth.bytes >> 20
    );
    println!(
        "uploads:    from pageable memory {:.1} GB/s direct, {:.1} GB/s through the pinned staging pool",
        bandwidth.pageable_to_device, bandwidth.staged_to_device
    );
    println!(
        "GPU memory: device copy {:.0} GB/s (bytes read + written)",
        bandwidth.device_copy
    );

    let selftest = run_selftest(&device, args.selftest_rows).map_err(gpu_error)?;
    let cache = device.kernel_cache();
    let (entries, bytes) = cache.disk_usage();
    let stats = cache.stats();
    println!(
        "kernels:    cache {}: {entries} entries, {} KiB; this run: {} compiled, {} rebuilt, {} from disk",
        cache_dir.map_or_else(|| "in memory only".to_string(), |d| d.display().to_string()),
        bytes / 1024,
        stats.compiled,
        stats.rebuilt,
        stats.disk_hits
    );
    let verdict = if selftest.passed() { "PASS" } else { "FAIL" };
    println!(
        "self-test:  {verdict}: Q6-style filter and sum over {} rows, GPU {} (kernel {:.3} ms), CPU {} ({:.1} ms, one core)",
        selftest.rows, selftest.gpu_result, selftest.gpu_ms, selftest.cpu_result, selftest.cpu_ms
    );
    if selftest.passed() {
        Ok(())
    } else {
        Err(AetherError::Failed(
            "the GPU self-test gave a different answer from the CPU".into(),
        ))
    }
}
