//! The host-side strings behind string columns sent to the GPU as `i32` codes.
//!
//! An upload codes each string column through one [`GrowingDictionary`] per stream, so
//! a code means the same string in every chunk and group keys compare across batches
//! on the device. Chunks are taken while the stream still codes new values, so each
//! chunk's column holds a [`Dictionary`] *view*: the dictionary and how many values it
//! had. Taking a view costs nothing: nothing is copied until a consumer reads strings,
//! and a decode copies only the strings its codes name, not the whole dictionary
//! (copying the dictionary per chunk made many-valued columns quadratic). Codes are
//! never reassigned, so a later, longer view decodes every code of an earlier one.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::array::{Array, GenericStringArray, Int32Array, StringArray, StringBuilder};
use arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use foldhash::quality::RandomState;
use hashbrown::HashTable;

use crate::layout::LayoutError;

/// The codes of one string column across a whole stream, growing as it codes.
#[derive(Debug, Default)]
pub struct GrowingDictionary {
    inner: Mutex<Values>,
}

/// Strings by code: code `i` is `bytes[ends[i - 1]..ends[i]]`; `codes` finds a
/// value's code by hashing its bytes, and holds no copy of them.
#[derive(Default)]
struct Values {
    codes: HashTable<i32>,
    hasher: RandomState,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// The longest array made from these values so far, reused while no value came.
    whole: Option<Arc<StringArray>>,
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Values")
            .field("count", &self.ends.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// The bytes of value `code`.
fn value_bytes<'a>(bytes: &'a [u8], ends: &[usize], code: usize) -> Option<&'a [u8]> {
    let end = *ends.get(code)?;
    let start = if code == 0 { 0 } else { ends[code - 1] };
    Some(&bytes[start..end])
}

impl Values {
    fn count(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, code: usize) -> Option<&str> {
        // Every value was appended from a `&str`, so its bytes are whole UTF-8.
        std::str::from_utf8(value_bytes(&self.bytes, &self.ends, code)?).ok()
    }

    /// The code of `value`, adding it if new; an error past `i32::MAX` values.
    fn code_of(&mut self, value: &str) -> Result<i32, LayoutError> {
        let Values {
            codes,
            hasher,
            bytes,
            ends,
            ..
        } = self;
        let hash = hasher.hash_one(value.as_bytes());
        let same = |code: &i32| value_bytes(bytes, ends, *code as usize) == Some(value.as_bytes());
        if let Some(code) = codes.find(hash, same) {
            return Ok(*code);
        }
        let code = i32::try_from(ends.len()).map_err(|_| {
            LayoutError::Invalid("a string column has more than 2^31 distinct values".into())
        })?;
        bytes.extend_from_slice(value.as_bytes());
        ends.push(bytes.len());
        let rehash = |code: &i32| {
            hasher.hash_one(value_bytes(bytes, ends, *code as usize).unwrap_or_default())
        };
        codes.insert_unique(hash, code, rehash);
        Ok(code)
    }
}

impl GrowingDictionary {
    /// The code of each of `strings` (distinct values of one batch), adding new ones.
    pub fn codes_of(&self, strings: &[&str]) -> Result<Vec<i32>, LayoutError> {
        let mut values = self.lock();
        strings.iter().map(|s| values.code_of(s)).collect()
    }

    /// A view of every value coded so far.
    pub fn view(self: &Arc<Self>) -> Dictionary {
        let len = self.lock().count();
        Dictionary::Growing {
            source: Arc::clone(self),
            len,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Values> {
        // Values are only appended, each under the lock in full, so a panic elsewhere
        // while it was held leaves them as consistent as they were.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The strings one column's codes decode to: a fixed array, or the first `len` values
/// of a stream's growing dictionary. Code 0 always decodes (to "" when there are no
/// values), since a NULL row carries code 0.
#[derive(Debug, Clone)]
pub enum Dictionary {
    Fixed(Arc<StringArray>),
    Growing {
        source: Arc<GrowingDictionary>,
        len: usize,
    },
}

impl Dictionary {
    /// A fixed dictionary of `values`.
    pub fn fixed(values: StringArray) -> Self {
        Self::Fixed(Arc::new(values))
    }

    /// How many values were coded when the view was taken (0 for none).
    pub fn coded_len(&self) -> usize {
        match self {
            Self::Fixed(values) => values.len(),
            Self::Growing { len, .. } => *len,
        }
    }

    /// How many codes it decodes (at least one).
    pub fn len(&self) -> usize {
        self.coded_len().max(1)
    }

    /// Always false: code 0 decodes even without values.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The strings `codes` name (NULL where a code is NULL), or an error naming the
    /// first code it does not hold.
    pub fn decode(&self, codes: &Int32Array) -> Result<StringArray, LayoutError> {
        match self {
            Self::Fixed(values) => decode_with(codes, self.len(), |c| {
                (c < values.len()).then(|| values.value(c))
            }),
            Self::Growing { source, .. } => {
                let values = source.lock();
                decode_with(codes, self.len(), |c| values.get(c))
            }
        }
    }

    /// Values `start..start + len` (for work per new value, as the view grows).
    pub fn slice(&self, start: usize, len: usize) -> Result<StringArray, LayoutError> {
        let end = start + len;
        if end > self.len() {
            return Err(LayoutError::Invalid(format!(
                "values {start}..{end} of a dictionary of {}",
                self.len()
            )));
        }
        let codes: Int32Array = (start..end).map(|c| c as i32).collect();
        self.decode(&codes)
    }

    /// Every value, indexed by code (for work over the whole dictionary, such as the
    /// ranks a sort compares codes by): the whole dictionary as it is now, which may be
    /// longer than the view. Reuses the last array made while no value came.
    pub fn values(&self) -> Result<Arc<StringArray>, LayoutError> {
        let (source, len) = match self {
            Self::Fixed(values) if !values.is_empty() => return Ok(Arc::clone(values)),
            Self::Fixed(_) => return Ok(Arc::new(StringArray::from(vec![""]))),
            Self::Growing { source, len } => (source, *len),
        };
        let mut values = source.lock();
        if values.count() == 0 {
            return Ok(Arc::new(StringArray::from(vec![""])));
        }
        if let Some(whole) = values.whole.as_ref().filter(|w| w.len() >= len) {
            return Ok(Arc::clone(whole));
        }
        let bytes = values.bytes.len();
        if i32::try_from(bytes).is_err() {
            return Err(LayoutError::StringsTooLarge(bytes));
        }
        let offsets: ScalarBuffer<i32> = std::iter::once(0)
            .chain(values.ends.iter().map(|&end| end as i32))
            .collect();
        // SAFETY: the offsets start at 0 and never decrease, the last is `bytes.len()`,
        // which fits i32 (checked above), and every value between two offsets was
        // appended from a `&str`, so it is whole UTF-8.
        let whole = unsafe {
            GenericStringArray::<i32>::new_unchecked(
                OffsetBuffer::new_unchecked(offsets),
                Buffer::from_slice_ref(&values.bytes),
                None,
            )
        };
        let whole = Arc::new(whole);
        values.whole = Some(Arc::clone(&whole));
        Ok(whole)
    }
}

/// `codes` decoded by `get`, each below `len` (code 0 decodes to "" when `get` has
/// no value for it).
fn decode_with<'a>(
    codes: &Int32Array,
    len: usize,
    get: impl Fn(usize) -> Option<&'a str>,
) -> Result<StringArray, LayoutError> {
    let mut strings = StringBuilder::with_capacity(codes.len(), codes.len() * 16);
    for code in codes.iter() {
        let Some(code) = code else {
            strings.append_null();
            continue;
        };
        let value = usize::try_from(code)
            .ok()
            .filter(|c| *c < len)
            .and_then(|c| get(c).or((c == 0).then_some("")))
            .ok_or_else(|| {
                LayoutError::Invalid(format!(
                    "string code {code} is outside its dictionary of {len} values"
                ))
            })?;
        strings.append_value(value);
    }
    Ok(strings.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_decode_the_codes_that_existed_when_taken() {
        let dictionary = Arc::new(GrowingDictionary::default());
        assert_eq!(dictionary.codes_of(&["x", "yy"]).unwrap(), vec![0, 1]);
        let early = dictionary.view();
        assert_eq!(
            dictionary.codes_of(&["yy", "", "é€"]).unwrap(),
            vec![1, 2, 3]
        );
        let late = dictionary.view();
        assert_eq!(early.len(), 2);
        assert_eq!(early.coded_len(), 2);
        assert_eq!(late.len(), 4);
        let codes = Int32Array::from(vec![Some(1), None, Some(0)]);
        let strings = early.decode(&codes).unwrap();
        assert_eq!(
            strings.iter().collect::<Vec<_>>(),
            vec![Some("yy"), None, Some("x")]
        );
        assert!(early.decode(&Int32Array::from(vec![3])).is_err());
        let strings = late.decode(&Int32Array::from(vec![3, 2])).unwrap();
        assert_eq!(strings.value(0), "é€");
        assert_eq!(strings.value(1), "");
        let all = late.values().unwrap();
        assert_eq!(
            all.iter().flatten().collect::<Vec<_>>(),
            ["x", "yy", "", "é€"]
        );
        assert!(Arc::ptr_eq(&all, &early.values().unwrap()));
        assert_eq!(late.slice(1, 2).unwrap().value(1), "");
        assert!(late.slice(3, 2).is_err());
    }

    #[test]
    fn an_empty_dictionary_decodes_code_zero() {
        let empty = Arc::new(GrowingDictionary::default()).view();
        assert_eq!(empty.len(), 1);
        assert_eq!(empty.coded_len(), 0);
        assert_eq!(
            empty.decode(&Int32Array::from(vec![0])).unwrap().value(0),
            ""
        );
        assert_eq!(empty.values().unwrap().len(), 1);
        let fixed = Dictionary::fixed(StringArray::from(Vec::<String>::new()));
        assert_eq!(fixed.values().unwrap().value(0), "");
        assert!(fixed.decode(&Int32Array::from(vec![1])).is_err());
    }
}
