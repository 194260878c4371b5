//! A GPU hash join's residual filter: the non-equality part of its condition (Q21's
//! `l_suppkey <> l1.l_suppkey`), evaluated on the device over every pair of rows whose
//! keys match.
//!
//! The probe emits all key matches as pairs; the filter's columns are gathered for
//! them and its predicate runs as a row segment's count kernel (the same generated
//! code a `FilterExec` gets), one keep byte per pair. Kept pairs then flag their probe
//! row and mark their build row, and what the join returns is selected from those:
//! the kept pairs (inner, left), plus the probe rows no kept pair named, padded with
//! NULLs (right, full), or the probe rows flagged or not (right semi and anti); left
//! joins read the build marks after the last probe, as without a filter.
//!
//! A predicate that faults on some pair (an overflow, a division by zero) fails the
//! batch with a row fault, and the segment above reruns on the CPU.

use std::sync::Arc;

use aether_gpu::launch::{KernelArg, grid_for, launch_kernel};
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceError, GpuDevice};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::JoinType;

use super::gather::gather_column;
use super::gpu_hash_join::JoinSide;
use super::join_kernels::JoinKernels;
use super::join_table::{JoinTable, ProbeRows};
use super::row_compaction::{Chunks, RowCompactor};
use crate::codegen::rows::RowKernels;

const OWNER: &str = "GpuHashJoinExec";
const THREADS: u32 = 256;

/// What a residual filter computes: its generated kernels and, for each column of its
/// schema, the join side and column it reads.
#[derive(Debug, Clone)]
pub struct JoinResidual {
    /// A row segment filtering on the predicate and returning no columns.
    pub kernels: RowKernels,
    pub schema: SchemaRef,
    pub columns: Vec<(JoinSide, usize)>,
}

/// A residual filter loaded for one execution of the join.
pub struct ResidualFilter {
    device: Arc<GpuDevice>,
    residual: JoinResidual,
    compactor: RowCompactor,
}

/// Which of `n` flags hold `want`: the per-block counts turned into bases.
struct Selection<'a> {
    device: &'a GpuDevice,
    kernels: &'a JoinKernels,
    flags: &'a DeviceBuffer,
    want: bool,
    n: usize,
    chunks: Chunks,
    bases: Vec<u64>,
    total: usize,
}

impl<'a> Selection<'a> {
    fn count(
        device: &'a GpuDevice,
        kernels: &'a JoinKernels,
        flags: &'a DeviceBuffer,
        want: bool,
        n: usize,
    ) -> Result<Self, DeviceError> {
        let chunks = Chunks::of(device, n);
        let mut selection = Self {
            device,
            kernels,
            flags,
            want,
            n,
            bases: Vec::with_capacity(chunks.blocks),
            chunks,
            total: 0,
        };
        if n == 0 {
            return Ok(selection);
        }
        let counts = DeviceBuffer::alloc(device, OWNER, 8 * selection.chunks.blocks)?;
        let args = [
            KernelArg::I64(n as i64),
            KernelArg::I64(selection.chunks.chunk as i64),
            KernelArg::Buffer(flags),
            KernelArg::I64(want as i64),
            KernelArg::Buffer(&counts),
        ];
        // SAFETY: `aether_select_count(long long n, long long chunk, const unsigned
        // char* flags, long long want, u64* counts)`: `flags` holds `n` bytes; block `b`
        // reads its chunk of them and writes `counts[b]`, one word per block of the grid.
        unsafe {
            launch_kernel(
                device,
                &kernels.select_count,
                selection.chunks.config(),
                &args,
            )?
        };
        let counts = counts.download(device)?;
        let mut total = 0u64;
        for &count in &counts.typed_data::<u64>()[..selection.chunks.blocks] {
            selection.bases.push(total);
            total += count;
        }
        selection.total = total as usize;
        Ok(selection)
    }

    /// Writes the selected `a[i]` (or `i`) into `dst_a` and `b[i]` (or NO_ROW) into
    /// `dst_b` from row `offset` on.
    fn write(
        &self,
        a: Option<&DeviceBuffer>,
        b: Option<&DeviceBuffer>,
        dst_a: &DeviceBuffer,
        dst_b: Option<&DeviceBuffer>,
        offset: usize,
    ) -> Result<(), DeviceError> {
        if self.total == 0 {
            return Ok(());
        }
        let (device, kernels) = (self.device, self.kernels);
        let bytes: Vec<u8> = self.bases.iter().flat_map(|w| w.to_le_bytes()).collect();
        let bases = DeviceBuffer::upload(device, OWNER, &bytes)?;
        let null = || KernelArg::Address(0);
        let args = [
            KernelArg::I64(self.n as i64),
            KernelArg::I64(self.chunks.chunk as i64),
            KernelArg::Buffer(self.flags),
            KernelArg::I64(self.want as i64),
            KernelArg::Buffer(&bases),
            KernelArg::I64(offset as i64),
            a.map_or_else(null, KernelArg::Buffer),
            b.map_or_else(null, KernelArg::Buffer),
            KernelArg::Buffer(dst_a),
            dst_b.map_or_else(null, KernelArg::Buffer),
        ];
        // SAFETY: `aether_select_write(long long n, long long chunk, const unsigned
        // char* flags, long long want, const u64* bases, long long dst_offset, const
        // u32* a, const u32* b, u32* dst_a, u32* dst_b)` over the grid the count ran
        // on: `bases` is the prefix sum of its counts, so the blocks write disjoint
        // rows `offset .. offset + total`, which `dst_a` and `dst_b` (or 0, never
        // written) hold (callers allocate them so); `a` and `b` (or 0: `i` and NO_ROW)
        // hold `n` row numbers.
        unsafe { launch_kernel(device, &kernels.select_write, self.chunks.config(), &args) }
    }
}

impl ResidualFilter {
    /// Loads (compiling on first use) the filter's kernels.
    pub fn load(device: Arc<GpuDevice>, residual: JoinResidual) -> Result<Self, DeviceError> {
        let compactor = RowCompactor::new(Arc::clone(&device), residual.kernels.clone())?;
        Ok(Self {
            device,
            residual,
            compactor,
        })
    }

    /// What a join of `join_type` returns for `probe`, from `pairs` (every key match
    /// of its rows, probed without marks).
    pub fn apply(
        &mut self,
        table: &JoinTable,
        probe: &DeviceBatch,
        pairs: ProbeRows,
        join_type: JoinType,
    ) -> Result<ProbeRows, DeviceError> {
        let device = Arc::clone(&self.device);
        let kernels = table.kernels();
        let n = pairs.rows;
        let build_rows = pairs.build.as_ref().ok_or_else(|| {
            DeviceError::Internal("a filtered join's probe returned no build rows".into())
        })?;
        let keep = self.keep(table, probe, &pairs, build_rows)?;
        let flagged = matches!(
            join_type,
            JoinType::Right | JoinType::Full | JoinType::RightSemi | JoinType::RightAnti
        );
        let probe_flags = if flagged {
            Some(DeviceBuffer::zeroed(&device, OWNER, probe.num_rows)?)
        } else {
            None
        };
        if n > 0 {
            let null = || KernelArg::Address(0);
            let args = [
                KernelArg::I64(n as i64),
                KernelArg::Buffer(&keep),
                KernelArg::Buffer(&pairs.probe),
                KernelArg::Buffer(build_rows),
                probe_flags.as_ref().map_or_else(null, KernelArg::Buffer),
                table.marks().map_or_else(null, KernelArg::Buffer),
            ];
            // SAFETY: `aether_join_filter_marks(long long n, const unsigned char* keep,
            // const u32* probe_rows, const u32* build_rows, unsigned char* probe_flags,
            // unsigned char* matched)`: `keep`, `probe_rows` and `build_rows` hold `n`
            // entries; every probe row is below the probe batch's rows, which
            // `probe_flags` (or 0) holds a byte for, every build row below the build
            // side's, which the table's marks (or 0) hold a byte for.
            unsafe {
                launch_kernel(
                    &device,
                    &kernels.filter_marks,
                    grid_for(&device, n, THREADS),
                    &args,
                )?
            };
        }
        let kept = Selection::count(&device, kernels, &keep, true, n)?;
        let probe_rows = |want: bool| match &probe_flags {
            Some(flags) => Selection::count(&device, kernels, flags, want, probe.num_rows),
            None => Err(DeviceError::Internal(
                "a filtered join lacks its probe flags".into(),
            )),
        };
        let alloc = |rows: usize| DeviceBuffer::alloc(&device, OWNER, rows * 4);
        match join_type {
            JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full => {
                let padded = match join_type {
                    JoinType::Right | JoinType::Full => Some(probe_rows(false)?),
                    _ => None,
                };
                let total = kept.total + padded.as_ref().map_or(0, |p| p.total);
                let (out_probe, out_build) = (alloc(total)?, alloc(total)?);
                kept.write(
                    Some(&pairs.probe),
                    Some(build_rows),
                    &out_probe,
                    Some(&out_build),
                    0,
                )?;
                if let Some(padded) = &padded {
                    padded.write(None, None, &out_probe, Some(&out_build), kept.total)?;
                }
                Ok(ProbeRows {
                    probe: out_probe,
                    build: Some(out_build),
                    rows: total,
                })
            }
            JoinType::RightSemi | JoinType::RightAnti => {
                let want = join_type == JoinType::RightSemi;
                let selected = probe_rows(want)?;
                let out_probe = alloc(selected.total)?;
                selected.write(None, None, &out_probe, None, 0)?;
                Ok(ProbeRows {
                    probe: out_probe,
                    build: None,
                    rows: selected.total,
                })
            }
            _ => Ok(ProbeRows {
                probe: alloc(0)?,
                build: None,
                rows: 0,
            }),
        }
    }

    /// The filter's keep byte for each pair.
    fn keep(
        &mut self,
        table: &JoinTable,
        probe: &DeviceBatch,
        pairs: &ProbeRows,
        build_rows: &DeviceBuffer,
    ) -> Result<DeviceBuffer, DeviceError> {
        let device = &self.device;
        let n = pairs.rows;
        let mut columns = Vec::with_capacity(self.residual.columns.len());
        for (field, &(side, index)) in self
            .residual
            .schema
            .fields()
            .iter()
            .zip(&self.residual.columns)
        {
            let (source, rows) = match side {
                JoinSide::Build => (table.build.columns.get(index), build_rows),
                JoinSide::Probe => (probe.columns.get(index), &pairs.probe),
            };
            let source = source.ok_or_else(|| {
                DeviceError::Internal(format!("a join filter's column {index} is missing"))
            })?;
            // The kernel reads a bitmap where the source has one.
            let mut field = field.as_ref().clone();
            field.set_nullable(field.is_nullable() || source.validity.is_some());
            columns.push(gather_column(
                device,
                table.kernels(),
                &field,
                Some(source),
                &source.form,
                Some(rows),
                n,
            )?);
        }
        let batch = DeviceBatch {
            schema: Arc::clone(&self.residual.schema),
            columns,
            num_rows: n,
        };
        let keep = self.compactor.keep(&batch)?;
        self.compactor.check_faults()?;
        Ok(keep)
    }
}
