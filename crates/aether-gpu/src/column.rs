//! `DeviceColumn` and `DeviceBatch`: Arrow-layout columns resident on the GPU.
//!
//! # Device residency
//! Upload prepares each column's buffers on the host ([`crate::layout`]) and copies them
//! through the pinned staging pool; download copies them back and rebuilds the Arrow
//! array of the original type. Between GPU operators a batch stays on the device.
//!
//! # Memory
//! Every buffer holds a reservation from the device's [`crate::memory::MemoryBudget`]
//! under the owner named at upload, released when the column is dropped.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::buffer::{Buffer, MutableBuffer};
use arrow::datatypes::{DataType, SchemaRef};
use cudarc::driver::{CudaSlice, DevicePtr};

use crate::device::GpuDevice;
use crate::error::DeviceError;
use crate::layout::{DeviceForm, HostColumn, LayoutOptions, from_device_layout, to_device_layout};
use crate::memory::Reservation;

/// Device memory with its share of the budget.
#[derive(Debug)]
pub struct DeviceBuffer {
    slice: CudaSlice<u8>,
    len: usize,
    _reservation: Reservation,
}

impl DeviceBuffer {
    /// Allocates `len` bytes (uninitialized) for `owner`.
    pub fn alloc(device: &GpuDevice, owner: &str, len: usize) -> Result<Self, DeviceError> {
        let reservation = device.memory().reserve(owner, len as u64)?;
        // CUDA cannot allocate zero bytes; an empty buffer holds one unused byte.
        // SAFETY: the bytes are uninitialized until written; callers write all `len`
        // bytes (an upload) before any kernel or download reads them.
        let slice = unsafe { device.stream().alloc::<u8>(len.max(1)) }
            .map_err(DeviceError::driver("allocating GPU memory"))?;
        Ok(Self {
            slice,
            len,
            _reservation: reservation,
        })
    }

    /// Allocates `len` bytes set to zero for `owner`.
    pub fn zeroed(device: &GpuDevice, owner: &str, len: usize) -> Result<Self, DeviceError> {
        let mut buffer = Self::alloc(device, owner, len)?;
        device
            .stream()
            .memset_zeros(&mut buffer.slice)
            .map_err(DeviceError::driver("clearing GPU memory"))?;
        Ok(buffer)
    }

    /// The buffer's device address, for pointer tables passed to kernels.
    pub fn address(&self, device: &GpuDevice) -> u64 {
        let (address, _guard) = self.slice.device_ptr(device.stream());
        address
    }

    /// Copies `bytes` to a new device buffer through the pinned staging pool.
    pub fn upload(device: &GpuDevice, owner: &str, bytes: &[u8]) -> Result<Self, DeviceError> {
        let mut buffer = Self::alloc(device, owner, bytes.len())?;
        device
            .staging()
            .upload(device.stream(), bytes, &mut buffer.slice)?;
        Ok(buffer)
    }

    /// Copies `bytes` to a new device buffer without waiting: the copy is queued on the
    /// device's stream and runs at full PCIe speed when `bytes` is pinned memory.
    ///
    /// # Safety
    /// `bytes` must stay alive and unchanged until the stream has passed this copy
    /// (until an event recorded after it completes).
    pub unsafe fn upload_async(
        device: &GpuDevice,
        owner: &str,
        bytes: &[u8],
    ) -> Result<Self, DeviceError> {
        let mut buffer = Self::alloc(device, owner, bytes.len())?;
        if !bytes.is_empty() {
            device
                .stream()
                .memcpy_htod(bytes, &mut buffer.slice)
                .map_err(DeviceError::driver("copying to the GPU"))?;
        }
        Ok(buffer)
    }

    /// Copies the buffer back to the host.
    pub fn download(&self, device: &GpuDevice) -> Result<Buffer, DeviceError> {
        // Arrow's own allocation, so the bytes come back aligned for any value type
        // (a `Vec<u8>` is only byte-aligned, which Arrow rejects for wider types).
        let mut bytes = MutableBuffer::from_len_zeroed(self.len);
        if self.len > 0 {
            device
                .stream()
                .memcpy_dtoh(&self.slice.slice(..self.len), bytes.as_slice_mut())
                .map_err(DeviceError::driver("copying from the GPU"))?;
        }
        Ok(bytes.into())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device memory, for kernel arguments.
    pub fn slice(&self) -> &CudaSlice<u8> {
        &self.slice
    }
}

/// One column on the GPU, in the layout [`crate::layout`] describes.
#[derive(Debug)]
pub struct DeviceColumn {
    pub data_type: DataType,
    pub form: DeviceForm,
    pub len: usize,
    pub null_count: usize,
    pub values: DeviceBuffer,
    pub validity: Option<DeviceBuffer>,
    pub offsets: Option<DeviceBuffer>,
}

impl DeviceColumn {
    /// Uploads `array` for `owner`.
    pub fn upload(
        device: &GpuDevice,
        owner: &str,
        array: &ArrayRef,
        options: &LayoutOptions,
    ) -> Result<Self, DeviceError> {
        let host = to_device_layout(array.as_ref(), options)?;
        Self::upload_prepared(device, owner, &host)
    }

    /// Uploads a column already prepared in its device layout.
    pub fn upload_prepared(
        device: &GpuDevice,
        owner: &str,
        host: &HostColumn,
    ) -> Result<Self, DeviceError> {
        let upload = |buffer: &Buffer| DeviceBuffer::upload(device, owner, buffer.as_slice());
        Ok(Self {
            data_type: host.data_type.clone(),
            form: host.form.clone(),
            len: host.len,
            null_count: host.null_count,
            values: upload(&host.values)?,
            validity: host.validity.as_ref().map(upload).transpose()?,
            offsets: host.offsets.as_ref().map(upload).transpose()?,
        })
    }

    /// Copies the column back and rebuilds its Arrow array.
    pub fn download(&self, device: &GpuDevice) -> Result<ArrayRef, DeviceError> {
        let download = |buffer: &DeviceBuffer| buffer.download(device);
        let host = HostColumn {
            data_type: self.data_type.clone(),
            form: self.form.clone(),
            len: self.len,
            null_count: self.null_count,
            values: download(&self.values)?,
            validity: self.validity.as_ref().map(download).transpose()?,
            offsets: self.offsets.as_ref().map(download).transpose()?,
        };
        Ok(from_device_layout(host)?)
    }

    /// Bytes this column holds on the device.
    pub fn device_bytes(&self) -> usize {
        self.values.len()
            + self.validity.as_ref().map_or(0, DeviceBuffer::len)
            + self.offsets.as_ref().map_or(0, DeviceBuffer::len)
    }
}

/// A batch of columns on the GPU, with the schema it returns to the host as.
#[derive(Debug)]
pub struct DeviceBatch {
    pub schema: SchemaRef,
    pub columns: Vec<DeviceColumn>,
    pub num_rows: usize,
}

impl DeviceBatch {
    /// Uploads every column of `batch` for `owner`.
    pub fn upload(
        device: &GpuDevice,
        owner: &str,
        batch: &RecordBatch,
        options: &LayoutOptions,
    ) -> Result<Self, DeviceError> {
        let columns = batch
            .columns()
            .iter()
            .map(|array| DeviceColumn::upload(device, owner, array, options))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            schema: batch.schema(),
            columns,
            num_rows: batch.num_rows(),
        })
    }

    /// Copies every column back and rebuilds the record batch.
    ///
    /// A small batch (an aggregate's groups) comes back in one copy: its buffers are
    /// first gathered into one device allocation by copies queued on the stream. A copy
    /// to pageable memory waits for the stream, so copying buffer by buffer cost a
    /// round trip each: Q1's 4 groups in 13 columns took 26 of them, about 0.5 ms on
    /// the H200 host. A large batch is copied buffer by buffer, where the round trips
    /// are small next to the bytes and no second device copy is needed.
    pub fn download(&self, device: &GpuDevice) -> Result<RecordBatch, DeviceError> {
        let columns = if self.device_bytes() <= PACKED_DOWNLOAD_MAX_BYTES {
            self.download_packed(device)?
        } else {
            self.columns
                .iter()
                .map(|column| column.download(device))
                .collect::<Result<Vec<_>, _>>()?
        };
        let options = RecordBatchOptions::new().with_row_count(Some(self.num_rows));
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options)
            .map_err(|e| DeviceError::Internal(format!("rebuilding a batch from the GPU: {e}")))
    }

    /// Bytes this batch holds on the device.
    pub fn device_bytes(&self) -> usize {
        self.columns.iter().map(DeviceColumn::device_bytes).sum()
    }

    /// Every column, gathered on the device and copied back in one copy.
    fn download_packed(&self, device: &GpuDevice) -> Result<Vec<ArrayRef>, DeviceError> {
        let buffers: Vec<&DeviceBuffer> = self
            .columns
            .iter()
            .flat_map(|c| [Some(&c.values), c.validity.as_ref(), c.offsets.as_ref()])
            .flatten()
            .collect();
        // Each buffer starts on a 64-byte boundary, as Arrow allocates its own.
        let mut offsets = Vec::with_capacity(buffers.len());
        let mut total = 0;
        for buffer in &buffers {
            offsets.push(total);
            total += buffer.len.next_multiple_of(64);
        }
        let mut packed = DeviceBuffer::alloc(device, "download", total)?;
        let stream = device.stream();
        for (buffer, &offset) in buffers.iter().zip(&offsets) {
            if buffer.len > 0 {
                let source = buffer.slice.slice(..buffer.len);
                let mut target = packed.slice.slice_mut(offset..offset + buffer.len);
                stream
                    .memcpy_dtod(&source, &mut target)
                    .map_err(DeviceError::driver("gathering a batch on the GPU"))?;
            }
        }
        let mut bytes = MutableBuffer::from_len_zeroed(total);
        if total > 0 {
            stream
                .memcpy_dtoh(&packed.slice.slice(..total), bytes.as_slice_mut())
                .map_err(DeviceError::driver("copying from the GPU"))?;
        }
        let host = Buffer::from(bytes);
        let mut slices = buffers
            .iter()
            .zip(&offsets)
            .map(|(buffer, &offset)| host.slice_with_length(offset, buffer.len));
        let mut take = || {
            slices
                .next()
                .ok_or_else(|| DeviceError::Internal("a downloaded buffer went missing".into()))
        };
        let mut columns = Vec::with_capacity(self.columns.len());
        for column in &self.columns {
            let values = take()?;
            let validity = column.validity.as_ref().map(|_| take()).transpose()?;
            let offsets = column.offsets.as_ref().map(|_| take()).transpose()?;
            columns.push(from_device_layout(HostColumn {
                data_type: column.data_type.clone(),
                form: column.form.clone(),
                len: column.len,
                null_count: column.null_count,
                values,
                validity,
                offsets,
            })?);
        }
        Ok(columns)
    }
}

/// Largest batch [`DeviceBatch::download`] gathers into one copy.
const PACKED_DOWNLOAD_MAX_BYTES: usize = 16 << 20;
