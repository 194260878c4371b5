//! The device side of a GPU hash join: the build side's hash table and the probe of
//! each batch against it, producing pairs of row numbers that [`super::gather`] turns
//! into output columns. The kernels are `cuda/hash_join.cu` ([`super::join_kernels`]).

use std::sync::Arc;

use aether_gpu::launch::{KernelArg, grid_for, launch_kernel};
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceError, DeviceForm, GpuDevice};

use super::gather::upload_rows;
use super::join_kernels::{Emit, JoinKernels};
use super::row_compaction::Chunks;

const OWNER: &str = "GpuHashJoinExec";

/// One batch's key columns as 64-bit words (`keys` per row) and a usable byte per row
/// (0 where a key is NULL).
struct KeyWords {
    words: DeviceBuffer,
    usable: DeviceBuffer,
}

/// The pairs of row numbers one probe batch produced.
pub struct ProbeRows {
    /// Probe row of each output row.
    pub probe: DeviceBuffer,
    /// Build row of each output row (`AETHER_NO_ROW`, `u32::MAX`, for a NULL-padded
    /// row); `None` for semi and anti joins, which return probe rows only.
    pub build: Option<DeviceBuffer>,
    pub rows: usize,
}

/// The build side on the device and its hash table.
pub struct JoinTable {
    device: Arc<GpuDevice>,
    kernels: JoinKernels,
    /// The build side's batches concatenated.
    pub build: DeviceBatch,
    build_keys: KeyWords,
    key_count: usize,
    slots: DeviceBuffer,
    mask: u64,
    /// One byte per build row, set by probes that match it (outer, semi and anti joins
    /// on the build side).
    matched: Option<DeviceBuffer>,
}

/// Bytes a key value of `form` takes (integers, dates, narrow decimals).
fn key_width(form: &DeviceForm) -> Result<i32, DeviceError> {
    match form {
        DeviceForm::Fixed {
            width: width @ (1 | 2 | 4 | 8),
        } => Ok(*width as i32),
        DeviceForm::NarrowDecimal => Ok(8),
        other => Err(DeviceError::Internal(format!(
            "a join key reached the GPU as {other:?}; keys are integers, dates or narrow decimals"
        ))),
    }
}

fn upload_words(device: &GpuDevice, words: &[u64]) -> Result<DeviceBuffer, DeviceError> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    DeviceBuffer::upload(device, OWNER, &bytes)
}

/// The key words of columns `keys` of `batch`.
fn key_words(
    device: &GpuDevice,
    kernels: &JoinKernels,
    batch: &DeviceBatch,
    keys: &[usize],
) -> Result<KeyWords, DeviceError> {
    let rows = batch.num_rows;
    let mut values = Vec::with_capacity(keys.len());
    let mut valid = Vec::with_capacity(keys.len());
    let mut widths = Vec::with_capacity(keys.len());
    for &key in keys {
        let column = batch
            .columns
            .get(key)
            .ok_or_else(|| DeviceError::Internal(format!("a join key column {key} is missing")))?;
        values.push(column.values.address(device));
        valid.push(column.validity.as_ref().map_or(0, |v| v.address(device)));
        widths.push(key_width(&column.form)?);
    }
    let values = upload_words(device, &values)?;
    let valid = upload_words(device, &valid)?;
    let width_bytes: Vec<u8> = widths.iter().flat_map(|w| w.to_le_bytes()).collect();
    let widths = DeviceBuffer::upload(device, OWNER, &width_bytes)?;
    let words = DeviceBuffer::alloc(device, OWNER, rows * keys.len() * 8)?;
    let usable = DeviceBuffer::alloc(device, OWNER, rows)?;
    if rows > 0 {
        let args = [
            KernelArg::I64(rows as i64),
            KernelArg::I64(keys.len() as i64),
            KernelArg::Buffer(&values),
            KernelArg::Buffer(&valid),
            KernelArg::Buffer(&widths),
            KernelArg::Buffer(&words),
            KernelArg::Buffer(&usable),
        ];
        // SAFETY: `aether_join_keys(long long rows, long long keys, const u64* values,
        // const u64* valid, const int* widths, u64* words, unsigned char* usable)`:
        // `values`, `valid` and `widths` hold `keys` entries, each values pointer a
        // live column of `rows` values of its width (1, 2, 4 or 8 bytes, checked by
        // `key_width`) and each valid pointer its bitmap or 0; `words` holds `rows *
        // keys` words and `usable` `rows` bytes, all the kernel writes.
        unsafe { launch_kernel(device, &kernels.keys, grid_for(device, rows, 256), &args)? };
    }
    Ok(KeyWords { words, usable })
}

impl JoinTable {
    /// Builds the hash table of `build` on its columns `keys`; `marks` keeps a matched
    /// byte per build row for the probes to set.
    pub fn build(
        device: Arc<GpuDevice>,
        kernels: JoinKernels,
        build: DeviceBatch,
        keys: &[usize],
        marks: bool,
    ) -> Result<Self, DeviceError> {
        let rows = build.num_rows;
        if rows >= u32::MAX as usize {
            return Err(DeviceError::Internal(format!(
                "a GPU join's build side of {rows} rows is over the 4-billion-row limit"
            )));
        }
        let build_keys = key_words(&device, &kernels, &build, keys)?;
        let capacity = (2 * rows).next_power_of_two().max(2);
        let slots = DeviceBuffer::zeroed(&device, OWNER, capacity * 4)?;
        let mask = capacity as u64 - 1;
        if rows > 0 {
            let args = [
                KernelArg::I64(rows as i64),
                KernelArg::I64(keys.len() as i64),
                KernelArg::Buffer(&build_keys.words),
                KernelArg::Buffer(&build_keys.usable),
                KernelArg::Buffer(&slots),
                KernelArg::U64(mask),
            ];
            // SAFETY: `aether_join_build(long long rows, long long keys, const u64*
            // words, const unsigned char* usable, u32* slots, u64 mask)`: `words` and
            // `usable` were written for `rows` rows of `keys` keys above; `slots` holds
            // `mask + 1` zeroed u32s, at least twice `rows`, so every insert finds an
            // empty slot.
            unsafe { launch_kernel(&device, &kernels.build, grid_for(&device, rows, 256), &args)? };
        }
        let matched = if marks {
            Some(DeviceBuffer::zeroed(&device, OWNER, rows)?)
        } else {
            None
        };
        Ok(Self {
            device,
            kernels,
            build,
            build_keys,
            key_count: keys.len(),
            slots,
            mask,
            matched,
        })
    }

    /// The kernels, for gathering output columns.
    pub fn kernels(&self) -> &JoinKernels {
        &self.kernels
    }

    /// One byte per build row, set where a probe matched it, when the table keeps
    /// marks.
    pub fn marks(&self) -> Option<&DeviceBuffer> {
        self.matched.as_ref()
    }

    /// The pairs `probe` (keyed on its columns `keys`) emits against the table;
    /// `mark` sets the marks of the build rows matched (a residual filter sets them
    /// itself, for the pairs it keeps).
    pub fn probe(
        &self,
        probe: &DeviceBatch,
        keys: &[usize],
        emit: Emit,
        mark: bool,
    ) -> Result<ProbeRows, DeviceError> {
        let device = &self.device;
        let rows = probe.num_rows;
        let pairs = matches!(emit, Emit::Matches | Emit::MatchesOrPad);
        if rows == 0 {
            let build = if pairs {
                Some(DeviceBuffer::alloc(device, OWNER, 0)?)
            } else {
                None
            };
            return Ok(ProbeRows {
                probe: DeviceBuffer::alloc(device, OWNER, 0)?,
                build,
                rows: 0,
            });
        }
        if keys.len() != self.key_count {
            return Err(DeviceError::Internal(format!(
                "a probe of {} keys against a table of {}",
                keys.len(),
                self.key_count
            )));
        }
        let probe_keys = key_words(device, &self.kernels, probe, keys)?;
        let chunks = Chunks::of(device, rows);
        let counts = DeviceBuffer::alloc(device, OWNER, 8 * chunks.blocks)?;
        let matched = match &self.matched {
            Some(marks) if mark => KernelArg::Buffer(marks),
            _ => KernelArg::Address(0),
        };
        let common = [
            KernelArg::I64(rows as i64),
            KernelArg::I64(chunks.chunk as i64),
            KernelArg::I64(self.key_count as i64),
            KernelArg::I64(emit as i64),
            KernelArg::Buffer(&probe_keys.words),
            KernelArg::Buffer(&probe_keys.usable),
            KernelArg::Buffer(&self.build_keys.words),
            KernelArg::Buffer(&self.slots),
            KernelArg::U64(self.mask),
        ];
        let mut args = common.to_vec();
        args.extend([matched, KernelArg::Buffer(&counts)]);
        // SAFETY: `aether_join_count(long long rows, long long chunk, long long keys,
        // long long emit, const u64* probe_words, const unsigned char* probe_usable,
        // const u64* build_words, const u32* slots, u64 mask, unsigned char* matched,
        // u64* counts)`: the probe's key words for `rows` rows and the table's (the
        // same key count, checked above); every nonzero slot holds a build row plus
        // one below the build side's rows, which `matched` (or 0) holds a byte for;
        // block `b` reads rows `b * chunk ..` of its chunk only and writes
        // `counts[b]`, one word per block of the grid.
        unsafe { launch_kernel(device, &self.kernels.count, chunks.config(), &args)? };
        let counts = counts.download(device)?;
        let mut bases = Vec::with_capacity(chunks.blocks);
        let mut total = 0u64;
        for &count in &counts.typed_data::<u64>()[..chunks.blocks] {
            bases.push(total);
            total += count;
        }
        let total = total as usize;
        let probe_rows = DeviceBuffer::alloc(device, OWNER, total * 4)?;
        let build_rows = if pairs {
            Some(DeviceBuffer::alloc(device, OWNER, total * 4)?)
        } else {
            None
        };
        if total > 0 {
            let bases = upload_words(device, &bases)?;
            let mut args = common.to_vec();
            args.extend([
                KernelArg::Buffer(&bases),
                KernelArg::Buffer(&probe_rows),
                build_rows
                    .as_ref()
                    .map_or(KernelArg::Address(0), KernelArg::Buffer),
            ]);
            // SAFETY: `aether_join_write(..., u64 mask, const u64* bases, u32*
            // probe_rows, u32* build_rows)` after the same nine parameters as the
            // count kernel, over the same grid: `bases` holds each block's first
            // output row, the prefix sum of the counts that kernel wrote, so blocks
            // write disjoint rows below `total`, which `probe_rows` (and
            // `build_rows`, or 0 when the join emits probe rows only, which the
            // kernel then never writes) hold.
            unsafe { launch_kernel(device, &self.kernels.write, chunks.config(), &args)? };
        }
        Ok(ProbeRows {
            probe: probe_rows,
            build: build_rows,
            rows: total,
        })
    }

    /// The build rows the probes matched (`matched`) or did not, after every probe:
    /// for outer joins' padded rows and left semi and anti joins.
    pub fn marked_rows(&self, matched: bool) -> Result<(DeviceBuffer, usize), DeviceError> {
        let Some(marks) = &self.matched else {
            return Err(DeviceError::Internal(
                "a join without build-side marks was asked for them".into(),
            ));
        };
        let marks = marks.download(&self.device)?;
        let rows: Vec<u32> = marks.as_slice()[..self.build.num_rows]
            .iter()
            .enumerate()
            .filter(|(_, mark)| (**mark != 0) == matched)
            .map(|(row, _)| row as u32)
            .collect();
        Ok((upload_rows(&self.device, &rows)?, rows.len()))
    }
}
