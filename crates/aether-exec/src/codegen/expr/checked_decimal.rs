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
//! The common case costs nothing extra: a product of operands within 64 bits (TPC-H's
//! prices, rates and their products) cannot overflow and takes the unchecked fast path.

use super::{ExprCompiler, int128_literal};

/// The name generated code uses for the fault word (declared by `ExprCompiler::body`).
const FAULT_WORD: &str = "aether_faults";

impl ExprCompiler {
    /// `left + right` (or `-` when `subtract`) of two decimals at scales `ls` and `rs`,
    /// giving a 128-bit decimal at scale `scale` (at least both).
    pub(super) fn checked_decimal_sum(
        &mut self,
        subtract: bool,
        (left, ls): (&str, i8),
        (right, rs): (&str, i8),
        scale: i8,
        valid: &str,
    ) -> String {
        self.faults = true;
        let rescaled = |value: &str, from: i8| {
            let factor = 10i128.pow(u32::from(scale.abs_diff(from)));
            if factor == 1 {
                format!("(__int128){value}")
            } else {
                format!(
                    "aether_scale_i128_checked((__int128){value}, {}, {}, {valid}, {FAULT_WORD})",
                    int128_literal(factor),
                    int128_literal(i128::MAX / factor)
                )
            }
        };
        let function = if subtract {
            "aether_sub_i128_checked"
        } else {
            "aether_add_i128_checked"
        };
        format!(
            "{function}({}, {}, {valid}, {FAULT_WORD})",
            rescaled(left, ls),
            rescaled(right, rs)
        )
    }

    /// `left * right` of two decimals, giving a 128-bit decimal.
    pub(super) fn checked_decimal_product(
        &mut self,
        left: &str,
        right: &str,
        valid: &str,
    ) -> String {
        self.faults = true;
        format!(
            "aether_mul_i128_checked((__int128){left}, (__int128){right}, {valid}, {FAULT_WORD})"
        )
    }
}
