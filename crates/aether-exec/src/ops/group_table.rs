//! The device hash table of a GPU aggregate, driven from the host.
//!
//! The table starts small (few groups are the common case, and a small table stays in
//! cache). A batch runs the fused aggregate kernel over all its rows; rows whose group
//! found the table half full are listed in an overflow buffer instead of being folded.
//! The host then grows the table to fit (moving every group with the rehash kernel)
//! and runs the kernel again over the overflow rows only, until none is left. Each
//! row is folded exactly once, so the result is exact whatever the number of groups.
//!
//! Reading the overflow counts back waits for the kernels, so for batches a resident
//! table keeps it is done once for many batches, not after each: every batch in flight
//! has its own overflow list and count, and the table settles (reads every count in
//! one copy, refolds what overflowed) when [`MAX_IN_FLIGHT`] batches are waiting or
//! before the groups are emitted. Batches streamed from host memory, and every batch
//! while the table is still growing (the last settle found overflowed rows, or nothing
//! was read yet), settle at once.

use std::sync::Arc;

use aether_gpu::CudaFunction;
use aether_gpu::dictionary::Dictionary;
use aether_gpu::launch::{KernelArg, grid_capped, grid_for, launch_kernel};
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceColumn, DeviceError, DeviceForm, GpuDevice};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::SchemaRef;

use super::host_tables::HostTables;
use crate::codegen::aggregate::{
    AGG_EMIT_ENTRY, AGG_ENTRY, AGG_INIT_ENTRY, AGG_REHASH_ENTRY, AggregateKernels, KeyDictionary,
    OutputSource,
};

const OWNER: &str = "GpuSegmentExec (aggregate)";
const THREADS: u32 = 256;
/// Most blocks of the fold kernel per multiprocessor, without and with group keys.
const KEYLESS_BLOCKS_PER_MULTIPROCESSOR: usize = 4;
const KEYED_BLOCKS_PER_MULTIPROCESSOR: usize = 32;
const FIRST_SLOTS: usize = 1 << 10;
/// Batches folded before their overflow counts are read.
const MAX_IN_FLIGHT: usize = 64;

/// A batch folded once, whose overflowed rows (if any) are not yet known.
#[derive(Debug)]
struct InFlight {
    /// Kept alive until its overflowed rows are known (the kernels read it then).
    _batch: Arc<DeviceBatch>,
    /// The column pointers its kernels take (with its string predicates' tables).
    columns: Vec<u64>,
    _lookup_tables: Vec<DeviceBuffer>,
    overflow: DeviceBuffer,
}

/// The loaded kernels of one aggregate.
#[derive(Debug)]
struct Functions {
    init: CudaFunction,
    fold: CudaFunction,
    rehash: CudaFunction,
    emit: CudaFunction,
}

/// One generation of the table.
#[derive(Debug)]
struct Table {
    slots: usize,
    state: DeviceBuffer,
    keys: DeviceBuffer,
    acc: DeviceBuffer,
}

/// An aggregate's groups on the device.
#[derive(Debug)]
pub struct GroupTable {
    device: Arc<GpuDevice>,
    kernels: AggregateKernels,
    functions: Functions,
    table: Table,
    /// `[groups, overflowed rows of in-flight batch 0, of batch 1, ...]`.
    counters: DeviceBuffer,
    in_flight: Vec<InFlight>,
    /// Whether to settle after each batch: until a settle finds no overflow.
    growing: bool,
    /// For each input column holding string codes, the largest dictionary seen.
    dictionaries: Vec<Option<Dictionary>>,
    /// Each string predicate's table so far.
    lookup_tables: HostTables,
    /// The word a fold kernel that can fault sets (see `codegen::expr::quotient`).
    fault_word: Option<DeviceBuffer>,
}

impl GroupTable {
    pub fn new(device: Arc<GpuDevice>, kernels: AggregateKernels) -> Result<Self, DeviceError> {
        let (functions, _) = device.load_kernels(
            &kernels.source,
            &[AGG_INIT_ENTRY, AGG_ENTRY, AGG_REHASH_ENTRY, AGG_EMIT_ENTRY],
        )?;
        let [init, fold, rehash, emit]: [CudaFunction; 4] = functions
            .try_into()
            .map_err(|_| DeviceError::Internal("aggregate kernels missing".into()))?;
        let functions = Functions {
            init,
            fold,
            rehash,
            emit,
        };
        let table = new_table(&device, &kernels, &functions, FIRST_SLOTS)?;
        let counters = DeviceBuffer::zeroed(&device, OWNER, 8 * (1 + MAX_IN_FLIGHT))?;
        let fault_word = if kernels.faults || kernels.emit_faults {
            Some(DeviceBuffer::zeroed(&device, OWNER, 4)?)
        } else {
            None
        };
        let lookup_tables = HostTables::new(kernels.lookups.clone());
        Ok(Self {
            device,
            kernels,
            functions,
            table,
            counters,
            in_flight: Vec::new(),
            growing: true,
            dictionaries: Vec::new(),
            lookup_tables,
            fault_word,
        })
    }

    /// Folds every row of `batch` into the groups (rows that overflow are folded when
    /// the table next settles).
    pub fn fold(&mut self, batch: &Arc<DeviceBatch>) -> Result<(), DeviceError> {
        self.note_dictionaries(batch);
        if batch.num_rows == 0 {
            return Ok(());
        }
        let start = std::time::Instant::now();
        let tables = self.lookup_tables.upload(&self.device, OWNER, batch)?;
        let fold_faults = self.fault_word.as_ref().filter(|_| self.kernels.faults);
        let columns = column_pointers(&self.device, batch, &tables, fold_faults);
        let overflow = DeviceBuffer::alloc(&self.device, OWNER, 4 * batch.num_rows)?;
        let slot = self.in_flight.len();
        self.run_fold(&columns, batch.num_rows, None, &overflow, slot)?;
        if crate::trace::enabled() {
            let _ = self.device.stream().synchronize();
        }
        crate::trace::phase("aggregate kernel", start, || {
            format!("{} rows", batch.num_rows)
        });
        let streamed = Arc::strong_count(batch) == 1;
        self.in_flight.push(InFlight {
            _batch: Arc::clone(batch),
            columns,
            _lookup_tables: tables,
            overflow,
        });
        // A batch streamed from host memory is checked at once: it is held only for
        // the check, and waiting here keeps this loop from running ahead of the
        // uploads queued on the same stream (on the H200, deferring streamed batches
        // made Q1 from host memory 2.4x slower). A batch a resident table keeps costs
        // nothing to hold and has no upload behind it.
        if self.growing || streamed || self.in_flight.len() == MAX_IN_FLIGHT {
            self.growing = self.settle()?;
        }
        Ok(())
    }

    /// Reads the overflow counts of every batch in flight (one copy) and folds the rows
    /// that overflowed, growing the table as needed. Returns whether any row overflowed.
    fn settle(&mut self) -> Result<bool, DeviceError> {
        Ok(self.settle_counting()?.0)
    }

    /// [`Self::settle`], also returning the group count when it was read (some batch
    /// was in flight), which saves [`Self::emit`] another round trip.
    fn settle_counting(&mut self) -> Result<(bool, Option<usize>), DeviceError> {
        if self.in_flight.is_empty() {
            return Ok((false, None));
        }
        let start = std::time::Instant::now();
        let in_flight = std::mem::take(&mut self.in_flight);
        let words = self.read_counters(1 + in_flight.len())?;
        let mut groups = words[0] as usize;
        self.reset_counters(groups)?;
        let mut refolded = 0;
        for (batch, &overflowed) in in_flight.iter().zip(&words[1..]) {
            if overflowed > 0 {
                refolded += overflowed;
                groups = self.refold(batch, overflowed as usize, groups)?;
            }
        }
        crate::trace::phase("aggregate settle", start, || {
            format!("{} batches, {refolded} rows refolded", in_flight.len())
        });
        Ok((refolded > 0, Some(groups)))
    }

    /// Folds the `overflowed` rows `batch` listed into a table holding `groups`
    /// groups, after growing it so that they fit; repeats over the rows that overflow
    /// again (none, unless the estimate of new groups was short). Returns the group
    /// count after the fold, read with the overflow count in one copy.
    fn refold(
        &mut self,
        batch: &InFlight,
        overflowed: usize,
        mut groups: usize,
    ) -> Result<usize, DeviceError> {
        let mut rows = overflowed;
        let mut row_ids = None;
        let mut spare = None;
        loop {
            // Every group so far and every listed row fits at half load.
            let needed = (2 * (groups + rows)).next_power_of_two();
            if needed > self.table.slots {
                self.grow(needed.max(self.table.slots * 4))?;
            }
            let next_overflow = match spare.take() {
                Some(buffer) => buffer,
                None => DeviceBuffer::alloc(&self.device, OWNER, 4 * rows)?,
            };
            let ids = row_ids.as_ref().unwrap_or(&batch.overflow);
            self.run_fold(&batch.columns, rows, Some(ids), &next_overflow, 0)?;
            let words = self.read_counters(2)?;
            groups = words[0] as usize;
            if words[1] == 0 {
                return Ok(groups);
            }
            self.reset_counters(groups)?;
            rows = words[1] as usize;
            spare = row_ids.replace(next_overflow);
        }
    }

    /// Writes one row per group in the aggregate's output layout (one row in all for a
    /// final aggregate without keys), or returns [`DeviceError::RowFault`] when some
    /// row or group had no value on the GPU.
    pub fn emit(&mut self, schema: &SchemaRef) -> Result<DeviceBatch, DeviceError> {
        let settled_groups = self.settle_counting()?.1;
        let device = &self.device;
        if let Some(word) = &self.fault_word {
            crate::gpu_eval::check_fault_word(device, word)?;
        }
        let start = std::time::Instant::now();
        let groups = if self.kernels.one_row {
            1
        } else {
            match settled_groups {
                Some(groups) => groups,
                None => self.read_counters(1)?[0] as usize,
            }
        };
        let mut columns = Vec::with_capacity(schema.fields().len());
        let mut pointers = Vec::with_capacity(2 * schema.fields().len());
        for (field, source) in schema.fields().iter().zip(&self.kernels.outputs) {
            let data_type = field.data_type().clone();
            let form = match source {
                OutputSource::Key {
                    dictionary: Some(KeyDictionary::Input(column)),
                    ..
                } => DeviceForm::DictionaryCodes {
                    dictionary: self
                        .dictionaries
                        .get(*column)
                        .cloned()
                        .flatten()
                        .unwrap_or_else(|| Dictionary::fixed(StringArray::from(vec![""]))),
                },
                OutputSource::Key {
                    dictionary: Some(KeyDictionary::Mapping(table)),
                    ..
                } => DeviceForm::DictionaryCodes {
                    dictionary: self.lookup_tables.mapped_dictionary(*table),
                },
                _ => aether_gpu::layout::device_form_of(&data_type, &Default::default())?,
            };
            let value_bytes = match &form {
                DeviceForm::Fixed { width } => groups * width,
                DeviceForm::Boolean => groups.div_ceil(32) * 4,
                DeviceForm::NarrowDecimal => groups * 8,
                DeviceForm::DictionaryCodes { .. } => groups * 4,
                DeviceForm::Strings => {
                    return Err(DeviceError::Internal(
                        "an aggregate output of plain strings".into(),
                    ));
                }
            };
            let values = DeviceBuffer::zeroed(device, OWNER, value_bytes)?;
            let validity = DeviceBuffer::zeroed(device, OWNER, groups.div_ceil(32) * 4)?;
            pointers.push(values.address(device));
            pointers.push(validity.address(device));
            columns.push(DeviceColumn {
                data_type,
                form,
                len: groups,
                null_count: 0,
                values,
                validity: Some(validity),
                offsets: None,
            });
        }
        if groups > 0 {
            let outputs = upload_words(device, &pointers)?;
            let counter = DeviceBuffer::zeroed(device, OWNER, 8)?;
            let table = &self.table;
            let fault_word = match &self.fault_word {
                Some(word) if self.kernels.emit_faults => KernelArg::Buffer(word),
                _ => KernelArg::Address(0),
            };
            // SAFETY: `aether_agg_emit(const u64* state, const u64* keys, const unsigned
            // char* acc, long long slots, u64* counter, const u64* outputs, unsigned*
            // aether_faults)`: the table buffers hold `slots` entries; `outputs` holds a
            // values and a validity pointer per output column, each sized above for
            // `groups` rows, and the kernel writes one row per occupied slot, of which
            // there are `groups` (or one row, when `one_row`); the kernel writes the
            // fault word only when `emit_faults`, and then it is a 4-byte buffer.
            unsafe {
                launch_kernel(
                    device,
                    &self.functions.emit,
                    grid_for(device, table.slots, THREADS),
                    &[
                        KernelArg::Buffer(&table.state),
                        KernelArg::Buffer(&table.keys),
                        KernelArg::Buffer(&table.acc),
                        KernelArg::I64(table.slots as i64),
                        KernelArg::Buffer(&counter),
                        KernelArg::Buffer(&outputs),
                        fault_word,
                    ],
                )?;
            }
            if let Some(word) = self
                .fault_word
                .as_ref()
                .filter(|_| self.kernels.emit_faults)
            {
                crate::gpu_eval::check_fault_word(device, word)?;
            }
        }
        if crate::trace::enabled() {
            let _ = device.stream().synchronize();
        }
        crate::trace::phase("aggregate emit", start, || format!("{groups} groups"));
        Ok(DeviceBatch {
            schema: Arc::clone(schema),
            columns,
            num_rows: groups,
        })
    }

    fn note_dictionaries(&mut self, batch: &DeviceBatch) {
        if self.dictionaries.len() < batch.columns.len() {
            self.dictionaries.resize(batch.columns.len(), None);
        }
        for (i, column) in batch.columns.iter().enumerate() {
            if let DeviceForm::DictionaryCodes { dictionary } = &column.form {
                let larger = self.dictionaries[i]
                    .as_ref()
                    .is_none_or(|kept| kept.len() < dictionary.len());
                if larger {
                    self.dictionaries[i] = Some(dictionary.clone());
                }
            }
        }
    }

    fn run_fold(
        &self,
        columns: &[u64],
        rows: usize,
        row_ids: Option<&DeviceBuffer>,
        overflow: &DeviceBuffer,
        overflow_slot: usize,
    ) -> Result<(), DeviceError> {
        let device = &self.device;
        let counters = self.counters.address(device);
        let table = &self.table;
        // Blocks a multiprocessor gets: a global aggregate's threads fold many rows each
        // in registers and merge once, so one wave of blocks is enough; a keyed fold's
        // rows each wait on shared-memory atomics, which more blocks in flight hide.
        // Measured on the H200 (TPC-H Q6 and Q1 at SF10, docs/benchmarks.md).
        let blocks_per_multiprocessor = if self.kernels.key_words == 0 {
            KEYLESS_BLOCKS_PER_MULTIPROCESSOR
        } else {
            KEYED_BLOCKS_PER_MULTIPROCESSOR
        };
        let config = grid_capped(device, rows, THREADS, blocks_per_multiprocessor);
        if columns.len() != self.kernels.column_slots {
            return Err(DeviceError::Internal(format!(
                "a batch of {} column pointers reached an aggregate kernel generated for {}",
                columns.len(),
                self.kernels.column_slots
            )));
        }
        let row_ids = match row_ids {
            Some(ids) => KernelArg::Buffer(ids),
            None => KernelArg::Address(0),
        };
        let mut args = vec![
            KernelArg::I64(rows as i64),
            row_ids,
            KernelArg::Buffer(&table.state),
            KernelArg::Buffer(&table.keys),
            KernelArg::Buffer(&table.acc),
            KernelArg::I64(table.slots as i64 - 1),
            KernelArg::I64((table.slots / 2) as i64),
            KernelArg::Address(counters),
            KernelArg::Address(counters + 8 * (1 + overflow_slot as u64)),
            KernelArg::Buffer(overflow),
        ];
        args.extend(columns.iter().map(|&pointer| KernelArg::Address(pointer)));
        // SAFETY: `aether_agg(long long rows, const unsigned* row_ids, u64* state,
        // u64* keys, unsigned char* acc, long long mask, long long max_fill,
        // u64* group_count, u64* overflow_count, unsigned* overflow, u64 col0, ...)`
        // with as many `col` parameters as `columns` holds (checked above): two
        // pointers per column of a batch with at least `rows` rows (or `row_ids` lists
        // `rows` row numbers of it), then each lookup table and a 0; the table holds
        // `slots` (a power of two) entries; both counts are words of `counters`, which
        // holds 1 + MAX_IN_FLIGHT words (`overflow_slot` < MAX_IN_FLIGHT); `overflow`
        // has room for `rows` row numbers.
        unsafe { launch_kernel(device, &self.functions.fold, config, &args) }
    }

    /// The first `words` counters: the group count, then in-flight overflow counts.
    fn read_counters(&self, words: usize) -> Result<Vec<u64>, DeviceError> {
        let bytes = self.counters.download(&self.device)?;
        Ok(bytes.typed_data::<u64>()[..words].to_vec())
    }

    /// Sets the group count to `groups` and every overflow count to zero.
    fn reset_counters(&mut self, groups: usize) -> Result<(), DeviceError> {
        let mut words = vec![0u64; 1 + MAX_IN_FLIGHT];
        words[0] = groups as u64;
        self.counters = upload_words(&self.device, &words)?;
        Ok(())
    }

    fn grow(&mut self, slots: usize) -> Result<(), DeviceError> {
        let device = Arc::clone(&self.device);
        let bigger = new_table(&device, &self.kernels, &self.functions, slots)?;
        let old = &self.table;
        // SAFETY: `aether_agg_rehash(const u64* old_state, const u64* old_keys, const
        // unsigned char* old_acc, long long old_slots, u64* state, u64* keys, unsigned
        // char* acc, long long mask)`: both tables are sized for their slot counts, and
        // the new one has more empty slots than the old one has groups, so every
        // insertion finds a slot.
        unsafe {
            launch_kernel(
                &device,
                &self.functions.rehash,
                grid_for(&device, old.slots, THREADS),
                &[
                    KernelArg::Buffer(&old.state),
                    KernelArg::Buffer(&old.keys),
                    KernelArg::Buffer(&old.acc),
                    KernelArg::I64(old.slots as i64),
                    KernelArg::Buffer(&bigger.state),
                    KernelArg::Buffer(&bigger.keys),
                    KernelArg::Buffer(&bigger.acc),
                    KernelArg::I64(bigger.slots as i64 - 1),
                ],
            )?;
        }
        self.table = bigger;
        Ok(())
    }
}

fn new_table(
    device: &GpuDevice,
    kernels: &AggregateKernels,
    functions: &Functions,
    slots: usize,
) -> Result<Table, DeviceError> {
    let state = DeviceBuffer::zeroed(device, OWNER, slots * 8)?;
    let keys = DeviceBuffer::alloc(device, OWNER, slots * 8 * kernels.key_words.max(1))?;
    let acc = DeviceBuffer::alloc(device, OWNER, slots * kernels.acc_bytes)?;
    // SAFETY: `aether_agg_init(unsigned char* acc, long long slots)` writes
    // `slots * AGG_ACC_BYTES` bytes, which `acc` holds.
    unsafe {
        launch_kernel(
            device,
            &functions.init,
            grid_for(device, slots, THREADS),
            &[KernelArg::Buffer(&acc), KernelArg::I64(slots as i64)],
        )?;
    }
    Ok(Table {
        slots,
        state,
        keys,
        acc,
    })
}

/// The column pointers a fold kernel takes as parameters: values, then the validity
/// bitmap or 0, per column; then the offsets and a 0 of each column of strings as
/// offsets and bytes, in column order; then each string predicate's table and a 0;
/// then the fault word, if the kernel takes one (`ExprCompiler::column_slots`).
pub fn column_pointers(
    device: &GpuDevice,
    batch: &DeviceBatch,
    tables: &[DeviceBuffer],
    fault_word: Option<&DeviceBuffer>,
) -> Vec<u64> {
    let mut pointers = Vec::with_capacity(2 * (batch.columns.len() + tables.len()) + 1);
    for column in &batch.columns {
        pointers.push(column.values.address(device));
        pointers.push(column.validity.as_ref().map_or(0, |v| v.address(device)));
    }
    for column in &batch.columns {
        if let (DeviceForm::Strings, Some(offsets)) = (&column.form, &column.offsets) {
            pointers.push(offsets.address(device));
            pointers.push(0);
        }
    }
    for table in tables {
        pointers.push(table.address(device));
        pointers.push(0);
    }
    pointers.extend(fault_word.map(|word| word.address(device)));
    pointers
}

fn upload_words(device: &GpuDevice, words: &[u64]) -> Result<DeviceBuffer, DeviceError> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    DeviceBuffer::upload(device, OWNER, &bytes)
}
