//! The device tables of a kernel's string predicates (see
//! [`crate::codegen::expr::DictionaryLookup`]): one byte per dictionary entry, computed
//! by DataFusion on the CPU over each distinct string once.
//!
//! A stream's dictionaries only grow, so each batch evaluates only the strings its
//! dictionary added since the last one.

use std::sync::Arc;

use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceError, DeviceForm, GpuDevice};
use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, Schema};

use crate::codegen::expr::DictionaryLookup;

/// Each string predicate's table so far: entry 0 for NULL, then one per code.
#[derive(Debug)]
pub struct LookupTables {
    lookups: Vec<DictionaryLookup>,
    tables: Vec<Vec<u8>>,
    /// How many coded values each table holds a result for.
    evaluated: Vec<usize>,
}

impl LookupTables {
    pub fn new(lookups: Vec<DictionaryLookup>) -> Self {
        let tables = vec![Vec::new(); lookups.len()];
        let evaluated = vec![0; lookups.len()];
        Self {
            lookups,
            tables,
            evaluated,
        }
    }

    /// Every predicate's table for `batch`'s dictionaries, uploaded for `owner`, in
    /// the order the kernel takes them.
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
        let lookup = &self.lookups[k];
        let Some(DeviceForm::DictionaryCodes { dictionary }) =
            batch.columns.get(lookup.input).map(|c| &c.form)
        else {
            return Err(DeviceError::Internal(format!(
                "string predicate on column {} without dictionary codes",
                lookup.input
            )));
        };
        let table = &mut self.tables[k];
        if table.is_empty() {
            let null: StringArray = vec![None::<&str>].into();
            table.extend(evaluate_lookup(lookup, &null)?);
        }
        let known = self.evaluated[k];
        let coded = dictionary.coded_len();
        if coded > known {
            // Drops the stand-in for code 0 written while no value was coded.
            table.truncate(1 + known);
            let fresh = dictionary.slice(known, coded - known)?;
            table.extend(evaluate_lookup(lookup, &fresh)?);
            self.evaluated[k] = coded;
        }
        if table.len() < 2 {
            // No value coded yet: every row carrying code 0 is NULL, so code 0 stands in
            // with the NULL result until a first value replaces it.
            table.push(table[0]);
        }
        Ok(table)
    }
}

/// The predicate's result for each of `strings`: 0 false, 1 true, 2 NULL, computed by
/// DataFusion on the CPU exactly as the CPU engine would.
fn evaluate_lookup(
    lookup: &DictionaryLookup,
    strings: &StringArray,
) -> Result<Vec<u8>, DeviceError> {
    let failed = |e: &dyn std::fmt::Display| {
        DeviceError::Internal(format!(
            "evaluating a string predicate on its dictionary: {e}"
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
    let result = lookup
        .predicate
        .evaluate(&batch)
        .and_then(|value| value.into_array(batch.num_rows()))
        .map_err(|e| {
            DeviceError::RowFault(format!(
                "a string predicate failed on a dictionary value: {e}"
            ))
        })?;
    let Some(result) = result.as_boolean_opt() else {
        return Err(failed(&"the predicate is not boolean"));
    };
    Ok((0..result.len())
        .map(|i| match (result.is_null(i), result.value(i)) {
            (true, _) => 2,
            (false, true) => 1,
            (false, false) => 0,
        })
        .collect())
}
