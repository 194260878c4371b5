//! The error type of device operations.

use std::path::PathBuf;

use cudarc::driver::DriverError;

/// An error from the GPU runtime. Every message names the GPU, so a user reading it
/// knows the device (not the host) failed, and most say what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// No usable GPU: no driver, no device, or no NVRTC; queries run on the CPU.
    #[error("no GPU: running on CPU because {0}")]
    Unavailable(String),
    /// A CUDA driver call failed.
    #[error("GPU driver error while {context}: {source}")]
    Driver {
        context: &'static str,
        source: DriverError,
    },
    /// NVRTC rejected a kernel; the log is the compiler's.
    #[error("GPU kernel '{kernel}' failed to compile for {arch}: {log}")]
    Compile {
        kernel: String,
        arch: String,
        log: String,
    },
    /// The device memory budget cannot hold an allocation.
    #[error(
        "GPU out of memory: {requested} bytes requested, {available} of the {budget}-byte GPU budget free; \
         lower aether.gpu.batchSizeBytes or raise aether.gpu.memory.allocFraction"
    )]
    OutOfMemory {
        requested: u64,
        available: u64,
        budget: u64,
    },
    /// A column cannot take a GPU layout (unsupported type, too large).
    #[error("GPU column layout: {0}")]
    Layout(#[from] crate::layout::LayoutError),
    /// A kernel met a row it cannot compute as the CPU would (a zero divisor, a
    /// decimal overflow): the work runs on the CPU instead, which raises the CPU's own
    /// error where it has one.
    #[error("a GPU kernel found {0}")]
    RowFault(String),
    /// A broken invariant inside the GPU runtime: a bug, not a setup problem.
    #[error("GPU internal error: {0}")]
    Internal(String),
    /// The on-disk GPU kernel cache could not be written.
    #[error("GPU kernel cache at {}: {source}", path.display())]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl DeviceError {
    /// Wraps a driver error with what was being done.
    pub fn driver(context: &'static str) -> impl FnOnce(DriverError) -> Self {
        move |source| Self::Driver { context, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_gpu() {
        let unavailable = DeviceError::Unavailable("no CUDA driver was found".into());
        assert_eq!(
            unavailable.to_string(),
            "no GPU: running on CPU because no CUDA driver was found"
        );
        let oom = DeviceError::OutOfMemory {
            requested: 10,
            available: 5,
            budget: 100,
        };
        assert!(oom.to_string().starts_with("GPU out of memory"));
        let compile = DeviceError::Compile {
            kernel: "k".into(),
            arch: "sm_90".into(),
            log: "error: expected ';'".into(),
        };
        assert!(
            compile
                .to_string()
                .starts_with("GPU kernel 'k' failed to compile")
        );
    }
}
