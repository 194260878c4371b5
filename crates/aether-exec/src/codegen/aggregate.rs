//! Generating the kernels of a GPU hash aggregate, fused with the filters and
//! projections below it.
//!
//! One source holds four kernels:
//! - `aether_agg_init` writes each accumulator's identity (0 for sums and counts, the
//!   largest value for MIN, the smallest for MAX) into every slot of a new table;
//! - `aether_agg` runs the fused pipeline over the rows of a batch and folds each kept
//!   row into its group. Groups live in an open-addressing hash table in device memory
//!   (keys packed into 64-bit words by `key_words.rs`, NULL flags in one more word
//!   when a key can be NULL, so SQL's "NULLs group together" is plain word equality).
//!   Each block first folds into a small table in shared memory and merges it into the
//!   device table once at the end, which keeps few-group aggregates (TPC-H Q1's four
//!   groups) from serializing on a handful of global atomics. A row whose group cannot
//!   be inserted because the table is half full is written to an overflow list
//!   instead; the host grows the table and runs the kernel again over those rows only,
//!   so any number of groups works;
//! - `aether_agg_rehash` moves every group into a larger table;
//! - `aether_agg_emit` writes one row per group as device columns: group keys, then
//!   either each function's state in DataFusion's partial-aggregate layout, or (when
//!   the GPU aggregate is the whole aggregate) each function's final value
//!   ([`final_values`]).
//!
//! Without group keys each thread folds its rows in registers; a warp's threads then
//! fold together through shuffles, and one lane per warp merges into the block's
//! accumulators.
//!
//! The fold kernel takes its column pointers as parameters, after the fixed ones: the
//! GPU reads parameters from its constant bank, so finding a row's column costs no
//! load (a table of pointers in device memory cost one load per column a row).
//!
//! Sums of decimals are exact 128-bit integers (two 64-bit atomics with the carry
//! propagated), integer sums wrap as DataFusion's do, float MIN/MAX follow Arrow's
//! total order (`-NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN`).
//!
//! A row's accumulator pointer may point into the shared-memory table or the device
//! table, so its 64-bit atomics compile to generic ones (`ATOM.E.ADD.64`). Measured on
//! the H200 (TPC-H Q1, SF10, docs/benchmarks.md), that beats both alternatives: a copy
//! of the updates through a pointer known to be shared, which compiles to
//! compare-and-swap loops (kernels 2.5x slower), and shared 32-bit atomics on limbs
//! with the carries propagated (10% slower).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef, SchemaRef};
use datafusion::physical_expr::PhysicalExpr;

use super::expr::{
    DATE_PRELUDE, ExprCompiler, HostTable, MAX_COLUMN_SLOTS, NUMERIC_CAST_PRELUDE, column_params,
};
use super::kernel::PRELUDE;
use super::key_words::{key_layout, key_value_expr, key_word_statements};
use super::pipeline::{Stage, compile_stages};
use super::types::CudaType;
use crate::reason::{PlacementReason, ReasonCode};

mod final_values;

/// Entry points of the generated source.
pub const AGG_INIT_ENTRY: &str = "aether_agg_init";
pub const AGG_ENTRY: &str = "aether_agg";
pub const AGG_REHASH_ENTRY: &str = "aether_agg_rehash";
pub const AGG_EMIT_ENTRY: &str = "aether_agg_emit";

/// Groups each block folds in shared memory before merging into the device table, and
/// how many of its slots a row probes before going to the device table directly.
const LOCAL_SLOTS: usize = 64;
const LOCAL_PROBES: usize = 8;

/// An aggregate function the GPU computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunction {
    Sum,
    Count,
    Min,
    Max,
    Avg,
}

impl AggFunction {
    /// The function DataFusion names `name`, if the GPU has it.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "sum" => Self::Sum,
            "count" => Self::Count,
            "min" => Self::Min,
            "max" => Self::Max,
            "avg" | "mean" => Self::Avg,
            _ => return None,
        })
    }
}

/// One aggregate call: the function, its argument over the aggregate's input, and the
/// state fields DataFusion's partial aggregate produces for it.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    pub function: AggFunction,
    pub arg: Arc<dyn PhysicalExpr>,
    pub state_fields: Vec<FieldRef>,
}

/// What the generated aggregate computes.
#[derive(Debug, Clone)]
pub struct AggregateSpec {
    /// The kernel's input columns (the batches uploaded from the host).
    pub input: SchemaRef,
    /// Filters and projections fused below the aggregate.
    pub stages: Vec<Stage>,
    /// The schema the group keys and arguments read (the last stage's output).
    pub aggregate_input: SchemaRef,
    pub keys: Vec<Arc<dyn PhysicalExpr>>,
    pub calls: Vec<AggregateCall>,
    /// The output: keys, then every call's state fields ([`AggregateOutput::States`])
    /// or every call's value ([`AggregateOutput::Values`]).
    pub output: SchemaRef,
    pub mode: AggregateOutput,
}

/// What the emit kernel writes for each group after its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateOutput {
    /// DataFusion's partial-aggregate states, which a CPU final aggregate merges.
    States,
    /// The final values, as DataFusion's final aggregate computes them (AVG divided
    /// out): the device table holds every group of the whole input, so nothing is left
    /// to merge. Without group keys the output is one row even for no input.
    Values,
}

/// Where an output column of the emit kernel comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputSource {
    /// Group key `key`, decoded through `dictionary` when a string.
    Key {
        key: usize,
        dictionary: Option<KeyDictionary>,
    },
    /// A state value computed from the accumulators.
    State,
}

/// The dictionary a string group key's codes index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDictionary {
    /// The dictionary of this input column.
    Input(usize),
    /// The results' dictionary of the [`HostTable::Mapping`] at this index of
    /// [`AggregateKernels::lookups`].
    Mapping(usize),
}

/// The generated kernels and the table layout they share.
#[derive(Debug, Clone)]
pub struct AggregateKernels {
    pub source: String,
    /// 64-bit words a group key takes in the table (values, then one NULL-flag word).
    pub key_words: usize,
    /// Column pointers the fold kernel takes after its fixed parameters
    /// ([`ExprCompiler::column_slots`]).
    pub column_slots: usize,
    /// Bytes of accumulators per group (a multiple of 16).
    pub acc_bytes: usize,
    pub outputs: Vec<OutputSource>,
    /// String predicates looked up by code; their tables follow the input columns.
    pub lookups: Vec<HostTable>,
    /// Whether the fold kernel takes a fault word after the lookup tables
    /// ([`ExprCompiler::faults`]).
    pub faults: bool,
    /// Whether the emit kernel can set the fault word (a decimal AVG past its
    /// precision, which DataFusion reports as an overflow).
    pub emit_faults: bool,
    /// Whether the emit kernel writes exactly one row (a final aggregate without group
    /// keys), whatever the table holds.
    pub one_row: bool,
}

/// How one accumulator is updated and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum AccKind {
    /// Wrapping 64-bit integer sum (also counts).
    AddU64,
    /// Exact 128-bit sum: low word then high word.
    AddI128,
    AddF64,
    MinI64,
    MaxI64,
    /// MIN and MAX of 128-bit decimals: low word then high word, updated by 128-bit
    /// compare-and-swap.
    MinI128,
    MaxI128,
    /// Floats as 64-bit keys in Arrow's total order.
    MinF,
    MaxF,
}

impl AccKind {
    fn bytes(self) -> usize {
        match self {
            Self::AddI128 | Self::MinI128 | Self::MaxI128 => 16,
            _ => 8,
        }
    }

    /// The identity's 64-bit words, low word first.
    fn identity(self) -> &'static [&'static str] {
        match self {
            Self::MinI64 => &["0x7fffffffffffffffULL"],
            Self::MaxI64 => &["0x8000000000000000ULL"],
            Self::MinF => &["0xffffffffffffffffULL"],
            Self::AddI128 => &["0ULL", "0ULL"],
            Self::MinI128 => &["0xffffffffffffffffULL", "0x7fffffffffffffffULL"],
            Self::MaxI128 => &["0ULL", "0x8000000000000000ULL"],
            Self::AddU64 | Self::AddF64 | Self::MaxF => &["0ULL"],
        }
    }

    fn update(self, at: &str, value: &str) -> String {
        match self {
            Self::AddU64 => format!("agg_add_u64({at}, (u64)({value}));"),
            Self::AddI128 => format!("agg_add_i128({at}, (__int128)({value}));"),
            Self::AddF64 => format!("agg_add_f64({at}, (double)({value}));"),
            Self::MinI64 => format!("agg_min_i64({at}, (long long)({value}));"),
            Self::MaxI64 => format!("agg_max_i64({at}, (long long)({value}));"),
            Self::MinI128 => format!("agg_min_i128({at}, (__int128)({value}));"),
            Self::MaxI128 => format!("agg_max_i128({at}, (__int128)({value}));"),
            Self::MinF => format!("agg_min_u64({at}, agg_order_key((double)({value})));"),
            Self::MaxF => format!("agg_max_u64({at}, agg_order_key((double)({value})));"),
        }
    }

    /// Merges the accumulator at `src` into the one at `dst`.
    fn merge(self, dst: &str, src: &str) -> String {
        match self {
            Self::AddU64 => format!("agg_add_u64({dst}, *(const u64*)({src}));"),
            Self::AddI128 => format!("agg_add_i128({dst}, agg_read_i128({src}));"),
            Self::AddF64 => format!("agg_add_f64({dst}, *(const double*)({src}));"),
            Self::MinI64 => format!("agg_min_i64({dst}, *(const long long*)({src}));"),
            Self::MaxI64 => format!("agg_max_i64({dst}, *(const long long*)({src}));"),
            Self::MinI128 => format!("agg_min_i128({dst}, agg_read_i128({src}));"),
            Self::MaxI128 => format!("agg_max_i128({dst}, agg_read_i128({src}));"),
            Self::MinF => format!("agg_min_u64({dst}, *(const u64*)({src}));"),
            Self::MaxF => format!("agg_max_u64({dst}, *(const u64*)({src}));"),
        }
    }

    /// The helper folding this accumulator over a warp into lane 0's (every lane
    /// calls it; see `aggw_*` in the prelude).
    fn warp_fold(self) -> &'static str {
        match self {
            Self::AddU64 => "aggw_add_u64",
            Self::AddI128 => "aggw_add_i128",
            Self::AddF64 => "aggw_add_f64",
            Self::MinI64 => "aggw_min_i64",
            Self::MaxI64 => "aggw_max_i64",
            Self::MinI128 => "aggw_min_i128",
            Self::MaxI128 => "aggw_max_i128",
            Self::MinF => "aggw_min_u64",
            Self::MaxF => "aggw_max_u64",
        }
    }
}

/// Helpers of the aggregate kernels.
const AGG_PRELUDE: &str = r#"
#define AGG_EMPTY 0ULL
#define AGG_BUSY 1ULL

__device__ __forceinline__ void agg_add_u64(unsigned char* a, u64 v) { atomicAdd((u64*)a, v); }
__device__ __forceinline__ void agg_add_f64(unsigned char* a, double v) { atomicAdd((double*)a, v); }
__device__ __forceinline__ void agg_min_i64(unsigned char* a, long long v) { atomicMin((long long*)a, v); }
__device__ __forceinline__ void agg_max_i64(unsigned char* a, long long v) { atomicMax((long long*)a, v); }
__device__ __forceinline__ void agg_min_u64(unsigned char* a, u64 v) { atomicMin((u64*)a, v); }
__device__ __forceinline__ void agg_max_u64(unsigned char* a, u64 v) { atomicMax((u64*)a, v); }

// An exact 128-bit add from two 64-bit atomics: the carry out of the low word is
// known from the value the low word held, and added to the high word.
__device__ __forceinline__ void agg_add_i128(unsigned char* a, __int128 v) {
    const u64 lo = (u64)v;
    u64 hi = (u64)((unsigned __int128)v >> 64);
    const u64 old = atomicAdd((u64*)a, lo);
    if (old + lo < old) hi += 1ULL;
    if (hi != 0ULL) atomicAdd(((u64*)a) + 1, hi);
}

__device__ __forceinline__ __int128 agg_read_i128(const unsigned char* a) {
    const u64 lo = ((const u64*)a)[0];
    const u64 hi = ((const u64*)a)[1];
    return (__int128)(((unsigned __int128)hi << 64) | (unsigned __int128)lo);
}

// A 128-bit compare-and-swap (PTX `atom.cas.b128`, sm_90 and later) through a
// generic pointer to 16-byte aligned memory: returns what the accumulator held, which
// was replaced by `desired` when it equals `expected`.
__device__ __forceinline__ __int128 agg_cas_i128(unsigned char* a, __int128 expected,
                                                  __int128 desired) {
    u64 held_lo, held_hi;
    asm volatile(
        "{\n\t.reg .b128 expected, desired, held;\n\t"
        "mov.b128 expected, {%2, %3};\n\t"
        "mov.b128 desired, {%4, %5};\n\t"
        "atom.cas.b128 held, [%6], expected, desired;\n\t"
        "mov.b128 {%0, %1}, held;\n\t}"
        : "=l"(held_lo), "=l"(held_hi)
        : "l"((u64)expected), "l"((u64)((unsigned __int128)expected >> 64)),
          "l"((u64)desired), "l"((u64)((unsigned __int128)desired >> 64)), "l"(a)
        : "memory");
    return (__int128)(((unsigned __int128)held_hi << 64) | (unsigned __int128)held_lo);
}

// 128-bit MIN and MAX. The plain read is only a guess (its two words may come from
// different updates): each compare-and-swap either confirms it, writing the smaller
// or larger of it and `v`, or returns what the accumulator really holds.
__device__ __forceinline__ void agg_min_i128(unsigned char* a, __int128 v) {
    __int128 guess = agg_read_i128(a);
    for (;;) {
        const __int128 held = agg_cas_i128(a, guess, v < guess ? v : guess);
        if (held == guess) return;
        guess = held;
    }
}
__device__ __forceinline__ void agg_max_i128(unsigned char* a, __int128 v) {
    __int128 guess = agg_read_i128(a);
    for (;;) {
        const __int128 held = agg_cas_i128(a, guess, v > guess ? v : guess);
        if (held == guess) return;
        guess = held;
    }
}

// The same updates on one thread's own accumulators (no other thread sees them).
__device__ __forceinline__ void aggl_add_u64(unsigned char* a, u64 v) { *(u64*)a += v; }
__device__ __forceinline__ void aggl_add_f64(unsigned char* a, double v) { *(double*)a += v; }
__device__ __forceinline__ void aggl_min_i64(unsigned char* a, long long v) { long long* p = (long long*)a; if (v < *p) *p = v; }
__device__ __forceinline__ void aggl_max_i64(unsigned char* a, long long v) { long long* p = (long long*)a; if (v > *p) *p = v; }
__device__ __forceinline__ void aggl_min_u64(unsigned char* a, u64 v) { u64* p = (u64*)a; if (v < *p) *p = v; }
__device__ __forceinline__ void aggl_max_u64(unsigned char* a, u64 v) { u64* p = (u64*)a; if (v > *p) *p = v; }
__device__ __forceinline__ void aggl_write_i128(unsigned char* a, __int128 v) {
    ((u64*)a)[0] = (u64)v;
    ((u64*)a)[1] = (u64)((unsigned __int128)v >> 64);
}
__device__ __forceinline__ void aggl_min_i128(unsigned char* a, __int128 v) { if (v < agg_read_i128(a)) aggl_write_i128(a, v); }
__device__ __forceinline__ void aggl_max_i128(unsigned char* a, __int128 v) { if (v > agg_read_i128(a)) aggl_write_i128(a, v); }
__device__ __forceinline__ void aggl_add_i128(unsigned char* a, __int128 v) {
    // Unsigned: the sum wraps as DataFusion's does, where a signed one is undefined.
    const unsigned __int128 sum = (unsigned __int128)agg_read_i128(a) + (unsigned __int128)v;
    ((u64*)a)[0] = (u64)sum;
    ((u64*)a)[1] = (u64)(sum >> 64);
}

// Warp-wide folds of one thread's accumulators into lane 0's (all 32 lanes call).
__device__ __forceinline__ void aggw_add_u64(unsigned char* a) {
    u64 v = *(u64*)a;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    *(u64*)a = v;
}
__device__ __forceinline__ void aggw_add_f64(unsigned char* a) {
    double v = *(double*)a;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    *(double*)a = v;
}
__device__ __forceinline__ void aggw_add_i128(unsigned char* a) {
    u64 lo = ((u64*)a)[0], hi = ((u64*)a)[1];
    for (int o = 16; o > 0; o >>= 1) {
        const u64 other_lo = __shfl_xor_sync(0xffffffffu, lo, o);
        const u64 other_hi = __shfl_xor_sync(0xffffffffu, hi, o);
        const u64 sum = lo + other_lo;
        hi += other_hi + (sum < lo ? 1ULL : 0ULL);
        lo = sum;
    }
    ((u64*)a)[0] = lo;
    ((u64*)a)[1] = hi;
}
__device__ __forceinline__ void aggw_min_i64(unsigned char* a) {
    long long v = *(long long*)a;
    for (int o = 16; o > 0; o >>= 1) v = min(v, (long long)__shfl_xor_sync(0xffffffffu, v, o));
    *(long long*)a = v;
}
__device__ __forceinline__ void aggw_max_i64(unsigned char* a) {
    long long v = *(long long*)a;
    for (int o = 16; o > 0; o >>= 1) v = max(v, (long long)__shfl_xor_sync(0xffffffffu, v, o));
    *(long long*)a = v;
}
__device__ __forceinline__ __int128 aggw_shfl_i128(__int128 v, int o) {
    const u64 lo = __shfl_xor_sync(0xffffffffu, (u64)v, o);
    const u64 hi = __shfl_xor_sync(0xffffffffu, (u64)((unsigned __int128)v >> 64), o);
    return (__int128)(((unsigned __int128)hi << 64) | (unsigned __int128)lo);
}
__device__ __forceinline__ void aggw_min_i128(unsigned char* a) {
    __int128 v = agg_read_i128(a);
    for (int o = 16; o > 0; o >>= 1) { const __int128 other = aggw_shfl_i128(v, o); if (other < v) v = other; }
    aggl_write_i128(a, v);
}
__device__ __forceinline__ void aggw_max_i128(unsigned char* a) {
    __int128 v = agg_read_i128(a);
    for (int o = 16; o > 0; o >>= 1) { const __int128 other = aggw_shfl_i128(v, o); if (other > v) v = other; }
    aggl_write_i128(a, v);
}
__device__ __forceinline__ void aggw_min_u64(unsigned char* a) {
    u64 v = *(u64*)a;
    for (int o = 16; o > 0; o >>= 1) v = min(v, (u64)__shfl_xor_sync(0xffffffffu, v, o));
    *(u64*)a = v;
}
__device__ __forceinline__ void aggw_max_u64(unsigned char* a) {
    u64 v = *(u64*)a;
    for (int o = 16; o > 0; o >>= 1) v = max(v, (u64)__shfl_xor_sync(0xffffffffu, v, o));
    *(u64*)a = v;
}

// Arrow's total order of floats as unsigned 64-bit keys.
__device__ __forceinline__ u64 agg_order_key(double v) {
    const u64 bits = (u64)__double_as_longlong(v);
    return (bits >> 63) ? ~bits : (bits | 0x8000000000000000ULL);
}

__device__ __forceinline__ double agg_from_order_key(u64 key) {
    const u64 bits = (key >> 63) ? (key & 0x7fffffffffffffffULL) : ~key;
    return __longlong_as_double((long long)bits);
}

__device__ __forceinline__ u64 agg_mix(u64 h, u64 w) {
    h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

__device__ __forceinline__ u64 agg_finish(u64 h) {
    h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27; h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

// The slot holding `key` (inserting it when new), or -1 when the table has reached
// `max_fill` groups. `state[slot]` is AGG_EMPTY, AGG_BUSY while a key is written, or
// the key's tag (its hash with bit 1 set, never 0 or 1).
__device__ long long agg_find_or_insert(u64* state, u64* keys, long long mask,
                                        long long max_fill, u64* occupied,
                                        const u64* key, u64 tag) {
    long long pos = (long long)(tag >> 2) & mask;
    for (long long probes = 0; probes <= mask; ) {
        u64 seen = ((volatile u64*)state)[pos];
        if (seen == AGG_EMPTY) {
            seen = atomicCAS(&state[pos], AGG_EMPTY, AGG_BUSY);
            if (seen == AGG_EMPTY) {
                // Only a thread that claimed a slot counts a group, so racing inserts of
                // the same key never make the table look fuller than it is.
                if ((long long)atomicAdd(occupied, 1ULL) >= max_fill) {
                    atomicAdd(occupied, (u64)-1LL);
                    atomicExch(&state[pos], AGG_EMPTY);
                    return -1;
                }
                for (int w = 0; w < AGG_KEY_WORDS; ++w) keys[pos * AGG_KEY_WORDS + w] = key[w];
                __threadfence();
                atomicExch(&state[pos], tag);
                return pos;
            }
        }
        while (seen == AGG_BUSY) seen = ((volatile u64*)state)[pos];
        // A claim given back (the table was full) leaves the slot empty: try it again.
        // Probing past it would let a later thread insert the same key there, and the
        // key would then hold two slots.
        if (seen == AGG_EMPTY) continue;
        if (seen == tag) {
            bool same = true;
            for (int w = 0; w < AGG_KEY_WORDS; ++w)
                same = same && ((volatile u64*)keys)[pos * AGG_KEY_WORDS + w] == key[w];
            if (same) return pos;
        }
        pos = (pos + 1) & mask;
        ++probes;
    }
    return -1;
}
"#;

/// An accumulator at `offset` in a group's accumulator bytes.
#[derive(Debug, Clone, Copy)]
struct Acc {
    kind: AccKind,
    offset: usize,
}

/// The accumulator layout: offset 0 always counts the group's rows.
#[derive(Debug, Default)]
struct AccLayout {
    accs: Vec<Acc>,
    bytes: usize,
}

impl AccLayout {
    fn new() -> Self {
        let mut layout = Self::default();
        layout.push(AccKind::AddU64);
        layout
    }

    fn push(&mut self, kind: AccKind) -> Acc {
        let size = kind.bytes();
        let offset = self.bytes.div_ceil(size) * size;
        let acc = Acc { kind, offset };
        self.accs.push(acc);
        self.bytes = offset + size;
        acc
    }

    fn padded_bytes(&self) -> usize {
        self.bytes.div_ceil(16) * 16
    }
}

const ROWS: Acc = Acc {
    kind: AccKind::AddU64,
    offset: 0,
};

/// How one output state column is computed from accumulators.
#[derive(Debug, Clone)]
struct StateOutput {
    /// Statements computing what `value` and `valid` read (usually none).
    setup: String,
    /// The value: an expression over `a` (the group's accumulators).
    value: String,
    /// The validity, also over `a`.
    valid: String,
}

impl StateOutput {
    fn new(value: String, valid: String) -> Self {
        Self {
            setup: String::new(),
            value,
            valid,
        }
    }
}

fn unsupported(message: String) -> PlacementReason {
    PlacementReason::new(ReasonCode::UnsupportedExpression, message)
}

/// The C type a column of `data_type` takes in the device layout, for writing outputs.
fn output_c_type(data_type: &DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::Int8 => "signed char",
        DataType::Int16 => "short",
        DataType::Int32 | DataType::Date32 => "int",
        DataType::Int64 | DataType::Timestamp(_, _) => "long long",
        DataType::UInt8 => "unsigned char",
        DataType::UInt16 => "unsigned short",
        DataType::UInt32 => "unsigned",
        DataType::UInt64 => "u64",
        DataType::Float32 => "float",
        DataType::Float64 => "double",
        DataType::Decimal128(p, _) if *p <= 18 => "long long",
        DataType::Decimal128(_, _) => "__int128",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "int",
        DataType::Boolean => "bool",
        _ => return None,
    })
}

/// Generates the aggregate kernels for `spec`, or every reason they cannot be.
pub fn aggregate_kernels(spec: &AggregateSpec) -> Result<AggregateKernels, Vec<PlacementReason>> {
    aggregate_kernels_with_bytes(spec, &[])
}

/// [`aggregate_kernels`] with input string columns `string_bytes` uploaded as offsets
/// and bytes (see `codegen/expr/string_bytes.rs`).
pub fn aggregate_kernels_with_bytes(
    spec: &AggregateSpec,
    string_bytes: &[usize],
) -> Result<AggregateKernels, Vec<PlacementReason>> {
    let mut compiler = ExprCompiler::with_string_bytes(Arc::clone(&spec.input), string_bytes);
    let mut ok = compile_stages(&mut compiler, &spec.stages);
    let bindings = compiler.bindings().to_vec();
    compiler.rebind(Arc::clone(&spec.aggregate_input), bindings);

    // Group keys.
    let mut key_values = Vec::new();
    for key in &spec.keys {
        match compiler.compile(key) {
            Some(value) => key_values.push(value),
            None => ok = false,
        }
    }
    let key_layout = key_layout(&key_values);
    let key_word_count = key_layout.words;
    // NULL flags take one more word, only when a key can be NULL: the probe compares
    // every word of a row's key. A string function's result may be NULL (code -1)
    // whatever its declared nullability says, so a mapped key always takes one.
    let nullable_keys = spec
        .keys
        .iter()
        .any(|key| key.nullable(&spec.aggregate_input).unwrap_or(true))
        || key_values
            .iter()
            .any(|key| compiler.mapping_of(key).is_some());
    let null_word = key_word_count;
    let key_words = key_word_count + usize::from(nullable_keys);

    // Aggregate arguments and accumulators. Calls that need the same accumulator of the
    // same value share it (TPC-H Q1's AVG(x) and SUM(x) keep one sum and one count), so
    // each row updates it once: the fold kernel is bound by these shared-memory updates.
    // The key is the generated text of the value and its validity, which names the same
    // value only because that text has no side effects and every update is emitted in
    // the one scope after the pipeline's body.
    //
    // Each argument's code, and the projected values only arguments read (see
    // `codegen/expr/deferred.rs`), goes right before its updates, after the group's
    // slot is found: computed with the pipeline, Q1's two 128-bit products stayed live
    // across the probe and the updates before theirs, which took the fold kernel from
    // 40 to 48 registers and one block fewer per multiprocessor.
    let pipeline = compiler.take_statements();
    let mut layout = AccLayout::new();
    let mut updates = String::new();
    let mut shared_accs: HashMap<(AccKind, String, String), Acc> = HashMap::new();
    let mut acc_for =
        |layout: &mut AccLayout, updates: &mut String, kind: AccKind, value: &str, valid: &str| {
            *shared_accs
                .entry((kind, value.to_string(), valid.to_string()))
                .or_insert_with(|| {
                    let acc = layout.push(kind);
                    let _ = writeln!(
                        updates,
                        "        if ({valid}) {}",
                        kind.update(&acc_at(acc), value)
                    );
                    acc
                })
        };
    let mut states: Vec<StateOutput> = Vec::new();
    let mut emit_faults = false;
    let fields = spec.output.fields();
    for (index, call) in spec.calls.iter().enumerate() {
        let Some(arg) = compiler.compile(&call.arg) else {
            ok = false;
            continue;
        };
        updates.push_str(&compiler.take_statements());
        let nullable = call.arg.nullable(&spec.aggregate_input).unwrap_or(true);
        // Rows that reach the call: its non-NULL count, or every row of the group.
        let count = if nullable {
            acc_for(
                &mut layout,
                &mut updates,
                AccKind::AddU64,
                "1ULL",
                &arg.valid,
            )
        } else {
            ROWS
        };
        let count_value = format!("(*(const u64*)(a + {}))", count.offset);
        let has_value = format!("({count_value} > 0ULL)");
        let function = call.function;
        // The output field of this call's value, when the output is final values.
        let value_field = match spec.mode {
            AggregateOutput::States => None,
            AggregateOutput::Values => fields.get(spec.keys.len() + index),
        };
        if function == AggFunction::Count {
            let outputs = match spec.mode {
                AggregateOutput::States => call.state_fields.len(),
                AggregateOutput::Values => 1,
            };
            for _ in 0..outputs {
                states.push(StateOutput::new(count_value.clone(), "true".into()));
            }
            continue;
        }
        if arg.ty == CudaType::StrCode || arg.ty == CudaType::Bool {
            compiler.add_reason(unsupported(format!(
                "{function:?} of {} is not computed on the GPU yet",
                call.arg
            )));
            ok = false;
            continue;
        }
        let kind = match (function, arg.ty) {
            (AggFunction::Sum | AggFunction::Avg, ty) if ty.is_float() => AccKind::AddF64,
            (AggFunction::Sum | AggFunction::Avg, ty) if ty.is_integer() => AccKind::AddU64,
            (AggFunction::Sum | AggFunction::Avg, _) => AccKind::AddI128,
            (AggFunction::Min, ty) if ty.is_float() => AccKind::MinF,
            (AggFunction::Max, ty) if ty.is_float() => AccKind::MaxF,
            (AggFunction::Min, CudaType::Dec128 { .. }) => AccKind::MinI128,
            (AggFunction::Max, CudaType::Dec128 { .. }) => AccKind::MaxI128,
            (AggFunction::Min, _) => AccKind::MinI64,
            // COUNT returned above; MAX is what is left.
            (AggFunction::Max | AggFunction::Count, _) => AccKind::MaxI64,
        };
        let acc = acc_for(&mut layout, &mut updates, kind, &arg.value, &arg.valid);
        let sum_value = |ty: &DataType| -> String {
            let at = format!("(a + {})", acc.offset);
            match kind {
                AccKind::AddF64 => format!("*(const double*){at}"),
                AccKind::AddU64 => format!("(long long)*(const u64*){at}"),
                AccKind::AddI128 if matches!(ty, DataType::Decimal128(p, _) if *p <= 18) => {
                    format!("(long long)agg_read_i128({at})")
                }
                AccKind::AddI128 | AccKind::MinI128 | AccKind::MaxI128 => {
                    format!("agg_read_i128({at})")
                }
                AccKind::MinF | AccKind::MaxF => {
                    format!("agg_from_order_key(*(const u64*){at})")
                }
                AccKind::MinI64 | AccKind::MaxI64 => format!("*(const long long*){at}"),
            }
        };
        // The states are checked in both modes: a final value is computed from them as
        // DataFusion's final aggregate would from its merged states.
        let mut call_states = Vec::new();
        for field in &call.state_fields {
            let name = field.name();
            let is_count = name.ends_with("[count]");
            if !state_fits(kind, arg.ty, is_count, field.data_type()) {
                compiler.add_reason(unsupported(format!(
                    "the {function:?} state {name} of type {} does not match the GPU accumulator",
                    field.data_type()
                )));
                ok = false;
                continue;
            }
            call_states.push(if is_count {
                StateOutput::new(count_value.clone(), "true".into())
            } else {
                StateOutput::new(sum_value(field.data_type()), has_value.clone())
            });
        }
        let Some(field) = value_field else {
            states.extend(call_states);
            continue;
        };
        let value = if function == AggFunction::Avg {
            let sum = final_values::SumAcc {
                float: kind == AccKind::AddF64,
                decimal: kind == AccKind::AddI128,
                offset: acc.offset,
            };
            final_values::average(index, sum, arg.ty, &count_value, field.data_type())
        } else if state_fits(kind, arg.ty, false, field.data_type()) {
            Ok(StateOutput::new(
                sum_value(field.data_type()),
                has_value.clone(),
            ))
        } else {
            Err(unsupported(format!(
                "the {function:?} value of type {} does not match the GPU accumulator",
                field.data_type()
            )))
        };
        match value {
            Ok(value) => {
                emit_faults |= value.setup.contains("aether_faults");
                states.push(value);
            }
            Err(reason) => {
                compiler.add_reason(reason);
                ok = false;
            }
        }
    }
    // Projected values no argument read still run for every row, as DataFusion's
    // projection computes them (and may fail on them).
    compiler.emit_all_deferred();
    updates.push_str(&compiler.take_statements());

    // The output columns: keys, then states, checked against the declared schema.
    let mut outputs = Vec::new();
    let mut emit = String::new();
    if fields.len() != spec.keys.len() + states.len() && ok {
        compiler.add_reason(unsupported(format!(
            "the aggregate's output has {} columns where {} keys and {} states were generated",
            fields.len(),
            spec.keys.len(),
            states.len()
        )));
        ok = false;
    }
    for (k, (value, placement)) in key_values.iter().zip(&key_layout.placements).enumerate() {
        let Some(field) = fields.get(k) else { break };
        let Some(c_type) = output_c_type(field.data_type()) else {
            compiler.add_reason(PlacementReason::new(
                ReasonCode::UnsupportedType,
                format!(
                    "group keys of type {} are not produced on the GPU yet",
                    field.data_type()
                ),
            ));
            ok = false;
            continue;
        };
        let valid = if nullable_keys {
            format!("((keys[{null_word}] >> {k}) & 1ULL) == 0ULL")
        } else {
            "true".to_string()
        };
        let value_expr = key_value_expr(*placement, value.ty, c_type);
        emit_column(
            &mut emit,
            outputs.len(),
            field.data_type(),
            c_type,
            &value_expr,
            &valid,
        );
        let dictionary = (value.ty == CudaType::StrCode)
            .then(|| {
                compiler
                    .input_column_of(value)
                    .map(KeyDictionary::Input)
                    .or_else(|| compiler.mapping_of(value).map(KeyDictionary::Mapping))
            })
            .flatten();
        if value.ty == CudaType::StrCode && dictionary.is_none() {
            compiler.add_reason(unsupported(format!(
                "string group key {} is not an input column",
                spec.keys[k]
            )));
            ok = false;
        }
        outputs.push(OutputSource::Key { key: k, dictionary });
    }
    for (i, state) in states.iter().enumerate() {
        let Some(field) = fields.get(spec.keys.len() + i) else {
            break;
        };
        let Some(c_type) = output_c_type(field.data_type()) else {
            compiler.add_reason(PlacementReason::new(
                ReasonCode::UnsupportedType,
                format!(
                    "aggregate states of type {} are not produced on the GPU yet",
                    field.data_type()
                ),
            ));
            ok = false;
            continue;
        };
        let value = format!("({c_type})({})", state.value);
        emit.push_str(&state.setup);
        emit_column(
            &mut emit,
            outputs.len(),
            field.data_type(),
            c_type,
            &value,
            &state.valid,
        );
        outputs.push(OutputSource::State);
    }
    let column_slots = compiler.column_slots();
    if column_slots > MAX_COLUMN_SLOTS {
        compiler.add_reason(unsupported(format!(
            "the aggregate reads {} input columns and lookup tables; a GPU kernel takes at most {}",
            column_slots / 2,
            MAX_COLUMN_SLOTS / 2
        )));
        ok = false;
    }
    if !ok {
        let mut reasons = compiler.reasons().to_vec();
        if reasons.is_empty() {
            reasons.push(unsupported(
                "the aggregate cannot be generated for the GPU".into(),
            ));
        }
        return Err(reasons);
    }

    // The row kernel: pipeline, key, slot, accumulator updates.
    let mut key_setup = String::new();
    let _ = writeln!(key_setup, "        u64 key[AGG_KEY_WORDS_ALLOC];");
    key_setup.push_str(&key_word_statements(&key_layout, &key_values));
    let mut null_flags = Vec::new();
    for (k, value) in key_values.iter().enumerate() {
        null_flags.push(format!("({} ? 0ULL : {}ULL)", value.valid, 1u64 << k));
    }
    if nullable_keys {
        let _ = writeln!(
            key_setup,
            "        key[{null_word}] = {};",
            null_flags.join(" | ")
        );
    }
    let _ = writeln!(key_setup, "        u64 hash = 0x243f6a8885a308d3ULL;");
    let _ = writeln!(
        key_setup,
        "        for (int w = 0; w < AGG_KEY_WORDS; ++w) hash = agg_mix(hash, key[w]);"
    );
    let _ = writeln!(
        key_setup,
        "        const u64 tag = agg_finish(hash) | 2ULL;"
    );

    let acc_bytes = layout.padded_bytes();
    let init = layout
        .accs
        .iter()
        .flat_map(|acc| {
            acc.kind.identity().iter().enumerate().map(|(word, value)| {
                format!("    ((u64*)(a + {}))[{word}] = {value};\n", acc.offset)
            })
        })
        .collect::<String>();
    let merge = layout
        .accs
        .iter()
        .map(|acc| {
            format!(
                "    {}\n",
                acc.kind.merge(
                    &format!("(dst + {})", acc.offset),
                    &format!("(src + {})", acc.offset)
                )
            )
        })
        .collect::<String>();
    let warp_fold = layout
        .accs
        .iter()
        .map(|acc| format!("    {}(a + {});\n", acc.kind.warp_fold(), acc.offset))
        .collect::<String>();
    let rows_update = ROWS.kind.update(&acc_at(ROWS), "1ULL");
    // Input loads (all up front, see `ExprCompiler::body`), then the pipeline and keys.
    let body = &format!("{}{pipeline}", compiler.body());
    let faults = (compiler.fault_prologue(), compiler.fault_epilogue());
    let params = column_params(column_slots);
    let one_row = spec.keys.is_empty() && spec.mode == AggregateOutput::Values;
    let emit_kernel = if one_row {
        final_values::one_row_emit_kernel(&emit)
    } else {
        emit_kernel(&emit)
    };
    let fold_kernel = if spec.keys.is_empty() {
        // One group: each thread folds its rows into its own accumulators (registers),
        // then once into the block's, then the block once into the device table.
        let local = |text: &str| {
            text.replace("(a + ", "(my + ")
                .replace("agg_add_", "aggl_add_")
                .replace("agg_min_", "aggl_min_")
                .replace("agg_max_", "aggl_max_")
        };
        global_fold_kernel(
            &params,
            body,
            &local(&rows_update),
            &local(&updates),
            &faults,
        )
    } else {
        keyed_fold_kernel(&params, body, &key_setup, &rows_update, &updates, &faults)
    };
    let strings = compiler.string_prelude();
    let source = format!(
        r#"{PRELUDE}{DATE_PRELUDE}{NUMERIC_CAST_PRELUDE}{strings}
#define AGG_KEY_WORDS {key_words}
#define AGG_KEY_WORDS_ALLOC {key_alloc}
#define AGG_ACC_BYTES {acc_bytes}
#define AGG_LOCAL_SLOTS {LOCAL_SLOTS}
#define AGG_LOCAL_PROBES {LOCAL_PROBES}
{AGG_PRELUDE}
__device__ __forceinline__ void agg_init_slot(unsigned char* a) {{
{init}}}

__device__ __forceinline__ void agg_merge_slot(unsigned char* dst, const unsigned char* src) {{
{merge}}}

// Folds a thread's accumulators over its warp into lane 0's (every lane calls).
__device__ __forceinline__ void agg_warp_fold(unsigned char* a) {{
{warp_fold}}}

extern "C" __global__ void {AGG_INIT_ENTRY}(unsigned char* acc, long long slots) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += stride)
        agg_init_slot(acc + s * AGG_ACC_BYTES);
}}

{fold_kernel}
extern "C" __global__ void {AGG_REHASH_ENTRY}(const u64* old_state, const u64* old_keys,
        const unsigned char* old_acc, long long old_slots, u64* state, u64* keys,
        unsigned char* acc, long long mask) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < old_slots; s += stride) {{
        const u64 tag = old_state[s];
        if (tag < 2ULL) continue;
        long long pos = (long long)(tag >> 2) & mask;
        while (atomicCAS(&state[pos], AGG_EMPTY, tag) != AGG_EMPTY) pos = (pos + 1) & mask;
        for (int w = 0; w < AGG_KEY_WORDS; ++w) keys[pos * AGG_KEY_WORDS + w] = old_keys[s * AGG_KEY_WORDS + w];
        for (int b = 0; b < AGG_ACC_BYTES / 8; ++b)
            ((u64*)(acc + pos * AGG_ACC_BYTES))[b] = ((const u64*)(old_acc + s * AGG_ACC_BYTES))[b];
    }}
}}

{emit_kernel}"#,
        key_alloc = key_words.max(1),
    );
    super::generated::generated(&source);
    Ok(AggregateKernels {
        source,
        key_words,
        column_slots,
        acc_bytes,
        outputs,
        lookups: compiler.lookups().to_vec(),
        faults: compiler.faults(),
        emit_faults,
        one_row,
    })
}

/// The emit kernel: one output row per occupied slot, in no particular order.
fn emit_kernel(emit: &str) -> String {
    format!(
        r#"extern "C" __global__ void {AGG_EMIT_ENTRY}(const u64* state, const u64* table_keys,
        const unsigned char* acc, long long slots, u64* counter, const u64* outputs,
        unsigned* aether_faults) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += stride) {{
        if (state[s] < 2ULL) continue;
        const long long out = (long long)atomicAdd(counter, 1ULL);
        const u64* keys = table_keys + s * AGG_KEY_WORDS;
        const unsigned char* a = acc + s * AGG_ACC_BYTES;
        (void)keys; (void)a; (void)aether_faults;
{emit}    }}
}}
"#
    )
}

/// Whether a state column of `data_type` can be written from an accumulator of `kind`
/// over an argument of type `arg` without changing its meaning.
fn state_fits(kind: AccKind, arg: CudaType, is_count: bool, data_type: &DataType) -> bool {
    if is_count {
        return matches!(data_type, DataType::Int64 | DataType::UInt64);
    }
    match (kind, data_type) {
        (AccKind::AddF64, DataType::Float64) => true,
        (AccKind::AddU64, DataType::Int64) => true,
        (AccKind::AddI128, DataType::Decimal128(_, scale)) => arg.decimal_scale() == Some(*scale),
        (AccKind::MinF | AccKind::MaxF, DataType::Float32 | DataType::Float64) => {
            CudaType::of(data_type).ok() == Some(arg)
        }
        (AccKind::MinI64 | AccKind::MaxI64 | AccKind::MinI128 | AccKind::MaxI128, t) => {
            CudaType::of(t).ok() == Some(arg)
        }
        _ => false,
    }
}

/// The fold kernel of an aggregate without group keys.
fn global_fold_kernel(
    params: &str,
    body: &str,
    rows_update: &str,
    updates: &str,
    (fault_prologue, fault_epilogue): &(String, String),
) -> String {
    format!(
        r#"extern "C" __global__ void {AGG_ENTRY}(long long rows, const unsigned* __restrict__ row_ids,
        u64* state, u64* keys, unsigned char* acc, long long mask, long long max_fill,
        u64* group_count, u64* overflow_count, unsigned* overflow{params}) {{
    __shared__ __align__(16) unsigned char block_acc[AGG_ACC_BYTES];
    __align__(16) unsigned char my[AGG_ACC_BYTES];
    agg_init_slot(my);
    if (threadIdx.x == 0) agg_init_slot(block_acc);
    __syncthreads();
{fault_prologue}    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += stride) {{
        const long long row = row_ids ? (long long)row_ids[i] : i;
{body}        {rows_update}
{updates}    }}
{fault_epilogue}    // Lane 0 of each warp folds the warp's accumulators (shuffles, no atomics), so
    // the block's accumulators take one update per warp instead of one per thread.
    agg_warp_fold(my);
    if ((threadIdx.x & 31) == 0 && *(const u64*)my > 0ULL) agg_merge_slot(block_acc, my);
    __syncthreads();
    if (threadIdx.x == 0 && *(const u64*)block_acc > 0ULL) {{
        // The one group always fits: the table holds at least two slots per group.
        u64 key[1] = {{0ULL}};
        const u64 tag = agg_finish(0x243f6a8885a308d3ULL) | 2ULL;
        const long long slot = agg_find_or_insert(state, keys, mask, max_fill, group_count, key, tag);
        if (slot >= 0) agg_merge_slot(acc + slot * AGG_ACC_BYTES, block_acc);
    }}
    (void)overflow;
    (void)overflow_count;
}}
"#
    )
}

/// The fold kernel of an aggregate with group keys: a block-local table in shared
/// memory, keyed by the full key, catches the groups a block sees most; the device
/// table is probed once per new group per block (and by rows that find the local table
/// crowded).
fn keyed_fold_kernel(
    params: &str,
    body: &str,
    key_setup: &str,
    rows_update: &str,
    updates: &str,
    (fault_prologue, fault_epilogue): &(String, String),
) -> String {
    format!(
        r#"extern "C" __global__ void {AGG_ENTRY}(long long rows, const unsigned* __restrict__ row_ids,
        u64* state, u64* keys, unsigned char* acc, long long mask, long long max_fill,
        u64* group_count, u64* overflow_count, unsigned* overflow{params}) {{
    __shared__ u64 local_tag[AGG_LOCAL_SLOTS];
    __shared__ long long local_slot[AGG_LOCAL_SLOTS];
    __shared__ u64 local_keys[AGG_LOCAL_SLOTS * AGG_KEY_WORDS_ALLOC];
    __shared__ __align__(16) unsigned char local_acc[AGG_LOCAL_SLOTS * AGG_ACC_BYTES];
    for (int i = threadIdx.x; i < AGG_LOCAL_SLOTS; i += blockDim.x) {{
        local_tag[i] = AGG_EMPTY;
        local_slot[i] = -1;
        agg_init_slot(local_acc + i * AGG_ACC_BYTES);
    }}
    __syncthreads();
{fault_prologue}    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += stride) {{
        const long long row = row_ids ? (long long)row_ids[i] : i;
{body}{key_setup}        long long slot = -1;
        unsigned char* a = 0;
        unsigned l = (unsigned)((tag >> 2) % AGG_LOCAL_SLOTS);
        for (int p = 0; p < AGG_LOCAL_PROBES; ++p, l = (l + 1) % AGG_LOCAL_SLOTS) {{
            u64 seen = ((volatile u64*)local_tag)[l];
            if (seen == AGG_EMPTY) {{
                seen = atomicCAS((u64*)&local_tag[l], AGG_EMPTY, AGG_BUSY);
                if (seen == AGG_EMPTY) {{
                    for (int w = 0; w < AGG_KEY_WORDS; ++w) local_keys[l * AGG_KEY_WORDS + w] = key[w];
                    slot = agg_find_or_insert(state, keys, mask, max_fill, group_count, key, tag);
                    local_slot[l] = slot;
                    __threadfence_block();
                    atomicExch((u64*)&local_tag[l], tag);
                    a = local_acc + l * AGG_ACC_BYTES;
                    break;
                }}
            }}
            while (seen == AGG_BUSY) seen = ((volatile u64*)local_tag)[l];
            if (seen == tag) {{
                bool same = true;
                for (int w = 0; w < AGG_KEY_WORDS; ++w)
                    same = same && ((volatile u64*)local_keys)[l * AGG_KEY_WORDS + w] == key[w];
                if (same) {{
                    slot = ((volatile long long*)local_slot)[l];
                    a = local_acc + l * AGG_ACC_BYTES;
                    break;
                }}
            }}
        }}
        if (a == 0) {{
            slot = agg_find_or_insert(state, keys, mask, max_fill, group_count, key, tag);
            if (slot >= 0) a = acc + slot * AGG_ACC_BYTES;
        }}
        if (slot < 0) {{
            overflow[atomicAdd(overflow_count, 1ULL)] = (unsigned)row;
            continue;
        }}
        {rows_update}
{updates}    }}
{fault_epilogue}    __syncthreads();
    for (int i = threadIdx.x; i < AGG_LOCAL_SLOTS; i += blockDim.x) {{
        const long long slot = local_slot[i];
        if (local_tag[i] >= 2ULL && slot >= 0)
            agg_merge_slot(acc + slot * AGG_ACC_BYTES, local_acc + i * AGG_ACC_BYTES);
    }}
}}
"#
    )
}

fn acc_at(acc: Acc) -> String {
    format!("(a + {})", acc.offset)
}

/// Appends the statements writing output column `index` (value and validity bit).
fn emit_column(
    emit: &mut String,
    index: usize,
    data_type: &DataType,
    c_type: &str,
    value: &str,
    valid: &str,
) {
    let values = 2 * index;
    let validity = 2 * index + 1;
    let _ = writeln!(emit, "        {{");
    let _ = writeln!(emit, "            const bool ok = {valid};");
    if *data_type == DataType::Boolean {
        let _ = writeln!(
            emit,
            "            if (ok && ({value})) atomicOr(&((unsigned*)outputs[{values}])[out >> 5], 1u << (out & 31));"
        );
    } else {
        let _ = writeln!(
            emit,
            "            (({c_type}*)outputs[{values}])[out] = ok ? ({c_type})({value}) : ({c_type})0;"
        );
    }
    let _ = writeln!(
        emit,
        "            if (ok) atomicOr(&((unsigned*)outputs[{validity}])[out >> 5], 1u << (out & 31));"
    );
    let _ = writeln!(emit, "        }}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::physical_expr::expressions::col;

    /// `SELECT k, SUM(x), AVG(x), SUM(y) ... GROUP BY k` over decimals, as DataFusion's
    /// partial aggregate declares it.
    fn spec() -> AggregateSpec {
        let decimal = DataType::Decimal128(12, 2);
        let input = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("x", decimal.clone(), false),
            Field::new("y", decimal, true),
        ]));
        let state = DataType::Decimal128(22, 2);
        let field =
            |name: &str, data_type: &DataType| Arc::new(Field::new(name, data_type.clone(), true));
        let call = |function, column: &str, state_fields| AggregateCall {
            function,
            arg: col(column, &input).unwrap(),
            state_fields,
        };
        let calls = vec![
            call(AggFunction::Sum, "x", vec![field("sum(x)[sum]", &state)]),
            call(
                AggFunction::Avg,
                "x",
                vec![
                    field("avg(x)[count]", &DataType::UInt64),
                    field("avg(x)[sum]", &state),
                ],
            ),
            call(AggFunction::Sum, "y", vec![field("sum(y)[sum]", &state)]),
        ];
        partial_by_k(input, calls)
    }

    /// A partial aggregate of `calls` over `input`, grouped by its non-NULL column `k`.
    fn partial_by_k(input: SchemaRef, calls: Vec<AggregateCall>) -> AggregateSpec {
        let mut outputs = vec![Arc::new(Field::new("k", DataType::Int64, false))];
        outputs.extend(calls.iter().flat_map(|c| c.state_fields.clone()));
        AggregateSpec {
            input: Arc::clone(&input),
            stages: Vec::new(),
            aggregate_input: Arc::clone(&input),
            keys: vec![col("k", &input).unwrap()],
            calls,
            output: Arc::new(Schema::new(outputs)),
            mode: AggregateOutput::States,
        }
    }

    #[test]
    fn calls_over_the_same_value_share_their_accumulators() {
        let kernels = aggregate_kernels(&spec()).unwrap();
        // One sum of x for SUM(x) and AVG(x), AVG's count is the group's row count, and
        // SUM(y) over a nullable column keeps its own sum and non-NULL count.
        let sums = kernels.source.matches("agg_add_i128((a + ").count();
        let counts = kernels.source.matches("agg_add_u64((a + ").count();
        assert_eq!((sums, counts), (2, 2), "{}", kernels.source);
        // Row count, x's sum, y's count, y's sum (sums 16-byte aligned).
        assert_eq!(kernels.acc_bytes, 64);
        // The key cannot be NULL, so it takes no NULL-flag word.
        assert_eq!(kernels.key_words, 1);
        assert_eq!(kernels.outputs.len(), 5);
    }

    /// [`spec`] as a whole aggregate: keys, then one final value per call.
    fn final_spec(keys: bool) -> AggregateSpec {
        let mut spec = spec();
        let sum = DataType::Decimal128(22, 2);
        let mut fields = Vec::new();
        if keys {
            fields.push(Field::new("k", DataType::Int64, false));
        } else {
            spec.keys.clear();
        }
        fields.push(Field::new("sum(x)", sum.clone(), true));
        fields.push(Field::new("avg(x)", DataType::Decimal128(16, 6), true));
        fields.push(Field::new("sum(y)", sum, true));
        spec.output = Arc::new(Schema::new(fields));
        spec.mode = AggregateOutput::Values;
        spec
    }

    #[test]
    fn final_values_divide_averages_as_datafusion_does() {
        let kernels = aggregate_kernels(&final_spec(true)).unwrap();
        let source = &kernels.source;
        assert_eq!(kernels.outputs.len(), 4);
        assert!(kernels.emit_faults && !kernels.one_row && !kernels.faults);
        // The sum at scale 2 times 10^4 (the result's scale is 6), divided by the
        // group's rows (x is never NULL), truncating as Arrow's i128 division does.
        let factor = crate::codegen::expr::int128_literal(10_000);
        assert!(
            source.contains(&format!("avg1_sum * {factor} / (__int128)avg1_count")),
            "{source}"
        );
        assert!(source.contains("const u64 avg1_count = (*(const u64*)(a + 0));"));
        // Past the result's 16 digits, DataFusion reports an overflow: a fault here.
        let largest = crate::codegen::expr::int128_literal(10i128.pow(16) - 1);
        assert!(source.contains(&format!("avg1 > {largest}")), "{source}");
        assert!(source.contains("atomicOr(aether_faults, 1u)"));
        // A 16-digit result is written as a 64-bit word.
        assert!(
            source.contains("((long long*)outputs[4])[out] = ok ? (long long)((long long)(avg1))")
        );
    }

    #[test]
    fn a_whole_aggregate_without_keys_writes_one_row_even_for_no_input() {
        let kernels = aggregate_kernels(&final_spec(false)).unwrap();
        assert!(kernels.one_row);
        assert_eq!(kernels.outputs.len(), 3);
        assert!(kernels.source.contains("agg_init_slot(identity);"));
        // With keys, the emit kernel writes a row per occupied slot.
        let keyed = aggregate_kernels(&final_spec(true)).unwrap();
        assert!(!keyed.source.contains("identity"));
    }

    #[test]
    fn min_and_max_of_38_digit_decimals_take_128_bit_accumulators() {
        let wide = DataType::Decimal128(38, 4);
        let input = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("w", wide.clone(), true),
        ]));
        let call = |function, name: &str| AggregateCall {
            function,
            arg: col("w", &input).unwrap(),
            state_fields: vec![Arc::new(Field::new(name, wide.clone(), true))],
        };
        let calls = vec![
            call(AggFunction::Min, "min(w)[min]"),
            call(AggFunction::Max, "max(w)[max]"),
        ];
        let spec = partial_by_k(Arc::clone(&input), calls);
        let kernels = aggregate_kernels(&spec).unwrap();
        let source = &kernels.source;
        // Row count, w's non-NULL count, then the two 16-byte accumulators, aligned.
        assert_eq!(kernels.acc_bytes, 48);
        assert!(
            source.contains("agg_min_i128((a + 16), (__int128)("),
            "{source}"
        );
        assert!(
            source.contains("agg_max_i128((a + 32), (__int128)("),
            "{source}"
        );
        // Identities: the largest 128-bit value for MIN, the smallest for MAX.
        assert!(source.contains("((u64*)(a + 16))[1] = 0x7fffffffffffffffULL;"));
        assert!(source.contains("((u64*)(a + 32))[1] = 0x8000000000000000ULL;"));
        assert!(source.contains("atom.cas.b128"));
        // Without keys, threads fold in registers and warps through shuffles.
        let mut keyless = spec.clone();
        keyless.keys.clear();
        keyless.output = Arc::new(Schema::new(keyless.output.fields()[1..].to_vec()));
        let source = aggregate_kernels(&keyless).unwrap().source;
        assert!(source.contains("aggl_max_i128((my + 32)"), "{source}");
        assert!(source.contains("aggw_max_i128(a + 32);"), "{source}");
    }

    #[test]
    fn a_string_function_of_a_coded_column_groups_by_its_results_codes() {
        use datafusion::physical_expr::ScalarFunctionExpr;
        use datafusion::physical_expr::expressions::lit;
        let input = Arc::new(Schema::new(vec![
            Field::new("phone", DataType::Utf8View, false),
            Field::new("x", DataType::Int64, false),
        ]));
        let prefix = ScalarFunctionExpr::try_new(
            datafusion::functions::unicode::substr(),
            vec![col("phone", &input).unwrap(), lit(1i64), lit(2i64)],
            &input,
            Arc::new(datafusion::config::ConfigOptions::default()),
        )
        .unwrap();
        let prefix_type = prefix.return_type().clone();
        let call = AggregateCall {
            function: AggFunction::Sum,
            arg: col("x", &input).unwrap(),
            state_fields: vec![Arc::new(Field::new("sum(x)[sum]", DataType::Int64, true))],
        };
        let spec = AggregateSpec {
            input: Arc::clone(&input),
            stages: Vec::new(),
            aggregate_input: Arc::clone(&input),
            keys: vec![Arc::new(prefix)],
            calls: vec![call.clone()],
            output: Arc::new(Schema::new(vec![
                Field::new("prefix", prefix_type, true),
                Field::new("sum(x)[sum]", DataType::Int64, true),
            ])),
            mode: AggregateOutput::States,
        };
        let kernels = aggregate_kernels(&spec).unwrap();
        assert!(matches!(kernels.lookups[..], [HostTable::Mapping(_)]));
        assert_eq!(
            kernels.outputs[0],
            OutputSource::Key {
                key: 0,
                dictionary: Some(KeyDictionary::Mapping(0)),
            }
        );
        // The function may return NULL although its column is never NULL: the key keeps
        // a NULL-flag word.
        assert_eq!(kernels.key_words, 2);
        // The row's code, mapped through the table after the two input columns' pointer
        // pairs (entry 0 for a NULL string).
        assert!(
            kernels
                .source
                .contains("((const int*)col4)[v0 ? (long long)x0 + 1 : 0]"),
            "{}",
            kernels.source
        );
        // The column itself keeps its own dictionary.
        let plain = AggregateSpec {
            keys: vec![col("phone", &input).unwrap()],
            output: Arc::new(Schema::new(vec![
                Field::new("phone", DataType::Utf8View, false),
                Field::new("sum(x)[sum]", DataType::Int64, true),
            ])),
            ..spec
        };
        let kernels = aggregate_kernels(&plain).unwrap();
        assert!(kernels.lookups.is_empty());
        assert_eq!(kernels.key_words, 1);
        assert_eq!(
            kernels.outputs[0],
            OutputSource::Key {
                key: 0,
                dictionary: Some(KeyDictionary::Input(0)),
            }
        );
    }

    #[test]
    fn partial_states_never_fault_in_the_emit_kernel() {
        let kernels = aggregate_kernels(&spec()).unwrap();
        assert!(!kernels.emit_faults && !kernels.one_row);
        assert!(!kernels.source.contains("avg1"));
    }

    /// `SUM(x * y) GROUP BY k`, the product computed by a projection stage, with a
    /// filter on `k` after the projection when `filter_after`.
    fn projected_product_spec(filter_after: bool) -> AggregateSpec {
        use datafusion::logical_expr::Operator;
        use datafusion::physical_expr::expressions::{binary, lit};
        let base = spec();
        let input = Arc::clone(&base.input);
        let product = binary(
            col("x", &input).unwrap(),
            Operator::Multiply,
            col("y", &input).unwrap(),
            &input,
        )
        .unwrap();
        let projected = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("p", product.data_type(&input).unwrap(), true),
        ]));
        let mut stages = vec![Stage::Project {
            input: Arc::clone(&input),
            exprs: vec![col("k", &input).unwrap(), product],
        }];
        if filter_after {
            let predicate = binary(
                col("k", &projected).unwrap(),
                Operator::Gt,
                lit(0i64),
                &projected,
            )
            .unwrap();
            stages.push(Stage::Filter {
                input: Arc::clone(&projected),
                predicate,
                projection: None,
            });
        }
        let state = Field::new("sum(p)[sum]", DataType::Decimal128(35, 4), true);
        let calls = vec![AggregateCall {
            function: AggFunction::Sum,
            arg: col("p", &projected).unwrap(),
            state_fields: vec![Arc::new(state.clone())],
        }];
        AggregateSpec {
            input,
            stages,
            aggregate_input: Arc::clone(&projected),
            keys: vec![col("k", &projected).unwrap()],
            calls,
            output: Arc::new(Schema::new(vec![
                Field::new("k", DataType::Int64, false),
                state,
            ])),
            mode: AggregateOutput::States,
        }
    }

    /// Where `needle` first occurs in the fold kernel of `source`.
    fn fold_position(source: &str, needle: &str) -> usize {
        let fold = source
            .find(&format!("__global__ void {AGG_ENTRY}("))
            .unwrap();
        fold + source[fold..].find(needle).unwrap()
    }

    #[test]
    fn a_projected_value_only_an_argument_reads_is_computed_after_the_probe() {
        let source = aggregate_kernels(&projected_product_spec(false))
            .unwrap()
            .source;
        let product = fold_position(&source, "aether_mul_i128(");
        assert!(
            product > fold_position(&source, "if (slot < 0)"),
            "{source}"
        );
    }

    #[test]
    fn a_filter_after_a_projection_runs_after_the_projected_values() {
        let source = aggregate_kernels(&projected_product_spec(true))
            .unwrap()
            .source;
        let product = fold_position(&source, "aether_mul_i128(");
        assert!(product < fold_position(&source, "continue;"), "{source}");
        assert_eq!(source.matches("aether_mul_i128((__int128)").count(), 1);
    }

    #[test]
    fn a_final_value_of_another_type_is_refused_with_a_reason() {
        let mut spec = final_spec(true);
        let mut fields = spec.output.fields().to_vec();
        fields[2] = Arc::new(Field::new("avg(x)", DataType::Float64, true));
        spec.output = Arc::new(Schema::new(fields));
        let reasons = aggregate_kernels(&spec).unwrap_err();
        assert!(
            reasons.iter().any(|r| r.message.contains("final AVG")),
            "{reasons:?}"
        );
    }
}
