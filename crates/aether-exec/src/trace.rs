//! Phase timings of GPU segments, printed to standard error when `AETHER_GPU_TRACE` is
//! set: host gathering, uploads, kernels (synchronized, so only while tracing) and the
//! emit. For finding where a query's time goes, not for users' output.

use std::sync::OnceLock;
use std::time::Instant;

/// Whether tracing is on (read once per process).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("AETHER_GPU_TRACE").is_some())
}

/// Prints how long `what` took since `start`, when tracing.
pub fn phase(what: &str, start: Instant, detail: impl FnOnce() -> String) {
    if enabled() {
        eprintln!(
            "gpu-trace: {what}: {:.3} ms {}",
            start.elapsed().as_secs_f64() * 1e3,
            detail()
        );
    }
}
