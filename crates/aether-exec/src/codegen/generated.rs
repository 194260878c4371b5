//! Every kernel source the generators produce, kept while a caller asks for them.
//!
//! Placement generates a segment's kernels to decide whether it can move, also without
//! a GPU (explain-only plans, CI). Kept sources let a machine without a GPU compile
//! them with NVRTC alone, so a change that generates invalid CUDA fails there and not
//! first on a GPU host (`crates/aether/tests/tpch_placement.rs`). Nothing is kept
//! unless [`start_keeping`] was called.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static KEEPING: AtomicBool = AtomicBool::new(false);
static KEPT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps every source generated from now on, in this process, until [`take_kept`].
pub fn start_keeping() {
    KEEPING.store(true, Ordering::Relaxed);
}

/// The sources generated since [`start_keeping`] (each distinct source once), and
/// stops keeping them.
pub fn take_kept() -> Vec<String> {
    KEEPING.store(false, Ordering::Relaxed);
    let mut kept = std::mem::take(&mut *KEPT.lock().unwrap_or_else(|e| e.into_inner()));
    kept.sort_unstable();
    kept.dedup();
    kept
}

/// Called by each generator (aggregates, rows, single expressions) with the source it
/// produced.
pub(crate) fn generated(source: &str) {
    if KEEPING.load(Ordering::Relaxed) {
        KEPT.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(source.to_string());
    }
}
