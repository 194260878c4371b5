//! Columns assembled on the device from rows of other columns: a join's output (each
//! output row names its input row, or `NO_ROW` for a NULL) and the build side of a
//! join (its batches concatenated into one).
//!
//! Values keep their device form; string columns stay dictionary codes, which keep
//! meaning what they meant because every batch of one upload shares its stream's
//! dictionary (the longest view of it decodes every code).

use std::sync::Arc;

use aether_gpu::dictionary::Dictionary;
use aether_gpu::launch::{KernelArg, grid_for, launch_kernel};
use aether_gpu::layout::{DeviceForm, LayoutOptions, device_form_of};
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceColumn, DeviceError, GpuDevice};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::{Field, SchemaRef};

use super::join_kernels::JoinKernels;

const OWNER: &str = "GpuHashJoinExec";
const THREADS: u32 = 256;

/// Bytes a value of `form` takes, `None` for bit-packed booleans.
fn value_width(form: &DeviceForm) -> Result<Option<usize>, DeviceError> {
    Ok(match form {
        DeviceForm::Fixed { width } => Some(*width),
        DeviceForm::NarrowDecimal => Some(8),
        DeviceForm::DictionaryCodes { .. } => Some(4),
        DeviceForm::Boolean => None,
        DeviceForm::Strings => {
            return Err(DeviceError::Internal(
                "a join reached strings as offsets and bytes; it takes dictionary codes".into(),
            ));
        }
    })
}

/// Empty (all NULL) columns for `rows` rows of `field` in `form`.
fn allocate(
    device: &GpuDevice,
    field: &Field,
    form: DeviceForm,
    rows: usize,
) -> Result<DeviceColumn, DeviceError> {
    let bitmap_bytes = rows.div_ceil(32) * 4;
    let values = match value_width(&form)? {
        Some(width) => DeviceBuffer::alloc(device, OWNER, rows * width)?,
        None => DeviceBuffer::zeroed(device, OWNER, bitmap_bytes)?,
    };
    let validity = if field.is_nullable() {
        Some(DeviceBuffer::zeroed(device, OWNER, bitmap_bytes)?)
    } else {
        None
    };
    Ok(DeviceColumn {
        data_type: field.data_type().clone(),
        form,
        len: rows,
        null_count: 0,
        values,
        validity,
        offsets: None,
    })
}

/// The form a column of `field` takes when no batch showed it: strings as codes into
/// an empty dictionary.
pub fn default_form(field: &Field) -> Result<DeviceForm, DeviceError> {
    let form = device_form_of(field.data_type(), &LayoutOptions::default())
        .map_err(|e| DeviceError::Internal(format!("a join column: {e}")))?;
    Ok(match form {
        DeviceForm::Strings => DeviceForm::DictionaryCodes {
            dictionary: Dictionary::fixed(StringArray::from(Vec::<String>::new())),
        },
        other => other,
    })
}

/// Copies rows of `src` into `dst` from row `offset` on: `rows[i]` (a buffer of u32
/// row numbers, `NO_ROW` for NULL) or, without `rows`, row `i` for `i < n`.
fn gather_into(
    device: &GpuDevice,
    kernels: &JoinKernels,
    src: &DeviceColumn,
    rows: Option<&DeviceBuffer>,
    n: usize,
    dst: &DeviceColumn,
    offset: usize,
) -> Result<(), DeviceError> {
    if n == 0 {
        return Ok(());
    }
    let rows_arg = rows.map_or(KernelArg::Address(0), KernelArg::Buffer);
    let src_valid = src.validity.as_ref().map_or(0, |v| v.address(device));
    let dst_valid = dst.validity.as_ref().map_or(0, |v| v.address(device));
    let config = grid_for(device, n, THREADS);
    match value_width(&dst.form)? {
        Some(width) => {
            let args = [
                KernelArg::I64(n as i64),
                rows_arg,
                KernelArg::I64(offset as i64),
                KernelArg::I64(width as i64),
                KernelArg::Address(src.values.address(device)),
                KernelArg::Address(src_valid),
                KernelArg::Address(dst.values.address(device)),
                KernelArg::Address(dst_valid),
            ];
            // SAFETY: `aether_gather(long long n, const u32* rows, long long
            // dst_offset, long long width, u64 src, u64 src_valid, u64 dst, u64
            // dst_valid)`. `rows` (when given) holds `n` u32 row numbers of `src`, or
            // NO_ROW which the kernel skips; `src` holds `width`-byte values for each of
            // its `len` rows, its bitmap (or 0) `len` bits; `dst` holds `width`-byte
            // values and a zeroed 32-bit-word bitmap (or 0) for at least `offset + n`
            // rows (callers allocate it so).
            unsafe { launch_kernel(device, &kernels.gather, config, &args) }
        }
        None => {
            let args = [
                KernelArg::I64(n as i64),
                rows_arg,
                KernelArg::I64(offset as i64),
                KernelArg::Address(src.values.address(device)),
                KernelArg::Address(src_valid),
                KernelArg::Address(dst.values.address(device)),
                KernelArg::Address(dst_valid),
            ];
            // SAFETY: `aether_gather_bits(long long n, const u32* rows, long long
            // dst_offset, u64 src, u64 src_valid, u64 dst, u64 dst_valid)`, as above
            // with bit-packed values: `dst`'s values are a zeroed bitmap in 32-bit
            // words for at least `offset + n` rows.
            unsafe { launch_kernel(device, &kernels.gather_bits, config, &args) }
        }
    }
}

/// A column of `field` holding `src`'s rows named in `rows` (`n` of them; `NO_ROW`
/// gives NULL). `src` `None` (a side with no batch) gives NULLs in `form`.
pub fn gather_column(
    device: &GpuDevice,
    kernels: &JoinKernels,
    field: &Field,
    src: Option<&DeviceColumn>,
    form: &DeviceForm,
    rows: Option<&DeviceBuffer>,
    n: usize,
) -> Result<DeviceColumn, DeviceError> {
    let form = src.map_or_else(|| form.clone(), |s| s.form.clone());
    let column = allocate(device, field, form, n)?;
    if let Some(src) = src {
        gather_into(device, kernels, src, rows, n, &column, 0)?;
    }
    Ok(column)
}

/// `batches` (of `schema`) as one batch on the device.
pub fn concatenate(
    device: &GpuDevice,
    kernels: &JoinKernels,
    schema: &SchemaRef,
    batches: &[Arc<DeviceBatch>],
) -> Result<DeviceBatch, DeviceError> {
    let rows: usize = batches.iter().map(|b| b.num_rows).sum();
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (index, field) in schema.fields().iter().enumerate() {
        let form = widest_form(batches, index).map_or_else(|| default_form(field), Ok)?;
        // Every batch's values go in; a bitmap is needed when some batch has one.
        let mut field = field.as_ref().clone();
        let any_nulls = batches
            .iter()
            .any(|b| b.columns.get(index).is_some_and(|c| c.validity.is_some()));
        field.set_nullable(any_nulls);
        let column = allocate(device, &field, form, rows)?;
        let mut offset = 0;
        for batch in batches {
            let src = batch.columns.get(index).ok_or_else(|| {
                DeviceError::Internal(format!("a join input batch lacks column {index}"))
            })?;
            gather_into(device, kernels, src, None, batch.num_rows, &column, offset)?;
            offset += batch.num_rows;
        }
        columns.push(column);
    }
    Ok(DeviceBatch {
        schema: Arc::clone(schema),
        columns,
        num_rows: rows,
    })
}

/// The form of column `index` across `batches`: for dictionary codes, the longest
/// dictionary (the stream's latest view, which decodes every earlier code).
pub fn widest_form(batches: &[Arc<DeviceBatch>], index: usize) -> Option<DeviceForm> {
    let forms = batches
        .iter()
        .filter_map(|b| b.columns.get(index))
        .map(|c| &c.form);
    forms
        .max_by_key(|form| match form {
            DeviceForm::DictionaryCodes { dictionary } => dictionary.len(),
            _ => 0,
        })
        .cloned()
}

/// Row numbers uploaded as the u32 buffer the gathers take.
pub fn upload_rows(device: &GpuDevice, rows: &[u32]) -> Result<DeviceBuffer, DeviceError> {
    if rows.is_empty() {
        return DeviceBuffer::alloc(device, OWNER, 0);
    }
    let bytes: Vec<u8> = rows.iter().flat_map(|r| r.to_le_bytes()).collect();
    DeviceBuffer::upload(device, OWNER, &bytes)
}
