//! The error type of device operations.

/// An error from the GPU runtime. Every message names the GPU, so a user reading it
/// knows the device (not the host) ran out or failed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// No usable GPU: no driver, no device, or no NVRTC; queries run on the CPU.
    #[error("no GPU: running on CPU because {0}")]
    Unavailable(String),
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
    }
}
