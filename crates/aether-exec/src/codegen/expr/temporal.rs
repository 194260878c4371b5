//! Dates in generated kernels: `EXTRACT(YEAR | MONTH | DAY FROM date)` and a date plus
//! or minus a constant interval.
//!
//! Date32 values are days since 1970-01-01 in the proleptic Gregorian calendar; the
//! kernels convert them to and from year, month and day with Howard Hinnant's
//! `civil_from_days` / `days_from_civil`, exact for every Date32. Interval arithmetic
//! follows Arrow's `Date32Type::add_month_day_nano_opt`: months first (a day past the
//! end of the new month becomes its last day, as chrono's `checked_add_months`), then
//! days, then nanoseconds as whole days truncated toward zero. DataFusion raises an error
//! for dates outside chrono's range (about +-262,000 years) where the GPU computes the
//! calendar value; data of that kind is not expected in SQL workloads.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, IntervalDayTime, IntervalMonthDayNano};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::ScalarFunctionExpr;
use datafusion::physical_expr::expressions::Literal;
use datafusion::scalar::ScalarValue;

use super::{ExprCompiler, Value, unsupported};
use crate::codegen::types::CudaType;

/// Helpers of the date kernels, part of every kernel's prelude.
pub(crate) const DATE_PRELUDE: &str = r#"
// Year, month (1-12) and day (1-31) of `days` since 1970-01-01.
__device__ __forceinline__ void aether_civil(int days, long long* y, unsigned* m, unsigned* d) {
    const long long z = (long long)days + 719468;
    const long long era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (long long)yoe + era * 400 + (*m <= 2);
}

// Days since 1970-01-01 of a year, month (1-12) and day.
__device__ __forceinline__ long long aether_days_from_civil(long long y, unsigned m, unsigned d) {
    y -= m <= 2;
    const long long era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

__device__ __forceinline__ int aether_date_part(int days, int part) {
    long long y; unsigned m, d;
    aether_civil(days, &y, &m, &d);
    return part == 0 ? (int)y : (part == 1 ? (int)m : (int)d);
}

// `days` plus `months` (clamped to the new month's last day), then plus `add_days`.
__device__ __forceinline__ int aether_date_add(int days, long long months, long long add_days) {
    if (months != 0) {
        long long y; unsigned m, d;
        aether_civil(days, &y, &m, &d);
        const long long total = y * 12 + (long long)(m - 1) + months;
        const long long ny = total >= 0 ? total / 12 : (total - 11) / 12;
        const unsigned nm = (unsigned)(total - ny * 12) + 1;
        const bool leap = (ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0;
        const unsigned last = nm == 2 ? (leap ? 29u : 28u)
            : ((nm == 4 || nm == 6 || nm == 9 || nm == 11) ? 30u : 31u);
        days = (int)aether_days_from_civil(ny, nm, d < last ? d : last);
    }
    return (int)((long long)days + add_days);
}
"#;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;
const MILLIS_PER_DAY: i64 = 86_400_000;

impl ExprCompiler {
    /// A scalar function call; only `date_part` of a date is generated.
    pub(super) fn scalar_function(
        &mut self,
        expr: &Arc<dyn PhysicalExpr>,
        function: &ScalarFunctionExpr,
    ) -> Option<Value> {
        if function.name() != "date_part" {
            return self.refuse(unsupported(format!(
                "function {} is not generated for the GPU yet: {expr}",
                function.name()
            )));
        }
        let [part, date] = function.args() else {
            return self.refuse(unsupported(format!(
                "date_part without two arguments: {expr}"
            )));
        };
        let part: &dyn PhysicalExpr = part.as_ref();
        let part_name = part
            .downcast_ref::<Literal>()
            .and_then(|literal| literal.value().try_as_str().flatten())
            .map(|name| {
                name.trim_matches(|c| c == '\'' || c == '"')
                    .to_ascii_lowercase()
            });
        let index = match part_name.as_deref() {
            Some("year" | "years") => 0,
            Some("month" | "months") => 1,
            Some("day" | "days") => 2,
            _ => {
                return self.refuse(unsupported(format!(
                    "only EXTRACT of YEAR, MONTH or DAY is generated for the GPU yet: {expr}"
                )));
            }
        };
        let date_type = date.data_type(&self.schema).ok();
        let result_type = expr.data_type(&self.schema).ok();
        if date_type != Some(DataType::Date32) || result_type != Some(DataType::Int32) {
            return self.refuse(unsupported(format!(
                "EXTRACT is generated for the GPU only from a DATE, giving an INT: {expr}"
            )));
        }
        let date = self.compile(date)?;
        let value = format!("aether_date_part({}, {index})", date.value);
        Some(self.emit(CudaType::I32, &value, &date.valid))
    }

    /// `date + interval`, `interval + date` or `date - interval` with a constant
    /// interval; `None` (nothing recorded) when `binary` is not one of those.
    pub(super) fn date_interval(
        &mut self,
        expr: &Arc<dyn PhysicalExpr>,
        op: Operator,
        left: &Arc<dyn PhysicalExpr>,
        right: &Arc<dyn PhysicalExpr>,
    ) -> Option<Option<Value>> {
        let is_date = |e: &Arc<dyn PhysicalExpr>, this: &Self| {
            e.data_type(&this.schema).ok() == Some(DataType::Date32)
        };
        let (date, interval, sign) = match op {
            Operator::Plus if is_date(left, self) => (left, right, 1),
            Operator::Plus if is_date(right, self) => (right, left, 1),
            Operator::Minus if is_date(left, self) => (left, right, -1),
            _ => return None,
        };
        let interval: &dyn PhysicalExpr = interval.as_ref();
        let scalar = interval.downcast_ref::<Literal>()?.value();
        let (months, days) = match interval_parts(scalar) {
            Some(parts) => parts,
            None if matches!(scalar.data_type(), DataType::Interval(_)) => {
                return Some(self.refuse(unsupported(format!(
                    "a NULL or out-of-range interval is not generated for the GPU: {expr}"
                ))));
            }
            None => return None,
        };
        if expr.data_type(&self.schema).ok() != Some(DataType::Date32) {
            return Some(self.refuse(unsupported(format!(
                "date arithmetic not giving a DATE is not generated for the GPU yet: {expr}"
            ))));
        }
        let date = self.compile(date)?;
        let value = format!(
            "aether_date_add({}, {}LL, {}LL)",
            date.value,
            sign * months,
            sign * days
        );
        Some(Some(self.emit(CudaType::I32, &value, &date.valid)))
    }
}

/// The months and whole days of a constant interval, as Arrow adds them to a date.
fn interval_parts(scalar: &ScalarValue) -> Option<(i64, i64)> {
    match scalar {
        ScalarValue::IntervalYearMonth(Some(months)) => Some((i64::from(*months), 0)),
        ScalarValue::IntervalDayTime(Some(IntervalDayTime { days, milliseconds })) => Some((
            0,
            i64::from(*days) + i64::from(*milliseconds) / MILLIS_PER_DAY,
        )),
        ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano {
            months,
            days,
            nanoseconds,
        })) => Some((
            i64::from(*months),
            i64::from(*days) + nanoseconds / NANOS_PER_DAY,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_parts_take_whole_days_toward_zero() {
        let mdn = |months, days, nanoseconds| {
            ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano {
                months,
                days,
                nanoseconds,
            }))
        };
        assert_eq!(interval_parts(&mdn(14, 3, 0)), Some((14, 3)));
        assert_eq!(
            interval_parts(&mdn(0, 1, -3 * NANOS_PER_DAY / 2)),
            Some((0, 0))
        );
        assert_eq!(
            interval_parts(&ScalarValue::IntervalYearMonth(Some(-5))),
            Some((-5, 0))
        );
        assert_eq!(interval_parts(&ScalarValue::IntervalYearMonth(None)), None);
        assert_eq!(interval_parts(&ScalarValue::Int32(Some(1))), None);
    }
}
