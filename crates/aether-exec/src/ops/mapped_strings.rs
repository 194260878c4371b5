//! The distinct results of a string function over a dictionary
//! ([`crate::codegen::expr::DictionaryMapping`]), and the table of codes a kernel maps
//! a row's code through.
//!
//! `substr(c_phone, 1, 2)` over 1.5 M phone numbers has 25 results: the function runs
//! once per dictionary value on the CPU (by DataFusion, as the CPU engine would), each
//! value's result gets a code into the results' own dictionary, and the GPU groups by
//! those codes. The results only grow with the input dictionary, so codes handed out
//! stay valid for the whole stream.

use std::collections::HashMap;

use aether_gpu::DeviceError;
use aether_gpu::dictionary::Dictionary;
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;

use super::host_tables::{evaluate_on_values, in_slices};
use crate::codegen::expr::DictionaryLookup;

/// Bytes of one table entry: an `i32` code, -1 for NULL.
pub(super) const MAPPED_ENTRY_BYTES: usize = 4;

/// A string function's distinct results in the order first met; a result's code is
/// its position.
#[derive(Debug, Clone, Default)]
pub(super) struct MappedResults {
    codes: HashMap<String, i32>,
    values: Vec<String>,
}

impl MappedResults {
    /// The table entries (little-endian `i32` codes, -1 for NULL) of `function`'s
    /// result for each of `strings`, adding results not met before.
    pub(super) fn map(
        &mut self,
        function: &DictionaryLookup,
        strings: &StringArray,
    ) -> Result<Vec<u8>, DeviceError> {
        let slices = in_slices(strings, |slice| evaluate_on_values(function, slice))?;
        let mut table = Vec::with_capacity(MAPPED_ENTRY_BYTES * strings.len());
        for slice in slices {
            let results = cast(&slice, &DataType::Utf8).map_err(|e| {
                DeviceError::Internal(format!(
                    "a string function's results as strings ({}): {e}",
                    slice.data_type()
                ))
            })?;
            let Some(results) = results.as_any().downcast_ref::<StringArray>() else {
                return Err(DeviceError::Internal(
                    "a string function's results are not strings".into(),
                ));
            };
            for result in results {
                let code = match result {
                    Some(value) => self.code(value)?,
                    None => -1,
                };
                table.extend_from_slice(&code.to_le_bytes());
            }
        }
        Ok(table)
    }

    fn code(&mut self, value: &str) -> Result<i32, DeviceError> {
        if let Some(code) = self.codes.get(value) {
            return Ok(*code);
        }
        let code = i32::try_from(self.values.len()).map_err(|_| {
            DeviceError::Internal("a string function has more than 2^31 distinct results".into())
        })?;
        self.codes.insert(value.to_string(), code);
        self.values.push(value.to_string());
        Ok(code)
    }

    /// The dictionary the codes index.
    pub(super) fn dictionary(&self) -> Dictionary {
        Dictionary::fixed(StringArray::from_iter_values(&self.values))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int32Array;
    use datafusion::functions::unicode::substr;
    use datafusion::physical_expr::PhysicalExpr;
    use datafusion::physical_expr::expressions::{Column, lit};

    use super::*;

    /// `substr(s, 1, 2)` over column `s` of `data_type`, as a dictionary reads it.
    pub(in crate::ops) fn substr_of_first_two(data_type: DataType) -> DictionaryLookup {
        let schema = datafusion::arrow::datatypes::Schema::new(vec![
            datafusion::arrow::datatypes::Field::new("s", data_type.clone(), true),
        ]);
        let function = datafusion::physical_expr::ScalarFunctionExpr::try_new(
            substr(),
            vec![
                Arc::new(Column::new("s", 0)) as Arc<dyn PhysicalExpr>,
                lit(1i64),
                lit(2i64),
            ],
            &schema,
            Arc::new(datafusion::config::ConfigOptions::default()),
        )
        .unwrap();
        DictionaryLookup {
            input: 0,
            predicate: Arc::new(function),
            name: "s".into(),
            data_type,
        }
    }

    fn codes(table: &[u8]) -> Vec<i32> {
        table
            .chunks(MAPPED_ENTRY_BYTES)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn each_distinct_result_gets_one_code_kept_as_the_dictionary_grows() {
        for data_type in [DataType::Utf8, DataType::Utf8View] {
            let function = substr_of_first_two(data_type);
            let mut results = MappedResults::default();
            let first: StringArray = vec![Some("13-555"), None, Some("27-1"), Some("13-9")].into();
            assert_eq!(
                codes(&results.map(&function, &first).unwrap()),
                [0, -1, 1, 0]
            );
            // Later values: known results keep their codes, new ones come after.
            let later: StringArray = vec![Some("27-0"), Some("é"), Some("")].into();
            assert_eq!(codes(&results.map(&function, &later).unwrap()), [1, 2, 3]);
            let decoded = results
                .dictionary()
                .decode(&Int32Array::from(vec![0, 1, 2, 3]))
                .unwrap();
            let decoded: Vec<_> = decoded.iter().map(Option::unwrap).collect();
            assert_eq!(decoded, ["13", "27", "é", ""]);
        }
    }

    #[test]
    fn many_values_are_mapped_in_slices_as_one() {
        let function = substr_of_first_two(DataType::Utf8);
        let strings: StringArray = (0..300_000)
            .map(|i| (i % 11 != 0).then(|| format!("{:02}-{i}", i % 25)))
            .collect();
        let table = MappedResults::default().map(&function, &strings).unwrap();
        let codes = codes(&table);
        assert_eq!(codes.len(), 300_000);
        // The first two characters, coded in the order first met.
        let mut seen: Vec<String> = Vec::new();
        let expected: Vec<i32> = strings
            .iter()
            .map(|s| {
                let Some(s) = s else { return -1 };
                let prefix = s[..2].to_string();
                let code = seen.iter().position(|p| *p == prefix).unwrap_or_else(|| {
                    seen.push(prefix);
                    seen.len() - 1
                });
                code as i32
            })
            .collect();
        assert_eq!(codes, expected);
    }
}
