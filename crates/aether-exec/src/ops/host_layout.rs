//! Gathering many small host batches into one large device-layout chunk.
//!
//! DataFusion produces batches of a few thousand rows; a GPU wants millions per
//! transfer and launch. A [`ChunkBuilder`] appends each batch's columns straight into
//! their device form (decimals of precision <= 18 narrowed to `i64`, strings replaced
//! by codes), so the host makes one pass over the data and the chunk uploads as one
//! copy per buffer.
//!
//! Strings get codes from a [`StreamDictionary`] shared by every chunk of one
//! `HostToDeviceExec` execution, so a code means the same string in every chunk and
//! group keys can be compared across batches on the device. The dictionary only
//! grows; any later snapshot decodes every earlier code.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aether_gpu::layout::{LayoutOptions, device_form_of};
use aether_gpu::{DeviceError, DeviceForm, HostColumn};
use datafusion::arrow::array::{Array, AsArray, BooleanBufferBuilder, RecordBatch, StringArray};
use datafusion::arrow::buffer::{Buffer, MutableBuffer};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, SchemaRef};

/// The codes of one string column across a whole stream.
#[derive(Debug, Default)]
pub struct StreamDictionary {
    inner: Mutex<DictionaryInner>,
}

#[derive(Debug, Default)]
struct DictionaryInner {
    codes: HashMap<String, i32>,
    values: Vec<String>,
}

impl StreamDictionary {
    /// The code of each of `strings` (distinct values of one batch), adding new ones.
    fn codes_of(&self, strings: &[&str]) -> Result<Vec<i32>, DeviceError> {
        let mut inner = self
            .inner
            .lock()
            .map_err(|_| DeviceError::Internal("a string dictionary lock is poisoned".into()))?;
        Ok(strings
            .iter()
            .map(|s| {
                if let Some(code) = inner.codes.get(*s) {
                    return *code;
                }
                let code = inner.values.len() as i32;
                inner.values.push((*s).to_string());
                inner.codes.insert((*s).to_string(), code);
                code
            })
            .collect())
    }

    /// Every string coded so far, indexed by code (at least one entry, so code 0 of a
    /// NULL always decodes).
    pub fn snapshot(&self) -> Result<Arc<StringArray>, DeviceError> {
        let inner = self
            .inner
            .lock()
            .map_err(|_| DeviceError::Internal("a string dictionary lock is poisoned".into()))?;
        if inner.values.is_empty() {
            return Ok(Arc::new(StringArray::from(vec![""])));
        }
        Ok(Arc::new(StringArray::from_iter_values(inner.values.iter())))
    }
}

/// One column being gathered.
#[derive(Debug)]
struct ColumnBuilder {
    data_type: DataType,
    form: DeviceForm,
    values: MutableBuffer,
    bits: Option<BooleanBufferBuilder>,
    validity: Option<BooleanBufferBuilder>,
    null_count: usize,
    dictionary: Option<Arc<StreamDictionary>>,
}

/// Gathers batches of one schema into device-layout columns.
#[derive(Debug)]
pub struct ChunkBuilder {
    columns: Vec<ColumnBuilder>,
    rows: usize,
}

impl ChunkBuilder {
    /// A builder for batches of `schema`; string columns code into `dictionaries`
    /// (one per column, `None` for other types).
    pub fn new(
        schema: &SchemaRef,
        dictionaries: &[Option<Arc<StreamDictionary>>],
    ) -> Result<Self, DeviceError> {
        let options = LayoutOptions::default();
        let columns = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let form = device_form_of(field.data_type(), &options)?;
                Ok(ColumnBuilder {
                    data_type: field.data_type().clone(),
                    bits: matches!(form, DeviceForm::Boolean).then(|| BooleanBufferBuilder::new(0)),
                    form,
                    values: MutableBuffer::new(0),
                    validity: None,
                    null_count: 0,
                    dictionary: dictionaries.get(i).cloned().flatten(),
                })
            })
            .collect::<Result<Vec<_>, DeviceError>>()?;
        Ok(Self { columns, rows: 0 })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes gathered so far.
    pub fn bytes(&self) -> usize {
        self.columns
            .iter()
            .map(|c| c.values.len() + c.bits.as_ref().map_or(0, |b| b.len() / 8))
            .sum()
    }

    /// Appends `batch` (of the builder's schema).
    pub fn append(&mut self, batch: &RecordBatch) -> Result<(), DeviceError> {
        let rows = batch.num_rows();
        for (column, array) in self.columns.iter_mut().zip(batch.columns()) {
            column.append(array.as_ref(), self.rows)?;
        }
        self.rows += rows;
        Ok(())
    }

    /// The gathered columns in device layout; the builder starts empty again.
    pub fn take(&mut self) -> Result<Vec<HostColumn>, DeviceError> {
        let len = self.rows;
        self.rows = 0;
        self.columns
            .iter_mut()
            .map(|column| column.take(len))
            .collect()
    }
}

impl ColumnBuilder {
    fn append(&mut self, array: &dyn Array, start: usize) -> Result<(), DeviceError> {
        let len = array.len();
        if array.null_count() > 0 || self.validity.is_some() {
            let validity = self.validity.get_or_insert_with(|| {
                let mut bits = BooleanBufferBuilder::new(start + len);
                bits.append_n(start, true);
                bits
            });
            match array.logical_nulls() {
                Some(nulls) => validity.append_buffer(nulls.inner()),
                None => validity.append_n(len, true),
            }
            self.null_count += array.null_count();
        }
        match &self.form {
            DeviceForm::Fixed { width } => {
                let data = array.to_data();
                let bytes = &data.buffers()[0].as_slice()[data.offset() * width..][..len * width];
                self.values.extend_from_slice(bytes);
            }
            DeviceForm::Boolean => {
                if let Some(bits) = &mut self.bits {
                    bits.append_buffer(array.as_boolean().values());
                }
            }
            DeviceForm::NarrowDecimal => {
                let decimals = array.as_primitive::<Decimal128Type>();
                let out = grow_typed::<i64>(&mut self.values, len);
                // Precision <= 18 keeps every valid value within i64; NULL slots are
                // written as 0 whatever they held.
                for (slot, v) in out.iter_mut().zip(decimals.values().iter()) {
                    *slot = *v as i64;
                }
                if let Some(nulls) = decimals.nulls() {
                    for i in nulls
                        .iter()
                        .enumerate()
                        .filter(|(_, valid)| !valid)
                        .map(|(i, _)| i)
                    {
                        out[i] = 0;
                    }
                }
            }
            DeviceForm::Strings | DeviceForm::DictionaryCodes { .. } => {
                let dictionary = self.dictionary.as_ref().ok_or_else(|| {
                    DeviceError::Internal("a string column has no stream dictionary".into())
                })?;
                append_codes(&mut self.values, array, dictionary)?;
            }
        }
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<HostColumn, DeviceError> {
        let values: Buffer = std::mem::replace(&mut self.values, MutableBuffer::new(0)).into();
        let values = match &mut self.bits {
            Some(bits) => bits.finish().into_inner(),
            None => values,
        };
        let form = match &self.dictionary {
            Some(dictionary) => DeviceForm::DictionaryCodes {
                dictionary: dictionary.snapshot()?,
            },
            None => self.form.clone(),
        };
        let validity = self.validity.take().map(|mut v| v.finish().into_inner());
        let null_count = std::mem::take(&mut self.null_count);
        Ok(HostColumn {
            data_type: self.data_type.clone(),
            form,
            len,
            null_count,
            validity,
            values,
            offsets: None,
        })
    }
}

/// Appends the codes of a string array's values (0 for NULLs).
///
/// Distinct values are found per batch first (short `Utf8View` strings by their
/// 16-byte view, which holds the whole string), so the shared dictionary is locked once
/// per batch rather than once per row.
fn append_codes(
    values: &mut MutableBuffer,
    array: &dyn Array,
    dictionary: &StreamDictionary,
) -> Result<(), DeviceError> {
    let len = array.len();
    let mut local: HashMap<&str, i32> = HashMap::new();
    let mut distinct: Vec<&str> = Vec::new();
    let mut local_codes: Vec<i32> = Vec::with_capacity(len);
    match array.data_type() {
        DataType::Utf8View => {
            let strings = array.as_string_view();
            let views = strings.views();
            // Short strings: the view is the string; a small list of seen views.
            let mut seen: Vec<(u128, i32)> = Vec::new();
            for (i, view) in views.iter().enumerate() {
                if strings.is_null(i) {
                    local_codes.push(-1);
                    continue;
                }
                let short = (*view as u32) <= 12;
                if short && let Some((_, code)) = seen.iter().find(|(v, _)| v == view) {
                    local_codes.push(*code);
                    continue;
                }
                let s = strings.value(i);
                let code = *local.entry(s).or_insert_with(|| {
                    distinct.push(s);
                    (distinct.len() - 1) as i32
                });
                if short && seen.len() < 64 {
                    seen.push((*view, code));
                }
                local_codes.push(code);
            }
        }
        DataType::Utf8 | DataType::LargeUtf8 => {
            let iter: Box<dyn Iterator<Item = Option<&str>>> =
                if *array.data_type() == DataType::Utf8 {
                    Box::new(array.as_string::<i32>().iter())
                } else {
                    Box::new(array.as_string::<i64>().iter())
                };
            for s in iter {
                let Some(s) = s else {
                    local_codes.push(-1);
                    continue;
                };
                let code = *local.entry(s).or_insert_with(|| {
                    distinct.push(s);
                    (distinct.len() - 1) as i32
                });
                local_codes.push(code);
            }
        }
        other => {
            return Err(DeviceError::Internal(format!(
                "string codes requested for a {other} column"
            )));
        }
    }
    let global = dictionary.codes_of(&distinct)?;
    let out = grow_typed::<i32>(values, len);
    for (slot, code) in out.iter_mut().zip(local_codes) {
        *slot = if code < 0 { 0 } else { global[code as usize] };
    }
    Ok(())
}

/// Extends `buffer` by `len` zeroed values of `T` and returns them to be written:
/// one bounds check per batch instead of one per value.
fn grow_typed<T: datafusion::arrow::datatypes::ArrowNativeType>(
    buffer: &mut MutableBuffer,
    len: usize,
) -> &mut [T] {
    let width = std::mem::size_of::<T>();
    let start = buffer.len() / width;
    buffer.resize(buffer.len() + len * width, 0);
    &mut buffer.typed_data_mut::<T>()[start..start + len]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Decimal128Array, Int32Array, StringViewArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn chunks_gather_batches_with_stable_string_codes() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("flag", DataType::Utf8View, true),
            Field::new("price", DataType::Decimal128(15, 2), true),
            Field::new("n", DataType::Int32, false),
        ]));
        let dictionary = Arc::new(StreamDictionary::default());
        let mut builder =
            ChunkBuilder::new(&schema, &[Some(Arc::clone(&dictionary)), None, None]).unwrap();
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
        let columns = builder.take().unwrap();
        let codes: Vec<i32> = columns[0].values.typed_data::<i32>().to_vec();
        assert_eq!(codes, vec![0, 1, 0, 1, 2]);
        let DeviceForm::DictionaryCodes { dictionary } = &columns[0].form else {
            panic!("strings should be codes");
        };
        assert_eq!(dictionary.value(2), long);
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
}

#[cfg(test)]
mod speed {
    use std::sync::Arc;
    use std::time::Instant;

    use datafusion::arrow::array::{Date32Array, Decimal128Array, StringViewArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

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
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(
                    Decimal128Array::from_iter_values((0..n).map(|i| i as i128))
                        .with_precision_and_scale(15, 2)
                        .unwrap(),
                ),
                Arc::new(
                    Decimal128Array::from_iter_values((0..n).map(|i| i as i128))
                        .with_precision_and_scale(15, 2)
                        .unwrap(),
                ),
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
            Some(Arc::new(StreamDictionary::default())),
            None,
        ];
        let mut builder = ChunkBuilder::new(&schema, &dictionaries).unwrap();
        let start = Instant::now();
        for _ in 0..200 {
            builder.append(&batch).unwrap();
        }
        let elapsed = start.elapsed();
        eprintln!(
            "{} rows in {:?}: {:.1} ns/row",
            200 * n,
            elapsed,
            elapsed.as_nanos() as f64 / (200 * n) as f64
        );
        for column in 0..4 {
            let mut one = ChunkBuilder::new(
                &Arc::new(schema.project(&[column]).unwrap()),
                &dictionaries[column..=column],
            )
            .unwrap();
            let b = batch.project(&[column]).unwrap();
            let start = Instant::now();
            for _ in 0..200 {
                one.append(&b).unwrap();
            }
            eprintln!(
                "column {column}: {:.1} ns/row",
                start.elapsed().as_nanos() as f64 / (200 * n) as f64
            );
        }
    }
}
