//! Casts between decimals and the other numeric types in generated kernels, exact to
//! Arrow's `cast` with DataFusion's options (errors, not NULLs, on overflow).
//!
//! Decimal to float: Arrow converts the scaled integer to `f64` (rounding to nearest)
//! and divides by `10_f64.powi(scale)`; the kernel does the same, the divisor passed as
//! the exact bits Rust computes, the 128-bit conversion rounded by hand (see
//! [`I128_TO_F64`]). A `Float32` result is that `f64` rounded once more, as Arrow's.
//!
//! Integer to decimal: the value times `10^scale`, which must fit the target's
//! precision; where Arrow raises an error the kernel faults (see the `quotient`
//! module), and the CPU runs the work.

use super::{ExprCompiler, Value, int_literal, int128_literal};
use crate::codegen::types::CudaType;

/// A correctly rounded `__int128` to `double`: values within 64 bits take the hardware
/// conversion; wider ones keep their top 64 bits, with a sticky bit for everything
/// below, which rounds to nearest-even exactly as converting the whole value would.
pub(crate) const I128_TO_F64: &str = r#"
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
