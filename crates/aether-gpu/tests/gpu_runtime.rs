//! The device runtime on a real GPU.
//!
//! Tests marked `#[ignore = "needs a GPU"]` run only where a GPU is, with
//! `cargo test -- --include-ignored` (CI has none and reports them as ignored, not
//! passed). `discovery_never_panics` runs everywhere: without a GPU it checks the
//! one-line reason instead.

use aether_gpu::doctor::{measure_bandwidth, run_selftest};
use aether_gpu::{CubinSource, DeviceError, DeviceOptions, GpuDevice};

#[expect(
    clippy::panic,
    reason = "a test helper: no GPU means the test cannot run"
)]
fn gpu() -> GpuDevice {
    match GpuDevice::discover(0, &memory_only()) {
        Ok(device) => device,
        Err(e) => panic!("this test needs a GPU: {e}"),
    }
}

/// Device options that keep compiled kernels in memory, so tests leave no files behind.
fn memory_only() -> DeviceOptions {
    DeviceOptions {
        kernel_cache_dir: None,
        ..DeviceOptions::default()
    }
}

fn cached_in(dir: &std::path::Path) -> DeviceOptions {
    DeviceOptions {
        kernel_cache_dir: Some(dir.to_path_buf()),
        ..DeviceOptions::default()
    }
}

#[test]
fn discovery_never_panics() {
    match GpuDevice::discover(0, &memory_only()) {
        Ok(device) => {
            let info = device.info();
            assert!(!info.name.is_empty());
            assert!(info.compute_capability.0 >= 7, "{info:?}");
            assert!(info.total_memory > 0 && info.free_memory <= info.total_memory);
            assert!(info.arch().starts_with("sm_"));
        }
        Err(DeviceError::Unavailable(reason)) => {
            assert!(!reason.is_empty());
            let line = DeviceError::Unavailable(reason).to_string();
            assert!(
                line.starts_with("no GPU: running on CPU because "),
                "{line}"
            );
        }
        Err(other) => panic!("discovery failed with something other than Unavailable: {other}"),
    }
}

#[test]
fn asking_for_a_gpu_that_does_not_exist_is_unavailable() {
    let err = GpuDevice::discover(4096, &memory_only()).unwrap_err();
    assert!(matches!(err, DeviceError::Unavailable(_)), "{err}");
}

#[test]
#[ignore = "needs a GPU"]
fn selftest_matches_the_cpu_at_every_size() {
    let device = gpu();
    for rows in [0, 1, 31, 1_000_003, 16 << 20] {
        let result = run_selftest(&device, rows).unwrap();
        assert!(
            result.passed(),
            "{rows} rows: GPU {} != CPU {}",
            result.gpu_result,
            result.cpu_result
        );
        println!(
            "self-test {rows} rows: GPU {:.3} ms, CPU {:.1} ms, result {}",
            result.gpu_ms, result.cpu_ms, result.gpu_result
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn kernels_compile_to_cubin_once_then_come_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let source = "extern \"C\" __global__ void twice(int* x) { x[threadIdx.x] *= 2; }";
    let device = GpuDevice::discover(0, &cached_in(dir.path())).unwrap();
    let (_, origin) = device.load_kernel(source, "twice").unwrap();
    assert_eq!(origin, CubinSource::Compiled);
    let (_, origin) = device.load_kernel(source, "twice").unwrap();
    assert_eq!(origin, CubinSource::Memory);
    drop(device);

    // A new device (as a new process would) finds the CUBIN on disk.
    let device = GpuDevice::discover(0, &cached_in(dir.path())).unwrap();
    let (_, origin) = device.load_kernel(source, "twice").unwrap();
    assert_eq!(origin, CubinSource::Disk);
    assert_eq!(device.kernel_cache().disk_usage().0, 1);
}

#[test]
#[ignore = "needs a GPU"]
fn a_bad_kernel_reports_the_compiler_log() {
    let device = gpu();
    let err = device
        .load_kernel("extern \"C\" __global__ void broken( { }", "broken")
        .unwrap_err();
    match &err {
        DeviceError::Compile { kernel, arch, log } => {
            assert_eq!(kernel, "broken");
            assert_eq!(*arch, device.info().arch());
            assert!(log.contains("error"), "{log}");
        }
        other => panic!("expected a compile error, got {other}"),
    }
}

#[test]
#[ignore = "needs a GPU"]
fn bandwidth_is_measured() {
    let device = gpu();
    let bandwidth = measure_bandwidth(&device, 256 << 20).unwrap();
    println!("{bandwidth:?}");
    assert!(bandwidth.host_to_device > 1.0, "{bandwidth:?}");
    assert!(bandwidth.device_to_host > 1.0, "{bandwidth:?}");
    assert!(
        bandwidth.device_copy > bandwidth.host_to_device,
        "{bandwidth:?}"
    );
}
