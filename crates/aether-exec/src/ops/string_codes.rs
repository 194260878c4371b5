//! Strings as stream-wide dictionary codes, computed on the host while gathering.
//!
//! Strings get codes from a [`GrowingDictionary`] shared by every chunk of one
//! `HostToDeviceExec` execution, so a code means the same string in every chunk and
//! group keys can be compared across batches on the device. The dictionary only
//! grows; any later view of it decodes every earlier code.
//!
//! Coding is on the host's critical path when inputs come from host memory (TPC-H Q1
//! codes two flag columns for 60 million rows at SF10), so the common case is kept to
//! a few nanoseconds a row: a `Utf8View` string of at most 12 bytes is held whole in
//! its 16-byte view, and a [`ViewCodeCache`] of the column's few short values maps
//! views straight to codes, without hashing or locking. Everything else is coded per
//! batch: distinct values first, then the shared dictionary once per batch.

use std::collections::HashMap;

use aether_gpu::DeviceError;
use aether_gpu::dictionary::GrowingDictionary;
use datafusion::arrow::array::{Array, AsArray, StringViewArray};
use datafusion::arrow::datatypes::DataType;

/// A batch's distinct values: hashed fast, since every value of the batch is hashed.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Codes of a column's short `Utf8View` values, by view: a handful of entries,
/// searched most recent hit first.
#[derive(Debug, Default)]
pub struct ViewCodeCache {
    entries: Vec<(u128, i32)>,
}

impl ViewCodeCache {
    /// Columns with more short values than this code them through the batch path.
    const MAX_ENTRIES: usize = 16;

    fn get(&self, view: u128) -> Option<i32> {
        self.entries
            .iter()
            .find(|(seen, _)| *seen == view)
            .map(|(_, code)| *code)
    }

    fn insert(&mut self, view: u128, code: i32) {
        if self.entries.len() < Self::MAX_ENTRIES && self.get(view).is_none() {
            self.entries.push((view, code));
        }
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
        // A view's low 32 bits are the length; up to 12 bytes the view is the string.
        let short = (*view as u32) <= 12;
        match cache.get(*view) {
            Some(code) if short => *slot = code,
            _ => missed.push(i),
        }
    }
    if missed.is_empty() {
        return Ok(());
    }
    let mut local: FastMap<&str, usize> = FastMap::default();
    let mut distinct: Vec<&str> = Vec::new();
    let local_codes: Vec<usize> = missed
        .iter()
        .map(|&i| {
            let s = strings.value(i);
            *local.entry(s).or_insert_with(|| {
                distinct.push(s);
                distinct.len() - 1
            })
        })
        .collect();
    let global = dictionary.codes_of(&distinct)?;
    for (&i, local_code) in missed.iter().zip(local_codes) {
        let code = global[local_code];
        out[i] = code;
        if (views[i] as u32) <= 12 {
            cache.insert(views[i], code);
        }
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

    #[test]
    fn short_views_are_coded_through_the_cache_and_agree_with_the_dictionary() {
        let dictionary = GrowingDictionary::default();
        let mut cache = ViewCodeCache::default();
        let long = "a string longer than twelve bytes";
        let first = StringViewArray::from(vec![Some("N"), Some("A"), None, Some(long)]);
        let mut out = vec![-1; 4];
        write_codes(&mut out, &first, &dictionary, &mut cache).unwrap();
        assert_eq!(out, vec![0, 1, 0, 2]);
        // The second batch finds "A" and "N" in the cache and a new value in the
        // dictionary; the long string keeps its code.
        let second = StringViewArray::from(vec![Some("A"), Some("R"), Some(long), Some("N")]);
        let mut out = vec![-1; 4];
        write_codes(&mut out, &second, &dictionary, &mut cache).unwrap();
        assert_eq!(out, vec![1, 3, 2, 0]);
        let view = Arc::new(dictionary).view();
        assert_eq!(view.values().unwrap().value(3), "R");
        assert_eq!(cache.entries.len(), 3);
    }

    #[test]
    fn offset_strings_share_the_dictionary_and_code_nulls_as_zero() {
        let dictionary = GrowingDictionary::default();
        let mut cache = ViewCodeCache::default();
        let strings = StringArray::from(vec![Some("x"), None, Some("y"), Some("x")]);
        let mut out = vec![-1; 4];
        write_codes(&mut out, &strings, &dictionary, &mut cache).unwrap();
        assert_eq!(out, vec![0, 0, 1, 0]);
        let sliced = strings.slice(2, 2);
        let mut out = vec![-1; 2];
        write_codes(&mut out, &sliced, &dictionary, &mut cache).unwrap();
        assert_eq!(out, vec![1, 0]);
    }
}
