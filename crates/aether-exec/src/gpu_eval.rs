//! Evaluating a physical expression on the GPU and returning an Arrow array.
//!
//! This is the path every GPU operator's expressions take; on its own it is what the
//! differential tests use to compare each supported expression with DataFusion's CPU
//! evaluation on the same batch.

use std::sync::Arc;

use aether_gpu::launch::run_row_kernel;
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceError, GpuDevice};
use datafusion::arrow::array::{ArrayData, ArrayRef, BooleanArray, Decimal128Array, make_array};
use datafusion::arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::DataType;

use crate::codegen::{CudaType, EVAL_ENTRY, ExprKernel};

/// Runs `kernel` over `batch` on `device` and returns the result as the expression's
/// Arrow type, or [`DeviceError::RowFault`] when a row has no value on the GPU (a zero
/// divisor, a decimal overflow: where DataFusion raises an error).
pub fn evaluate_on_gpu(
    device: &GpuDevice,
    kernel: &ExprKernel,
    batch: &DeviceBatch,
) -> Result<ArrayRef, DeviceError> {
    let width = kernel.output.width();
    let fault_word = if kernel.faults {
        Some(DeviceBuffer::zeroed(device, "expression", 4)?)
    } else {
        None
    };
    let extra: Vec<u64> = fault_word.iter().map(|w| w.address(device)).collect();
    let output = run_row_kernel(
        device,
        &kernel.source,
        EVAL_ENTRY,
        batch,
        width,
        "expression",
        &extra,
    )?;
    if let Some(word) = &fault_word {
        check_fault_word(device, word)?;
    }
    let values = output.values.download(device)?;
    let valid = output.valid.download(device)?;
    to_arrow(kernel, output.rows, values, &valid)
}

/// Reads a kernel's fault word: set, some row had no value on the GPU.
pub fn check_fault_word(device: &GpuDevice, word: &DeviceBuffer) -> Result<(), DeviceError> {
    let bytes = word.download(device)?;
    if bytes.as_slice().iter().any(|b| *b != 0) {
        return Err(DeviceError::RowFault(
            "a row it cannot compute as the CPU would (a zero divisor or an overflow)".into(),
        ));
    }
    Ok(())
}

/// Builds the Arrow array from the kernel's value bytes and validity bytes.
fn to_arrow(
    kernel: &ExprKernel,
    rows: usize,
    values: Buffer,
    valid: &Buffer,
) -> Result<ArrayRef, DeviceError> {
    let invalid = |e: datafusion::arrow::error::ArrowError| {
        DeviceError::Internal(format!("a GPU result is malformed: {e}"))
    };
    let valid_bits = BooleanBuffer::from_iter(valid.as_slice()[..rows].iter().map(|b| *b != 0));
    let nulls = Some(NullBuffer::new(valid_bits)).filter(|n| n.null_count() > 0);
    Ok(match (kernel.output, &kernel.data_type) {
        (CudaType::Bool, _) => {
            let bits = BooleanBuffer::from_iter(values.as_slice()[..rows].iter().map(|b| *b != 0));
            Arc::new(BooleanArray::new(bits, nulls))
        }
        (CudaType::Dec64 { .. }, DataType::Decimal128(precision, scale)) => {
            let narrow = ScalarBuffer::<i64>::new(values, 0, rows);
            let wide: ScalarBuffer<i128> = narrow.iter().map(|v| i128::from(*v)).collect();
            Arc::new(
                Decimal128Array::try_new(wide, nulls)
                    .and_then(|a| a.with_precision_and_scale(*precision, *scale))
                    .map_err(invalid)?,
            )
        }
        (_, data_type) => {
            let data = ArrayData::builder(data_type.clone())
                .len(rows)
                .add_buffer(values)
                .nulls(nulls)
                .build()
                .map_err(invalid)?;
            make_array(data)
        }
    })
}
