//! How a column is laid out on the GPU, computed on the host.
//!
//! Device columns mirror Arrow, so most uploads are plain copies of Arrow's buffers:
//! fixed-width values, bit-packed booleans and validity bitmaps go as they are (realigned
//! to bit offset 0 when the array is a slice). Where it is exact and saves PCIe bytes,
//! the device form is narrower than Arrow's: `Decimal128` with precision <= 18 travels
//! as `i64` (10^18 < 2^63, so no value is lost), and low-cardinality strings travel as
//! `i32` codes into a dictionary that stays on the host. `Utf8View` becomes contiguous
//! offsets and bytes, the form GPU kernels can scan.
//!
//! Everything here is pure host code, so CI tests the layout logic without a GPU; the
//! device side (`column.rs`) only copies the buffers this module prepares.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayData, ArrayRef, AsArray, Decimal128Array, GenericStringArray, Int32Array,
    LargeStringArray, StringArray, StringViewArray, make_array,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::DataType;

use crate::dictionary::Dictionary;

/// The form a column takes on the device.
#[derive(Debug, Clone)]
pub enum DeviceForm {
    /// Fixed-width values in Arrow's native layout, `width` bytes each.
    Fixed { width: usize },
    /// Bit-packed booleans, as Arrow stores them.
    Boolean,
    /// `Decimal128` with precision <= 18, narrowed exactly to `i64`.
    NarrowDecimal,
    /// Strings as `i32` offsets (`len + 1` of them, starting at 0) and the bytes they index.
    Strings,
    /// Low-cardinality strings as `i32` codes into `dictionary`, which stays on the host.
    DictionaryCodes { dictionary: Dictionary },
}

/// A column prepared for the device: the buffers to copy and how to read them back.
#[derive(Debug, Clone)]
pub struct HostColumn {
    /// The Arrow type the column came from, and the type it returns as.
    pub data_type: DataType,
    pub form: DeviceForm,
    pub len: usize,
    pub null_count: usize,
    /// Validity bitmap at bit offset 0 (`ceil(len / 8)` bytes); `None` when no nulls.
    pub validity: Option<Buffer>,
    /// Fixed: `len * width` bytes; Boolean: the bitmap; NarrowDecimal: `len` i64s;
    /// Strings: the bytes; DictionaryCodes: `len` i32 codes.
    pub values: Buffer,
    /// Strings only: `len + 1` i32 offsets.
    pub offsets: Option<Buffer>,
}

impl HostColumn {
    /// Bytes this column moves across PCIe.
    pub fn transfer_bytes(&self) -> usize {
        self.values.len()
            + self.validity.as_ref().map_or(0, Buffer::len)
            + self.offsets.as_ref().map_or(0, Buffer::len)
    }
}

/// Choices about narrower device forms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayoutOptions {
    /// Send `Decimal128` with precision <= 18 as `i64`.
    pub narrow_decimals: bool,
    /// Dictionary-encode string columns with at most this many distinct values...
    pub dictionary_max_distinct: usize,
    /// ...and at most this many distinct values per row (so short columns stay plain).
    pub dictionary_max_ratio: f64,
}

impl Default for LayoutOptions {
    fn default() -> Self {
        Self {
            narrow_decimals: true,
            dictionary_max_distinct: 4096,
            dictionary_max_ratio: 0.25,
        }
    }
}

/// Why a column cannot go to the GPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("data type {0} is not supported on the GPU")]
    UnsupportedType(DataType),
    #[error("strings of {0} bytes in one column exceed the GPU's 2 GiB string limit")]
    StringsTooLarge(usize),
    #[error("invalid device column: {0}")]
    Invalid(String),
}

/// The device form `data_type` takes (before the per-column dictionary decision), or
/// why it cannot go to the GPU. Placement uses this to give reasons.
pub fn device_form_of(
    data_type: &DataType,
    options: &LayoutOptions,
) -> Result<DeviceForm, LayoutError> {
    Ok(match data_type {
        DataType::Int8 | DataType::UInt8 => DeviceForm::Fixed { width: 1 },
        DataType::Int16 | DataType::UInt16 => DeviceForm::Fixed { width: 2 },
        DataType::Int32 | DataType::UInt32 | DataType::Date32 | DataType::Float32 => {
            DeviceForm::Fixed { width: 4 }
        }
        DataType::Int64 | DataType::UInt64 | DataType::Float64 | DataType::Timestamp(_, _) => {
            DeviceForm::Fixed { width: 8 }
        }
        DataType::Boolean => DeviceForm::Boolean,
        DataType::Decimal128(precision, _) if options.narrow_decimals && *precision <= 18 => {
            DeviceForm::NarrowDecimal
        }
        DataType::Decimal128(_, _) => DeviceForm::Fixed { width: 16 },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DeviceForm::Strings,
        other => return Err(LayoutError::UnsupportedType(other.clone())),
    })
}

fn validity_of(array: &dyn Array) -> Option<Buffer> {
    array
        .nulls()
        .filter(|nulls| nulls.null_count() > 0)
        .map(|nulls| nulls.inner().sliced())
}

/// Prepares `array` for the device.
pub fn to_device_layout(
    array: &dyn Array,
    options: &LayoutOptions,
) -> Result<HostColumn, LayoutError> {
    let form = device_form_of(array.data_type(), options)?;
    let len = array.len();
    let base = |form, values, offsets| HostColumn {
        data_type: array.data_type().clone(),
        form,
        len,
        null_count: array.null_count(),
        validity: validity_of(array),
        values,
        offsets,
    };
    Ok(match form {
        DeviceForm::Fixed { width } => {
            let data = array.to_data();
            let values = data.buffers()[0].slice_with_length(data.offset() * width, len * width);
            base(DeviceForm::Fixed { width }, values, None)
        }
        DeviceForm::Boolean => {
            let values = array.as_boolean().values().sliced();
            base(DeviceForm::Boolean, values, None)
        }
        DeviceForm::NarrowDecimal => {
            let decimals = array.as_primitive::<arrow::datatypes::Decimal128Type>();
            // Precision <= 18 bounds every valid value below 10^18 < 2^63; null slots
            // may hold anything, so they are zeroed rather than truncated.
            let narrow: ScalarBuffer<i64> =
                decimals.iter().map(|v| v.map_or(0, |v| v as i64)).collect();
            base(DeviceForm::NarrowDecimal, narrow.into_inner(), None)
        }
        DeviceForm::Strings | DeviceForm::DictionaryCodes { .. } => {
            let strings = string_values(array)?;
            if let Some((codes, dictionary)) = dictionary_encode(&strings, options) {
                base(
                    DeviceForm::DictionaryCodes {
                        dictionary: Dictionary::fixed(dictionary),
                    },
                    codes.into_inner(),
                    None,
                )
            } else {
                let (offsets, values) = pack_strings(&strings)?;
                base(DeviceForm::Strings, values, Some(offsets))
            }
        }
    })
}

/// The strings of any Arrow string array, as optional `&str`s.
fn string_values(array: &dyn Array) -> Result<Vec<Option<&str>>, LayoutError> {
    Ok(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => array.as_string::<i64>().iter().collect(),
        DataType::Utf8View => array.as_string_view().iter().collect(),
        other => return Err(LayoutError::UnsupportedType(other.clone())),
    })
}

/// Contiguous i32 offsets (from 0) and bytes for `strings`.
fn pack_strings(strings: &[Option<&str>]) -> Result<(Buffer, Buffer), LayoutError> {
    let total: usize = strings.iter().flatten().map(|s| s.len()).sum();
    if total > i32::MAX as usize {
        return Err(LayoutError::StringsTooLarge(total));
    }
    let mut offsets = Vec::with_capacity(strings.len() + 1);
    let mut bytes = Vec::with_capacity(total);
    offsets.push(0i32);
    for s in strings {
        bytes.extend_from_slice(s.unwrap_or("").as_bytes());
        offsets.push(bytes.len() as i32);
    }
    Ok((
        ScalarBuffer::from(offsets).into_inner(),
        Buffer::from_vec(bytes),
    ))
}

/// Codes and dictionary for `strings`, when they have few enough distinct values.
fn dictionary_encode(
    strings: &[Option<&str>],
    options: &LayoutOptions,
) -> Option<(ScalarBuffer<i32>, StringArray)> {
    let limit = options
        .dictionary_max_distinct
        .min((strings.len() as f64 * options.dictionary_max_ratio) as usize);
    if limit == 0 {
        return None;
    }
    let mut index: HashMap<&str, i32> = HashMap::new();
    let mut values: Vec<&str> = Vec::new();
    let mut codes = Vec::with_capacity(strings.len());
    for s in strings {
        let code = match s {
            None => 0,
            Some(s) => match index.get(s) {
                Some(code) => *code,
                None => {
                    if values.len() == limit {
                        return None;
                    }
                    let code = values.len() as i32;
                    index.insert(s, code);
                    values.push(s);
                    code
                }
            },
        };
        codes.push(code);
    }
    if values.is_empty() {
        values.push("");
    }
    Some((ScalarBuffer::from(codes), StringArray::from(values)))
}

/// Rebuilds the Arrow array of a column that came back from the device.
pub fn from_device_layout(column: HostColumn) -> Result<ArrayRef, LayoutError> {
    let invalid = |what: String| LayoutError::Invalid(what);
    let nulls = column
        .validity
        .clone()
        .map(|bits| NullBuffer::new(arrow::buffer::BooleanBuffer::new(bits, 0, column.len)));
    let len = column.len;
    let array: ArrayRef = match &column.form {
        // Fixed-width values and bit-packed booleans are Arrow's own layout: one
        // values buffer and the validity bitmap.
        DeviceForm::Fixed { .. } | DeviceForm::Boolean => {
            let needed = match column.form {
                DeviceForm::Fixed { width } => len * width,
                _ => len.div_ceil(8),
            };
            if column.values.len() < needed {
                return Err(invalid(format!(
                    "{} value bytes where {len} values need {needed}",
                    column.values.len()
                )));
            }
            let data = ArrayData::builder(column.data_type.clone())
                .len(len)
                .add_buffer(column.values.clone())
                .nulls(nulls)
                .build()
                .map_err(|e| invalid(e.to_string()))?;
            make_array(data)
        }
        DeviceForm::NarrowDecimal => {
            let DataType::Decimal128(precision, scale) = column.data_type else {
                return Err(invalid(format!(
                    "narrow decimal of type {}",
                    column.data_type
                )));
            };
            let narrow = ScalarBuffer::<i64>::new(column.values.clone(), 0, len);
            let wide: ScalarBuffer<i128> = narrow.iter().map(|v| i128::from(*v)).collect();
            let array = Decimal128Array::try_new(wide, nulls)
                .and_then(|a| a.with_precision_and_scale(precision, scale))
                .map_err(|e| invalid(e.to_string()))?;
            Arc::new(array)
        }
        DeviceForm::Strings => {
            let offsets = column
                .offsets
                .clone()
                .ok_or_else(|| invalid("strings without offsets".into()))?;
            let offsets = ScalarBuffer::<i32>::new(offsets, 0, len + 1);
            let strings = GenericStringArray::<i32>::try_new(
                OffsetBuffer::new(offsets),
                column.values.clone(),
                nulls,
            )
            .map_err(|e| invalid(e.to_string()))?;
            as_string_type(strings, &column.data_type)?
        }
        DeviceForm::DictionaryCodes { dictionary } => {
            let codes = Int32Array::new(ScalarBuffer::new(column.values.clone(), 0, len), nulls);
            as_string_type(dictionary.decode(&codes)?, &column.data_type)?
        }
    };
    Ok(array)
}

/// `strings` as the string type the column came from.
fn as_string_type(strings: StringArray, data_type: &DataType) -> Result<ArrayRef, LayoutError> {
    Ok(match data_type {
        DataType::Utf8 => Arc::new(strings),
        DataType::LargeUtf8 => Arc::new(strings.iter().collect::<LargeStringArray>()),
        DataType::Utf8View => Arc::new(strings.iter().collect::<StringViewArray>()),
        other => return Err(LayoutError::UnsupportedType(other.clone())),
    })
}

#[cfg(test)]
mod tests {
    use arrow::array::{
        BooleanArray, Date32Array, Float64Array, Int8Array, Int64Array, TimestampMicrosecondArray,
    };

    use super::*;

    fn round_trip(array: &dyn Array, options: &LayoutOptions) -> (HostColumn, ArrayRef) {
        let column = to_device_layout(array, options).unwrap();
        let back = from_device_layout(column.clone()).unwrap();
        assert_eq!(back.data_type(), array.data_type());
        assert_eq!(
            back.to_data(),
            array.to_data(),
            "round trip changed {:?}",
            array.data_type()
        );
        (column, back)
    }

    #[test]
    fn fixed_width_types_round_trip_including_slices_and_nulls() {
        let options = LayoutOptions::default();
        let ints = Int64Array::from(vec![
            Some(i64::MIN),
            None,
            Some(0),
            Some(i64::MAX),
            Some(-1),
        ]);
        round_trip(&ints, &options);
        round_trip(&ints.slice(1, 3), &options);
        round_trip(
            &Int8Array::from(vec![Some(-128), Some(127), None]),
            &options,
        );
        let floats =
            Float64Array::from(vec![Some(f64::NAN), Some(-0.0), None, Some(f64::INFINITY)]);
        let column = to_device_layout(&floats, &options).unwrap();
        let back = from_device_layout(column).unwrap();
        let back = back.as_primitive::<arrow::datatypes::Float64Type>();
        assert!(back.value(0).is_nan());
        assert!(back.value(1) == 0.0 && back.value(1).is_sign_negative());
        assert!(back.is_null(2));
        round_trip(
            &Date32Array::from(vec![Some(0), Some(-719_162), None]),
            &options,
        );
        let timestamps = TimestampMicrosecondArray::from(vec![Some(1), None]).with_timezone("UTC");
        round_trip(&timestamps, &options);
        round_trip(&Int64Array::from(Vec::<i64>::new()), &options);
    }

    #[test]
    fn booleans_keep_bits_through_odd_slices() {
        let options = LayoutOptions::default();
        let bools = BooleanArray::from(
            (0..100)
                .map(|i| if i % 7 == 0 { None } else { Some(i % 3 == 0) })
                .collect::<Vec<_>>(),
        );
        round_trip(&bools, &options);
        let (column, _) = round_trip(&bools.slice(3, 61), &options);
        assert_eq!(column.values.len(), 8);
    }

    #[test]
    fn small_decimals_narrow_to_i64_and_large_ones_stay_128_bit() {
        let options = LayoutOptions::default();
        let max18 = 999_999_999_999_999_999i128;
        let small = Decimal128Array::from(vec![Some(max18), Some(-max18), None, Some(1)])
            .with_precision_and_scale(18, 2)
            .unwrap();
        let (column, _) = round_trip(&small, &options);
        assert!(matches!(column.form, DeviceForm::NarrowDecimal));
        assert_eq!(column.values.len(), 4 * 8);

        let large = Decimal128Array::from(vec![Some(i128::MAX / 10), None])
            .with_precision_and_scale(38, 0)
            .unwrap();
        let (column, _) = round_trip(&large, &options);
        assert!(matches!(column.form, DeviceForm::Fixed { width: 16 }));

        let wide = LayoutOptions {
            narrow_decimals: false,
            ..options
        };
        let (column, _) = round_trip(&small, &wide);
        assert!(matches!(column.form, DeviceForm::Fixed { width: 16 }));
    }

    #[test]
    fn strings_pack_into_offsets_and_bytes() {
        let options = LayoutOptions {
            dictionary_max_distinct: 0,
            ..LayoutOptions::default()
        };
        let long = "x".repeat(10_000);
        let values = vec![
            Some(""),
            None,
            Some("héllo"),
            Some(long.as_str()),
            Some("a"),
        ];
        let utf8 = StringArray::from(values.clone());
        let (column, _) = round_trip(&utf8, &options);
        assert!(matches!(column.form, DeviceForm::Strings));
        assert_eq!(column.values.len(), "héllo".len() + 10_000 + 1);
        round_trip(&utf8.slice(2, 3), &options);
        round_trip(&StringViewArray::from(values.clone()), &options);
        round_trip(&LargeStringArray::from(values), &options);
    }

    #[test]
    fn low_cardinality_strings_become_dictionary_codes() {
        let options = LayoutOptions::default();
        let flags: Vec<Option<&str>> = (0..1000)
            .map(|i| match i % 4 {
                0 => Some("A"),
                1 => Some("N"),
                2 => None,
                _ => Some("R"),
            })
            .collect();
        let (column, _) = round_trip(&StringViewArray::from(flags), &options);
        match &column.form {
            DeviceForm::DictionaryCodes { dictionary } => assert_eq!(dictionary.len(), 3),
            other => panic!("expected dictionary codes, got {other:?}"),
        }
        assert_eq!(column.values.len(), 1000 * 4);

        // Mostly distinct strings stay plain.
        let names: Vec<String> = (0..1000).map(|i| format!("Customer#{i:09}")).collect();
        let (column, _) = round_trip(&StringArray::from_iter_values(&names), &options);
        assert!(matches!(column.form, DeviceForm::Strings));
    }

    #[test]
    fn unsupported_types_say_so() {
        let err = device_form_of(&DataType::Binary, &LayoutOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "data type Binary is not supported on the GPU"
        );
    }
}
