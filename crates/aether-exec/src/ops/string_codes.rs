//! Strings as stream-wide dictionary codes, computed on the host while gathering.
//!
//! Strings get codes from a [`GrowingDictionary`] shared by every chunk of one
//! `HostToDeviceExec` execution, so a code means the same string in every chunk and
//! group keys can be compared across batches on the device. The dictionary only
//! grows; any later view of it decodes every earlier code.
//!
//! Coding is on the host's critical path when inputs come from host memory (TPC-H Q1
//! codes two flag columns for 60 million rows at SF10), so the common case is kept to
//! a few nanoseconds a row: a [`ViewCodeCache`] of the column's few values maps
//! `Utf8View` views straight to codes, without hashing or locking. A value of at most
//! 12 bytes is held whole in its 16-byte view, so the view alone finds it; a longer
//! one (`DELIVER IN PERSON`) is found by its length and 4-byte prefix, the view's low
//! 64 bits, and then its bytes. Everything else is coded per batch: distinct values
//! first, then the shared dictionary once per batch.

use std::collections::HashMap;

use aether_gpu::DeviceError;
use aether_gpu::dictionary::GrowingDictionary;
use datafusion::arrow::array::{Array, AsArray, StringViewArray};
use datafusion::arrow::datatypes::DataType;

/// A batch's distinct values: hashed fast, since every value of the batch is hashed.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Codes of a column's few `Utf8View` values, by view: a handful of short and long
/// values, searched in order.
#[derive(Debug, Default)]
pub struct ViewCodeCache {
    short: Vec<(u128, i32)>,
    /// A long value's length and prefix (its view's low 64 bits), bytes and code.
    long: Vec<(u64, Box<[u8]>, i32)>,
}

/// The longest string a view holds whole.
const INLINE_BYTES: u32 = 12;

impl ViewCodeCache {
    /// Columns with more values than this code the rest through the batch path.
    pub const MAX_ENTRIES: usize = 16;

    /// The code of the value with `view`, whose bytes `value` reads.
    fn get<'a>(&self, view: u128, value: impl FnOnce() -> &'a [u8]) -> Option<i32> {
        if (view as u32) <= INLINE_BYTES {
            return self
                .short
                .iter()
                .find(|(seen, _)| *seen == view)
                .map(|(_, code)| *code);
        }
        let head = view as u64;
        let mut candidates = self
            .long
            .iter()
            .filter(|(seen, ..)| *seen == head)
            .peekable();
        candidates.peek()?;
        let bytes = value();
        candidates
            .find(|(_, seen, _)| seen.as_ref() == bytes)
            .map(|(.., code)| *code)
    }

    /// Remembers a value's code; false once the cache holds as many values as it
    /// keeps (of either length).
    fn insert(&mut self, view: u128, value: &[u8], code: i32) -> bool {
        if self.short.len() + self.long.len() >= Self::MAX_ENTRIES {
            return false;
        }
        if (view as u32) <= INLINE_BYTES {
            if !self.short.iter().any(|(v, _)| *v == view) {
                self.short.push((view, code));
            }
        } else if !self.long.iter().any(|(_, seen, _)| seen.as_ref() == value) {
            self.long.push((view as u64, value.into(), code));
        }
        true
    }
}

/// Writes the code of each of `array`'s values into `out` (0 for NULLs).
pub fn write_codes(
    out: &mut [i32],
    array: &dyn Array,
    dictionary: &GrowingDictionary,
    cache: &mut ViewCodeCache,
) -> Result<(), DeviceError> {
    match array.data_type() {
        DataType::Utf8View => write_view_codes(out, array.as_string_view(), dictionary, cache),
        DataType::Utf8 => write_batch_codes(out, array.as_string::<i32>().iter(), dictionary),
        DataType::LargeUtf8 => write_batch_codes(out, array.as_string::<i64>().iter(), dictionary),
        other => Err(DeviceError::Internal(format!(
            "string codes requested for a {other} column"
        ))),
    }
}

fn write_view_codes(
    out: &mut [i32],
    strings: &StringViewArray,
    dictionary: &GrowingDictionary,
    cache: &mut ViewCodeCache,
) -> Result<(), DeviceError> {
    let views = strings.views();
    let nulls = strings.logical_nulls();
    let mut missed = Vec::new();
    for (i, (slot, view)) in out.iter_mut().zip(views.iter()).enumerate() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            *slot = 0;
            continue;
        }
        match cache.get(*view, || strings.value(i).as_bytes()) {
            Some(code) => *slot = code,
            None => missed.push(i),
        }
    }
    if missed.is_empty() {
        return Ok(());
    }
    let mut local: FastMap<&str, usize> = FastMap::default();
    let mut distinct: Vec<&str> = Vec::new();
    // The row where each distinct value first appears.
    let mut first_rows: Vec<usize> = Vec::new();
    let local_codes: Vec<usize> = missed
        .iter()
        .map(|&i| {
            let s = strings.value(i);
            *local.entry(s).or_insert_with(|| {
                distinct.push(s);
                first_rows.push(i);
                distinct.len() - 1
            })
        })
        .collect();
    let global = dictionary.codes_of(&distinct)?;
    // The cache keeps the first values it meets, up to its limit.
    for ((value, &code), &i) in distinct.iter().zip(&global).zip(&first_rows) {
        if !cache.insert(views[i], value.as_bytes(), code) {
            break;
        }
    }
    for (&i, local_code) in missed.iter().zip(local_codes) {
        out[i] = global[local_code];
    }
    Ok(())
}

/// Codes by distinct value per batch, locking the shared dictionary once.
fn write_batch_codes<'a>(
    out: &mut [i32],
    values: impl Iterator<Item = Option<&'a str>>,
    dictionary: &GrowingDictionary,
) -> Result<(), DeviceError> {
    let mut local: FastMap<&str, i32> = FastMap::default();
    let mut distinct: Vec<&str> = Vec::new();
    let local_codes: Vec<i32> = values
        .map(|s| match s {
            None => -1,
            Some(s) => *local.entry(s).or_insert_with(|| {
                distinct.push(s);
                (distinct.len() - 1) as i32
            }),
        })
        .collect();
    let global = dictionary.codes_of(&distinct)?;
    for (slot, code) in out.iter_mut().zip(local_codes) {
        *slot = if code < 0 { 0 } else { global[code as usize] };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{StringArray, StringViewArray};

    use super::*;

    /// The strings `codes` name in `dictionary`.
    fn decoded(codes: &[i32], dictionary: &Arc<GrowingDictionary>) -> Vec<String> {
        let values = Arc::clone(dictionary).view().values().unwrap();
        codes
            .iter()
            .map(|&code| values.value(code as usize).to_string())
            .collect()
    }

    #[test]
    fn few_values_are_coded_through_the_view_cache_and_agree_with_the_dictionary() {
        // Codes are dense, but their order depends on the dictionary's hashing: the
        // checks are by what each code decodes to.
        let dictionary = Arc::new(GrowingDictionary::default());
        let mut cache = ViewCodeCache::default();
        let long = "a string longer than twelve bytes";
        let first = StringViewArray::from(vec![Some("N"), Some("A"), None, Some(long)]);
        let mut out = vec![-1; 4];
        write_codes(&mut out, &first, &dictionary, &mut cache).unwrap();
        assert_eq!(out[2], 0, "a NULL row carries code 0");
        let mut codes = vec![out[0], out[1], out[3]];
        let first_codes = out.clone();
        codes.sort_unstable();
        assert_eq!(codes, vec![0, 1, 2]);
        let d = |codes: &[i32]| decoded(codes, &dictionary);
        assert_eq!(d(&[out[0], out[1], out[3]]), vec!["N", "A", long]);
        // The second batch finds "A", "N" and the long value in the cache and a new
        // value in the dictionary; every value keeps its code.
        let second = StringViewArray::from(vec![Some("A"), Some("R"), Some(long), Some("N")]);
        let mut out = vec![-1; 4];
        write_codes(&mut out, &second, &dictionary, &mut cache).unwrap();
        assert_eq!(
            (out[0], out[1], out[2], out[3]),
            (first_codes[1], 3, first_codes[3], first_codes[0])
        );
        assert_eq!(d(&out[1..2]), vec!["R"]);
        assert_eq!((cache.short.len(), cache.long.len()), (3, 1));
        // A long value found by its prefix and length, then its bytes: a different
        // value of the same length and prefix is not mistaken for it.
        let twin = "a string longer than twelve bytez";
        let third = StringViewArray::from(vec![Some(twin), Some(long)]);
        let mut out = vec![-1; 2];
        write_codes(&mut out, &third, &dictionary, &mut cache).unwrap();
        assert_eq!(out, vec![4, first_codes[3]]);
        assert_eq!(d(&out), vec![twin, long]);
    }

    #[test]
    fn offset_strings_share_the_dictionary_and_code_nulls_as_zero() {
        let dictionary = Arc::new(GrowingDictionary::default());
        let mut cache = ViewCodeCache::default();
        let strings = StringArray::from(vec![Some("x"), None, Some("y"), Some("x")]);
        let mut out = vec![-1; 4];
        write_codes(&mut out, &strings, &dictionary, &mut cache).unwrap();
        assert_eq!(out[1], 0, "a NULL row carries code 0");
        assert_eq!(out[0], out[3]);
        assert_eq!(decoded(&[out[0], out[2]], &dictionary), vec!["x", "y"]);
        let (x, y) = (out[0], out[2]);
        let sliced = strings.slice(2, 2);
        let mut out = vec![-1; 2];
        write_codes(&mut out, &sliced, &dictionary, &mut cache).unwrap();
        assert_eq!(out, vec![y, x]);
    }
}
