//! Casts between decimals and the other numeric types in generated kernels, exact to
//! Arrow's `cast` with DataFusion's options (errors, not NULLs, on overflow).
//!
//! Decimal to float: Arrow converts the scaled integer to `f64` (rounding to nearest)
//! and divides by `10_f64.powi(scale)`; the kernel does the same, the divisor passed as
//! the exact bits Rust computes, the 128-bit conversion rounded by hand (see
//! [`NUMERIC_CAST_PRELUDE`]). A `Float32` result is that `f64` rounded once more, as Arrow's.
//!
//! Integer to decimal: the value times `10^scale`, which must fit the target's
//! precision; where Arrow raises an error the kernel faults (see the `quotient`
//! module), and the CPU runs the work.
//!
//! Float to decimal: Arrow's `single_float_to_decimal`, `(10^scale * v).round()` in
//! `f64` (half away from zero, as CUDA's `round`), converted exactly to 128 bits; NaN,
//! infinities and values past the precision fault.
//!
//! Decimal to a larger scale: the value times `10^(s2 - s1)`; where the target's
//! integer digits are fewer than the source's, a value past the precision faults
//! (Arrow's `mul_checked` and precision check). Casts to a smaller scale (rounding)
//! stay on the CPU.

use super::{ExprCompiler, Value, int_literal, int128_literal};
use crate::codegen::types::CudaType;

/// Conversions between `__int128` and `double` for the casts above.
///
/// `aether_i128_to_f64`: correctly rounded; values within 64 bits take the hardware
/// conversion; wider ones keep their top 64 bits, with a sticky bit for everything
/// below, which rounds to nearest-even exactly as converting the whole value would.
///
/// `aether_f64_to_i128`: exact, for an integral `v` with `|v| < 2^127` (callers check):
/// past 2^63 a double is its 53-bit significand shifted left, so no rounding happens.
pub(crate) const NUMERIC_CAST_PRELUDE: &str = r#"
__device__ __forceinline__ double aether_i128_to_f64(__int128 v) {
    const long long narrow = (long long)v;
    if ((__int128)narrow == v) return (double)narrow;
    const bool negative = v < 0;
    const unsigned __int128 m = negative ? (unsigned __int128)0 - (unsigned __int128)v
                                         : (unsigned __int128)v;
    const int shift = 64 - __clzll((long long)(unsigned long long)(m >> 64));
    unsigned long long top = (unsigned long long)(m >> shift);
    top |= (m & ((((unsigned __int128)1) << shift) - 1)) != 0 ? 1ULL : 0ULL;
    const double magnitude = ldexp((double)top, shift);
    return negative ? -magnitude : magnitude;
}
__device__ __forceinline__ __int128 aether_f64_to_i128(double v) {
    const double magnitude = fabs(v);
    if (magnitude < 9.0e18) return (__int128)(long long)v;
    int exponent;
    const double fraction = frexp(magnitude, &exponent);
    const unsigned long long significand = (unsigned long long)ldexp(fraction, 53);
    const __int128 wide = (__int128)significand << (exponent - 53);
    return v < 0 ? -wide : wide;
}
"#;

impl ExprCompiler {
    /// `CAST(decimal AS Float32 | Float64)`.
    pub(super) fn decimal_to_float(&mut self, arg: &Value, target: CudaType) -> Option<Value> {
        let scale = arg.ty.decimal_scale()?;
        let divisor = 10_f64.powi(i32::from(scale));
        let divisor = format!(
            "__longlong_as_double({})",
            int_literal(divisor.to_bits() as i64)
        );
        let wide = format!("(aether_i128_to_f64((__int128){}) / {divisor})", arg.value);
        let value = if target == CudaType::F32 {
            format!("(float){wide}")
        } else {
            wide
        };
        Some(self.emit(target, &value, &arg.valid))
    }

    /// `CAST(integer AS Decimal(p, s))` for `0 <= s <= 19` (the product then fits 128
    /// bits); a value past the precision faults. Where every value of the integer type
    /// fits (`CAST(ps_availqty AS Decimal(10, 0))` of an `Int32`), no check is made.
    pub(super) fn integer_to_decimal(&mut self, arg: &Value, target: CudaType) -> Option<Value> {
        let (CudaType::Dec64 { precision, scale } | CudaType::Dec128 { precision, scale }) = target
        else {
            return None;
        };
        if !(0..=19).contains(&scale) || precision > 38 {
            return None;
        }
        let factor = int128_literal(10i128.pow(scale as u32));
        let limit = int128_literal(10i128.pow(u32::from(precision)) - 1);
        let scaled = self.next_name("s");
        self.body.push_str(&format!(
            "        const __int128 {scaled} = (__int128){} * {factor};\n",
            arg.value
        ));
        let largest = 10i128.pow(u32::from(precision)) - 1;
        let always_fits = integer_magnitude(arg.ty)
            .is_some_and(|magnitude| magnitude * 10i128.pow(scale as u32) <= largest);
        if !always_fits {
            self.fault_when(&format!(
                "{} && ({scaled} > {limit} || {scaled} < -{limit})",
                arg.valid
            ));
        }
        Some(self.emit(
            target,
            &format!("({}){scaled}", target.c_name()),
            &arg.valid,
        ))
    }

    /// `CAST(float AS Decimal(p, s))` as Arrow's `cast_floating_point_to_decimal` with
    /// `safe: false`: `(10^s * v).round()`, faulting where Arrow errors (NaN, infinite,
    /// or past `p` digits).
    pub(super) fn float_to_decimal(&mut self, arg: &Value, target: CudaType) -> Option<Value> {
        let (CudaType::Dec64 { precision, scale } | CudaType::Dec128 { precision, scale }) = target
        else {
            return None;
        };
        if precision > 38 || !(0..=38).contains(&scale) {
            return None;
        }
        let factor = 10_f64.powi(i32::from(scale));
        let rounded = self.next_name("r");
        self.body.push_str(&format!(
            "        const double {rounded} = round(__longlong_as_double({}) * (double){});\n",
            int_literal(factor.to_bits() as i64),
            arg.value
        ));
        // 1.7e38 < 2^127: anything larger (or NaN, which fails every comparison) is
        // past every precision and is not converted.
        let in_range = format!("(fabs({rounded}) <= 1.7e38)");
        let scaled = self.next_name("s");
        self.body.push_str(&format!(
            "        const __int128 {scaled} = {in_range} ? aether_f64_to_i128({rounded}) : (__int128)0;\n"
        ));
        let limit = int128_literal(10i128.pow(u32::from(precision)) - 1);
        self.fault_when(&format!(
            "{} && (!{in_range} || {scaled} > {limit} || {scaled} < -{limit})",
            arg.valid
        ));
        Some(self.emit(
            target,
            &format!("({}){scaled}", target.c_name()),
            &arg.valid,
        ))
    }

    /// `CAST(Decimal(p1, s1) AS Decimal(p2, s2))` with `s2 >= s1`: the value times
    /// `10^(s2 - s1)`. Where `p2 - s2 < p1 - s1` a value can outgrow `p2` digits (or 128
    /// bits) and faults, exactly where Arrow's upscaler errors.
    pub(super) fn decimal_scale_up(
        &mut self,
        arg: &Value,
        (from_precision, from_scale): (u8, i8),
        target: CudaType,
    ) -> Option<Value> {
        let (CudaType::Dec64 { precision, scale } | CudaType::Dec128 { precision, scale }) = target
        else {
            return None;
        };
        if from_scale < 0 || scale < from_scale || precision > 38 {
            return None;
        }
        let up = u32::try_from(scale - from_scale).ok()?;
        let factor = 10i128.checked_pow(up)?;
        let c = target.c_name();
        if u32::from(from_precision) + up <= u32::from(precision) {
            // Every value fits: Arrow multiplies without a check too (wrapping, so
            // the product is taken unsigned: no signed overflow in C).
            let unsigned = target.unsigned_name().unwrap_or("unsigned __int128");
            let value = format!(
                "(({c})(({unsigned}){} * ({unsigned}){}))",
                arg.value,
                int128_literal(factor)
            );
            return Some(self.emit(target, &value, &arg.valid));
        }
        // |v| * factor <= 10^p2 - 1 exactly when |v| <= floor((10^p2 - 1) / factor),
        // tested before multiplying, so the product never wraps.
        let bound = int128_literal((10i128.pow(u32::from(precision)) - 1) / factor);
        let (wide, past) = (self.next_name("w"), self.next_name("past"));
        self.body.push_str(&format!(
            "        const __int128 {wide} = (__int128){};\n        const bool {past} = {wide} > {bound} || {wide} < -{bound};\n",
            arg.value
        ));
        self.fault_when(&format!("{} && {past}", arg.valid));
        let value = format!(
            "({c})({past} ? (__int128)0 : {wide} * {})",
            int128_literal(factor)
        );
        Some(self.emit(target, &value, &arg.valid))
    }
}

/// The largest magnitude a value of integer type `ty` takes (`|MIN|`).
fn integer_magnitude(ty: CudaType) -> Option<i128> {
    Some(match ty {
        CudaType::I8 => 1 << 7,
        CudaType::I16 => 1 << 15,
        CudaType::I32 => 1 << 31,
        CudaType::I64 => 1 << 63,
        _ => return None,
    })
}
