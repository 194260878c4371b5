//! The small device buffers the host computes for a kernel's batches
//! ([`crate::codegen::expr::HostTable`]):
//! - string predicates' tables ([`crate::codegen::expr::DictionaryLookup`]): one byte
//!   per dictionary entry, computed by DataFusion on the CPU over each distinct string
//!   once. A stream's dictionaries only grow, so each batch evaluates only the strings
//!   its dictionary added since the last one;
//! - string functions' tables ([`crate::codegen::expr::DictionaryMapping`]): a code
//!   per dictionary entry into the function's distinct results, which the aggregate
//!   decodes its keys through ([`HostTables::mapped_dictionary`], `mapped_strings.rs`);
//! - scalar parameters ([`crate::codegen::expr::ScalarParameter`]): a scalar
//!   subquery's result, read once the subquery has run (before the first batch) and
//!   laid out as the kernel reads it.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use aether_gpu::dictionary::Dictionary;
use aether_gpu::dictionary::GrowingDictionary;

use aether_gpu::layout::{LayoutOptions, to_device_layout};
use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceError, DeviceForm, GpuDevice};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;

use super::mapped_strings::{MAPPED_ENTRY_BYTES, MappedResults};
use crate::codegen::expr::{
    DictionaryLookup, HostTable, SCALAR_PARAMETER_BYTES, SCALAR_VALIDITY_OFFSET, ScalarParameter,
};

/// Each host table's bytes so far.
#[derive(Debug)]
pub struct HostTables {
    lookups: Vec<HostTable>,
    /// A string predicate's table: entry 0 for NULL, then one per code; a scalar
    /// parameter's buffer once read.
    tables: Vec<Vec<u8>>,
    /// How many coded values each string predicate's table holds a result for.
    evaluated: Vec<usize>,
    /// Each string function's distinct results so far (empty for other tables), shared
    /// with the kept ones until new values are mapped.
    results: Vec<Arc<MappedResults>>,
}

impl HostTables {
    pub fn new(lookups: Vec<HostTable>) -> Self {
        let tables = vec![Vec::new(); lookups.len()];
        let evaluated = vec![0; lookups.len()];
        let results = vec![Arc::default(); lookups.len()];
        Self {
            lookups,
            tables,
            evaluated,
            results,
        }
    }

    /// The dictionary the codes of the string function at `k` index: its distinct
    /// results so far.
    pub fn mapped_dictionary(&self, k: usize) -> Dictionary {
        self.results.get(k).map_or_else(
            || MappedResults::default().dictionary(),
            |results| results.dictionary(),
        )
    }

    /// Every table for `batch`, uploaded for `owner`, in the order the kernel takes
    /// them.
    pub fn upload(
        &mut self,
        device: &GpuDevice,
        owner: &str,
        batch: &DeviceBatch,
    ) -> Result<Vec<DeviceBuffer>, DeviceError> {
        (0..self.lookups.len())
            .map(|k| {
                let table = self.table(k, batch)?;
                DeviceBuffer::upload(device, owner, table)
            })
            .collect()
    }

    fn table(&mut self, k: usize, batch: &DeviceBatch) -> Result<&[u8], DeviceError> {
        let (lookup, mapping) = match &self.lookups[k] {
            HostTable::Dictionary(lookup) => (lookup, false),
            HostTable::Mapping(mapping) => (&mapping.function, true),
            HostTable::Scalar(parameter) => {
                if self.tables[k].is_empty() {
                    self.tables[k] = scalar_parameter_bytes(parameter)?;
                }
                return Ok(&self.tables[k]);
            }
        };
        let Some(DeviceForm::DictionaryCodes { dictionary }) =
            batch.columns.get(lookup.input).map(|c| &c.form)
        else {
            return Err(DeviceError::Internal(format!(
                "string expression on column {} without dictionary codes",
                lookup.input
            )));
        };
        let table = &mut self.tables[k];
        let results = &mut self.results[k];
        let width = if mapping { MAPPED_ENTRY_BYTES } else { 1 };
        let source = match dictionary {
            Dictionary::Growing { source, .. } => Some(source),
            Dictionary::Fixed(_) => None,
        };
        if table.is_empty() {
            // A dictionary kept across queries may have this predicate's results.
            match source.and_then(|source| KeptLookups::shared().get(source, lookup)) {
                Some(kept) => {
                    table.extend_from_slice(&kept.table);
                    self.evaluated[k] = kept.evaluated;
                    if let Some(kept_results) = kept.results {
                        *results = kept_results;
                    }
                }
                None => {
                    let null: StringArray = vec![None::<&str>].into();
                    table.extend(entries(lookup, mapping.then_some(&mut *results), &null)?);
                }
            }
        }
        let known = self.evaluated[k];
        let coded = dictionary.coded_len();
        if coded > known {
            // Drops the stand-in for code 0 written while no value was coded.
            table.truncate(width * (1 + known));
            let fresh = dictionary.slice(known, coded - known)?;
            table.extend(entries(lookup, mapping.then_some(&mut *results), &fresh)?);
            self.evaluated[k] = coded;
            // Kept once a stream, from its first batch: a kept dictionary is whole
            // then; a stream's own one dies with it.
            if known == 0
                && let Some(source) = source
            {
                let results = mapping.then(|| Arc::clone(&*results));
                KeptLookups::shared().put(source, lookup, table, coded, results);
            }
        }
        if table.len() < 2 * width {
            // No value coded yet: every row carrying code 0 is NULL, so code 0 stands in
            // with the NULL result until a first value replaces it.
            table.extend_from_within(..width);
        }
        Ok(table)
    }
}

/// The table entries of `lookup` for each of `strings`: a predicate's results, or a
/// string function's codes into `results`.
fn entries(
    lookup: &DictionaryLookup,
    results: Option<&mut Arc<MappedResults>>,
    strings: &StringArray,
) -> Result<Vec<u8>, DeviceError> {
    match results {
        Some(results) => Arc::make_mut(results).map(lookup, strings),
        None => evaluate_lookup(lookup, strings),
    }
}

/// String predicates' results per dictionary value, kept for the next query over
/// the same dictionary: an in-memory table's string column keeps its dictionary
/// across queries (`string_code_cache.rs`), and a predicate over many of its values
/// is worth evaluating once (TPC-H Q22's `substr(c_phone, 1, 2) IN (...)` over
/// 1.5 M phone numbers, 66 ms of each run at SF10 on the H100, 2026-12-07). A
/// dictionary is held weakly: one dropped takes its results with it.
struct KeptLookups {
    entries: Mutex<Vec<KeptLookup>>,
}

struct KeptLookup {
    dictionary: Weak<GrowingDictionary>,
    /// The predicate (compared as DataFusion compares expressions: literals with
    /// their types) and the type it reads.
    predicate: Arc<dyn PhysicalExpr>,
    data_type: DataType,
    /// Entry 0 for NULL, then one per value of the first `evaluated` values.
    table: Arc<Vec<u8>>,
    evaluated: usize,
    /// A string function's distinct results, which its table's codes index.
    results: Option<Arc<MappedResults>>,
}

/// What [`KeptLookups::get`] finds.
struct Kept {
    table: Arc<Vec<u8>>,
    evaluated: usize,
    results: Option<Arc<MappedResults>>,
}

/// Most results kept: the oldest goes first.
const KEPT_LOOKUPS: usize = 64;

/// Fewest values a dictionary needs for its results to be kept.
const KEPT_LOOKUP_VALUES: usize = 4096;

impl KeptLookups {
    fn shared() -> &'static Self {
        static SHARED: OnceLock<KeptLookups> = OnceLock::new();
        SHARED.get_or_init(|| Self {
            entries: Mutex::new(Vec::new()),
        })
    }

    fn is_for(entry: &KeptLookup, lookup: &DictionaryLookup) -> bool {
        entry.data_type == lookup.data_type && entry.predicate.as_ref() == lookup.predicate.as_ref()
    }

    /// The kept results of `lookup` over `dictionary`, and how many values they cover.
    fn get(&self, dictionary: &Arc<GrowingDictionary>, lookup: &DictionaryLookup) -> Option<Kept> {
        let entries = self.lock();
        entries
            .iter()
            .find(|entry| {
                Self::is_for(entry, lookup)
                    && entry
                        .dictionary
                        .upgrade()
                        .is_some_and(|held| Arc::ptr_eq(&held, dictionary))
            })
            .map(|entry| Kept {
                table: Arc::clone(&entry.table),
                evaluated: entry.evaluated,
                results: entry.results.clone(),
            })
    }

    fn put(
        &self,
        dictionary: &Arc<GrowingDictionary>,
        lookup: &DictionaryLookup,
        table: &[u8],
        evaluated: usize,
        results: Option<Arc<MappedResults>>,
    ) {
        if evaluated < KEPT_LOOKUP_VALUES || !depends_on_values_only(&lookup.predicate) {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|entry| {
            entry.dictionary.strong_count() > 0
                && !(Self::is_for(entry, lookup)
                    && std::ptr::eq(entry.dictionary.as_ptr(), Arc::as_ptr(dictionary)))
        });
        if entries.len() >= KEPT_LOOKUPS {
            entries.remove(0);
        }
        entries.push(KeptLookup {
            dictionary: Arc::downgrade(dictionary),
            predicate: Arc::clone(&lookup.predicate),
            data_type: lookup.data_type.clone(),
            table: Arc::new(table.to_vec()),
            evaluated,
            results,
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<KeptLookup>> {
        // Each change is made in full under the lock.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `predicate`'s result depends on its column's value alone: nothing
/// volatile, no subquery's result (which another query may compute differently).
fn depends_on_values_only(predicate: &Arc<dyn PhysicalExpr>) -> bool {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
    let mut plain = !is_volatile(predicate);
    let _ = predicate.apply(|expr| {
        if expr.downcast_ref::<ScalarSubqueryExpr>().is_some() {
            plain = false;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    plain
}

/// A scalar parameter's value in its device form at byte 0 (a boolean as one byte),
/// its validity at [`SCALAR_VALIDITY_OFFSET`].
fn scalar_parameter_bytes(parameter: &ScalarParameter) -> Result<Vec<u8>, DeviceError> {
    let failed = |e: &dyn std::fmt::Display| {
        DeviceError::Internal(format!("reading {} for the GPU: {e}", parameter.expr))
    };
    let empty = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let value = parameter
        .expr
        .evaluate(&empty)
        .and_then(|value| value.into_array(1))
        .map_err(|e| failed(&e))?;
    let value = cast(&value, &parameter.data_type).map_err(|e| failed(&e))?;
    let mut bytes = vec![0u8; SCALAR_PARAMETER_BYTES];
    if value.len() != 1 || value.is_null(0) {
        return Ok(bytes);
    }
    bytes[SCALAR_VALIDITY_OFFSET] = 1;
    if let Some(flags) = value.as_boolean_opt() {
        bytes[0] = u8::from(flags.value(0));
        return Ok(bytes);
    }
    let column =
        to_device_layout(value.as_ref(), &LayoutOptions::default()).map_err(|e| failed(&e))?;
    let width = column.values.len();
    if width > SCALAR_VALIDITY_OFFSET {
        return Err(failed(&format!("a value of {width} bytes")));
    }
    bytes[..width].copy_from_slice(column.values.as_slice());
    Ok(bytes)
}

/// Fewest new dictionary values a thread of [`evaluate_lookup`] takes: a column of
/// mostly distinct strings adds one value a row (TPC-H Q22's `substr(c_phone, 1, 2) IN
/// (...)` over 1.5 M phone numbers took 142 ms on one core at SF10, H100).
const LOOKUP_VALUES_PER_THREAD: usize = 64 * 1024;

/// The predicate's result for each of `strings`: 0 false, 1 true, 2 NULL, computed by
/// DataFusion on the CPU exactly as the CPU engine would; many values are split over
/// the cores, each slice evaluated on its own.
fn evaluate_lookup(
    lookup: &DictionaryLookup,
    strings: &StringArray,
) -> Result<Vec<u8>, DeviceError> {
    let slices = in_slices(strings, |slice| evaluate_lookup_slice(lookup, slice))?;
    Ok(slices.concat())
}

/// `evaluate` over `strings`, split over the cores when there are many: one result
/// per slice, in order.
pub(super) fn in_slices<T: Send>(
    strings: &StringArray,
    evaluate: impl Fn(&StringArray) -> Result<T, DeviceError> + Sync,
) -> Result<Vec<T>, DeviceError> {
    // Most batches add few values: they never ask how many cores there are (which
    // reads the process's cgroup limits).
    if strings.len() < 2 * LOOKUP_VALUES_PER_THREAD {
        return Ok(vec![evaluate(strings)?]);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(strings.len() / LOOKUP_VALUES_PER_THREAD).max(1);
    let per_thread = strings.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..strings.len())
            .step_by(per_thread)
            .map(|start| {
                let len = per_thread.min(strings.len() - start);
                let slice = strings.slice(start, len);
                let evaluate = &evaluate;
                scope.spawn(move || evaluate(&slice))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(DeviceError::Internal(
                        "a thread evaluating a string expression on its dictionary panicked".into(),
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
    })
}

/// [`evaluate_lookup`] over one slice of the values, on the calling thread.
fn evaluate_lookup_slice(
    lookup: &DictionaryLookup,
    strings: &StringArray,
) -> Result<Vec<u8>, DeviceError> {
    let result = evaluate_on_values(lookup, strings)?;
    let Some(result) = result.as_boolean_opt() else {
        return Err(DeviceError::Internal(
            "evaluating a string predicate on its dictionary: the predicate is not boolean".into(),
        ));
    };
    Ok((0..result.len())
        .map(|i| match (result.is_null(i), result.value(i)) {
            (true, _) => 2,
            (false, true) => 1,
            (false, false) => 0,
        })
        .collect())
}

/// `lookup`'s expression over `strings`, on the calling thread, by DataFusion.
pub(super) fn evaluate_on_values(
    lookup: &DictionaryLookup,
    strings: &StringArray,
) -> Result<ArrayRef, DeviceError> {
    let failed = |e: &dyn std::fmt::Display| {
        DeviceError::Internal(format!(
            "evaluating a string expression on its dictionary: {e}"
        ))
    };
    let array = cast(strings, &lookup.data_type).map_err(|e| failed(&e))?;
    let schema = Arc::new(Schema::new(vec![Field::new(
        &lookup.name,
        lookup.data_type.clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(schema, vec![array]).map_err(|e| failed(&e))?;
    // Every string of the dictionary is evaluated, also strings only rows an earlier
    // filter drops hold: an error here is a row fault, so the CPU reruns the work and
    // answers (or fails) as DataFusion does.
    lookup
        .predicate
        .evaluate(&batch)
        .and_then(|value| value.into_array(batch.num_rows()))
        .map_err(|e| {
            DeviceError::RowFault(format!(
                "a string expression failed on a dictionary value: {e}"
            ))
        })
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::logical_expr::physical_planning_context::{
        ScalarSubqueryResults, SubqueryIndex,
    };
    use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
    use datafusion::scalar::ScalarValue;

    use super::*;

    fn parameter(data_type: DataType, value: ScalarValue) -> ScalarParameter {
        let results = ScalarSubqueryResults::new(1);
        results.set(SubqueryIndex::new(0), value).unwrap();
        ScalarParameter {
            expr: Arc::new(ScalarSubqueryExpr::new(
                data_type.clone(),
                true,
                SubqueryIndex::new(0),
                results,
            )),
            data_type,
        }
    }

    #[test]
    fn scalar_parameters_take_the_kernels_layout() {
        // A decimal of precision <= 18 as the device's i64.
        let price = parameter(
            DataType::Decimal128(15, 2),
            ScalarValue::Decimal128(Some(-12_345), 15, 2),
        );
        let bytes = scalar_parameter_bytes(&price).unwrap();
        assert_eq!(bytes.len(), SCALAR_PARAMETER_BYTES);
        assert_eq!(bytes[..8], (-12_345i64).to_le_bytes());
        assert_eq!(bytes[SCALAR_VALIDITY_OFFSET], 1);
        // A 38-digit decimal as 16 bytes.
        let wide = parameter(
            DataType::Decimal128(38, 15),
            ScalarValue::Decimal128(Some(i128::MIN + 1), 38, 15),
        );
        let bytes = scalar_parameter_bytes(&wide).unwrap();
        assert_eq!(bytes[..16], (i128::MIN + 1).to_le_bytes());
        // A subquery of no rows is NULL: validity 0.
        let none = parameter(DataType::Int64, ScalarValue::Int64(None));
        let bytes = scalar_parameter_bytes(&none).unwrap();
        assert!(bytes.iter().all(|b| *b == 0));
        let flag = parameter(DataType::Boolean, ScalarValue::Boolean(Some(true)));
        assert_eq!(scalar_parameter_bytes(&flag).unwrap()[0], 1);
    }

    #[test]
    fn many_dictionary_values_are_evaluated_in_slices_as_one() {
        use datafusion::logical_expr::Operator;
        use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
        // `s < '1'`: true for values starting with '0', NULL for NULL.
        let predicate = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("s", 0)),
            Operator::Lt,
            Arc::new(Literal::new(ScalarValue::Utf8(Some("1".into())))),
        ));
        let lookup = DictionaryLookup {
            input: 0,
            predicate,
            name: "s".into(),
            data_type: DataType::Utf8,
        };
        let values: StringArray = (0..300_000)
            .map(|i| (i % 7 != 0).then(|| format!("{}", i % 10)))
            .collect();
        let whole = evaluate_lookup_slice(&lookup, &values).unwrap();
        assert_eq!(evaluate_lookup(&lookup, &values).unwrap(), whole);
        let expected: Vec<u8> = (0..300_000)
            .map(|i| match (i % 7, i % 10) {
                (0, _) => 2,
                (_, 0) => 1,
                _ => 0,
            })
            .collect();
        assert_eq!(whole, expected);
    }

    #[test]
    fn results_over_a_dictionary_are_kept_while_it_lives_and_only_for_plain_predicates() {
        use datafusion::logical_expr::Operator;
        use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
        let predicate = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("s", 0)),
            Operator::Eq,
            Arc::new(Literal::new(ScalarValue::Utf8(Some("kept".into())))),
        ));
        let lookup = DictionaryLookup {
            input: 0,
            predicate,
            name: "s".into(),
            data_type: DataType::Utf8,
        };
        let dictionary = Arc::new(GrowingDictionary::default());
        let table = vec![2u8; 1 + KEPT_LOOKUP_VALUES];
        let kept = KeptLookups::shared();
        kept.put(&dictionary, &lookup, &table, KEPT_LOOKUP_VALUES, None);
        let found = kept.get(&dictionary, &lookup).unwrap();
        assert_eq!(
            (found.table.len(), found.evaluated),
            (table.len(), KEPT_LOOKUP_VALUES)
        );
        assert!(found.results.is_none());
        // Another dictionary, another predicate: nothing.
        assert!(
            kept.get(&Arc::new(GrowingDictionary::default()), &lookup)
                .is_none()
        );
        let other = DictionaryLookup {
            data_type: DataType::Utf8View,
            ..lookup.clone()
        };
        assert!(kept.get(&dictionary, &other).is_none());
        // Few values are not worth keeping.
        let small = Arc::new(GrowingDictionary::default());
        kept.put(&small, &lookup, &[0, 1], 1, None);
        assert!(kept.get(&small, &lookup).is_none());
        // A subquery's result may differ in the next query.
        let results = ScalarSubqueryResults::new(1);
        let subquery = Arc::new(ScalarSubqueryExpr::new(
            DataType::Utf8,
            true,
            SubqueryIndex::new(0),
            results,
        ));
        let compared = DictionaryLookup {
            predicate: Arc::new(BinaryExpr::new(
                Arc::new(Column::new("s", 0)),
                Operator::Eq,
                subquery,
            )),
            ..lookup.clone()
        };
        kept.put(&dictionary, &compared, &table, KEPT_LOOKUP_VALUES, None);
        assert!(kept.get(&dictionary, &compared).is_none());
    }

    #[test]
    fn kept_mapping_results_are_shared_until_a_stream_maps_new_values() {
        let function = crate::ops::mapped_strings::tests::substr_of_first_two(DataType::Utf8);
        let first: StringArray = vec![Some("13-1"), Some("27-2")].into();
        let mut kept = Arc::new(MappedResults::default());
        entries(&function, Some(&mut kept), &first).unwrap();
        // A later stream starts from the kept results without copying them...
        let mut stream = Arc::clone(&kept);
        assert!(Arc::ptr_eq(&stream, &kept));
        // ...and copies them once it maps values the kept dictionary did not have.
        let later: StringArray = vec![Some("31-3")].into();
        let table = entries(&function, Some(&mut stream), &later).unwrap();
        assert_eq!(table, 2i32.to_le_bytes());
        assert!(!Arc::ptr_eq(&stream, &kept));
        let decode = |results: &MappedResults| results.dictionary().coded_len();
        assert_eq!((decode(&kept), decode(&stream)), (2, 3));
    }

    #[test]
    fn a_scalar_read_before_its_subquery_ran_is_an_error() {
        let results = ScalarSubqueryResults::new(1);
        let pending = ScalarParameter {
            expr: Arc::new(ScalarSubqueryExpr::new(
                DataType::Int64,
                true,
                SubqueryIndex::new(0),
                results,
            )),
            data_type: DataType::Int64,
        };
        assert!(scalar_parameter_bytes(&pending).is_err());
    }
}
