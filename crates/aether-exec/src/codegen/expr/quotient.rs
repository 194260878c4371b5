//! Division and remainder in generated kernels, with Arrow's errors kept exact.
//!
//! Arrow raises an error where a quotient has no value: a zero divisor, an integer
//! `MIN / -1`, a decimal dividend that overflows when rescaled. A kernel cannot raise
//! an error, so it sets a fault bit instead and computes a placeholder for that row.
//! Each thread collects its rows' bits in a register (`aether_fault_bits`) and ORs them
//! once, after its row loop, into the fault word the host passes after the column
//! pointers (`ExprCompiler::fault_prologue` and `fault_epilogue`). The host
//! reads the word after the kernels; when it is set, the whole GPU segment's work runs
//! on the CPU, where DataFusion raises its own error or, for a row the CPU never
//! evaluates (a filtered-out row, a CASE branch not taken), returns its result. The
//! kernel evaluates every row and branch, a superset of what the CPU evaluates, so a
//! clear fault word means no division or checked cast here would have failed on the
//! CPU. (128-bit decimal sums and products fault the same way: `checked_decimal.rs`.)
//! A guarded division such as `CASE WHEN k <> 0 THEN n / k END` faults whenever some
//! `k` is 0, so it runs twice.
//!
//! Decimal division follows Arrow's `div` for `Decimal128`: the result scale is the
//! dividend's plus 4 (at most 38), the dividend is multiplied by
//! `10^(result scale - dividend scale + divisor scale)` and divided by the divisor,
//! truncating toward zero. The GPU computes it in 128 bits, as Arrow does.

use datafusion::logical_expr::Operator;

use super::{ExprCompiler, Value, int128_literal, unsupported};
use crate::codegen::types::CudaType;

/// The bit a faulting row sets in the fault word.
const FAULT_BIT: &str = "1u";

impl ExprCompiler {
    /// Records that rows where `condition` (a C expression) holds have no value on the
    /// GPU: the kernel sets the fault word, and the host runs the work on the CPU.
    pub(super) fn fault_when(&mut self, condition: &str) {
        self.faults = true;
        self.body.push_str(&format!(
            "        aether_fault_bits |= ({condition}) ? {FAULT_BIT} : 0u;\n"
        ));
    }

    /// `left / right` or `left % right` of two integers of the result's type: Arrow's
    /// `div_checked` (errors on a zero divisor and on `MIN / -1`) and `mod_wrapping`
    /// (errors on a zero divisor; `MIN % -1` is 0).
    pub(super) fn integer_quotient(
        &mut self,
        op: Operator,
        (left, right): (&Value, &Value),
        result: CudaType,
        valid: &str,
    ) -> Option<Value> {
        let (l, r, c) = (&left.value, &right.value, result.c_name());
        let unsigned = result.unsigned_name().unwrap_or("unsigned long long");
        let min = integer_min(result)?;
        let overflow = if op == Operator::Divide {
            format!(" || ({l} == {min} && {r} == -1)")
        } else {
            String::new()
        };
        self.fault_when(&format!("{valid} && ({r} == 0{overflow})"));
        // Division by -1 is a wrapping negation (C's `MIN / -1` is undefined); a zero
        // divisor computes a placeholder, never a division by zero.
        let by_minus_one = if op == Operator::Divide {
            format!("({c})(0 - ({unsigned}){l})")
        } else {
            format!("({c})0")
        };
        let symbol = if op == Operator::Divide { "/" } else { "%" };
        let value =
            format!("({r} == -1 ? {by_minus_one} : ({c})({l} {symbol} ({r} == 0 ? ({c})1 : {r})))");
        Some(self.emit(result, &value, valid))
    }

    /// `left % right` of two floats: IEEE `fmod`, as Rust's `%` (no error).
    pub(super) fn float_remainder(
        &mut self,
        (left, right): (&Value, &Value),
        result: CudaType,
        valid: &str,
    ) -> Option<Value> {
        let function = if result == CudaType::F32 {
            "fmodf"
        } else {
            "fmod"
        };
        let value = format!("{function}({}, {})", left.value, right.value);
        Some(self.emit(result, &value, valid))
    }

    /// `left / right` of two decimals giving `result` (see the module header).
    pub(super) fn decimal_quotient(
        &mut self,
        expr: &dyn std::fmt::Display,
        (left, right): (&Value, &Value),
        result: CudaType,
        valid: &str,
    ) -> Option<Value> {
        let (Some(ls), Some(rs), Some(scale)) = (
            left.ty.decimal_scale(),
            right.ty.decimal_scale(),
            result.decimal_scale(),
        ) else {
            return self.refuse(unsupported(format!(
                "division of {:?} by {:?} is not generated for the GPU yet: {expr}",
                left.ty, right.ty
            )));
        };
        let shift = i32::from(scale) - i32::from(ls) + i32::from(rs);
        if ls < 0 || rs < 0 || !(0..=38).contains(&shift) {
            return self.refuse(unsupported(format!(
                "decimal division with negative scales is not generated for the GPU yet: {expr}"
            )));
        }
        let factor = 10i128.pow(shift as u32);
        let (l, r) = (&left.value, &right.value);
        let dividend = if factor == 1 {
            format!("(__int128){l}")
        } else {
            format!("((__int128){l} * {})", int128_literal(factor))
        };
        // Arrow's checked multiply: |l| * factor overflows 128 bits exactly when
        // |l| > i128::MAX / factor (factor, a power of ten, never divides 2^127).
        let overflow = if factor == 1 {
            format!(
                "((__int128){l} == {} && {r} == -1)",
                int128_literal(i128::MIN)
            )
        } else {
            let bound = int128_literal(i128::MAX / factor);
            format!("((__int128){l} > {bound} || (__int128){l} < -{bound})")
        };
        let quotient = self.next_name("q");
        self.body.push_str(&format!(
            "        const __int128 {quotient} = ({r} == 0 || {overflow}) ? (__int128)0 : {dividend} / (__int128){r};\n"
        ));
        // A result narrow on the device holds 64 bits; a quotient past them (from
        // operands beyond their declared precision) is left to the CPU.
        let narrowing = if result.c_name() == "__int128" {
            String::new()
        } else {
            format!(" || {quotient} != (__int128)(long long){quotient}")
        };
        self.fault_when(&format!("{valid} && ({r} == 0 || {overflow}{narrowing})"));
        Some(self.emit(result, &format!("({}){quotient}", result.c_name()), valid))
    }
}

/// The smallest value of a signed integer type, as a C literal.
fn integer_min(ty: CudaType) -> Option<&'static str> {
    Some(match ty {
        CudaType::I8 => "(-127 - 1)",
        CudaType::I16 => "(-32767 - 1)",
        CudaType::I32 => "(-2147483647 - 1)",
        CudaType::I64 => "(-9223372036854775807LL - 1LL)",
        _ => return None,
    })
}
