//! Spark literals as DataFusion scalar values.

use std::sync::Arc;

use arrow::datatypes::{DataType, TimeUnit, i256};
use datafusion::common::ScalarValue;

use crate::error::{ConnectError, ConnectResult};
use crate::proto::expression::Literal;
use crate::proto::expression::literal::LiteralType;
use crate::types;

/// The scalar value of a literal.
pub fn literal_to_scalar(literal: &Literal) -> ConnectResult<ScalarValue> {
    let Some(value) = &literal.literal_type else {
        return Err(ConnectError::invalid("a literal without a value"));
    };
    Ok(match value {
        LiteralType::Null(data_type) => ScalarValue::try_from(&types::from_spark(data_type)?)?,
        LiteralType::Binary(bytes) => ScalarValue::Binary(Some(bytes.clone())),
        LiteralType::Boolean(b) => ScalarValue::Boolean(Some(*b)),
        LiteralType::Byte(v) => ScalarValue::Int8(Some(narrow(*v)?)),
        LiteralType::Short(v) => ScalarValue::Int16(Some(narrow(*v)?)),
        LiteralType::Integer(v) => ScalarValue::Int32(Some(*v)),
        LiteralType::Long(v) => ScalarValue::Int64(Some(*v)),
        LiteralType::Float(v) => ScalarValue::Float32(Some(*v)),
        LiteralType::Double(v) => ScalarValue::Float64(Some(*v)),
        // PySpark sends `lit(Decimal("0.05"))` with the default DecimalType(10, 0); the
        // value's own digits decide its type, as in Spark.
        LiteralType::Decimal(d) => decimal(&d.value, None, None)?,
        LiteralType::String(s) => ScalarValue::Utf8(Some(s.clone())),
        LiteralType::Date(days) => ScalarValue::Date32(Some(*days)),
        LiteralType::Timestamp(micros) => {
            ScalarValue::TimestampMicrosecond(Some(*micros), Some(Arc::from("UTC")))
        }
        LiteralType::TimestampNtz(micros) => ScalarValue::TimestampMicrosecond(Some(*micros), None),
        LiteralType::DayTimeInterval(micros) => ScalarValue::IntervalMonthDayNano(Some(
            arrow::datatypes::IntervalMonthDayNano::new(0, 0, micros.saturating_mul(1000)),
        )),
        LiteralType::YearMonthInterval(months) => ScalarValue::IntervalYearMonth(Some(*months)),
        LiteralType::CalendarInterval(i) => {
            ScalarValue::IntervalMonthDayNano(Some(arrow::datatypes::IntervalMonthDayNano::new(
                i.months,
                i.days,
                i.microseconds.saturating_mul(1000),
            )))
        }
        LiteralType::Array(array) => {
            let values = array
                .elements
                .iter()
                .map(literal_to_scalar)
                .collect::<ConnectResult<Vec<_>>>()?;
            let element_type = match &array.element_type {
                Some(t) => types::from_spark(t)?,
                None => values
                    .first()
                    .map_or(DataType::Null, ScalarValue::data_type),
            };
            ScalarValue::List(ScalarValue::new_list_nullable(&values, &element_type))
        }
        LiteralType::SpecializedArray(_)
        | LiteralType::Map(_)
        | LiteralType::Struct(_)
        | LiteralType::Time(_) => {
            return Err(ConnectError::unsupported("map, struct and time literals"));
        }
    })
}

fn narrow<T: TryFrom<i32>>(value: i32) -> ConnectResult<T> {
    T::try_from(value).map_err(|_| ConnectError::invalid(format!("literal {value} out of range")))
}

/// A decimal literal from its text, e.g. `"-12.50"` with precision 4, scale 2.
fn decimal(text: &str, precision: Option<i32>, scale: Option<i32>) -> ConnectResult<ScalarValue> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let invalid = || ConnectError::invalid(format!("invalid decimal literal '{text}'"));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return Err(invalid());
    }
    let text_scale = i32::try_from(fraction.len()).map_err(|_| invalid())?;
    let scale = scale.unwrap_or(text_scale);
    let digits_count = i32::try_from(whole.trim_start_matches('0').len()).map_err(|_| invalid())?;
    let precision = precision.unwrap_or((digits_count + scale).max(1));
    let mut unscaled: i128 = 0;
    let mut padded = String::from(whole);
    padded.push_str(fraction);
    for _ in text_scale..scale {
        padded.push('0');
    }
    let keep =
        padded.len() - usize::try_from((text_scale - scale).max(0)).map_err(|_| invalid())?;
    for c in padded[..keep].chars() {
        let digit = i128::from(c.to_digit(10).ok_or_else(invalid)?);
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|v| v.checked_add(digit))
            .ok_or_else(invalid)?;
    }
    if negative {
        unscaled = -unscaled;
    }
    let p = u8::try_from(precision).map_err(|_| invalid())?;
    let s = i8::try_from(scale).map_err(|_| invalid())?;
    if p > 38 {
        return Ok(ScalarValue::Decimal256(
            Some(i256::from_i128(unscaled)),
            p,
            s,
        ));
    }
    Ok(ScalarValue::Decimal128(Some(unscaled), p, s))
}

/// The literal's text as Spark shows it in a column name (`1`, `a`, `1.5`, `true`).
pub fn literal_display(literal: &Literal) -> String {
    match &literal.literal_type {
        Some(LiteralType::Null(_)) | None => "NULL".to_string(),
        Some(LiteralType::Boolean(b)) => b.to_string(),
        Some(LiteralType::Byte(v) | LiteralType::Short(v) | LiteralType::Integer(v)) => {
            v.to_string()
        }
        Some(LiteralType::Long(v)) => format!("{v}"),
        Some(LiteralType::Float(v)) => format!("{v:?}"),
        Some(LiteralType::Double(v)) => format!("{v:?}"),
        Some(LiteralType::Decimal(d)) => d.value.clone(),
        Some(LiteralType::String(s)) => s.clone(),
        Some(LiteralType::Date(_)) | Some(LiteralType::Timestamp(_)) | Some(_) => {
            literal_to_scalar(literal).map_or_else(|_| "literal".to_string(), |v| v.to_string())
        }
    }
}

/// The SQL text of a literal, for substituting query parameters.
pub fn literal_sql(literal: &Literal) -> ConnectResult<String> {
    let value = literal_to_scalar(literal)?;
    if value.is_null() {
        return Ok("NULL".to_string());
    }
    Ok(match &value {
        ScalarValue::Utf8(Some(s)) => format!("'{}'", s.replace('\'', "''")),
        ScalarValue::Date32(_) => format!("DATE '{value}'"),
        ScalarValue::TimestampMicrosecond(_, _) => {
            let cast = value.cast_to(&DataType::Timestamp(TimeUnit::Microsecond, None))?;
            format!("TIMESTAMP '{cast}'")
        }
        ScalarValue::Decimal128(_, _, _) | ScalarValue::Decimal256(_, _, _) => {
            format!("CAST('{value}' AS {})", value.data_type())
        }
        ScalarValue::Float32(Some(v)) => format!("CAST({v:?} AS FLOAT)"),
        ScalarValue::Float64(Some(v)) => format!("{v:?}"),
        ScalarValue::Int8(_) | ScalarValue::Int16(_) | ScalarValue::Int32(_) => value.to_string(),
        ScalarValue::Int64(Some(v)) => format!("CAST({v} AS BIGINT)"),
        ScalarValue::Boolean(Some(b)) => b.to_string().to_uppercase(),
        _ => {
            return Err(ConnectError::unsupported(format!(
                "a parameter of type {}",
                value.data_type()
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn decimal_literals_keep_their_digits() {
        assert_eq!(
            decimal("-12.50", Some(4), Some(2)).unwrap(),
            ScalarValue::Decimal128(Some(-1250), 4, 2)
        );
        assert_eq!(
            decimal("0.05", None, None).unwrap(),
            ScalarValue::Decimal128(Some(5), 2, 2)
        );
        assert_eq!(
            decimal("3.1", None, None).unwrap(),
            ScalarValue::Decimal128(Some(31), 2, 1)
        );
        assert_eq!(
            decimal("7", Some(10), Some(3)).unwrap(),
            ScalarValue::Decimal128(Some(7000), 10, 3)
        );
        assert!(decimal("1.2.3", None, None).is_err());
        assert!(decimal("", None, None).is_err());
    }
}
