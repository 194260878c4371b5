//! 128-bit decimal sums, differences and products, checked as Arrow checks them.
//!
//! Arrow computes `Decimal128` `+`, `-` and `*` with checked 128-bit operations (also
//! through DataFusion's wrapping operators): each operand of a sum is first rescaled to
//! the result's scale (`mul_checked` by a power of ten), then added (`add_checked`); a
//! product is `mul_checked`. Where one overflows, the query fails with an overflow
//! error. The kernel computes the wrapped result and sets the fault word instead
//! (helpers `aether_*_i128_checked` in the prelude), so the segment runs on the CPU,
//! which returns DataFusion's error. Results held in 64 bits on the device (precision
//! up to 18) come from operands of at most 18 digits and are not checked.
//!
//! Where the operands' declared precisions rule an overflow out (a product of p1 and
//! p2 digits with p1 + p2 <= 38; a sum of operands of at most 37 digits once
//! rescaled), no check is generated: TPC-H Q1's `l_extendedprice * (1 - l_discount)`
//! (15 and 23 digits) and both its `1 - l_discount` and `1 + l_tax`. Like the 64-bit
//! path above, this trusts operands to hold their declared precision: Arrow's casts
//! check it, an arithmetic result can pass it only where its precision was capped at
//! 38 (and every operation on a 38-digit operand is checked), so only malformed input
//! breaks it. A checked operation
//! sets a bit in the thread's fault bits, not the fault word itself
//! (`ExprCompiler::fault_prologue`): measured on the H200, a per-row atomic branch and
//! a 128-bit division in the check made Q1's fold kernels 25% slower.

use super::{ExprCompiler, Value, int128_literal};

/// Digits of a magnitude that always fits 128 bits: 10^38 < 2^127.
const SAFE_DIGITS: i32 = 38;

/// The thread's fault bits in generated code (`ExprCompiler::fault_prologue`).
const FAULT_BITS: &str = "aether_fault_bits";

impl ExprCompiler {
    /// `left + right` (or `-` when `subtract`) of two decimals, giving a 128-bit decimal
    /// at scale `scale` (at least both operands' scales).
    pub(super) fn checked_decimal_sum(
        &mut self,
        subtract: bool,
        (left, right): (&Value, &Value),
        scale: i8,
        valid: &str,
    ) -> String {
        let (ls, rs) = (
            left.ty.decimal_scale().unwrap_or(0),
            right.ty.decimal_scale().unwrap_or(0),
        );
        let rescaled = |value: &str, from: i8, checked: bool| {
            let factor = 10i128.pow(u32::from(scale.abs_diff(from)));
            if factor == 1 {
                format!("(__int128){value}")
            } else if !checked {
                format!("((__int128){value} * {})", int128_literal(factor))
            } else {
                format!(
                    "aether_scale_i128_checked((__int128){value}, {}, {}, {valid}, {FAULT_BITS})",
                    int128_literal(factor),
                    int128_literal(i128::MAX / factor)
                )
            }
        };
        let symbol = if subtract { "-" } else { "+" };
        // Rescaled operands of at most 37 digits sum to less than 2 * 10^37.
        let digits = |value: &Value, from: i8| {
            value
                .ty
                .decimal_precision()
                .map(|p| i32::from(p) - i32::from(from) + i32::from(scale))
        };
        let fits = digits(left, ls)
            .zip(digits(right, rs))
            .is_some_and(|(l, r)| l.max(r) < SAFE_DIGITS);
        if fits {
            return format!(
                "({} {symbol} {})",
                rescaled(&left.value, ls, false),
                rescaled(&right.value, rs, false)
            );
        }
        self.faults = true;
        let function = if subtract {
            "aether_sub_i128_checked"
        } else {
            "aether_add_i128_checked"
        };
        format!(
            "{function}({}, {}, {valid}, {FAULT_BITS})",
            rescaled(&left.value, ls, true),
            rescaled(&right.value, rs, true)
        )
    }

    /// `left * right` of two decimals, giving a 128-bit decimal.
    pub(super) fn checked_decimal_product(
        &mut self,
        left: &Value,
        right: &Value,
        valid: &str,
    ) -> String {
        let (l, r) = (&left.value, &right.value);
        // Operands of p1 and p2 digits multiply to less than 10^(p1 + p2).
        let fits = left
            .ty
            .decimal_precision()
            .zip(right.ty.decimal_precision())
            .is_some_and(|(p1, p2)| i32::from(p1) + i32::from(p2) <= SAFE_DIGITS);
        if fits {
            return format!("aether_mul_i128((__int128){l}, (__int128){r})");
        }
        self.faults = true;
        format!("aether_mul_i128_checked((__int128){l}, (__int128){r}, {valid}, {FAULT_BITS})")
    }
}
