//! The hash join's kernels (`cuda/hash_join.cu`), loaded once per device: key
//! normalization, build, probe count and write, and the column gathers that assemble
//! the join's output ([`super::gather`]).

use aether_gpu::{CudaFunction, DeviceError, GpuDevice};

/// The kernels' CUDA source: not generated, one for every join.
pub const HASH_JOIN_SOURCE: &str = include_str!("cuda/hash_join.cu");

/// The kernels' entry points, in the order of [`JoinKernels`]' fields.
const ENTRIES: [&str; 9] = [
    "aether_join_keys",
    "aether_join_build",
    "aether_join_count",
    "aether_join_write",
    "aether_gather",
    "aether_gather_bits",
    "aether_join_filter_marks",
    "aether_select_count",
    "aether_select_write",
];

/// What a probe row emits, by join type (`EMIT_*` in the source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// One output row per matching build row (inner; left outer, semi and anti mark
    /// the build rows as well).
    Matches = 0,
    /// As `Matches`, or one row padded with NULLs when nothing matches (right and
    /// full outer).
    MatchesOrPad = 1,
    /// The probe row once when something matches (right semi).
    IfAny = 2,
    /// The probe row when nothing matches (right anti).
    IfNone = 3,
    /// Nothing: only the marks on the build rows (left semi, left anti).
    Nothing = 4,
}

/// The loaded kernels.
#[derive(Debug, Clone)]
pub struct JoinKernels {
    pub keys: CudaFunction,
    pub build: CudaFunction,
    pub count: CudaFunction,
    pub write: CudaFunction,
    pub gather: CudaFunction,
    pub gather_bits: CudaFunction,
    /// Residual filters ([`super::join_filter`]): marks from kept pairs, and the
    /// selection of rows by a flag byte.
    pub filter_marks: CudaFunction,
    pub select_count: CudaFunction,
    pub select_write: CudaFunction,
}

impl JoinKernels {
    /// Loads the kernels (compiling them on first use on this device).
    pub fn load(device: &GpuDevice) -> Result<Self, DeviceError> {
        let (functions, _) = device.load_kernels(HASH_JOIN_SOURCE, &ENTRIES)?;
        let mut functions = functions.into_iter();
        let mut next = || {
            functions
                .next()
                .ok_or_else(|| DeviceError::Internal("hash join kernels missing".into()))
        };
        // In the order of `ENTRIES`.
        Ok(Self {
            keys: next()?,
            build: next()?,
            count: next()?,
            write: next()?,
            gather: next()?,
            gather_bits: next()?,
            filter_marks: next()?,
            select_count: next()?,
            select_write: next()?,
        })
    }
}
