//! Checks query results against the official TPC-H SF1 answers.
//!
//! The answer files (`tpchgen::q_and_a::answers_sf1`) are pipe-separated text with
//! numbers rounded to two decimals. A result matches when it has the same rows in the
//! same order, strings and dates are equal after trimming the answer file's padding,
//! integers are equal, and decimal numbers are equal at the answer file's rounding.

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::error::{AetherError, Result};

/// The official SF1 answer of query `n`: a header and rows of cells.
fn expected_answer(n: usize) -> Result<Vec<Vec<String>>> {
    let text = i32::try_from(n)
        .ok()
        .and_then(tpchgen::q_and_a::answers_sf1::answer)
        .ok_or_else(|| AetherError::Usage(format!("there is no TPC-H answer for query {n}")))?;
    Ok(text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .skip(1) // the header
        .map(|line| {
            line.split('|')
                .map(|cell| cell.trim().to_string())
                .collect()
        })
        .collect())
}

/// The cells of `batches` as text, row by row.
pub fn result_cells(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AetherError::DataFusion(e.into()))?;
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| f.value(row).to_string().trim().to_string())
                    .collect(),
            );
        }
    }
    Ok(rows)
}

/// Two cells of the answer files are known to be wrong; each is compared the way the
/// file was made, narrowly, rather than loosening every comparison.
///
/// - Q11 `ps_partkey`: the file keeps only the first 4 characters of a 6-wide,
///   right-aligned key (`129760` appears as `1297`, `34452` as ` 344`). The `value`
///   column beside it is intact and still compared exactly.
/// - Q17 `avg_yearly`: the file says 348406.02, but `sum(l_extendedprice) / 7.0` over the
///   587 qualifying rows is 348406.054..., the figure Oracle, MonetDB and Spark print
///   too; the TPC-H specification (2.1.3.5) accepts SUM-derived results within $100.
fn as_recorded(
    n: usize,
    row: usize,
    column: usize,
    expected: &str,
    actual: &str,
) -> (String, String) {
    match (n, row, column) {
        (11, _, 0) => {
            let padded = format!("{actual:>6}");
            let recorded: String = padded.chars().take(4).collect();
            (expected.to_string(), recorded.trim().to_string())
        }
        (17, 0, 0) if expected == "348406.02" => ("348406.05".to_string(), actual.to_string()),
        _ => (expected.to_string(), actual.to_string()),
    }
}

/// True when `actual` equals the answer file's `expected` cell at its rounding.
fn cell_matches(expected: &str, actual: &str) -> bool {
    if expected == actual {
        return true;
    }
    let (Ok(want), Ok(got)) = (expected.parse::<f64>(), actual.parse::<f64>()) else {
        return false;
    };
    match expected.split_once('.') {
        // Rounded to `decimals` places: equal when `got` rounds to the same value.
        Some((_, fraction)) => {
            let half_unit = 0.5 * 10f64.powi(-(fraction.len() as i32));
            (want - got).abs() <= half_unit * (1.0 + 1e-9) + want.abs() * 1e-15
        }
        None => want == got,
    }
}

/// Compares the result of TPC-H query `n` at SF1 with the official answer; the error
/// names the first difference.
pub fn check_sf1_answer(n: usize, batches: &[RecordBatch]) -> Result<(), String> {
    let expected = expected_answer(n).map_err(|e| e.to_string())?;
    let actual = result_cells(batches).map_err(|e| e.to_string())?;
    if expected.len() != actual.len() {
        return Err(format!(
            "Q{n}: expected {} rows, got {}",
            expected.len(),
            actual.len()
        ));
    }
    for (row, (want, got)) in expected.iter().zip(&actual).enumerate() {
        if want.len() != got.len() {
            return Err(format!(
                "Q{n} row {row}: expected {} columns, got {}",
                want.len(),
                got.len()
            ));
        }
        for (column, (w, g)) in want.iter().zip(got).enumerate() {
            let (w, g) = as_recorded(n, row, column, w, g);
            if !cell_matches(&w, &g) {
                return Err(format!(
                    "Q{n} row {row} column {column}: expected '{w}', got '{g}'\n  expected row: {want:?}\n  actual row:   {got:?}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_match_at_the_answer_files_rounding() {
        assert!(cell_matches("25.52", "25.522073"));
        assert!(cell_matches("0.05", "0.049985"));
        assert!(!cell_matches("25.52", "25.53"));
        assert!(cell_matches("37734107.00", "37734107.00"));
        assert!(cell_matches("1478493", "1478493"));
        assert!(!cell_matches("1478493", "1478494"));
        assert!(cell_matches("BRAZIL", "BRAZIL"));
        assert!(!cell_matches("1995-03-15", "1995-03-16"));
    }

    #[test]
    fn known_answer_file_defects_are_compared_as_recorded() {
        assert_eq!(as_recorded(11, 0, 0, "1297", "129760").1, "1297");
        assert_eq!(as_recorded(11, 4, 0, "344", "34452").1, "344");
        assert_eq!(as_recorded(11, 6, 0, "94", "9403").1, "94");
        assert_eq!(
            as_recorded(11, 0, 1, "17538456.86", "17538456.86").1,
            "17538456.86"
        );
        let (want, got) = as_recorded(17, 0, 0, "348406.02", "348406.0542857143");
        assert!(cell_matches(&want, &got));
    }

    #[test]
    fn every_query_has_an_answer() {
        for n in 1..=22 {
            assert!(!expected_answer(n).unwrap().is_empty(), "Q{n}");
        }
    }
}
