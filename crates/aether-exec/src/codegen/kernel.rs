//! Assembles a complete CUDA kernel that evaluates one expression per row.
//!
//! The kernel's signature is fixed, whatever the expression:
//! `aether_eval(columns, rows, out_values, out_valid)`, where `columns` holds two device
//! pointers per input column (values, then validity bitmap or 0 when the column has no
//! NULLs), then, for an expression that can fault (a division by a column), the fault
//! word. Results are one value per row in the output type's width (booleans as one
//! byte) and one validity byte per row. A grid-stride loop lets any grid cover any row
//! count.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::physical_expr::PhysicalExpr;

use super::expr::{DATE_PRELUDE, ExprCompiler, NUMERIC_CAST_PRELUDE, column_word};
use super::types::CudaType;
use crate::reason::PlacementReason;

/// The entry point of every generated expression kernel.
pub const EVAL_ENTRY: &str = "aether_eval";

/// Helpers every generated kernel uses.
pub(crate) const PRELUDE: &str = r#"typedef unsigned long long u64;

// True when `row` is valid in the bitmap at `bits` (0: no bitmap, every row valid).
__device__ __forceinline__ bool aether_valid(u64 bits, long long row) {
    return bits == 0ULL || ((((const unsigned char*)bits)[row >> 3] >> (row & 7)) & 1);
}

// Bit `row` of the bit-packed booleans at `bits`.
__device__ __forceinline__ bool aether_bit(u64 bits, long long row) {
    return (((const unsigned char*)bits)[row >> 3] >> (row & 7)) & 1;
}

// A 128-bit decimal product. Both operands within 32 bits (prices, rates and most
// products of them) take one 32 x 32-bit multiply instead of a 128-bit one; the
// result is the same either way.
__device__ __forceinline__ __int128 aether_mul_i128(__int128 a, __int128 b) {
    const long long la = (long long)a, lb = (long long)b;
    if ((__int128)la == a && (__int128)lb == b && la == (int)la && lb == (int)lb)
        return (__int128)(la * lb);
    return a * b;
}

// Arrow's checked 128-bit decimal arithmetic (`add_checked`, `sub_checked`,
// `mul_checked`): the wrapped result, with bit 1 set in the thread's fault bits for a
// valid row where Arrow reports an overflow (see `codegen/expr/checked_decimal.rs`).
__device__ __forceinline__ __int128 aether_add_i128_checked(__int128 a, __int128 b, bool valid, unsigned& fault_bits) {
    const __int128 s = (__int128)((unsigned __int128)a + (unsigned __int128)b);
    fault_bits |= (valid && ((a ^ s) & (b ^ s)) < 0) ? 1u : 0u;
    return s;
}
__device__ __forceinline__ __int128 aether_sub_i128_checked(__int128 a, __int128 b, bool valid, unsigned& fault_bits) {
    const __int128 d = (__int128)((unsigned __int128)a - (unsigned __int128)b);
    fault_bits |= (valid && ((a ^ b) & (a ^ d)) < 0) ? 1u : 0u;
    return d;
}
// `a` times a power of ten `factor`, which overflows exactly when |a| > `bound`
// (i128::MAX / factor: a power of ten never divides 2^127).
__device__ __forceinline__ __int128 aether_scale_i128_checked(__int128 a, __int128 factor, __int128 bound, bool valid, unsigned& fault_bits) {
    fault_bits |= (valid && (a > bound || a < -bound)) ? 1u : 0u;
    return (__int128)((unsigned __int128)a * (unsigned __int128)factor);
}
// Whether `a * b` overflows 128 bits, from the magnitudes' 64-bit halves: no 128-bit
// division, whose long subroutine would sit in every kernel with a wide product.
__device__ __forceinline__ bool aether_mul_i128_overflows(__int128 a, __int128 b) {
    const bool negative = (a < 0) != (b < 0);
    const unsigned __int128 ua = a < 0 ? (unsigned __int128)0 - (unsigned __int128)a : (unsigned __int128)a;
    const unsigned __int128 ub = b < 0 ? (unsigned __int128)0 - (unsigned __int128)b : (unsigned __int128)b;
    const u64 ah = (u64)(ua >> 64), al = (u64)ua, bh = (u64)(ub >> 64), bl = (u64)ub;
    if (ah != 0ULL && bh != 0ULL) return true;
    // One high half is 0: |a * b| = (ah * bl + al * bh) * 2^64 + al * bl.
    if (__umul64hi(ah, bl) != 0ULL || __umul64hi(al, bh) != 0ULL) return true;
    const u64 cross = ah * bl + al * bh;
    const u64 top = cross + __umul64hi(al, bl);
    if (top < cross) return true;
    // Fits below 2^127, or is exactly 2^127 with a negative sign (i128::MIN).
    if (top < 0x8000000000000000ULL) return false;
    return !(negative && top == 0x8000000000000000ULL && al * bl == 0ULL);
}
// Operands within 64 bits cannot overflow (|a * b| < 2^126): the fast path of
// `aether_mul_i128`, unchanged.
__device__ __forceinline__ __int128 aether_mul_i128_checked(__int128 a, __int128 b, bool valid, unsigned& fault_bits) {
    const long long la = (long long)a, lb = (long long)b;
    if ((__int128)la == a && (__int128)lb == b) return aether_mul_i128(a, b);
    fault_bits |= (valid && aether_mul_i128_overflows(a, b)) ? 1u : 0u;
    return (__int128)((unsigned __int128)a * (unsigned __int128)b);
}

// Arrow's float order: NaN equals NaN and sorts above every number; -0.0 equals 0.0.
__device__ __forceinline__ int aether_cmp_f(double a, double b) {
    const bool an = isnan(a), bn = isnan(b);
    if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
    return (a > b) - (a < b);
}
"#;

/// A generated kernel and what it returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprKernel {
    pub source: String,
    /// The Arrow type of the result, as DataFusion types the expression.
    pub data_type: DataType,
    pub output: CudaType,
    /// Whether the kernel takes a fault word after its columns ([`ExprCompiler::faults`]).
    pub faults: bool,
}

/// Generates the kernel evaluating `expr` over batches of `schema`, or every reason it
/// cannot run on the GPU.
pub fn expr_kernel(
    expr: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Result<ExprKernel, Vec<PlacementReason>> {
    let mut compiler = ExprCompiler::new(Arc::new(schema.clone()));
    let result = compiler.compile(expr);
    let data_type = expr.data_type(schema);
    if !compiler.lookups().is_empty() {
        return Err(vec![PlacementReason::new(
            crate::reason::ReasonCode::UnsupportedExpression,
            format!(
                "string predicates ({expr}) run on the GPU only inside a GPU aggregate segment"
            ),
        )]);
    }
    if let Some(value) = &result
        && value.ty == CudaType::StrCode
    {
        return Err(vec![PlacementReason::new(
            crate::reason::ReasonCode::UnsupportedType,
            format!("a string result ({expr}) is not produced on the GPU yet"),
        )]);
    }
    let (Some(result), Ok(data_type)) = (result, data_type) else {
        let mut reasons = compiler.reasons().to_vec();
        if reasons.is_empty() {
            reasons.push(PlacementReason::new(
                crate::reason::ReasonCode::UnsupportedExpression,
                format!("cannot determine the type of {expr}"),
            ));
        }
        return Err(reasons);
    };
    let store = if result.ty == CudaType::Bool {
        format!("out_values[row] = {} ? 1 : 0;", result.value)
    } else {
        format!(
            "(({}*)out_values)[row] = {};",
            result.ty.c_name(),
            result.value
        )
    };
    let source = format!(
        "{PRELUDE}{DATE_PRELUDE}{NUMERIC_CAST_PRELUDE}
// {expr}
extern \"C\" __global__ void {EVAL_ENTRY}(const u64* __restrict__ columns,
                                          long long rows,
                                          unsigned char* __restrict__ out_values,
                                          unsigned char* __restrict__ out_valid) {{
{column_locals}{fault_prologue}    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < rows; row += stride) {{
{body}        out_valid[row] = {valid} ? 1 : 0;
        {store}
    }}
{fault_epilogue}}}
",
        body = compiler.body(),
        fault_prologue = compiler.fault_prologue(),
        fault_epilogue = compiler.fault_epilogue(),
        valid = result.valid,
        column_locals = (0..compiler.column_slots())
            .map(|slot| format!("    const u64 {} = columns[{slot}];\n", column_word(slot)))
            .collect::<String>(),
    );
    super::generated::generated(&source);
    Ok(ExprKernel {
        source,
        data_type,
        output: result.ty,
        faults: compiler.faults(),
    })
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::common::DFSchema;
    use datafusion::prelude::SessionContext;

    use super::*;
    use crate::reason::ReasonCode;

    fn lineitem_schema() -> Schema {
        Schema::new(vec![
            Field::new("l_quantity", DataType::Decimal128(15, 2), false),
            Field::new("l_extendedprice", DataType::Decimal128(15, 2), false),
            Field::new("l_discount", DataType::Decimal128(15, 2), false),
            Field::new("l_shipdate", DataType::Date32, false),
            Field::new("l_comment", DataType::Utf8View, false),
            Field::new("x", DataType::Float64, true),
            Field::new("n", DataType::Int64, true),
        ])
    }

    fn physical(sql: &str, schema: &Schema) -> Arc<dyn PhysicalExpr> {
        let context = SessionContext::new();
        let df_schema = DFSchema::try_from(schema.clone()).unwrap();
        let logical = context.parse_sql_expr(sql, &df_schema).unwrap();
        context.create_physical_expr(logical, &df_schema).unwrap()
    }

    #[test]
    fn the_q6_predicate_becomes_one_kernel() {
        let schema = lineitem_schema();
        let expr = physical(
            "l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' \
             and l_discount between 0.05 and 0.07 and l_quantity < 24",
            &schema,
        );
        let kernel = expr_kernel(&expr, &schema).unwrap();
        assert_eq!(kernel.output, CudaType::Bool);
        assert_eq!(kernel.data_type, DataType::Boolean);
        assert!(
            kernel
                .source
                .contains("extern \"C\" __global__ void aether_eval(")
        );
        // Decimals compare as scaled 64-bit integers; no float compare is needed.
        assert!(kernel.source.contains("((const long long*)col4)[row]"));
        assert!(!kernel.source.contains("aether_cmp_f(x"));
    }

    #[test]
    fn only_nullable_columns_read_their_bitmaps() {
        let schema = lineitem_schema();
        let expr = physical("l_quantity > 1 and n > 1", &schema);
        let kernel = expr_kernel(&expr, &schema).unwrap();
        // l_quantity (column 0) is declared non-nullable; n (column 6) is nullable.
        assert!(
            !kernel.source.contains("aether_valid(col1,"),
            "{}",
            kernel.source
        );
        assert!(
            kernel.source.contains("aether_valid(col13, row)"),
            "{}",
            kernel.source
        );
        assert!(kernel.source.contains("const u64 col13 = columns[13];"));
    }

    #[test]
    fn decimal_products_keep_datafusions_scale() {
        let schema = lineitem_schema();
        let expr = physical("l_extendedprice * l_discount", &schema);
        let kernel = expr_kernel(&expr, &schema).unwrap();
        assert_eq!(kernel.data_type, DataType::Decimal128(31, 4));
        assert!(matches!(kernel.output, CudaType::Dec128 { scale: 4, .. }));
        // 15 and 15 digits cannot overflow 128 bits: no check.
        assert!(
            kernel.source.contains("aether_mul_i128(") && !kernel.faults,
            "{}",
            kernel.source
        );
        // 31 and 31 digits can: checked as Arrow's `mul_checked`, a fault on overflow.
        let expr = physical(
            "(l_extendedprice * l_discount) * (l_extendedprice * l_discount)",
            &schema,
        );
        let kernel = expr_kernel(&expr, &schema).unwrap();
        assert!(
            kernel.source.contains("aether_mul_i128_checked(") && kernel.faults,
            "{}",
            kernel.source
        );
    }

    #[test]
    fn wide_decimal_sums_rescale_and_add_with_overflow_checks() {
        let schema = lineitem_schema();
        // Decimal(31, 4) + Decimal(15, 2), rescaled to 31 and 17 digits: cannot overflow.
        let expr = physical("l_extendedprice * l_discount + l_extendedprice", &schema);
        let kernel = expr_kernel(&expr, &schema).unwrap();
        assert!(!kernel.faults, "{}", kernel.source);
        // Decimal(38, 6) + Decimal(15, 2): 38 digits can; the right operand is rescaled
        // by 10^4 with its own check first.
        let expr = physical(
            "l_extendedprice * l_discount * l_quantity + l_extendedprice",
            &schema,
        );
        let kernel = expr_kernel(&expr, &schema).unwrap();
        assert!(kernel.faults);
        let bound = crate::codegen::expr::int128_literal(i128::MAX / 10_000);
        assert!(
            kernel.source.contains("aether_add_i128_checked(")
                && kernel.source.contains(&format!(
                    ", {}, {bound}, ",
                    crate::codegen::expr::int128_literal(10_000)
                )),
            "{}",
            kernel.source
        );
        // A narrow sum (precision up to 18, 64 bits on the device) is not checked.
        let narrow = expr_kernel(&physical("l_discount + l_quantity", &schema), &schema).unwrap();
        assert!(!narrow.faults, "{}", narrow.source);
    }

    #[test]
    fn integer_to_decimal_casts_check_only_what_can_overflow() {
        let schema = lineitem_schema();
        // Every Int64 (|MIN| = 2^63 < 10^19) fits 20 digits: no fault check.
        let wide = expr_kernel(&physical("cast(n as decimal(20, 0))", &schema), &schema).unwrap();
        assert!(!wide.faults, "{}", wide.source);
        // Ten digits before the point do not hold every Int64.
        let narrow = expr_kernel(&physical("cast(n as decimal(12, 2))", &schema), &schema).unwrap();
        assert!(narrow.faults, "{}", narrow.source);
    }

    #[test]
    fn float_comparisons_use_arrows_nan_order() {
        let schema = lineitem_schema();
        let kernel = expr_kernel(&physical("x > 1.5", &schema), &schema).unwrap();
        assert!(kernel.source.contains("aether_cmp_f("), "{}", kernel.source);
    }

    #[test]
    fn every_reason_is_collected() {
        let schema = lineitem_schema();
        // A predicate on one string column is looked up by dictionary code, which a
        // lone expression kernel has no table for.
        let expr = physical("l_comment = 'x' or l_comment like 'special%'", &schema);
        let reasons = expr_kernel(&expr, &schema).unwrap_err();
        assert!(
            reasons[0]
                .message
                .contains("inside a GPU aggregate segment"),
            "{reasons:?}"
        );
        let expr = physical("character_length(l_comment) > 3 + x", &schema);
        let reasons = expr_kernel(&expr, &schema).unwrap_err();
        let has = |code: ReasonCode, text: &str| {
            reasons
                .iter()
                .any(|r| r.code == code && r.message.contains(text))
        };
        assert!(
            has(ReasonCode::UnsupportedExpression, "character_length"),
            "{reasons:?}"
        );

        let expr = physical("x * 2 > 1 and l_quantity % 2 = 0", &schema);
        let reasons = expr_kernel(&expr, &schema).unwrap_err();
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].message.contains("decimal %"), "{reasons:?}");
    }

    #[test]
    fn extract_and_constant_date_intervals_are_generated() {
        let schema = lineitem_schema();
        for (sql, helper) in [
            ("extract(year from l_shipdate) = 1994", "aether_date_part("),
            (
                "extract(month from l_shipdate) * 100 + extract(day from l_shipdate)",
                "aether_date_part(",
            ),
            (
                "l_shipdate + interval '1' month < date '1995-01-01'",
                "aether_date_add(",
            ),
            ("l_shipdate - interval '3' day", "aether_date_add("),
            ("interval '1' year + l_shipdate", "aether_date_add("),
        ] {
            let kernel = expr_kernel(&physical(sql, &schema), &schema)
                .unwrap_or_else(|reasons| panic!("{sql}: {reasons:?}"));
            assert!(kernel.source.contains(helper), "{sql}: {}", kernel.source);
        }
        let kernel = expr_kernel(
            &physical("l_shipdate - interval '1' month", &schema),
            &schema,
        )
        .unwrap();
        assert_eq!(kernel.data_type, DataType::Date32);
        assert!(kernel.source.contains("-1LL, 0LL)"), "{}", kernel.source);

        let reasons =
            expr_kernel(&physical("extract(hour from l_shipdate)", &schema), &schema).unwrap_err();
        assert!(
            reasons[0]
                .message
                .contains("only EXTRACT of YEAR, MONTH or DAY"),
            "{reasons:?}"
        );
    }

    #[test]
    fn only_a_division_that_can_fail_takes_a_fault_word() {
        let schema = lineitem_schema();
        let kernel = expr_kernel(&physical("n / 4", &schema), &schema).unwrap();
        assert_eq!(kernel.data_type, DataType::Int64);
        assert!(!kernel.faults);
        assert!(
            !kernel.source.contains("aether_fault_bits"),
            "{}",
            kernel.source
        );
        for sql in ["n / 0", "n / -1", "n / n", "n % n", "n % 0"] {
            let kernel = expr_kernel(&physical(sql, &schema), &schema)
                .unwrap_or_else(|reasons| panic!("{sql}: {reasons:?}"));
            assert!(kernel.faults, "{sql}");
            // Rows set bits in a register; each thread ORs them once, after its row
            // loop, into the fault word: the pointer after the 7 columns' 14.
            assert!(
                kernel.source.contains("aether_fault_bits |= (")
                    && kernel.source.contains(
                        "if (aether_fault_bits != 0u) atomicOr((unsigned*)col14, aether_fault_bits);"
                    ),
                "{sql}: {}",
                kernel.source
            );
            assert!(kernel.source.contains("const u64 col14 = columns[14];"));
        }
        let kernel = expr_kernel(&physical("x % 2.5", &schema), &schema).unwrap();
        assert!(kernel.source.contains("fmod("), "{}", kernel.source);
        assert!(!kernel.faults);
    }

    #[test]
    fn decimal_division_follows_arrows_scale_and_checks_its_divisor() {
        let schema = lineitem_schema();
        let kernel =
            expr_kernel(&physical("l_extendedprice / l_quantity", &schema), &schema).unwrap();
        // Arrow: scale 2 + 4, the dividend times 10^(6 - 2 + 2), precision 15 + 6.
        assert_eq!(kernel.data_type, DataType::Decimal128(21, 6));
        assert!(kernel.faults);
        assert!(
            kernel.source.contains("(unsigned __int128)1000000ULL"),
            "{}",
            kernel.source
        );
        assert!(kernel.source.contains("== 0 ||"), "{}", kernel.source);
        // A product's quotient: 128-bit dividend, overflow-checked.
        let kernel = expr_kernel(
            &physical("l_extendedprice * l_discount / (1 + l_discount)", &schema),
            &schema,
        )
        .unwrap();
        assert!(matches!(kernel.output, CudaType::Dec128 { scale: 8, .. }));
        assert!(kernel.faults);
        let reasons =
            expr_kernel(&physical("l_quantity % l_discount", &schema), &schema).unwrap_err();
        assert!(reasons[0].message.contains("decimal %"), "{reasons:?}");
    }

    #[test]
    fn decimals_cast_to_floats_and_integers_to_decimals() {
        let schema = lineitem_schema();
        let kernel =
            expr_kernel(&physical("cast(l_quantity as double)", &schema), &schema).unwrap();
        assert!(!kernel.faults);
        // Divided by 10^2 given as the bits of Rust's `10_f64.powi(2)`.
        let hundred = 100_f64.to_bits() as i64;
        assert!(
            kernel
                .source
                .contains(&format!("__longlong_as_double({hundred}LL)")),
            "{}",
            kernel.source
        );
        let kernel = expr_kernel(&physical("cast(n as decimal(10, 2))", &schema), &schema).unwrap();
        assert_eq!(kernel.data_type, DataType::Decimal128(10, 2));
        assert!(kernel.faults, "{}", kernel.source);
    }

    #[test]
    fn floats_and_decimals_cast_to_decimals_checking_only_what_can_overflow() {
        let schema = lineitem_schema();
        // Q17's `CAST(0.2 * avg AS Decimal(30, 15))`: NaN, infinities and values past
        // 30 digits fault.
        let kernel = expr_kernel(
            &physical("cast(x * 0.2 as decimal(30, 15))", &schema),
            &schema,
        )
        .unwrap();
        assert_eq!(kernel.data_type, DataType::Decimal128(30, 15));
        assert!(kernel.faults, "{}", kernel.source);
        assert!(
            kernel.source.contains("aether_f64_to_i128("),
            "{}",
            kernel.source
        );
        // Decimal(15, 2) to Decimal(25, 12): every value fits, no check.
        let kernel = expr_kernel(
            &physical("cast(l_quantity as decimal(25, 12))", &schema),
            &schema,
        )
        .unwrap();
        assert_eq!(kernel.data_type, DataType::Decimal128(25, 12));
        assert!(!kernel.faults, "{}", kernel.source);
        // Fewer integer digits (13 to 12), as Q11's Decimal(36, 2) to Decimal(38, 15):
        // checked.
        let kernel = expr_kernel(
            &physical("cast(l_quantity as decimal(16, 4))", &schema),
            &schema,
        )
        .unwrap();
        assert!(kernel.faults, "{}", kernel.source);
        // To a smaller scale (rounding) stays on the CPU.
        let reasons = expr_kernel(
            &physical("cast(l_quantity as decimal(15, 1))", &schema),
            &schema,
        )
        .unwrap_err();
        assert!(reasons[0].message.contains("CAST from"), "{reasons:?}");
    }
}
