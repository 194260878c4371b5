//! Final aggregate values on the GPU.
//!
//! A GPU aggregate folds every partition of its input into one device table, so the
//! table ends holding every group of the whole input, complete. When the final
//! aggregate above can be generated too, the emit kernel writes final values directly
//! and no CPU merge (nor the exchange feeding it) is left. Only AVG differs from its
//! state: SUM, COUNT, MIN and MAX write the state unchanged, as DataFusion's final
//! aggregate does after merging.
//!
//! AVG follows DataFusion's `AvgGroupsAccumulator`: a float average is the sum divided
//! by the count as a double; a decimal average is Arrow's `DecimalAverager`, the sum
//! (at the input's scale) multiplied by `10^(result scale - input scale)` with an
//! overflow check, divided by the count truncating toward zero, then checked against
//! the result's precision. Where DataFusion reports "Arithmetic Overflow in
//! AvgAccumulator", the emit kernel sets the fault word and the CPU recomputes the
//! segment, returning that error. A group with no value is NULL.
//!
//! Without group keys DataFusion's final aggregate writes one row even for an empty
//! input (COUNT 0, every other value NULL); the one-row emit kernel does the same from
//! identity accumulators when the table holds no group.

use datafusion::arrow::datatypes::DataType;

use super::{AGG_EMIT_ENTRY, StateOutput, unsupported};
use crate::codegen::expr::int128_literal;
use crate::codegen::types::CudaType;
use crate::reason::PlacementReason;

/// The sum accumulator an AVG reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct SumAcc {
    /// A double sum (a float argument).
    pub float: bool,
    /// An exact 128-bit sum (a decimal argument).
    pub decimal: bool,
    /// Its byte offset in a group's accumulators.
    pub offset: usize,
}

/// The final value of AVG call `index`, from its sum and its count (a C expression over
/// the group's accumulators `a`), as a column of `output`.
pub(super) fn average(
    index: usize,
    sum: SumAcc,
    arg: CudaType,
    count: &str,
    output: &DataType,
) -> Result<StateOutput, PlacementReason> {
    let valid = format!("({count} > 0ULL)");
    let at = format!("(a + {})", sum.offset);
    if sum.float && *output == DataType::Float64 {
        let value = format!("(*(const double*){at} / (double){count})");
        return Ok(StateOutput::new(value, valid));
    }
    let (true, Some(scale), DataType::Decimal128(precision, result_scale)) =
        (sum.decimal, arg.decimal_scale(), output)
    else {
        return Err(unsupported(format!(
            "the final AVG of {arg:?} as {output} is not computed on the GPU yet"
        )));
    };
    let shift = i32::from(*result_scale) - i32::from(scale);
    if scale < 0 || !(0..=38).contains(&shift) || *precision > 38 {
        return Err(unsupported(format!(
            "the final AVG of a decimal of scale {scale} as {output} is not computed on the GPU yet"
        )));
    }
    let factor = 10i128.pow(shift as u32);
    let largest = 10i128.pow(u32::from(*precision)) - 1;
    let name = format!("avg{index}");
    // Arrow's checked multiply: |sum| * factor overflows 128 bits exactly when
    // |sum| > i128::MAX / factor (a power of ten never divides 2^127).
    let overflow = if factor == 1 {
        "false".to_string()
    } else {
        let bound = int128_literal(i128::MAX / factor);
        format!("({name}_sum > {bound} || {name}_sum < -{bound})")
    };
    let largest = int128_literal(largest);
    let factor = int128_literal(factor);
    let setup = format!(
        "        const __int128 {name}_sum = agg_read_i128({at});\n\
         \x20       const u64 {name}_count = {count};\n\
         \x20       const bool {name}_over = {overflow};\n\
         \x20       const __int128 {name} = ({name}_over || {name}_count == 0ULL) ? (__int128)0\n\
         \x20           : {name}_sum * {factor} / (__int128){name}_count;\n\
         \x20       if ({name}_count > 0ULL && ({name}_over || {name} > {largest} || {name} < -{largest}))\n\
         \x20           atomicOr(aether_faults, 1u);\n"
    );
    Ok(StateOutput {
        setup,
        value: name,
        valid,
    })
}

/// The emit kernel of a final aggregate without group keys: one row, from the table's
/// one group or, when no row reached the table, from identity accumulators.
pub(super) fn one_row_emit_kernel(emit: &str) -> String {
    format!(
        r#"extern "C" __global__ void {AGG_EMIT_ENTRY}(const u64* state, const u64* table_keys,
        const unsigned char* acc, long long slots, u64* counter, const u64* outputs,
        unsigned* aether_faults) {{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    __align__(16) unsigned char identity[AGG_ACC_BYTES];
    agg_init_slot(identity);
    const unsigned char* a = identity;
    for (long long s = 0; s < slots; ++s)
        if (state[s] >= 2ULL) a = acc + s * AGG_ACC_BYTES;
    const long long out = 0;
    const u64* keys = table_keys;
    (void)keys; (void)counter; (void)aether_faults;
{emit}}}
"#
    )
}
