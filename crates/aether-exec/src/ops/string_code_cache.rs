//! The device codes of in-memory tables' string columns, kept across queries.
//!
//! A string column goes to the GPU as `i32` codes into a dictionary, and coding is
//! host work on the upload's critical path: TPC-H Q10 codes four `customer` columns
//! of 1.5 M distinct values each at SF10 (about 4 s of gathering summed over the
//! tasks, 260 ms of the query), Q19 looks up two flag columns for 60 M `lineitem` rows
//! (3 s summed). An in-memory table never changes (Arrow arrays are immutable; an
//! insert makes new ones), so its columns' codes are computed once, by every core,
//! and kept here with their dictionary, as Spark's in-memory columnar cache keeps
//! its string columns dictionary-encoded. A later upload of the column copies codes
//! like any `Int32` column, and its kernels see the same codes and dictionary.
//!
//! A column is known by the identity of its arrays, in any order (a scan may list a
//! table's batches in other partitions than the last one did): an entry holds weak
//! references to them, so it never keeps a dropped table's arrays alive, and no new
//! array can take a held address (the allocation outlives the weak reference), so a
//! replaced table is never served another's codes. Each array's codes are found by
//! its address. Entries are evicted least recently used first
//! when the codes and dictionaries would pass [`StringCodeCache::budget_bytes`].

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use aether_gpu::DeviceError;
use aether_gpu::dictionary::GrowingDictionary;
use datafusion::arrow::array::{Array, ArrayRef, Int32Array};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::datasource::memory::MemorySourceConfig;

use super::string_codes::{ViewCodeCache, write_codes};

/// One string column of an in-memory table as codes: for each array of the column
/// (by [`address`]), its codes, NULL where the string is NULL.
#[derive(Debug)]
pub struct CodedColumn {
    pub dictionary: Arc<GrowingDictionary>,
    codes: HashMap<usize, Int32Array>,
}

/// The address that identifies an array.
pub fn address(array: &ArrayRef) -> usize {
    Arc::as_ptr(array) as *const u8 as usize
}

impl CodedColumn {
    /// Codes `arrays` (one string column's arrays) with every core, into one new
    /// dictionary.
    pub fn code(arrays: &[ArrayRef]) -> Result<Self, DeviceError> {
        Self::code_on(arrays, cores())
    }

    /// [`Self::code`] on at most `threads` threads.
    fn code_on(arrays: &[ArrayRef], threads: usize) -> Result<Self, DeviceError> {
        let dictionary = Arc::new(GrowingDictionary::default());
        let next = AtomicUsize::new(0);
        let threads = threads.min(arrays.len()).max(1);
        let coded: Vec<Result<Vec<(usize, Int32Array)>, DeviceError>> =
            std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| scope.spawn(|| code_some(arrays, &next, &dictionary)))
                    .collect();
                workers
                    .into_iter()
                    .map(|worker| {
                        worker.join().unwrap_or_else(|_| {
                            Err(DeviceError::Internal(
                                "a string coding thread panicked".into(),
                            ))
                        })
                    })
                    .collect()
            });
        let mut codes = HashMap::with_capacity(arrays.len());
        for part in coded {
            for (i, array) in part? {
                codes.insert(address(&arrays[i]), array);
            }
        }
        Ok(Self { dictionary, codes })
    }

    /// The codes of `array`, one of the column's arrays.
    pub fn codes_of(&self, array: &ArrayRef) -> Option<&Int32Array> {
        self.codes.get(&address(array))
    }

    /// Host bytes held: the codes and the dictionary.
    pub fn heap_bytes(&self) -> usize {
        let codes: usize = self
            .codes
            .values()
            .map(|c| c.get_buffer_memory_size())
            .sum();
        codes + self.dictionary.heap_bytes()
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Codes the arrays a worker claims (by `next`) until none are left.
fn code_some(
    arrays: &[ArrayRef],
    next: &AtomicUsize,
    dictionary: &GrowingDictionary,
) -> Result<Vec<(usize, Int32Array)>, DeviceError> {
    let mut views = ViewCodeCache::default();
    let mut done = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(array) = arrays.get(i) else {
            return Ok(done);
        };
        let mut out = vec![0i32; array.len()];
        write_codes(&mut out, array.as_ref(), dictionary, &mut views)?;
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        done.push((i, Int32Array::new(ScalarBuffer::from(out), nulls)));
    }
}

/// The arrays (one per batch, in partition order) of the in-memory table `memory`
/// scans that make its output column `column` (the scan's projection applied).
pub fn table_column_arrays(memory: &MemorySourceConfig, column: usize) -> Option<Vec<ArrayRef>> {
    let column = match memory.projection() {
        Some(columns) => *columns.get(column)?,
        None => column,
    };
    memory
        .partitions()
        .iter()
        .flatten()
        .map(|batch| batch.columns().get(column).cloned())
        .collect()
}

/// Coded columns by the identity of their arrays, within a byte budget.
#[derive(Debug)]
pub struct StringCodeCache {
    budget_bytes: usize,
    state: Mutex<State>,
    /// Changes whenever a column is kept or dropped: plans chosen by what was kept
    /// are remade after it changes.
    generation: AtomicU64,
    /// Columns a background thread is coding (by key), so none is queued twice.
    pending: Mutex<HashSet<u64>>,
    /// Columns coded once and found larger than the budget (by key): never coded in
    /// the background again, nor counted on by the cost model.
    refused: Mutex<HashSet<u64>>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<u64, Entry>,
    bytes: usize,
    /// Ticks at each use, for least-recently-used eviction.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    /// The column's arrays, by ascending address.
    arrays: Vec<Weak<dyn Array>>,
    column: Arc<CodedColumn>,
    bytes: usize,
    last_use: u64,
}

impl Entry {
    /// Whether the entry was made from exactly `arrays` (by ascending address), all
    /// still alive.
    fn is_of(&self, arrays: &[&ArrayRef]) -> bool {
        self.arrays.len() == arrays.len()
            && self.arrays.iter().zip(arrays).all(|(held, array)| {
                held.upgrade()
                    .is_some_and(|held| std::ptr::addr_eq(Arc::as_ptr(&held), Arc::as_ptr(array)))
            })
    }

    fn is_dead(&self) -> bool {
        self.arrays.iter().any(|held| held.strong_count() == 0)
    }
}

/// `arrays` by ascending address, and the key of that set.
fn identify(arrays: &[ArrayRef]) -> (Vec<&ArrayRef>, u64) {
    let mut sorted: Vec<&ArrayRef> = arrays.iter().collect();
    sorted.sort_unstable_by_key(|array| address(array));
    let mut hasher = DefaultHasher::new();
    for array in &sorted {
        address(array).hash(&mut hasher);
        array.len().hash(&mut hasher);
    }
    (sorted, hasher.finish())
}

impl StringCodeCache {
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            budget_bytes,
            state: Mutex::default(),
            generation: AtomicU64::new(0),
            pending: Mutex::default(),
            refused: Mutex::default(),
        }
    }

    /// Whether `arrays` were coded once and did not fit the budget.
    pub fn refused(&self, arrays: &[ArrayRef]) -> bool {
        lock(&self.refused).contains(&identify(arrays).1)
    }

    /// A number that changes whenever a column is kept or dropped.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Codes `columns` (each a column's arrays) on a background thread and keeps
    /// them, skipping those kept, queued or refused: for a query the cost model kept
    /// on the CPU only because its columns were not coded yet, so that a later run
    /// finds them kept. It takes a quarter of the cores, beside the query running on
    /// the CPU meanwhile. A failure to code leaves the column uncoded, as before.
    pub fn code_in_background(&'static self, columns: Vec<Vec<ArrayRef>>) {
        // Held weakly while queued: a table dropped or replaced meanwhile is not coded.
        type Queued = (u64, Vec<Weak<dyn Array>>);
        let queued: Vec<Queued> = {
            let mut pending = lock(&self.pending);
            columns
                .into_iter()
                .filter(|arrays| {
                    !arrays.is_empty() && !self.contains(arrays) && !self.refused(arrays)
                })
                .map(|arrays| {
                    (
                        identify(&arrays).1,
                        arrays.iter().map(Arc::downgrade).collect(),
                    )
                })
                .filter(|(key, _)| pending.insert(*key))
                .collect()
        };
        if queued.is_empty() {
            return;
        }
        let keys: Vec<u64> = queued.iter().map(|(key, _)| *key).collect();
        let spawned = std::thread::Builder::new()
            .name("aether-string-codes".into())
            .spawn(move || {
                let threads = (cores() / 4).max(1);
                for (key, held) in queued {
                    let arrays: Option<Vec<ArrayRef>> = held.iter().map(Weak::upgrade).collect();
                    if let Some(arrays) = arrays
                        && self.get(&arrays).is_none()
                        && let Ok(column) = CodedColumn::code_on(&arrays, threads)
                    {
                        self.insert(&arrays, Arc::new(column));
                    }
                    lock(&self.pending).remove(&key);
                }
            });
        if spawned.is_err() {
            let mut pending = lock(&self.pending);
            for key in keys {
                pending.remove(&key);
            }
        }
    }

    /// The process's cache: a sixteenth of physical memory, between 256 MiB and
    /// 4 GiB (TPC-H SF10's coded columns take about 1.6 GB, most of it four flag
    /// columns of `lineitem`'s 60 M rows; 2 GiB where memory cannot be read).
    pub fn shared() -> &'static Self {
        static SHARED: OnceLock<StringCodeCache> = OnceLock::new();
        SHARED.get_or_init(|| {
            let budget = physical_memory_bytes()
                .map_or(2 << 30, |bytes| (bytes / 16).clamp(256 << 20, 4 << 30));
            Self::new(budget)
        })
    }

    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes
    }

    /// Host bytes the kept columns take.
    pub fn held_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The kept codes of `arrays`, if any.
    pub fn get(&self, arrays: &[ArrayRef]) -> Option<Arc<CodedColumn>> {
        let (sorted, key) = identify(arrays);
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        let entry = state.entries.get_mut(&key)?;
        if !entry.is_of(&sorted) {
            return None;
        }
        entry.last_use = now;
        Some(Arc::clone(&entry.column))
    }

    /// Whether `arrays` have kept codes (for the cost model; not a use).
    pub fn contains(&self, arrays: &[ArrayRef]) -> bool {
        let (sorted, key) = identify(arrays);
        self.lock()
            .entries
            .get(&key)
            .is_some_and(|entry| entry.is_of(&sorted))
    }

    /// The codes of `arrays`: kept ones, or coded now and kept when they fit the
    /// budget (evicting the least recently used and any whose table is gone).
    pub fn get_or_code(&self, arrays: &[ArrayRef]) -> Result<Arc<CodedColumn>, DeviceError> {
        if let Some(column) = self.get(arrays) {
            return Ok(column);
        }
        let column = Arc::new(CodedColumn::code(arrays)?);
        self.insert(arrays, Arc::clone(&column));
        Ok(column)
    }

    fn insert(&self, arrays: &[ArrayRef], column: Arc<CodedColumn>) {
        let bytes = column.heap_bytes();
        let (sorted, key) = identify(arrays);
        if bytes > self.budget_bytes {
            lock(&self.refused).insert(key);
            return;
        }
        let mut state = self.lock();
        let state = &mut *state;
        state.entries.retain(|_, entry| !entry.is_dead());
        state.entries.remove(&key);
        state.bytes = state.entries.values().map(|e| e.bytes).sum();
        while state.bytes + bytes > self.budget_bytes {
            let Some((&oldest, _)) = state.entries.iter().min_by_key(|(_, e)| e.last_use) else {
                break;
            };
            if let Some(evicted) = state.entries.remove(&oldest) {
                state.bytes -= evicted.bytes;
            }
        }
        state.clock += 1;
        let entry = Entry {
            arrays: sorted.into_iter().map(Arc::downgrade).collect(),
            column,
            bytes,
            last_use: state.clock,
        };
        state.entries.insert(key, entry);
        state.bytes += bytes;
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// Every change is made in full under a lock; a panic elsewhere leaves the state as
/// consistent as it was.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Physical memory from `/proc/meminfo` (Linux), if readable.
fn physical_memory_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{StringArray, StringViewArray};

    use super::*;

    fn strings(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringViewArray::from(values.to_vec()))
    }

    fn decoded(column: &CodedColumn, arrays: &[ArrayRef]) -> Vec<Option<String>> {
        let view = column.dictionary.view();
        arrays
            .iter()
            .flat_map(|array| {
                let codes = column.codes_of(array).unwrap();
                let strings: StringArray = view.decode(codes).unwrap();
                strings
                    .iter()
                    .map(|s| s.map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn codes_decode_to_the_column_with_nulls_and_equal_strings_share_a_code() {
        let long = "a string longer than twelve bytes";
        let arrays: Vec<ArrayRef> = (0..40)
            .map(|i| {
                let name = format!("customer {i}");
                strings(&[Some(&name), None, Some(long), Some("x"), Some(&name)])
            })
            .collect();
        let column = CodedColumn::code(&arrays).unwrap();
        let expected: Vec<Option<String>> = arrays
            .iter()
            .flat_map(|a| {
                let a = a.as_any().downcast_ref::<StringViewArray>().unwrap();
                a.iter().map(|s| s.map(str::to_string)).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(decoded(&column, &arrays), expected);
        assert_eq!(column.dictionary.len(), 42);
        let codes = column.codes_of(&arrays[7]).unwrap();
        assert!(codes.is_null(1) && !codes.is_null(0));
        assert_eq!(codes.value(0), codes.value(4));
        assert_eq!(
            codes.value(2),
            column.codes_of(&arrays[31]).unwrap().value(2)
        );
    }

    #[test]
    fn a_kept_column_is_found_by_its_arrays_and_never_by_others() {
        let cache = StringCodeCache::new(1 << 20);
        let arrays = vec![strings(&[Some("a"), Some("b")]), strings(&[Some("b")])];
        let first = cache.get_or_code(&arrays).unwrap();
        assert!(cache.contains(&arrays));
        let again = cache.get_or_code(&arrays).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // The same arrays listed in another order are the same column.
        let reordered = vec![Arc::clone(&arrays[1]), Arc::clone(&arrays[0])];
        assert!(Arc::ptr_eq(&cache.get(&reordered).unwrap(), &first));
        // The same values in other arrays are another column.
        let copies = vec![strings(&[Some("a"), Some("b")]), strings(&[Some("b")])];
        assert!(!cache.contains(&copies));
        assert!(cache.get(&arrays[..1]).is_none());
        // A dropped table's entry is gone once its arrays are.
        drop((arrays, reordered));
        drop((first, again));
        cache.get_or_code(&copies).unwrap();
        assert_eq!(cache.lock().entries.len(), 1);
    }

    #[test]
    fn columns_coded_in_the_background_are_kept_once_and_change_the_generation() {
        let cache: &'static StringCodeCache = Box::leak(Box::new(StringCodeCache::new(1 << 20)));
        let arrays = vec![
            strings(&[Some("x"), None, Some("y")]),
            strings(&[Some("x")]),
        ];
        let before = cache.generation();
        // Asked twice: queued once.
        cache.code_in_background(vec![arrays.clone(), arrays.clone()]);
        cache.code_in_background(vec![arrays.clone()]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !cache.contains(&arrays) {
            assert!(std::time::Instant::now() < deadline, "never coded");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(cache.generation(), before + 1);
        let column = cache.get(&arrays).unwrap();
        assert_eq!(column.dictionary.len(), 2);
        // Kept: asking again codes nothing.
        cache.code_in_background(vec![arrays.clone()]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(cache.generation(), before + 1);
    }

    #[test]
    fn the_least_recently_used_column_goes_when_the_budget_is_passed() {
        let column = |tag: &str| -> Vec<ArrayRef> {
            let values: Vec<String> = (0..1000).map(|i| format!("{tag} {i:>40}")).collect();
            let refs: Vec<Option<&str>> = values.iter().map(|v| Some(v.as_str())).collect();
            vec![strings(&refs)]
        };
        let (a, b, c) = (column("a"), column("b"), column("c"));
        let one = CodedColumn::code(&a).unwrap().heap_bytes();
        let cache = StringCodeCache::new(one * 5 / 2);
        cache.get_or_code(&a).unwrap();
        cache.get_or_code(&b).unwrap();
        cache.get(&a).unwrap();
        cache.get_or_code(&c).unwrap();
        assert!(cache.contains(&a) && cache.contains(&c) && !cache.contains(&b));
        assert!(cache.held_bytes() <= cache.budget_bytes());
        // A column larger than the whole budget is coded but not kept.
        let small = StringCodeCache::new(16);
        assert!(small.get_or_code(&a).unwrap().codes_of(&a[0]).is_some());
        assert!(!small.contains(&a));
    }
}
