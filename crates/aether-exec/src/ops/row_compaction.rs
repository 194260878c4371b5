//! Runs a row segment's kernels ([`crate::codegen::rows`]) over device batches: the
//! count kernel, a prefix sum of the blocks' counts on the host, then the write kernel
//! into output columns sized for exactly the kept rows.

use std::sync::Arc;

use aether_gpu::CudaFunction;
use aether_gpu::launch::{KernelArg, LaunchConfig, launch_kernel};
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceColumn, DeviceError, DeviceForm, GpuDevice};

use super::group_table::column_pointers;
use super::host_tables::HostTables;
use crate::codegen::CudaType;
use crate::codegen::rows::{
    ROWS_COUNT_ENTRY, ROWS_THREADS, ROWS_WRITE_ENTRY, RowKernels, RowOutput,
};

const OWNER: &str = "GpuSegmentExec";
/// Blocks per multiprocessor: each block owns one contiguous chunk of the batch.
const BLOCKS_PER_MULTIPROCESSOR: usize = 8;

/// A row segment's loaded kernels and what persists across its batches.
#[derive(Debug)]
pub struct RowCompactor {
    device: Arc<GpuDevice>,
    kernels: RowKernels,
    count: CudaFunction,
    write: CudaFunction,
    lookup_tables: HostTables,
    fault_word: Option<DeviceBuffer>,
}

/// A batch's count kernel run: its keep bytes and what the write kernel takes after.
struct Counted {
    chunks: Chunks,
    keep: DeviceBuffer,
    /// Each block's first output row.
    bases: Vec<u64>,
    kept: usize,
    /// The kernels' column pointers.
    columns: Vec<u64>,
    /// The lookup tables `columns` point into, alive until the write kernel ran.
    _tables: Vec<DeviceBuffer>,
}

/// How a batch is cut into blocks' chunks (of [`ROWS_THREADS`]-thread blocks).
pub(crate) struct Chunks {
    pub blocks: usize,
    pub chunk: usize,
}

impl Chunks {
    pub fn of(device: &GpuDevice, rows: usize) -> Self {
        let most = (device.info().multiprocessors.max(1) as usize) * BLOCKS_PER_MULTIPROCESSOR;
        let threads = ROWS_THREADS as usize;
        let wanted = rows.div_ceil(threads).clamp(1, most);
        let chunk = rows.div_ceil(wanted).next_multiple_of(threads).max(threads);
        Self {
            blocks: rows.div_ceil(chunk).max(1),
            chunk,
        }
    }

    pub fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks as u32, 1, 1),
            block_dim: (ROWS_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

impl RowCompactor {
    /// Loads (compiling on first use) the segment's kernels.
    pub fn new(device: Arc<GpuDevice>, kernels: RowKernels) -> Result<Self, DeviceError> {
        let (functions, _) =
            device.load_kernels(&kernels.source, &[ROWS_COUNT_ENTRY, ROWS_WRITE_ENTRY])?;
        let [count, write]: [CudaFunction; 2] = functions
            .try_into()
            .map_err(|_| DeviceError::Internal("row segment kernels missing".into()))?;
        let fault_word = if kernels.faults {
            Some(DeviceBuffer::zeroed(&device, OWNER, 4)?)
        } else {
            None
        };
        let lookup_tables = HostTables::new(kernels.lookups.clone());
        Ok(Self {
            device,
            kernels,
            count,
            write,
            lookup_tables,
            fault_word,
        })
    }

    /// Whether some row can fault: the segment then checks [`Self::check_faults`]
    /// before any of its rows leave the GPU.
    pub fn can_fault(&self) -> bool {
        self.fault_word.is_some()
    }

    /// [`DeviceError::RowFault`] when some row so far met what only the CPU computes
    /// as DataFusion does.
    pub fn check_faults(&self) -> Result<(), DeviceError> {
        match &self.fault_word {
            Some(word) => crate::gpu_eval::check_fault_word(&self.device, word),
            None => Ok(()),
        }
    }

    /// The kept rows of `batch`, with the segment's output columns.
    pub fn compact(&mut self, batch: &DeviceBatch) -> Result<DeviceBatch, DeviceError> {
        let device = Arc::clone(&self.device);
        if batch.num_rows == 0 {
            return self.output_batch(batch, 0).map(|(batch, _)| batch);
        }
        let counted = self.count_kept(batch)?;
        let (output, pointers) = self.output_batch(batch, counted.kept)?;
        if counted.kept > 0 {
            let bases_bytes: Vec<u8> = counted.bases.iter().flat_map(|b| b.to_le_bytes()).collect();
            let bases = DeviceBuffer::upload(&device, OWNER, &bases_bytes)?;
            let mut args = vec![
                KernelArg::I64(batch.num_rows as i64),
                KernelArg::I64(counted.chunks.chunk as i64),
                KernelArg::Buffer(&counted.keep),
                KernelArg::Buffer(&bases),
            ];
            args.extend(pointers.iter().map(|&pointer| KernelArg::Address(pointer)));
            args.extend(
                counted
                    .columns
                    .iter()
                    .map(|&pointer| KernelArg::Address(pointer)),
            );
            // SAFETY: `aether_rows_write(long long rows, long long chunk, const unsigned
            // char* keep, const unsigned long long* bases, u64 out0, u64 outv0, ...,
            // u64 col0, ...)`: the same grid and columns as the count kernel
            // (`Self::count_kept`, whose lookup tables `counted` keeps alive); `bases` holds
            // each block's first output row, the prefix sum of the counts that kernel
            // wrote, so the blocks write disjoint output rows below `kept`; `pointers`
            // holds a values and a validity pointer (or 0 for a non-nullable column,
            // which the kernel never writes) per output column, each allocated for
            // `kept` rows in its device form.
            unsafe { launch_kernel(&device, &self.write, counted.chunks.config(), &args)? };
        }
        Ok(output)
    }

    /// The segment's keep byte for each row of `batch` (1 where every filter holds):
    /// the count kernel only, for a join's residual filter.
    pub fn keep(&mut self, batch: &DeviceBatch) -> Result<DeviceBuffer, DeviceError> {
        if batch.num_rows == 0 {
            return DeviceBuffer::alloc(&self.device, OWNER, 0);
        }
        Ok(self.count_kept(batch)?.keep)
    }

    /// Runs the count kernel over `batch` (of at least one row).
    fn count_kept(&mut self, batch: &DeviceBatch) -> Result<Counted, DeviceError> {
        let device = Arc::clone(&self.device);
        let rows = batch.num_rows;
        let tables = self.lookup_tables.upload(&device, OWNER, batch)?;
        let columns = column_pointers(&device, batch, &tables, self.fault_word.as_ref());
        if columns.len() != self.kernels.column_slots {
            return Err(DeviceError::Internal(format!(
                "a batch of {} column pointers reached a row kernel generated for {}",
                columns.len(),
                self.kernels.column_slots
            )));
        }
        let chunks = Chunks::of(&device, rows);
        let keep = DeviceBuffer::alloc(&device, OWNER, rows)?;
        let counts = DeviceBuffer::alloc(&device, OWNER, 8 * chunks.blocks)?;
        let mut args = vec![
            KernelArg::I64(rows as i64),
            KernelArg::I64(chunks.chunk as i64),
            KernelArg::Buffer(&keep),
            KernelArg::Buffer(&counts),
        ];
        args.extend(columns.iter().map(|&pointer| KernelArg::Address(pointer)));
        // SAFETY: `aether_rows_count(long long rows, long long chunk, unsigned char*
        // keep, unsigned long long* counts, u64 col0, ...)` with as many `col`
        // parameters as `columns` holds (checked above): two pointers per column of
        // `batch` (each holding `rows` values), then each lookup table (one byte per
        // dictionary entry plus one) and a 0, then the 4-byte fault word when the
        // kernel takes one. Block `b` reads and writes rows `b * chunk .. min(rows,
        // (b + 1) * chunk)` only, `keep` holds `rows` bytes and `counts` one word per
        // block of the grid.
        unsafe { launch_kernel(&device, &self.count, chunks.config(), &args)? };
        let counts = counts.download(&device)?;
        let mut bases = Vec::with_capacity(chunks.blocks);
        let mut kept = 0u64;
        for &count in &counts.typed_data::<u64>()[..chunks.blocks] {
            bases.push(kept);
            kept += count;
        }
        Ok(Counted {
            chunks,
            keep,
            bases,
            kept: kept as usize,
            columns,
            _tables: tables,
        })
    }

    /// Output columns for `rows` kept rows of `input`, zeroed where bits are set
    /// one at a time, and the pointers the write kernel takes for them.
    fn output_batch(
        &self,
        input: &DeviceBatch,
        rows: usize,
    ) -> Result<(DeviceBatch, Vec<u64>), DeviceError> {
        let device = &self.device;
        let schema = &self.kernels.schema;
        let mut columns = Vec::with_capacity(schema.fields().len());
        let mut pointers = Vec::with_capacity(2 * schema.fields().len());
        let bitmap_bytes = rows.div_ceil(32) * 4;
        for (field, output) in schema.fields().iter().zip(&self.kernels.outputs) {
            let (form, values) = match output {
                RowOutput::Codes { input: column } => {
                    let form = input.columns.get(*column).map(|c| c.form.clone());
                    let Some(form @ DeviceForm::DictionaryCodes { .. }) = form else {
                        return Err(DeviceError::Internal(format!(
                            "string column {column} reached a row kernel without dictionary codes"
                        )));
                    };
                    (form, DeviceBuffer::alloc(device, OWNER, rows * 4)?)
                }
                RowOutput::Values { ty: CudaType::Bool } => (
                    DeviceForm::Boolean,
                    DeviceBuffer::zeroed(device, OWNER, bitmap_bytes)?,
                ),
                RowOutput::Values {
                    ty: ty @ CudaType::Dec64 { .. },
                } => (
                    DeviceForm::NarrowDecimal,
                    DeviceBuffer::alloc(device, OWNER, rows * ty.width())?,
                ),
                RowOutput::Values { ty } => (
                    DeviceForm::Fixed { width: ty.width() },
                    DeviceBuffer::alloc(device, OWNER, rows * ty.width())?,
                ),
            };
            let validity = if field.is_nullable() {
                Some(DeviceBuffer::zeroed(device, OWNER, bitmap_bytes)?)
            } else {
                None
            };
            pointers.push(values.address(device));
            pointers.push(validity.as_ref().map_or(0, |v| v.address(device)));
            columns.push(DeviceColumn {
                data_type: field.data_type().clone(),
                form,
                len: rows,
                null_count: 0,
                values,
                validity,
                offsets: None,
            });
        }
        Ok((
            DeviceBatch {
                schema: Arc::clone(schema),
                columns,
                num_rows: rows,
            },
            pointers,
        ))
    }
}
