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

/// How many independently locked parts the value-to-code lookup is split into, so
/// that partitions gathering concurrently rarely wait for each other.
const SHARDS: usize = 64;

/// The codes of one string column across a whole stream, growing as it codes.
///
/// Many-valued columns (a name or a comment per customer) are coded by every gathering
/// partition at once, so finding a value's code must not serialize them: the lookup
/// is split into [`SHARDS`] parts by hash, each with its own lock and its own copy of
/// its values' bytes, and only a new value takes the shared [`Values`] lock, once per
/// batch and part, to be appended under the next codes. Codes stay dense (0, 1, 2, ...),
/// so lookups by code stay plain arrays; their order follows the parts, not the order
/// in which values first appear, and nothing may depend on it.
#[derive(Debug)]
pub struct GrowingDictionary {
    shards: Box<[Mutex<Shard>]>,
    values: Mutex<Values>,
    hasher: RandomState,
}

impl Default for GrowingDictionary {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            values: Mutex::default(),
            hasher: RandomState::default(),
        }
    }
}

/// One part of the value-to-code lookup: the values whose hash falls in it.
#[derive(Default)]
struct Shard {
    entries: HashTable<Entry>,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard")
            .field("count", &self.entries.len())
            .finish()
    }
}

/// A value of a shard: its bytes in the shard's buffer, its hash and its code.
struct Entry {
    hash: u64,
    start: usize,
    end: usize,
    code: i32,
}

/// Strings by code: code `i` is `bytes[ends[i - 1]..ends[i]]`.
#[derive(Default)]
struct Values {
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

    /// Appends `new` under the next codes and returns the first; an error past
    /// `i32::MAX` values.
    fn append<'a>(
        &mut self,
        new: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<i32, LayoutError> {
        let first = self.ends.len();
        i32::try_from(first + new.len()).map_err(|_| {
            LayoutError::Invalid("a string column has more than 2^31 distinct values".into())
        })?;
        for value in new {
            self.bytes.extend_from_slice(value.as_bytes());
            self.ends.push(self.bytes.len());
        }
        Ok(first as i32)
    }
}

impl Shard {
    /// The code of the value with `hash` and `bytes`, if coded.
    fn find(&self, hash: u64, bytes: &[u8]) -> Option<i32> {
        self.entries
            .find(hash, |e| &self.bytes[e.start..e.end] == bytes)
            .map(|e| e.code)
    }

    /// Adds a value under `code` (a placeholder until its real code is known).
    fn insert(&mut self, hash: u64, bytes: &[u8], code: i32) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        let entry = Entry {
            hash,
            start,
            end: self.bytes.len(),
            code,
        };
        self.entries.insert_unique(hash, entry, |e| e.hash);
    }

    fn remove(&mut self, hash: u64, bytes: &[u8]) {
        let Shard {
            entries,
            bytes: held,
        } = self;
        if let Ok(entry) = entries.find_entry(hash, |e| &held[e.start..e.end] == bytes) {
            entry.remove();
        }
    }

    fn set_code(&mut self, hash: u64, bytes: &[u8], code: i32) {
        let Shard {
            entries,
            bytes: held,
        } = self;
        if let Some(entry) = entries.find_mut(hash, |e| &held[e.start..e.end] == bytes) {
            entry.code = code;
        }
    }
}

/// The shard of a hash: bits that neither the tables' bucket index (low bits) nor
/// their control bytes (the top seven) use, so each shard's table stays well spread.
fn shard_of(hash: u64) -> usize {
    (hash >> 40) as usize % SHARDS
}

impl GrowingDictionary {
    /// The code of each of `strings` (the distinct values of one batch; a repeated
    /// value gets the same code), adding new ones.
    pub fn codes_of(&self, strings: &[&str]) -> Result<Vec<i32>, LayoutError> {
        let hashes: Vec<u64> = strings
            .iter()
            .map(|s| self.hasher.hash_one(s.as_bytes()))
            .collect();
        // The values of each shard together, so each shard is locked once.
        let mut starts = [0usize; SHARDS + 1];
        for &hash in &hashes {
            starts[shard_of(hash) + 1] += 1;
        }
        for shard in 0..SHARDS {
            starts[shard + 1] += starts[shard];
        }
        let mut next = starts;
        let mut by_shard = vec![0usize; strings.len()];
        for (i, &hash) in hashes.iter().enumerate() {
            let slot = &mut next[shard_of(hash)];
            by_shard[*slot] = i;
            *slot += 1;
        }
        let mut codes = vec![0i32; strings.len()];
        let mut fresh: Vec<usize> = Vec::new();
        for shard in 0..SHARDS {
            let members = &by_shard[starts[shard]..starts[shard + 1]];
            if members.is_empty() {
                continue;
            }
            let mut part = lock(&self.shards[shard]);
            fresh.clear();
            for &i in members {
                let (hash, bytes) = (hashes[i], strings[i].as_bytes());
                // A value new in this batch holds a placeholder, -1 - its place in
                // `fresh`, until the shared values give it its code below.
                codes[i] = match part.find(hash, bytes) {
                    Some(code) if code >= 0 => code,
                    Some(placeholder) => placeholder,
                    None => {
                        let placeholder = -1 - fresh.len() as i32;
                        part.insert(hash, bytes, placeholder);
                        fresh.push(i);
                        placeholder
                    }
                };
            }
            if fresh.is_empty() {
                continue;
            }
            let appended = lock(&self.values).append(fresh.iter().map(|&i| strings[i]));
            let first = match appended {
                Ok(first) => first,
                Err(e) => {
                    // No placeholder may outlive this call.
                    for &i in &fresh {
                        part.remove(hashes[i], strings[i].as_bytes());
                    }
                    return Err(e);
                }
            };
            for (k, &i) in fresh.iter().enumerate() {
                part.set_code(hashes[i], strings[i].as_bytes(), first + k as i32);
            }
            for &i in members {
                if codes[i] < 0 {
                    codes[i] = first + (-1 - codes[i]);
                }
            }
        }
        Ok(codes)
    }

    /// How many values have codes.
    pub fn len(&self) -> usize {
        self.lock().count()
    }

    /// Whether no value has a code yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Host bytes held: every value's bytes twice (by code, and in its lookup part)
    /// and, per value, its end offset and lookup entry.
    pub fn heap_bytes(&self) -> usize {
        let values = self.lock();
        let per_value = size_of::<usize>() + size_of::<Entry>() + 1;
        2 * values.bytes.len() + values.count() * per_value
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
        lock(&self.values)
    }
}

/// Values and shards are only appended to, each change made in full under its lock,
/// so a panic elsewhere while one was held leaves it as consistent as it was.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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
        // Values coded one call each get codes in call order (within one call the
        // order follows the dictionary's parts).
        let dictionary = Arc::new(GrowingDictionary::default());
        let code = |value: &str| dictionary.codes_of(&[value]).unwrap()[0];
        assert_eq!((code("x"), code("yy")), (0, 1));
        let early = dictionary.view();
        assert_eq!((code("yy"), code(""), code("é€")), (1, 2, 3));
        assert_eq!(
            dictionary.codes_of(&["é€", "yy", "", "x"]).unwrap(),
            vec![3, 1, 2, 0]
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
    fn partitions_coding_at_once_agree_on_dense_codes() {
        let dictionary = Arc::new(GrowingDictionary::default());
        let values: Vec<String> = (0..20_000).map(|i| format!("value {i}")).collect();
        let coded: Vec<Vec<(usize, i32)>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..8)
                .map(|worker| {
                    let (dictionary, values) = (&dictionary, &values);
                    scope.spawn(move || {
                        // Each worker codes overlapping batches in its own order.
                        let mut seen = Vec::new();
                        for batch in 0..40 {
                            let picks: Vec<usize> = (0..1_000)
                                .map(|k| (k * 37 + batch * 503 + worker * 7_919) % values.len())
                                .collect();
                            let strings: Vec<&str> =
                                picks.iter().map(|&i| values[i].as_str()).collect();
                            let codes = dictionary.codes_of(&strings).unwrap();
                            seen.extend(picks.into_iter().zip(codes));
                        }
                        seen
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut code_of = std::collections::HashMap::new();
        for (value, code) in coded.into_iter().flatten() {
            assert_eq!(*code_of.entry(value).or_insert(code), code, "value {value}");
        }
        let view = dictionary.view();
        assert_eq!(view.coded_len(), code_of.len());
        let mut codes: Vec<i32> = code_of.values().copied().collect();
        codes.sort_unstable();
        assert_eq!(codes, (0..code_of.len() as i32).collect::<Vec<_>>());
        let all = view.values().unwrap();
        for (value, code) in code_of {
            assert_eq!(all.value(code as usize), values[value]);
        }
        // A value repeated within one batch gets one code.
        assert_eq!(dictionary.codes_of(&["new", "new"]).unwrap().len(), 2);
        let twice = dictionary.codes_of(&["again", "again"]).unwrap();
        assert_eq!(twice[0], twice[1]);
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
