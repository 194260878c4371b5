//! Gathering many small host batches into large device-layout chunks.
//!
//! DataFusion produces batches of a few thousand rows; a GPU wants millions per
//! transfer and launch. A [`ChunkBuilder`] appends each batch's columns straight into
//! their device form (decimals of precision <= 18 narrowed to `i64`, strings replaced
//! by codes, see [`super::string_codes`]), so the host makes one pass over the data.
//!
//! A string column the segment only tests (see `placement/string_bytes.rs`) has no
//! dictionary: it is gathered as Arrow's i32 offsets (in the chunk's store, one more
//! than its rows) and the bytes they index (always in ordinary memory, since their size
//! is not known up front).
//!
//! A chunk is gathered into one of two places:
//! - a pinned slab ([`aether_gpu::PinnedSlab`]) laid out up front, one fixed window per
//!   buffer, sized so a full slab holds a whole number of 64-row words: the chunk then
//!   uploads as one asynchronous DMA per buffer, with no second host copy and no page
//!   faults (slabs are reused across chunks and queries);
//! - ordinary memory that grows with the chunk, for chunks kept resident (one large
//!   chunk per partition) and when every slab is lent out.

use std::ops::Range;
use std::sync::Arc;

use aether_gpu::layout::{LayoutOptions, device_form_of};
use aether_gpu::{DeviceError, DeviceForm, HostColumn, PinnedSlab};
use datafusion::arrow::array::{Array, AsArray, RecordBatch, new_null_array};
use datafusion::arrow::buffer::{Buffer, MutableBuffer};
use datafusion::arrow::datatypes::{
    ArrowNativeType, DataType, Decimal128Type, Int32Type, SchemaRef,
};
use datafusion::arrow::util::bit_mask::set_bits;

use super::string_codes::{ViewCodeCache, write_codes};
use aether_gpu::dictionary::GrowingDictionary;

/// Slab windows start on this boundary, so typed views of them are aligned.
const WINDOW_ALIGN: usize = 256;

/// Memory a chunk can be gathered into: a pinned slab, or (in tests) plain memory.
pub trait SlabMemory: std::fmt::Debug + Send {
    fn bytes_mut(&mut self) -> &mut [u8];
}

impl SlabMemory for PinnedSlab {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

/// Where one buffer of a column is being gathered.
#[derive(Debug)]
enum Store {
    /// Ordinary memory, grown as rows arrive.
    Heap(MutableBuffer),
    /// A window of the chunk's pinned slab.
    Slab(Range<usize>),
}

/// A column's windows in a pinned slab.
#[derive(Debug, Clone)]
struct SlabWindows {
    values: Range<usize>,
    validity: Range<usize>,
}

/// One column being gathered.
#[derive(Debug)]
struct ColumnBuilder {
    data_type: DataType,
    form: DeviceForm,
    /// Value bits per row in the device form (1 for booleans).
    value_bits: usize,
    values: Store,
    /// Present once the chunk has seen a NULL in this column.
    validity: Option<Store>,
    null_count: usize,
    dictionary: Option<Arc<GrowingDictionary>>,
    view_codes: ViewCodeCache,
    windows: Option<SlabWindows>,
    /// A string column sent as offsets and bytes: its bytes so far (`values` holds
    /// the offsets).
    string_bytes: Option<MutableBuffer>,
}

/// A chunk's string bytes stop growing past this (its offsets are i32).
pub const CHUNK_STRING_BYTES: usize = 1 << 30;

/// A gathered chunk, ready to upload.
#[derive(Debug)]
pub enum GatheredChunk<S = PinnedSlab> {
    /// Columns in ordinary memory (`rows` also counts a chunk of no columns).
    Heap {
        rows: usize,
        columns: Vec<HostColumn>,
    },
    /// Columns in a pinned slab: one asynchronous copy per buffer.
    Pinned(PinnedChunk<S>),
}

/// A chunk gathered into a pinned slab.
#[derive(Debug)]
pub struct PinnedChunk<S = PinnedSlab> {
    pub slab: S,
    pub rows: usize,
    pub columns: Vec<SlabColumn>,
}

/// One column of a [`PinnedChunk`]: where its buffers sit in the slab.
#[derive(Debug)]
pub struct SlabColumn {
    pub data_type: DataType,
    pub form: DeviceForm,
    pub null_count: usize,
    pub values: Range<usize>,
    pub validity: Option<Range<usize>>,
    /// A string column's bytes (`values` then holds its `rows + 1` offsets).
    pub string_bytes: Option<Buffer>,
}

/// Gathers batches of one schema into device-layout chunks.
#[derive(Debug)]
pub struct ChunkBuilder<S = PinnedSlab> {
    columns: Vec<ColumnBuilder>,
    rows: usize,
    /// Rows a chunk may hold: a slab's capacity, or unlimited for growing chunks.
    capacity: usize,
    /// The current chunk's slab, when it is gathered into one.
    slab: Option<S>,
    /// Whether a chunk has been begun (growing builders always have one).
    begun: bool,
}

impl<S: SlabMemory> ChunkBuilder<S> {
    /// A builder of growing chunks for batches of `schema`; string columns code into
    /// `dictionaries` (one per column, `None` for other types), or go as offsets and
    /// bytes where `dictionaries` has `None` for them.
    pub fn new(
        schema: &SchemaRef,
        dictionaries: &[Option<Arc<GrowingDictionary>>],
    ) -> Result<Self, DeviceError> {
        let options = LayoutOptions::default();
        let columns = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let form = device_form_of(field.data_type(), &options)?;
                let dictionary = dictionaries.get(i).cloned().flatten();
                let value_bits = match (&form, &dictionary) {
                    (_, Some(_)) => 32,
                    (DeviceForm::Fixed { width }, None) => 8 * width,
                    (DeviceForm::NarrowDecimal, None) => 64,
                    (DeviceForm::Boolean, None) => 1,
                    // Offsets; the bytes go to `string_bytes`.
                    (DeviceForm::Strings, None) => 32,
                    (DeviceForm::DictionaryCodes { .. }, None) => {
                        return Err(DeviceError::Internal(
                            "a coded string column has no stream dictionary".into(),
                        ));
                    }
                };
                let string_bytes = (matches!(form, DeviceForm::Strings) && dictionary.is_none())
                    .then(|| MutableBuffer::new(0));
                Ok(ColumnBuilder {
                    data_type: field.data_type().clone(),
                    form,
                    value_bits,
                    values: Store::Heap(MutableBuffer::new(0)),
                    validity: None,
                    null_count: 0,
                    dictionary,
                    view_codes: ViewCodeCache::default(),
                    windows: None,
                    string_bytes,
                })
            })
            .collect::<Result<Vec<_>, DeviceError>>()?;
        Ok(Self {
            columns,
            rows: 0,
            capacity: usize::MAX,
            slab: None,
            begun: true,
        })
    }

    /// A builder whose chunks fit slabs of `slab_bytes`: every chunk holds at most
    /// [`Self::capacity`] rows, gathered into the slab given to [`Self::begin`].
    pub fn for_slabs(
        schema: &SchemaRef,
        dictionaries: &[Option<Arc<GrowingDictionary>>],
        slab_bytes: usize,
    ) -> Result<Self, DeviceError> {
        let mut builder = Self::new(schema, dictionaries)?;
        let columns = builder.columns.len();
        let row_bits: usize = builder.columns.iter().map(|c| c.value_bits + 1).sum();
        let usable = slab_bytes.saturating_sub(2 * WINDOW_ALIGN * columns.max(1));
        let capacity = (usable * 8)
            .checked_div(row_bits)
            .unwrap_or(1 << 30)
            .min(1 << 30)
            & !63;
        if capacity == 0 {
            return Err(DeviceError::Internal(format!(
                "a {slab_bytes}-byte slab cannot hold 64 rows of {columns} columns"
            )));
        }
        let mut next = 0;
        let mut window = |bytes: usize| {
            let start = next;
            next = (start + bytes).next_multiple_of(WINDOW_ALIGN);
            start..start + bytes
        };
        for column in &mut builder.columns {
            // A bytes column's offsets take one more entry than its rows.
            let extra = if column.string_bytes.is_some() { 4 } else { 0 };
            column.windows = Some(SlabWindows {
                values: window((capacity * column.value_bits).div_ceil(8) + extra),
                validity: window(capacity / 8),
            });
        }
        debug_assert!(next <= slab_bytes);
        builder.capacity = capacity;
        builder.begun = false;
        Ok(builder)
    }

    /// Rows a chunk holds at most.
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether the next rows need [`Self::begin`] first.
    pub fn needs_begin(&self) -> bool {
        !self.begun
    }

    /// Starts a chunk in `slab`, or in ordinary memory when `None` (every slab is lent
    /// out); either way it holds at most [`Self::capacity`] rows.
    pub fn begin(&mut self, slab: Option<S>) {
        self.begun = true;
        self.slab = slab;
        let pinned = self.slab.is_some();
        for column in &mut self.columns {
            column.validity = None;
            if let Some(bytes) = &mut column.string_bytes {
                bytes.clear();
            }
            column.values = match (&column.windows, pinned) {
                (Some(windows), true) => Store::Slab(windows.values.clone()),
                _ => Store::Heap(MutableBuffer::new(0)),
            };
        }
        if let Some(slab) = &mut self.slab {
            let bytes = slab.bytes_mut();
            // Bit-packed values are written by OR-ing bits in: start from zero.
            for column in &self.columns {
                if let (Store::Slab(window), 1) = (&column.values, column.value_bits) {
                    bytes[window.clone()].fill(0);
                }
            }
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Rows the current chunk can still take.
    pub fn room(&self) -> usize {
        self.capacity - self.rows
    }

    /// Bytes gathered so far.
    pub fn bytes(&self) -> usize {
        self.columns
            .iter()
            .map(|c| (self.rows * c.value_bits).div_ceil(8))
            .sum::<usize>()
            + self.string_bytes()
    }

    /// String bytes gathered so far (of columns sent as offsets and bytes).
    pub fn string_bytes(&self) -> usize {
        self.columns
            .iter()
            .filter_map(|c| c.string_bytes.as_ref())
            .map(MutableBuffer::len)
            .sum()
    }

    /// Appends `batch` (of the builder's schema), which must fit in [`Self::room`].
    pub fn append(&mut self, batch: &RecordBatch) -> Result<(), DeviceError> {
        let rows = batch.num_rows();
        if rows > self.room() || !self.begun {
            return Err(DeviceError::Internal(format!(
                "{rows} rows appended to a chunk with room for {}",
                if self.begun { self.room() } else { 0 }
            )));
        }
        let mut empty = [];
        let slab: &mut [u8] = match &mut self.slab {
            Some(slab) => slab.bytes_mut(),
            None => &mut empty,
        };
        for (column, array) in self.columns.iter_mut().zip(batch.columns()) {
            column.append(array.as_ref(), self.rows, slab)?;
        }
        self.rows += rows;
        Ok(())
    }

    /// The gathered chunk; the builder starts a new one (slab builders after the next
    /// [`Self::begin`]).
    pub fn take(&mut self) -> Result<GatheredChunk<S>, DeviceError> {
        let rows = std::mem::take(&mut self.rows);
        self.begun = self.capacity == usize::MAX;
        let chunk = match self.slab.take() {
            Some(slab) => GatheredChunk::Pinned(PinnedChunk {
                slab,
                rows,
                columns: self
                    .columns
                    .iter_mut()
                    .map(|column| column.take_windows(rows))
                    .collect::<Result<_, _>>()?,
            }),
            None => GatheredChunk::Heap {
                rows,
                columns: self
                    .columns
                    .iter_mut()
                    .map(|column| column.take_heap(rows))
                    .collect::<Result<_, _>>()?,
            },
        };
        Ok(chunk)
    }
}

/// Appends `array`'s strings to `bytes`, writing each row's end offset into `ends`
/// (a NULL row's string is empty).
fn append_string_bytes(
    ends: &mut [i32],
    bytes: &mut MutableBuffer,
    array: &dyn Array,
) -> Result<(), DeviceError> {
    let mut push = |i: usize, value: Option<&str>| {
        if let Some(value) = value {
            bytes.extend_from_slice(value.as_bytes());
        }
        ends[i] = i32::try_from(bytes.len()).map_err(|_| {
            DeviceError::Internal(format!(
                "a chunk's strings passed {} bytes, the most i32 offsets address",
                i32::MAX
            ))
        })?;
        Ok::<_, DeviceError>(())
    };
    match array.data_type() {
        DataType::Utf8View => {
            for (i, value) in array.as_string_view().iter().enumerate() {
                push(i, value)?;
            }
        }
        DataType::Utf8 => {
            for (i, value) in array.as_string::<i32>().iter().enumerate() {
                push(i, value)?;
            }
        }
        DataType::LargeUtf8 => {
            for (i, value) in array.as_string::<i64>().iter().enumerate() {
                push(i, value)?;
            }
        }
        other => {
            return Err(DeviceError::Internal(format!(
                "string bytes requested for a {other} column"
            )));
        }
    }
    Ok(())
}

/// A heap chunk's gathered offsets: `len + 1` of them, a chunk of no rows included.
fn with_first_offset(offsets: Buffer, len: usize) -> Buffer {
    if offsets.len() >= (len + 1) * 4 {
        return offsets;
    }
    Buffer::from(vec![0u8; (len + 1) * 4])
}

/// `len` more bytes of `store` after its first `used`, to be written.
fn extend<'a>(store: &'a mut Store, slab: &'a mut [u8], used: usize, len: usize) -> &'a mut [u8] {
    match store {
        Store::Heap(buffer) => {
            buffer.resize(used + len, 0);
            &mut buffer.as_slice_mut()[used..used + len]
        }
        Store::Slab(window) => &mut slab[window.start + used..window.start + used + len],
    }
}

/// The bitmap in `store`, long enough for `bits` bits.
fn bitmap<'a>(store: &'a mut Store, slab: &'a mut [u8], bits: usize) -> &'a mut [u8] {
    let bytes = bits.div_ceil(8);
    match store {
        Store::Heap(buffer) => {
            if buffer.len() < bytes {
                buffer.resize(bytes, 0);
            }
            &mut buffer.as_slice_mut()[..bytes]
        }
        Store::Slab(window) => &mut slab[window.start..window.start + bytes],
    }
}

/// `bytes` as values of `T`.
fn typed<T: ArrowNativeType>(bytes: &mut [u8]) -> Result<&mut [T], DeviceError> {
    // SAFETY: `T` is a primitive Arrow type, for which every bit pattern is a valid
    // value; `align_to_mut` only reinterprets the aligned middle, and the check below
    // rejects anything but a fully aligned, whole-value slice.
    let (head, body, tail) = unsafe { bytes.align_to_mut::<T>() };
    if !head.is_empty() || !tail.is_empty() {
        return Err(DeviceError::Internal(
            "a gathered buffer is not aligned to its value type".into(),
        ));
    }
    Ok(body)
}

/// Sets bits `[start, start + len)` of `bits`.
fn set_true(bits: &mut [u8], start: usize, len: usize) {
    let end = start + len;
    let mut i = start;
    while i < end && !i.is_multiple_of(8) {
        bits[i / 8] |= 1 << (i % 8);
        i += 1;
    }
    let whole = (end - i) / 8;
    bits[i / 8..i / 8 + whole].fill(0xff);
    i += whole * 8;
    while i < end {
        bits[i / 8] |= 1 << (i % 8);
        i += 1;
    }
}

impl ColumnBuilder {
    /// Appends `array` after the chunk's first `start` rows.
    fn append(
        &mut self,
        array: &dyn Array,
        start: usize,
        slab: &mut [u8],
    ) -> Result<(), DeviceError> {
        if array.data_type() == &DataType::Null && self.data_type != DataType::Null {
            // A NULL that DataFusion folded to a literal (a scalar subquery over no
            // rows) arrives untyped in a column of another type: upload it as that
            // type's NULLs.
            let typed = new_null_array(&self.data_type, array.len());
            return self.append(typed.as_ref(), start, slab);
        }
        let len = array.len();
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        if nulls.is_some() && self.validity.is_none() {
            let mut store = match &self.values {
                Store::Slab(_) => {
                    let window = self.windows.as_ref().map(|w| w.validity.clone());
                    let window = window.ok_or_else(|| {
                        DeviceError::Internal("a slab column has no validity window".into())
                    })?;
                    slab[window.clone()].fill(0);
                    Store::Slab(window)
                }
                Store::Heap(_) => Store::Heap(MutableBuffer::new(0)),
            };
            set_true(bitmap(&mut store, slab, start), 0, start);
            self.validity = Some(store);
        }
        if let Some(validity) = &mut self.validity {
            let bits = bitmap(validity, slab, start + len);
            match &nulls {
                Some(nulls) => {
                    let inner = nulls.inner();
                    set_bits(bits, inner.values(), start, inner.offset(), len);
                    self.null_count += nulls.null_count();
                }
                None => set_true(bits, start, len),
            }
        }
        if self.value_bits == 1 {
            let values = array.as_boolean().values();
            let bits = bitmap(&mut self.values, slab, start + len);
            set_bits(bits, values.values(), start, values.offset(), len);
            return Ok(());
        }
        let width = self.value_bits / 8;
        if let Some(bytes) = &mut self.string_bytes {
            if start == 0 {
                typed::<i32>(extend(&mut self.values, slab, 0, 4))?[0] = 0;
            }
            let ends = typed::<i32>(extend(&mut self.values, slab, (start + 1) * 4, len * 4))?;
            return append_string_bytes(ends, bytes, array);
        }
        let out = extend(&mut self.values, slab, start * width, len * width);
        if let Some(dictionary) = &self.dictionary {
            if let Some(codes) = array.as_primitive_opt::<Int32Type>() {
                // An in-memory table's kept codes, made with this very dictionary
                // (`string_code_cache`); NULL rows hold 0, as written codes do.
                typed::<i32>(out)?.copy_from_slice(codes.values());
                return Ok(());
            }
            return write_codes(typed::<i32>(out)?, array, dictionary, &mut self.view_codes);
        }
        match &self.form {
            DeviceForm::NarrowDecimal => {
                let out = typed::<i64>(out)?;
                let decimals = array.as_primitive::<Decimal128Type>();
                // Precision <= 18 keeps every valid value within i64; NULL slots are
                // written as 0 whatever they held.
                for (slot, v) in out.iter_mut().zip(decimals.values().iter()) {
                    *slot = *v as i64;
                }
                if let Some(nulls) = &nulls {
                    for i in (0..len).filter(|&i| nulls.is_null(i)) {
                        out[i] = 0;
                    }
                }
            }
            _ => {
                let data = array.to_data();
                let Some(values) = data.buffers().first() else {
                    return Err(DeviceError::Internal(format!(
                        "a {} column has no values buffer to upload",
                        array.data_type()
                    )));
                };
                let bytes = &values.as_slice()[data.offset() * width..][..len * width];
                out.copy_from_slice(bytes);
            }
        }
        Ok(())
    }

    /// The form the column uploads as (a view of the stream's dictionary for codes).
    fn device_form(&self) -> Result<DeviceForm, DeviceError> {
        Ok(match &self.dictionary {
            Some(dictionary) => DeviceForm::DictionaryCodes {
                dictionary: dictionary.view(),
            },
            None => self.form.clone(),
        })
    }

    /// The column's bytes, if it is sent as offsets and bytes (the builder keeps an
    /// empty buffer for the next chunk).
    fn take_string_bytes(&mut self) -> Option<Buffer> {
        let bytes = self.string_bytes.as_mut()?;
        Some(Buffer::from(std::mem::replace(
            bytes,
            MutableBuffer::new(0),
        )))
    }

    fn take_heap(&mut self, len: usize) -> Result<HostColumn, DeviceError> {
        let take = |store: Store| match store {
            Store::Heap(buffer) => Ok(Buffer::from(buffer)),
            Store::Slab(_) => Err(DeviceError::Internal(
                "a slab column taken as a heap column".into(),
            )),
        };
        let values = take(std::mem::replace(
            &mut self.values,
            Store::Heap(MutableBuffer::new(0)),
        ))?;
        let validity = self.validity.take().map(take).transpose()?;
        // A bytes column: `values` gathered the offsets.
        let (values, offsets) = match self.take_string_bytes() {
            Some(bytes) => (bytes, Some(with_first_offset(values, len))),
            None => (values, None),
        };
        Ok(HostColumn {
            data_type: self.data_type.clone(),
            form: self.device_form()?,
            len,
            null_count: std::mem::take(&mut self.null_count),
            validity,
            values,
            offsets,
        })
    }

    fn take_windows(&mut self, len: usize) -> Result<SlabColumn, DeviceError> {
        let (Store::Slab(values), Some(windows)) = (&self.values, &self.windows) else {
            return Err(DeviceError::Internal(
                "a heap column taken as a slab column".into(),
            ));
        };
        // Whole 8-byte words: kernels may read bitmaps a word at a time, and windows
        // hold whole 64-row words.
        let bitmap_bytes = len.div_ceil(64) * 8;
        let value_bytes = if self.value_bits == 1 {
            bitmap_bytes
        } else if self.string_bytes.is_some() {
            // Offsets: one more than the rows (written by the first append; a chunk
            // is taken only once it holds rows).
            (len + 1) * 4
        } else {
            len * self.value_bits / 8
        };
        let column = SlabColumn {
            data_type: self.data_type.clone(),
            form: self.device_form()?,
            null_count: std::mem::take(&mut self.null_count),
            values: values.start..values.start + value_bytes,
            validity: self
                .validity
                .take()
                .map(|_| windows.validity.start..windows.validity.start + bitmap_bytes),
            string_bytes: self.take_string_bytes(),
        };
        self.values = Store::Heap(MutableBuffer::new(0));
        Ok(column)
    }
}

#[cfg(test)]
pub(crate) mod test_slab {
    use super::*;

    /// Plain memory standing in for a pinned slab, filled with garbage as a reused
    /// slab would be.
    #[derive(Debug)]
    pub struct TestSlab(pub MutableBuffer);

    impl TestSlab {
        pub fn new(bytes: usize) -> Self {
            let mut buffer = MutableBuffer::new(bytes);
            buffer.resize(bytes, 0xab);
            Self(buffer)
        }
    }

    impl SlabMemory for TestSlab {
        fn bytes_mut(&mut self) -> &mut [u8] {
            self.0.as_slice_mut()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        ArrayRef, BooleanArray, Decimal128Array, Int32Array, StringViewArray,
    };
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::arrow::util::bit_util::get_bit;

    use super::test_slab::TestSlab;
    use super::*;

    type Builder = ChunkBuilder<TestSlab>;

    #[test]
    fn chunks_gather_batches_with_stable_string_codes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("flag", DataType::Utf8View, true),
            Field::new("price", DataType::Decimal128(15, 2), true),
            Field::new("n", DataType::Int32, false),
        ]));
        let dictionary = Arc::new(GrowingDictionary::default());
        let mut builder =
            Builder::new(&schema, &[Some(Arc::clone(&dictionary)), None, None]).unwrap();
        let batch = |flags: Vec<Option<&str>>, prices: Vec<Option<i128>>, n: Vec<i32>| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(StringViewArray::from(flags)),
                    Arc::new(
                        Decimal128Array::from(prices)
                            .with_precision_and_scale(15, 2)
                            .unwrap(),
                    ),
                    Arc::new(Int32Array::from(n)),
                ],
            )
            .unwrap()
        };
        builder
            .append(&batch(
                vec![Some("A"), Some("N")],
                vec![Some(1), Some(2)],
                vec![1, 2],
            ))
            .unwrap();
        let long = "a string longer than twelve bytes";
        builder
            .append(&batch(
                vec![None, Some("N"), Some(long)],
                vec![Some(-5), None, Some(7)],
                vec![3, 4, 5],
            ))
            .unwrap();
        assert_eq!(builder.rows(), 5);
        let GatheredChunk::Heap { columns, .. } = builder.take().unwrap() else {
            panic!("a growing builder gathers into ordinary memory");
        };
        let codes: Vec<i32> = columns[0].values.typed_data::<i32>().to_vec();
        // A NULL row carries code 0; a value keeps its code across batches.
        assert_eq!((codes[2], codes[1]), (0, codes[3]));
        let DeviceForm::DictionaryCodes { dictionary } = &columns[0].form else {
            panic!("strings should be codes");
        };
        let values = dictionary.values().unwrap();
        let decoded: Vec<&str> = [0, 1, 4]
            .map(|row| values.value(codes[row] as usize))
            .into();
        assert_eq!(decoded, vec!["A", "N", long]);
        assert_eq!(columns[0].null_count, 1);
        let prices: Vec<i64> = columns[1].values.typed_data::<i64>().to_vec();
        assert_eq!(prices, vec![1, 2, -5, 0, 7]);
        assert_eq!(columns[1].null_count, 1);
        let validity = columns[1].validity.as_ref().unwrap();
        assert_eq!(validity.as_slice()[0] & 0b11111, 0b10111);
        assert!(columns[2].validity.is_none());
        assert_eq!(columns[2].values.typed_data::<i32>(), &[1, 2, 3, 4, 5]);
        assert_eq!(builder.rows(), 0);
    }

    #[test]
    fn kept_codes_gather_as_the_strings_they_code() {
        use super::super::scan_rows::{Rows, ScanPiece};
        use super::super::string_code_cache::CodedColumn;
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8View, true),
            Field::new("n", DataType::Int32, false),
        ]));
        let names: Vec<Option<String>> = (0..300)
            .map(|i| (i % 7 != 3).then(|| format!("customer number {}", i / 2)))
            .collect();
        let array: ArrayRef = Arc::new(StringViewArray::from_iter(names.iter().cloned()));
        let column = CodedColumn::code(&[Arc::clone(&array)]).unwrap();
        let codes = column.codes_of(&array).unwrap().clone();
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![array, Arc::new(Int32Array::from_iter_values(0..300))],
        )
        .unwrap();
        let piece = ScanPiece {
            batch,
            codes: vec![(0, codes)],
        };
        let rows = piece.slice(10, 200).prepare(None, None).unwrap();
        let mut builder =
            Builder::new(&schema, &[Some(Arc::clone(&column.dictionary)), None]).unwrap();
        builder.append(&rows).unwrap();
        let GatheredChunk::Heap { columns, .. } = builder.take().unwrap() else {
            panic!("a growing builder gathers into ordinary memory");
        };
        let DeviceForm::DictionaryCodes { dictionary } = &columns[0].form else {
            panic!("strings should be codes");
        };
        let codes = Int32Array::new(columns[0].values.typed_data::<i32>().to_vec().into(), None);
        let decoded = dictionary.decode(&codes).unwrap();
        let validity = columns[0].validity.as_ref().unwrap();
        for (row, expected) in names[10..210].iter().enumerate() {
            let valid = get_bit(validity.as_slice(), row);
            assert_eq!(valid, expected.is_some(), "row {row}");
            if let Some(name) = expected {
                assert_eq!(decoded.value(row), name.as_str(), "row {row}");
            }
        }
        assert_eq!(
            columns[0].null_count,
            names[10..210].iter().filter(|n| n.is_none()).count()
        );
    }

    #[test]
    fn string_bytes_columns_gather_offsets_and_bytes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("comment", DataType::Utf8View, true),
            Field::new("n", DataType::Int32, false),
        ]));
        let long = "a string longer than twelve bytes, é";
        let batch = |comments: Vec<Option<&str>>| {
            let n = (0..comments.len() as i32).collect::<Vec<_>>();
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(StringViewArray::from(comments)),
                    Arc::new(Int32Array::from(n)),
                ],
            )
            .unwrap()
        };
        let first = batch(vec![Some("ab"), None, Some(long)]);
        let second = batch(vec![Some(""), Some("xyz")]);
        let expected_offsets = {
            let ends = [0, 2, 2, 2 + long.len() as i32];
            let last = ends[3];
            vec![ends[0], ends[1], ends[2], ends[3], last, last + 3]
        };
        let expected_bytes = format!("ab{long}xyz");
        // Growing chunks: offsets and bytes as a HostColumn.
        let mut heap = Builder::new(&schema, &[None, None]).unwrap();
        heap.append(&first).unwrap();
        heap.append(&second).unwrap();
        assert_eq!(heap.string_bytes(), expected_bytes.len());
        let GatheredChunk::Heap { columns, .. } = heap.take().unwrap() else {
            panic!("a growing builder gathers into ordinary memory");
        };
        assert!(matches!(columns[0].form, DeviceForm::Strings));
        assert_eq!(columns[0].values.as_slice(), expected_bytes.as_bytes());
        let offsets = columns[0].offsets.as_ref().unwrap();
        assert_eq!(offsets.typed_data::<i32>(), expected_offsets.as_slice());
        assert_eq!(columns[0].null_count, 1);
        // Slab chunks: offsets in the slab window, bytes beside it; twice, so the
        // second chunk starts its offsets and bytes afresh.
        let mut slabs = Builder::for_slabs(&schema, &[None, None], 1 << 16).unwrap();
        for _ in 0..2 {
            slabs.begin(Some(TestSlab::new(1 << 16)));
            slabs.append(&first).unwrap();
            slabs.append(&second).unwrap();
            let GatheredChunk::Pinned(mut chunk) = slabs.take().unwrap() else {
                panic!("a slab builder gathers into its slab");
            };
            let column = &chunk.columns[0];
            let bytes = column.string_bytes.clone().unwrap();
            assert_eq!(bytes.as_slice(), expected_bytes.as_bytes());
            let window = chunk.slab.bytes_mut()[column.values.clone()].to_vec();
            let offsets: Vec<i32> = window
                .chunks(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            assert_eq!(offsets, expected_offsets);
        }
    }

    fn mixed_batch(schema: &SchemaRef, first: usize, rows: usize) -> RecordBatch {
        let flags = ["A", "N", "R", "a string longer than twelve bytes"];
        let ids = first..first + rows;
        RecordBatch::try_new(
            Arc::clone(schema),
            vec![
                Arc::new(StringViewArray::from_iter(
                    ids.clone().map(|i| (i % 7 != 3).then(|| flags[i % 4])),
                )),
                Arc::new(
                    Decimal128Array::from_iter(
                        ids.clone().map(|i| (i % 5 != 1).then_some(i as i128 - 500)),
                    )
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
                ),
                Arc::new(Int32Array::from_iter_values(ids.clone().map(|i| i as i32))),
                Arc::new(BooleanArray::from_iter(
                    ids.map(|i| (i < 300 || i % 11 != 0).then_some(i % 3 == 0)),
                )),
            ],
        )
        .unwrap()
    }

    fn same_bits(a: &[u8], b: &[u8], len: usize) -> bool {
        (0..len).all(|i| get_bit(a, i) == get_bit(b, i))
    }

    /// Batches split at slab boundaries land in the slab windows exactly as a growing
    /// builder lays out the same rows, NULLs first appearing mid-chunk included.
    #[test]
    fn slab_chunks_match_growing_chunks() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("flag", DataType::Utf8View, true),
            Field::new("price", DataType::Decimal128(15, 2), true),
            Field::new("n", DataType::Int32, false),
            Field::new("b", DataType::Boolean, true),
        ]));
        let slab_bytes = 8 << 10;
        let dictionaries = |d: &Arc<GrowingDictionary>| vec![Some(Arc::clone(d)), None, None, None];
        // One dictionary for both, so that equal values carry equal codes.
        let slab_dictionary = Arc::new(GrowingDictionary::default());
        let heap_dictionary = Arc::clone(&slab_dictionary);
        let mut slabs =
            Builder::for_slabs(&schema, &dictionaries(&slab_dictionary), slab_bytes).unwrap();
        let capacity = slabs.capacity();
        assert!(capacity >= 64 && capacity.is_multiple_of(64), "{capacity}");
        let mut chunks = Vec::new();
        let mut first = 0;
        for rows in [100, 0, 1, 777, 1500, 40] {
            let batch = mixed_batch(&schema, first, rows);
            first += rows;
            let mut offset = 0;
            while offset < rows {
                if slabs.needs_begin() {
                    slabs.begin(Some(TestSlab::new(slab_bytes)));
                }
                let take = slabs.room().min(rows - offset);
                slabs.append(&batch.slice(offset, take)).unwrap();
                offset += take;
                if slabs.room() == 0 {
                    chunks.push(slabs.take().unwrap());
                }
            }
        }
        chunks.push(slabs.take().unwrap());
        assert_eq!(chunks.len(), first.div_ceil(capacity));
        let mut heap = Builder::new(&schema, &dictionaries(&heap_dictionary)).unwrap();
        let mut start = 0;
        for chunk in chunks {
            let GatheredChunk::Pinned(mut chunk) = chunk else {
                panic!("a chunk begun in a slab should stay there");
            };
            heap.append(&mixed_batch(&schema, start, chunk.rows))
                .unwrap();
            start += chunk.rows;
            let GatheredChunk::Heap {
                columns: expected, ..
            } = heap.take().unwrap()
            else {
                panic!("growing chunk expected");
            };
            let bytes = chunk.slab.bytes_mut();
            for (got, want) in chunk.columns.iter().zip(&expected) {
                let rows = chunk.rows;
                assert_eq!(got.null_count, want.null_count, "{}", want.data_type);
                let values = &bytes[got.values.clone()];
                if want.data_type == DataType::Boolean {
                    assert!(same_bits(values, want.values.as_slice(), rows));
                } else {
                    assert_eq!(values, want.values.as_slice(), "{}", want.data_type);
                }
                match (&got.validity, &want.validity) {
                    (Some(got), Some(want)) => {
                        assert!(same_bits(&bytes[got.clone()], want.as_slice(), rows));
                    }
                    (None, None) => {}
                    other => panic!("validity differs: {other:?}"),
                }
            }
        }
        assert_eq!(start, first);
    }

    #[test]
    fn an_untyped_null_column_uploads_as_nulls_of_the_column_type() {
        // DataFusion can fold a scalar subquery over no rows to an untyped NULL
        // column where the plan's schema says Int64.
        let schema = Arc::new(Schema::new(vec![
            Field::new("w", DataType::Int64, true),
            Field::new("s", DataType::Utf8View, true),
        ]));
        let dictionary = Arc::new(GrowingDictionary::default());
        let mut builder = Builder::new(&schema, &[None, Some(dictionary)]).unwrap();
        let untyped = Arc::new(Schema::new(vec![
            Field::new("w", DataType::Null, true),
            Field::new("s", DataType::Null, true),
        ]));
        let nulls: Arc<dyn Array> = Arc::new(datafusion::arrow::array::NullArray::new(3));
        let batch = RecordBatch::try_new(untyped, vec![Arc::clone(&nulls), nulls]).unwrap();
        builder.append(&batch).unwrap();
        let GatheredChunk::Heap { rows, columns } = builder.take().unwrap() else {
            panic!("a growing builder gathers into ordinary memory");
        };
        assert_eq!(rows, 3);
        assert_eq!(columns[0].values.typed_data::<i64>(), &[0, 0, 0]);
        assert_eq!(columns[1].values.typed_data::<i32>(), &[0, 0, 0]);
        for column in &columns {
            assert_eq!(column.null_count, 3);
            let validity = column.validity.as_ref().unwrap();
            assert_eq!(validity.as_slice()[0] & 0b111, 0);
        }
    }

    #[test]
    fn a_chunk_of_no_columns_keeps_its_row_count() {
        let schema = Arc::new(Schema::empty());
        let mut builder = Builder::new(&schema, &[]).unwrap();
        let options = datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(5));
        let batch =
            RecordBatch::try_new_with_options(Arc::clone(&schema), vec![], &options).unwrap();
        builder.append(&batch).unwrap();
        builder.append(&batch).unwrap();
        let GatheredChunk::Heap { rows, columns } = builder.take().unwrap() else {
            panic!("a growing builder gathers into ordinary memory");
        };
        assert_eq!((rows, columns.len()), (10, 0));
    }

    #[test]
    fn a_full_chunk_refuses_more_rows() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int32, false)]));
        let mut builder = Builder::for_slabs(&schema, &[None], 4096).unwrap();
        let batch = |rows: usize| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(Int32Array::from_iter_values(0..rows as i32))],
            )
            .unwrap()
        };
        assert!(builder.append(&batch(1)).is_err(), "no chunk begun");
        builder.begin(None);
        let capacity = builder.capacity();
        builder.append(&batch(capacity)).unwrap();
        let err = builder.append(&batch(1)).unwrap_err();
        assert!(err.to_string().contains("room for 0"), "{err}");
        // Without a slab the chunk gathers into ordinary memory, same capacity.
        let GatheredChunk::Heap { columns, .. } = builder.take().unwrap() else {
            panic!("no slab was given");
        };
        assert_eq!(columns[0].len, capacity);
        assert!(builder.needs_begin());
    }
}

#[cfg(test)]
mod speed {
    use std::sync::Arc;
    use std::time::Instant;

    use datafusion::arrow::array::{Date32Array, Decimal128Array, StringViewArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::test_slab::TestSlab;
    use super::*;

    /// Rows a second, gathering Q1-shaped batches into a reused slab and into growing
    /// memory: `cargo test --release -p aether-exec gather_speed -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing probe"]
    fn gather_speed() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("q", DataType::Decimal128(15, 2), false),
            Field::new("p", DataType::Decimal128(15, 2), false),
            Field::new("f", DataType::Utf8View, false),
            Field::new("d", DataType::Date32, false),
        ]));
        let n = 8192;
        let flags = ["A", "N", "R"];
        let decimals = || {
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|i| i as i128))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            )
        };
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                decimals(),
                decimals(),
                Arc::new(StringViewArray::from_iter_values(
                    (0..n).map(|i| flags[i % 3]),
                )),
                Arc::new(Date32Array::from_iter_values((0..n).map(|i| i as i32))),
            ],
        )
        .unwrap();
        let dictionaries = vec![
            None,
            None,
            Some(Arc::new(GrowingDictionary::default())),
            None,
        ];
        let batches = 400;
        let mut growing = ChunkBuilder::<TestSlab>::new(&schema, &dictionaries).unwrap();
        let start = Instant::now();
        for _ in 0..batches {
            growing.append(&batch).unwrap();
        }
        let elapsed = start.elapsed().as_nanos() as f64 / (batches * n) as f64;
        eprintln!("growing memory: {elapsed:.2} ns/row");
        let slab_bytes = 16 << 20;
        let mut slabs =
            ChunkBuilder::<TestSlab>::for_slabs(&schema, &dictionaries, slab_bytes).unwrap();
        let mut spare = Some(TestSlab::new(slab_bytes));
        let mut gather = |slabs: &mut ChunkBuilder<TestSlab>| {
            let start = Instant::now();
            for _ in 0..batches {
                let mut offset = 0;
                while offset < n {
                    if slabs.needs_begin() {
                        slabs.begin(spare.take());
                    }
                    let take = slabs.room().min(n - offset);
                    slabs.append(&batch.slice(offset, take)).unwrap();
                    offset += take;
                    if slabs.room() == 0
                        && let GatheredChunk::Pinned(chunk) = slabs.take().unwrap()
                    {
                        spare = Some(chunk.slab);
                    }
                }
            }
            start.elapsed().as_nanos() as f64 / (batches * n) as f64
        };
        let cold = gather(&mut slabs);
        let warm = gather(&mut slabs);
        eprintln!("reused slab: {cold:.2} ns/row first pass, {warm:.2} ns/row after");
    }
}
