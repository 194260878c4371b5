//! The sort's kernels (`cuda/sort.cu`), loaded once per device, and the permutation
//! they compute: the order of a batch's rows by its sort keys, as u32 row numbers.
//!
//! Each key is encoded into order-preserving 64-bit words (a nullable key gets a NULL
//! word in front; a 128-bit decimal takes two, high half first), then a stable
//! least-significant-digit radix sort orders a row permutation by those words, last
//! key first, 8 bits a pass. Bits equal in every row take no pass: the encoder folds
//! each word's OR and AND, which the host reads once.

use std::sync::Arc;

use aether_gpu::launch::{KernelArg, LaunchConfig, grid_for, launch_kernel};
use aether_gpu::layout::DeviceForm;
use aether_gpu::{CudaFunction, DeviceBatch, DeviceBuffer, DeviceError, GpuDevice};
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::DataType;

pub const SORT_SOURCE: &str = include_str!("cuda/sort.cu");
const OWNER: &str = "GpuSortExec";
/// `SORT_THREADS`, `SORT_TILE` and `SCAN_BLOCK` in the source.
const THREADS: u32 = 256;
const TILE: usize = 4096;
const SCAN_BLOCK: usize = 2048;

const ENTRIES: [&str; 5] = [
    "aether_sort_encode",
    "aether_sort_histogram",
    "aether_sort_scatter",
    "aether_scan_blocks",
    "aether_scan_add",
];

/// How a key's values become words (`KEY_*` in the source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Signed = 0,
    Float32 = 1,
    Float64 = 2,
    Boolean = 3,
    Ranked = 4,
    WideHigh = 5,
    WideLow = 6,
}

/// Which words of its key one encoder pass writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyPart {
    /// The key's one value word, and its NULL word when nullable.
    Whole,
    /// A 16-byte key's high half and its NULL word...
    High,
    /// ...then its low half.
    Low,
}

/// One sort key: a column of the batch and its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// Why a column of `data_type` cannot be a GPU sort key (in its upload form), if it
/// cannot.
pub fn sort_key_type(data_type: &DataType) -> Option<String> {
    let sortable = matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Float32
            | DataType::Float64
            | DataType::Boolean
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Decimal128(_, _)
    );
    (!sortable).then(|| format!("has type {data_type}, which GPU sorts do not order yet"))
}

/// The loaded kernels.
#[derive(Debug, Clone)]
pub struct SortKernels {
    encode: CudaFunction,
    histogram: CudaFunction,
    scatter: CudaFunction,
    scan_blocks: CudaFunction,
    scan_add: CudaFunction,
}

/// One encoder pass's words on the device: its NULL word (nullable keys) and its
/// value word.
struct EncodedKey {
    nulls: Option<DeviceBuffer>,
    values: DeviceBuffer,
}

/// Words a pass's folds take: OR and AND over all rows, of values then of NULLs.
const FOLD_WORDS: usize = 4;

impl SortKernels {
    /// Loads the kernels (compiling them on first use on this device).
    pub fn load(device: &GpuDevice) -> Result<Self, DeviceError> {
        let (functions, _) = device.load_kernels(SORT_SOURCE, &ENTRIES)?;
        let mut functions = functions.into_iter();
        let mut next = || {
            functions
                .next()
                .ok_or_else(|| DeviceError::Internal("sort kernels missing".into()))
        };
        // In the order of `ENTRIES`.
        Ok(Self {
            encode: next()?,
            histogram: next()?,
            scatter: next()?,
            scan_blocks: next()?,
            scan_add: next()?,
        })
    }

    /// The rows of `batch` in the order of `keys` (first key first; ties keep their
    /// input order), as a buffer of u32 row numbers; `None` when every row has the
    /// same keys, so the input order is the order.
    pub fn permutation(
        &self,
        device: &Arc<GpuDevice>,
        batch: &DeviceBatch,
        keys: &[SortKey],
    ) -> Result<Option<DeviceBuffer>, DeviceError> {
        let rows = batch.num_rows;
        if rows >= u32::MAX as usize {
            return Err(DeviceError::Internal(format!(
                "a GPU sort of {rows} rows is over the 4-billion-row limit"
            )));
        }
        if rows <= 1 {
            return Ok(None);
        }
        // Encoder passes: one per key, two for a 128-bit key.
        let parts: Vec<(&SortKey, KeyPart)> = keys
            .iter()
            .flat_map(|key| {
                let wide = batch.columns.get(key.column).is_some_and(|c| {
                    matches!(c.form, DeviceForm::Fixed { width: 16 })
                        && matches!(c.data_type, DataType::Decimal128(_, _))
                });
                let parts: &[KeyPart] = if wide {
                    &[KeyPart::High, KeyPart::Low]
                } else {
                    &[KeyPart::Whole]
                };
                parts.iter().map(move |part| (key, *part))
            })
            .collect();
        // Every pass's folds in one buffer, read back with one copy.
        let initial: Vec<u8> = parts
            .iter()
            .flat_map(|_| [0u64, !0, 0, !0])
            .flat_map(|word| word.to_le_bytes())
            .collect();
        let folds = DeviceBuffer::upload(device, OWNER, &initial)?;
        let encoded = parts
            .iter()
            .enumerate()
            .map(|(i, (key, part))| {
                let at = folds.address(device) + (i * FOLD_WORDS * 8) as u64;
                self.encode(device, batch, key, *part, at)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let folds = folds.download(device)?;
        let fold =
            |i: usize| u64::from_le_bytes(folds[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        // Words from the most significant (the first key's NULLs) to the least, each
        // with the bits that differ between rows.
        let mut words: Vec<(&DeviceBuffer, u64)> = Vec::new();
        for (i, key) in encoded.iter().enumerate() {
            let first = i * FOLD_WORDS;
            if let Some(nulls) = &key.nulls {
                words.push((nulls, fold(first + 2) ^ fold(first + 3)));
            }
            words.push((&key.values, fold(first) ^ fold(first + 1)));
        }
        let passes: Vec<(&DeviceBuffer, i64)> = words
            .iter()
            .rev()
            .flat_map(|&(word, varying)| {
                (0..8)
                    .filter(move |digit| (varying >> (digit * 8)) & 0xff != 0)
                    .map(move |digit| (word, digit * 8))
            })
            .collect();
        if passes.is_empty() {
            return Ok(None);
        }
        let tiles = rows.div_ceil(TILE);
        let counts = DeviceBuffer::alloc(device, OWNER, 256 * tiles * 4)?;
        let mut current: Option<DeviceBuffer> = None;
        let mut spare = DeviceBuffer::alloc(device, OWNER, rows * 4)?;
        let per_tile = LaunchConfig {
            grid_dim: (tiles as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        for (word, shift) in passes {
            let perm_in = current
                .as_ref()
                .map_or(KernelArg::Address(0), KernelArg::Buffer);
            let args = [
                KernelArg::I64(rows as i64),
                KernelArg::Buffer(word),
                perm_in,
                KernelArg::I64(shift),
                KernelArg::Buffer(&counts),
                KernelArg::I64(tiles as i64),
            ];
            // SAFETY: `aether_sort_histogram(long long rows, const u64* words, const
            // u32* perm, long long shift, u32* counts, long long tiles)`: `words` holds
            // `rows` words, `perm` (or 0 for the identity) `rows` row numbers below
            // `rows`, `counts` 256 * `tiles` u32s; one block a tile of 4096 rows.
            unsafe { launch_kernel(device, &self.histogram, per_tile, &args)? };
            self.exclusive_scan(device, &counts, 256 * tiles)?;
            let args = [
                KernelArg::I64(rows as i64),
                KernelArg::Buffer(word),
                perm_in,
                KernelArg::I64(shift),
                KernelArg::Buffer(&counts),
                KernelArg::I64(tiles as i64),
                KernelArg::Buffer(&spare),
            ];
            // SAFETY: `aether_sort_scatter(long long rows, const u64* words, const u32*
            // perm_in, long long shift, const u32* offsets, long long tiles, u32*
            // perm_out)`: as the histogram, with `offsets` the scanned counts (every
            // position they give is below `rows`) and `perm_out` (`spare`, not
            // `perm_in`) `rows` u32s; 256 threads a block, as the kernel needs.
            unsafe { launch_kernel(device, &self.scatter, per_tile, &args)? };
            let written = std::mem::replace(&mut spare, DeviceBuffer::alloc(device, OWNER, 0)?);
            spare = match current.replace(written) {
                Some(previous) => previous,
                None => DeviceBuffer::alloc(device, OWNER, rows * 4)?,
            };
        }
        Ok(current)
    }

    fn encode(
        &self,
        device: &Arc<GpuDevice>,
        batch: &DeviceBatch,
        key: &SortKey,
        part: KeyPart,
        folds: u64,
    ) -> Result<EncodedKey, DeviceError> {
        let rows = batch.num_rows;
        let column = batch.columns.get(key.column).ok_or_else(|| {
            DeviceError::Internal(format!("a sort key column {} is missing", key.column))
        })?;
        let (kind, width) = match (&column.form, &column.data_type) {
            (DeviceForm::Fixed { width: 16 }, DataType::Decimal128(_, _)) => match part {
                KeyPart::High => (KeyKind::WideHigh, 16),
                KeyPart::Low => (KeyKind::WideLow, 16),
                KeyPart::Whole => {
                    return Err(DeviceError::Internal(
                        "a 128-bit sort key encoded as one word".into(),
                    ));
                }
            },
            (DeviceForm::Fixed { width: 4 }, DataType::Float32) => (KeyKind::Float32, 4),
            (DeviceForm::Fixed { width: 8 }, DataType::Float64) => (KeyKind::Float64, 8),
            (DeviceForm::Fixed { width }, data_type)
                if *width <= 8
                    && sort_key_type(data_type).is_none()
                    && !data_type.is_floating() =>
            {
                (KeyKind::Signed, *width)
            }
            (DeviceForm::NarrowDecimal, _) => (KeyKind::Signed, 8),
            (DeviceForm::Boolean, _) => (KeyKind::Boolean, 1),
            (DeviceForm::DictionaryCodes { .. }, _) => (KeyKind::Ranked, 4),
            (form, data_type) => {
                return Err(DeviceError::Internal(format!(
                    "a GPU sort key of type {data_type} reached the device as {form:?}"
                )));
            }
        };
        let ranks = match &column.form {
            DeviceForm::DictionaryCodes { dictionary } => {
                Some(upload_ranks(device, dictionary.values()?.as_ref())?)
            }
            _ => None,
        };
        let values = DeviceBuffer::alloc(device, OWNER, rows * 8)?;
        // A 128-bit key's NULLs go in front of its high half only.
        let nulls = match column.validity {
            Some(_) if part != KeyPart::Low => Some(DeviceBuffer::alloc(device, OWNER, rows * 8)?),
            _ => None,
        };
        let args = [
            KernelArg::I64(rows as i64),
            KernelArg::Address(column.values.address(device)),
            KernelArg::Address(column.validity.as_ref().map_or(0, |v| v.address(device))),
            KernelArg::I64(kind as i64),
            KernelArg::I64(width as i64),
            ranks
                .as_ref()
                .map_or(KernelArg::Address(0), KernelArg::Buffer),
            KernelArg::I64(key.descending as i64),
            KernelArg::I64(key.nulls_first as i64),
            KernelArg::Buffer(&values),
            nulls
                .as_ref()
                .map_or(KernelArg::Address(0), KernelArg::Buffer),
            KernelArg::Address(folds),
        ];
        // SAFETY: `aether_sort_encode(long long rows, u64 values, u64 valid, long long
        // kind, long long width, const u32* ranks, long long descending, long long
        // nulls_first, u64* value_word, u64* null_word, u64* or_and)`: `values` is the
        // live column of `rows` values of `width` bytes (bits for booleans, u32 codes
        // for ranked keys, every code below the dictionary's length, which `ranks`
        // holds an entry for; 16 bytes a row for either half of a wide key), `valid`
        // its bitmap or 0; `value_word` and `null_word` (or 0 for a key without a
        // bitmap, or a wide key's low half) hold `rows` words, `or_and` (this pass's
        // part of the sort's fold buffer) 4.
        unsafe { launch_kernel(device, &self.encode, grid_for(device, rows, THREADS), &args)? };
        Ok(EncodedKey { nulls, values })
    }

    /// Scans `n` u32s of `data` in place (exclusive), a block of 2048 at a time, the
    /// blocks' totals scanned the same way and added back.
    fn exclusive_scan(
        &self,
        device: &Arc<GpuDevice>,
        data: &DeviceBuffer,
        n: usize,
    ) -> Result<(), DeviceError> {
        let blocks = n.div_ceil(SCAN_BLOCK);
        let sums = DeviceBuffer::alloc(device, OWNER, blocks * 4)?;
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let args = [
            KernelArg::I64(n as i64),
            KernelArg::Buffer(data),
            KernelArg::Buffer(&sums),
        ];
        // SAFETY: `aether_scan_blocks(long long n, u32* data, u32* sums)`: `data` holds
        // `n` u32s, `sums` one per block of 2048; 256 threads a block.
        unsafe { launch_kernel(device, &self.scan_blocks, config, &args)? };
        if blocks > 1 {
            self.exclusive_scan(device, &sums, blocks)?;
            // SAFETY: `aether_scan_add(long long n, u32* data, const u32* offsets)`:
            // as above, `offsets` the scanned block totals, one per block.
            unsafe { launch_kernel(device, &self.scan_add, config, &args)? };
        }
        Ok(())
    }
}

/// Each dictionary code's rank among the dictionary's values in Arrow's string
/// order (bytes), equal values equal ranks, uploaded as u32s.
fn upload_ranks(device: &GpuDevice, dictionary: &StringArray) -> Result<DeviceBuffer, DeviceError> {
    let mut order: Vec<usize> = (0..dictionary.len()).collect();
    order.sort_by(|&a, &b| dictionary.value(a).cmp(dictionary.value(b)));
    let mut ranks = vec![0u32; dictionary.len()];
    let mut rank = 0u32;
    for (position, &code) in order.iter().enumerate() {
        if position > 0 && dictionary.value(order[position - 1]) != dictionary.value(code) {
            rank += 1;
        }
        ranks[code] = rank;
    }
    let bytes: Vec<u8> = ranks.iter().flat_map(|r| r.to_le_bytes()).collect();
    // An empty dictionary still needs a valid pointer for the kernel.
    let bytes = if bytes.is_empty() { vec![0; 4] } else { bytes };
    DeviceBuffer::upload(device, OWNER, &bytes)
}
