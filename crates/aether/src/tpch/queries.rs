//! The 22 TPC-H queries with the specification's validation parameters and row limits.
//!
//! Templates come from `tpchgen::q_and_a::queries` (`:1`, `:2`, ... placeholders); the
//! parameters are the ones that produced the official answers in
//! `tpchgen::q_and_a::answers_sf1`. The same text runs in the answer tests, `demo` and
//! `bench`, so a timing is always of a query whose answer is checked.

use crate::error::{AetherError, Result};

/// Query numbers, 1 to 22.
pub const QUERY_NUMBERS: std::ops::RangeInclusive<usize> = 1..=22;

/// The validation parameters of query `n`, in placeholder order (`:1` first).
fn parameters(n: usize, scale_factor: f64) -> Vec<String> {
    let fixed: &[&str] = match n {
        1 => &["90"],
        2 => &["15", "BRASS", "EUROPE"],
        3 => &["BUILDING", "1995-03-15"],
        4 => &["1993-07-01"],
        5 => &["ASIA", "1994-01-01"],
        6 => &["1994-01-01", "0.06", "24"],
        7 => &["FRANCE", "GERMANY"],
        8 => &["BRAZIL", "AMERICA", "ECONOMY ANODIZED STEEL"],
        9 => &["green"],
        10 => &["1993-10-01"],
        // The second parameter is FRACTION = 0.0001 / SF, computed below.
        11 => &["GERMANY"],
        12 => &["MAIL", "SHIP", "1994-01-01"],
        13 => &["special", "requests"],
        14 => &["1995-09-01"],
        15 => &["1996-01-01"],
        16 => &[
            "Brand#45",
            "MEDIUM POLISHED",
            "49",
            "14",
            "23",
            "45",
            "19",
            "3",
            "36",
            "9",
        ],
        17 => &["Brand#23", "MED BOX"],
        18 => &["300"],
        19 => &["Brand#12", "Brand#23", "Brand#34", "1", "10", "20"],
        20 => &["forest", "1994-01-01", "CANADA"],
        21 => &["SAUDI ARABIA"],
        22 => &["13", "31", "23", "29", "30", "18", "17"],
        _ => &[],
    };
    let mut values: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    if n == 11 {
        values.push(format!("{}", 0.0001 / scale_factor));
    }
    values
}

/// The specification's row limit of query `n`, if it has one.
pub fn row_limit(n: usize) -> Option<usize> {
    match n {
        2 | 18 | 21 => Some(100),
        3 => Some(10),
        10 => Some(20),
        _ => None,
    }
}

/// The SQL of TPC-H query `n` at `scale_factor`, ready to run as a script (Q15 is three
/// statements: create view, query, drop view).
pub fn query_sql(n: usize, scale_factor: f64) -> Result<String> {
    let template = i32::try_from(n)
        .ok()
        .and_then(tpchgen::q_and_a::queries::query)
        .ok_or_else(|| {
            AetherError::Usage(format!("there is no TPC-H query {n}: expected 1 to 22"))
        })?;
    // The spec's `interval ':1' day (3)` (precision 3) is `interval ':1' day` elsewhere.
    let mut sql = template
        .replace("day (3)", "day")
        .replace("revenue:s", "revenue0");
    let values = parameters(n, scale_factor);
    // Highest placeholder first, so that `:1` does not eat the start of `:10`.
    for (index, value) in values.iter().enumerate().rev() {
        sql = sql.replace(&format!(":{}", index + 1), value);
    }
    if let Some(limit) = row_limit(n) {
        let body = sql.trim_end().trim_end_matches(';');
        sql = format!("{body}\nlimit {limit};");
    }
    Ok(sql)
}

/// Parses a list such as `1,6,14` or `1-5,9` into query numbers.
pub fn parse_query_list(list: &str) -> Result<Vec<usize>> {
    let bad = |item: &str| {
        AetherError::Usage(format!(
            "invalid query '{item}' in '{list}': expected numbers 1 to 22 such as 1,6 or 1-5"
        ))
    };
    let number = |item: &str| -> Result<usize> {
        item.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| QUERY_NUMBERS.contains(n))
            .ok_or_else(|| bad(item))
    };
    let mut queries = Vec::new();
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        match item.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (number(from)?, number(to)?);
                if from > to {
                    return Err(bad(item));
                }
                queries.extend(from..=to);
            }
            None => queries.push(number(item)?),
        }
    }
    if queries.is_empty() {
        return Err(bad(list));
    }
    Ok(queries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_all_substituted() {
        for n in QUERY_NUMBERS {
            let sql = query_sql(n, 1.0).unwrap();
            assert!(!sql.contains(":1"), "Q{n} still has a placeholder:\n{sql}");
        }
    }

    #[test]
    fn q16_substitutes_ten_parameters_in_order() {
        let sql = query_sql(16, 1.0).unwrap();
        assert!(sql.contains("(49, 14, 23, 45, 19, 3, 36, 9)"), "{sql}");
    }

    #[test]
    fn limits_and_fraction_follow_the_spec() {
        assert!(query_sql(3, 1.0).unwrap().ends_with("limit 10;"));
        assert!(query_sql(15, 1.0).unwrap().contains("create view revenue0"));
        assert!(query_sql(11, 10.0).unwrap().contains("* 0.00001"));
        assert!(query_sql(1, 1.0).unwrap().contains("interval '90' day"));
    }

    #[test]
    fn query_lists_parse() {
        assert_eq!(parse_query_list("1,6").unwrap(), vec![1, 6]);
        assert_eq!(parse_query_list("1-3,22").unwrap(), vec![1, 2, 3, 22]);
        assert!(parse_query_list("0").is_err());
        assert!(parse_query_list("23").is_err());
        assert!(parse_query_list("x").is_err());
        assert!(parse_query_list("5-2").is_err());
    }
}
