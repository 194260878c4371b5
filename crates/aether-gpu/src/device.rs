//! Finding the GPU and holding what every device operation needs: the CUDA context, the
//! stream Aether orders its work on, the device's properties and the kernel cache.
//!
//! CUDA is loaded dynamically: on a machine without a driver, a GPU or NVRTC,
//! [`GpuDevice::discover`] returns [`DeviceError::Unavailable`] with the reason, and
//! nothing panics. [`shared_device`] discovers once per process, so the "no GPU" notice
//! is said once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, result as driver};
use cudarc::nvrtc::Ptx;

use crate::compile::{compile_cubin, nvrtc_version};
use crate::error::DeviceError;
use crate::kernel_cache::{CubinSource, KernelCache, KernelKey};
use crate::memory::MemoryBudget;
use crate::pinned_slabs::SlabPool;
use crate::staging::StagingPool;

/// How to open a device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceOptions {
    /// Where compiled kernels are kept; `None` keeps them in memory only.
    pub kernel_cache_dir: Option<PathBuf>,
    /// Share of free device memory the budget may use (`aether.gpu.memory.allocFraction`).
    pub alloc_fraction: f64,
    /// Bytes left outside the budget (`aether.gpu.memory.reserveBytes`).
    pub reserve_bytes: u64,
    /// Pinned staging chunks and their size: uploads stream through them.
    pub staging_chunks: usize,
    pub staging_chunk_bytes: usize,
    /// Pinned slabs host gathering writes into (pinned on first use): the most, and
    /// the size of each.
    pub max_slabs: usize,
    pub slab_bytes: usize,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        Self {
            kernel_cache_dir: KernelCache::default_dir(),
            alloc_fraction: 0.9,
            reserve_bytes: 640 << 20,
            // 4 x 64 MiB: pinned once in about 0.1 s (0.45 s per GiB, GPU.md); each
            // chunk takes about 1.2 ms to cross PCIe, long enough to hide a parallel fill.
            staging_chunks: 4,
            staging_chunk_bytes: 64 << 20,
            // 16 MiB crosses PCIe in 0.3 ms; 48 of them (768 MiB, pinned only as
            // demand reaches them) let 32 gathering tasks each hold one while the
            // copy engine drains the rest.
            max_slabs: 48,
            slab_bytes: 16 << 20,
        }
    }
}

/// What a GPU is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability, such as (9, 0) for the H100 and H200.
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub total_memory: usize,
    pub free_memory: usize,
    /// The driver's CUDA version as CUDA encodes it: 13000 is 13.0.
    pub driver_version: i32,
    pub nvrtc_version: (i32, i32),
}

impl DeviceInfo {
    /// The architecture kernels are compiled for, such as `sm_90`.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }

    /// The driver's CUDA version as text, such as `13.0`.
    pub fn driver_version_text(&self) -> String {
        format!(
            "{}.{}",
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10
        )
    }
}

/// A compiled kernel and the entry points loaded from it.
type LoadedKey = (KernelKey, Vec<String>);

/// An open GPU.
#[derive(Debug)]
pub struct GpuDevice {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    kernels: KernelCache,
    /// Kernels already loaded into the context, by compiled kernel and entry points:
    /// loading a module costs a driver call per query otherwise.
    loaded: Mutex<HashMap<LoadedKey, Vec<CudaFunction>>>,
    memory: Arc<MemoryBudget>,
    staging: StagingPool,
    slabs: SlabPool,
}

/// Says why CUDA cannot be used here, or `None` when the libraries are present.
fn missing_libraries() -> Option<String> {
    // SAFETY: `is_culib_present` only tries to open the shared library by name; it
    // calls nothing in it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("no NVIDIA driver was found (libcuda.so could not be loaded)".into());
    }
    // SAFETY: as above, for NVRTC.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Some(
            "NVRTC (libnvrtc.so), which compiles Aether's kernels, was not found; \
             install the CUDA toolkit's NVRTC or add its lib directory to LD_LIBRARY_PATH"
                .into(),
        );
    }
    None
}

impl GpuDevice {
    /// Opens GPU `ordinal`.
    pub fn discover(ordinal: usize, options: &DeviceOptions) -> Result<Self, DeviceError> {
        if let Some(reason) = missing_libraries() {
            return Err(DeviceError::Unavailable(reason));
        }
        let unavailable = |what: &str| {
            let what = what.to_string();
            move |e: cudarc::driver::DriverError| DeviceError::Unavailable(format!("{what} ({e})"))
        };
        driver::init().map_err(unavailable("the NVIDIA driver failed to start"))?;
        let count = CudaContext::device_count()
            .map_err(unavailable("the NVIDIA driver could not count GPUs"))?;
        if count <= 0 {
            return Err(DeviceError::Unavailable(
                "the NVIDIA driver found no GPU".into(),
            ));
        }
        if ordinal >= count as usize {
            return Err(DeviceError::Unavailable(format!(
                "GPU {ordinal} was asked for but only {count} exist"
            )));
        }
        let context = CudaContext::new(ordinal)
            .map_err(unavailable("the GPU context could not be created"))?;
        // SAFETY: Aether orders all its work on its own stream and synchronizes where
        // results cross to the host, so cudarc's per-slice event tracking (two events
        // recorded per launch) is redundant; it is disabled before any allocation.
        unsafe { context.disable_event_tracking() };
        let stream = context
            .new_stream()
            .map_err(DeviceError::driver("creating a stream"))?;
        keep_freed_memory_pooled(&context)?;
        let (free_memory, total_memory) = context
            .mem_get_info()
            .map_err(DeviceError::driver("reading GPU memory"))?;
        let mut driver_version = 0;
        // SAFETY: the pointer is to a live local; the driver is initialized above.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(DeviceError::driver("reading the driver version"))?;
        let info = DeviceInfo {
            ordinal,
            name: context
                .name()
                .map_err(DeviceError::driver("reading the GPU name"))?,
            compute_capability: context
                .compute_capability()
                .map_err(DeviceError::driver("reading the compute capability"))?,
            multiprocessors: context
                .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(DeviceError::driver("reading the multiprocessor count"))?,
            total_memory,
            free_memory,
            driver_version,
            nvrtc_version: nvrtc_version()?,
        };
        let memory = MemoryBudget::for_device(
            free_memory as u64,
            options.alloc_fraction,
            options.reserve_bytes,
        );
        let staging = StagingPool::new(options.staging_chunks, options.staging_chunk_bytes)?;
        let slabs = SlabPool::new(Arc::clone(&context), options.max_slabs, options.slab_bytes);
        Ok(Self {
            context,
            slabs,
            stream,
            info,
            kernels: KernelCache::new(options.kernel_cache_dir.clone()),
            loaded: Mutex::new(HashMap::new()),
            memory,
            staging,
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream all of Aether's device work is ordered on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn kernel_cache(&self) -> &KernelCache {
        &self.kernels
    }

    /// The byte budget every device allocation reserves from.
    pub fn memory(&self) -> &Arc<MemoryBudget> {
        &self.memory
    }

    /// The pinned host chunks uploads stream through.
    pub fn staging(&self) -> &StagingPool {
        &self.staging
    }

    /// The pinned slabs host gathering writes into.
    pub fn slabs(&self) -> &SlabPool {
        &self.slabs
    }

    /// Compiles (or finds in the cache) `source` and loads its function `entry`.
    pub fn load_kernel(
        &self,
        source: &str,
        entry: &str,
    ) -> Result<(CudaFunction, CubinSource), DeviceError> {
        let (mut functions, origin) = self.load_kernels(source, &[entry])?;
        let function = functions
            .pop()
            .ok_or_else(|| DeviceError::Internal(format!("kernel {entry} was not loaded")))?;
        Ok((function, origin))
    }

    /// Compiles (or finds in the cache) `source` once and loads each of `entries` from
    /// it, in order.
    pub fn load_kernels(
        &self,
        source: &str,
        entries: &[&str],
    ) -> Result<(Vec<CudaFunction>, CubinSource), DeviceError> {
        let arch = self.info.arch();
        let key = KernelKey::new(source, &arch, self.info.driver_version);
        let loaded_key = (key, entries.iter().map(|e| (*e).to_owned()).collect());
        if let Some(functions) = self
            .loaded
            .lock()
            .ok()
            .and_then(|l| l.get(&loaded_key).cloned())
        {
            return Ok((functions, CubinSource::Memory));
        }
        let name = entries.first().copied().unwrap_or("kernel");
        let (cubin, origin) = self
            .kernels
            .get_or_compile(key, || compile_cubin(source, name, &arch))?;
        let module = self
            .context
            .load_module(Ptx::from_binary(cubin.as_ref().clone()))
            .map_err(DeviceError::driver("loading a compiled kernel"))?;
        let functions = entries
            .iter()
            .map(|entry| {
                module
                    .load_function(entry)
                    .map_err(DeviceError::driver("finding a kernel's entry point"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Ok(mut loaded) = self.loaded.lock() {
            loaded.insert(loaded_key, functions.clone());
        }
        Ok((functions, origin))
    }
}

/// Raises the device memory pool's release threshold so memory freed by one batch is
/// reused by the next instead of going back to the driver at every synchronization.
fn keep_freed_memory_pooled(context: &CudaContext) -> Result<(), DeviceError> {
    use cudarc::driver::sys;
    let mut pool = std::mem::MaybeUninit::<sys::CUmemoryPool>::uninit();
    // SAFETY: `pool` is written by the driver before it is read; the device handle is
    // the live context's.
    unsafe { sys::cuDeviceGetDefaultMemPool(pool.as_mut_ptr(), context.cu_device()) }
        .result()
        .map_err(DeviceError::driver("finding the GPU memory pool"))?;
    // SAFETY: initialized by the successful call above.
    let pool = unsafe { pool.assume_init() };
    let mut threshold = u64::MAX;
    // SAFETY: the release threshold attribute takes a pointer to a u64, which
    // `threshold` is, alive for the call.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
    .map_err(DeviceError::driver("configuring the GPU memory pool"))
}

static SHARED: OnceLock<Result<Arc<GpuDevice>, DeviceError>> = OnceLock::new();

/// The process's GPU (ordinal 0), opened on first use with `options` (the first
/// caller's options hold for the process).
pub fn shared_device(options: &DeviceOptions) -> Result<Arc<GpuDevice>, &'static DeviceError> {
    SHARED
        .get_or_init(|| GpuDevice::discover(0, options).map(Arc::new))
        .as_ref()
        .map(Arc::clone)
}
