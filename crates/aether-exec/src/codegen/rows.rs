//! Kernels for GPU segments that return rows: filters and projections compacted into
//! a new device batch (stream compaction), in the input's row order.
//!
//! Two kernels per segment, each block owning one contiguous chunk of the batch:
//! - `aether_rows_count` runs the filters (and the projections between them) over
//!   every row, writes one keep byte per row and each block's count of kept rows;
//! - the host turns the counts into each block's first output row (a prefix sum over
//!   a few thousand numbers), then `aether_rows_write` walks its chunk 256 rows at a
//!   time, ranks the kept rows within the tile (`cuda/block_scan.cuh`), computes the
//!   output columns for kept rows only and writes them at `base + rank`.
//!
//! What a row computes is what DataFusion computes: projections between filters run
//! on the rows that reach them (in the count kernel), projections after the last
//! filter on kept rows only (in the write kernel), so a value that can fault faults
//! for exactly the rows it would on the CPU. Strings pass through as their dictionary
//! codes; the host rebuilds them from the input's dictionary.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;

use super::expr::{
    Binding, DATE_PRELUDE, ExprCompiler, HostTable, MAX_COLUMN_SLOTS, NUMERIC_CAST_PRELUDE,
    column_params,
};
use super::kernel::PRELUDE;
use super::pipeline::{Stage, compile_stages};
use super::types::CudaType;
use crate::reason::{PlacementReason, ReasonCode};

pub const ROWS_COUNT_ENTRY: &str = "aether_rows_count";
pub const ROWS_WRITE_ENTRY: &str = "aether_rows_write";

/// Threads a block of either kernel runs; the write kernel's tiles are this many rows.
pub const ROWS_THREADS: u32 = 256;

const BLOCK_SCAN: &str = include_str!("cuda/block_scan.cuh");

/// What one output column of a row segment holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowOutput {
    /// Values computed (or loaded) on the device, in the device form of `ty`.
    Values { ty: CudaType },
    /// A string column passed through as codes into the dictionary of input column
    /// `input`.
    Codes { input: usize },
}

/// The generated kernels of a row segment.
#[derive(Debug, Clone)]
pub struct RowKernels {
    pub source: String,
    /// The segment's output schema.
    pub schema: SchemaRef,
    pub outputs: Vec<RowOutput>,
    /// Column pointers both kernels take after their fixed parameters
    /// ([`ExprCompiler::column_slots`]).
    pub column_slots: usize,
    pub lookups: Vec<HostTable>,
    /// Whether the kernels take a fault word after the lookup tables.
    pub faults: bool,
}

fn refused(message: String) -> Vec<PlacementReason> {
    vec![PlacementReason::new(
        ReasonCode::UnsupportedExpression,
        message,
    )]
}

/// Every reason the compiler found, or a general one.
fn reasons_of(compiler: &ExprCompiler) -> Vec<PlacementReason> {
    let reasons = compiler.reasons().to_vec();
    if reasons.is_empty() {
        return refused("a stage of the segment cannot run on the GPU".into());
    }
    reasons
}

/// The parameters of `aether_rows_write` for the output columns: a values and a
/// validity pointer each.
fn output_params(outputs: usize) -> String {
    (0..outputs)
        .map(|j| format!(", const u64 out{j}, const u64 outv{j}"))
        .collect()
}

/// The statements writing output `j` of a kept row at `out`.
fn write_statement(j: usize, value: &super::expr::Value, nullable: bool) -> String {
    let mut code = if value.ty == CudaType::Bool {
        format!(
            "        if ({valid} && {v}) aether_set_bit(out{j}, out);\n",
            valid = value.valid,
            v = value.value
        )
    } else {
        format!(
            "        (({ty}*)out{j})[out] = {v};\n",
            ty = value.ty.c_name(),
            v = value.value
        )
    };
    if nullable {
        code.push_str(&format!(
            "        if ({}) aether_set_bit(outv{j}, out);\n",
            value.valid
        ));
    }
    code
}

/// Generates the kernels of a segment running `stages` over batches of `input` and
/// returning rows of `output`, or every reason it cannot run on the GPU.
pub fn row_kernels(
    input: &SchemaRef,
    stages: &[Stage],
    output: &SchemaRef,
    string_bytes: &[usize],
) -> Result<RowKernels, Vec<PlacementReason>> {
    let mut compiler = ExprCompiler::with_string_bytes(Arc::clone(input), string_bytes);
    if !compile_stages(&mut compiler, stages) {
        return Err(reasons_of(&compiler));
    }
    let mut ok = true;
    // The count kernel stops here: it needs the filters and what they read.
    let count_body = compiler.body();
    let bindings = compiler.bindings().to_vec();
    if bindings.len() != output.fields().len() {
        return Err(refused(format!(
            "a GPU segment computing {} columns where its plan has {}",
            bindings.len(),
            output.fields().len()
        )));
    }
    let mut outputs = Vec::with_capacity(bindings.len());
    let mut writes = String::new();
    for (j, field) in output.fields().iter().enumerate() {
        let Some(value) = compiler.column_value(j) else {
            ok = false;
            continue;
        };
        if value.ty == CudaType::StrCode {
            match (&bindings[j], compiler.input_column_of(&value)) {
                (Binding::Input(column), Some(_)) => {
                    outputs.push(RowOutput::Codes { input: *column });
                    writes.push_str(&write_statement(j, &value, field.is_nullable()));
                }
                _ => {
                    compiler.add_reason(PlacementReason::new(
                        ReasonCode::UnsupportedType,
                        format!(
                            "a computed string column ({}) is not produced on the GPU yet",
                            field.name()
                        ),
                    ));
                    ok = false;
                }
            }
            continue;
        }
        match CudaType::of(field.data_type()) {
            Ok(ty) if ty == value.ty => {
                outputs.push(RowOutput::Values { ty });
                writes.push_str(&write_statement(j, &value, field.is_nullable()));
            }
            Ok(ty) => {
                compiler.add_reason(PlacementReason::new(
                    ReasonCode::UnsupportedType,
                    format!(
                        "column {} is computed as {:?} where its type {} needs {ty:?}",
                        field.name(),
                        value.ty,
                        field.data_type()
                    ),
                ));
                ok = false;
            }
            Err(reason) => {
                compiler.add_reason(reason);
                ok = false;
            }
        }
    }
    // Projected values nothing returns still run, and fault, as on the CPU.
    compiler.emit_all_deferred();
    let slots = compiler.column_slots();
    if slots + 2 * outputs.len() > MAX_COLUMN_SLOTS {
        compiler.add_reason(PlacementReason::new(
            ReasonCode::UnsupportedExpression,
            format!(
                "a GPU segment reading {slots} column pointers and writing {} columns exceeds the kernel parameter space",
                outputs.len()
            ),
        ));
        ok = false;
    }
    if !ok {
        return Err(reasons_of(&compiler));
    }
    let columns = column_params(slots);
    let source = format!(
        "{PRELUDE}{DATE_PRELUDE}{NUMERIC_CAST_PRELUDE}{strings}{BLOCK_SCAN}
// Keep bytes and each block's kept-row count.
extern \"C\" __global__ void {ROWS_COUNT_ENTRY}(long long rows, long long chunk,
        unsigned char* __restrict__ keep, unsigned long long* __restrict__ counts{columns}) {{
{fault_prologue}    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = min(rows, begin + chunk);
    unsigned long long kept_rows = 0ULL;
    for (long long row = begin + threadIdx.x; row < end; row += blockDim.x) {{
        unsigned char kept = 0;
        do {{
{count_body}            kept = 1;
        }} while (0);
        keep[row] = kept;
        kept_rows += kept;
    }}
{fault_epilogue}    kept_rows = aether_block_sum(kept_rows);
    if (threadIdx.x == 0u) counts[blockIdx.x] = kept_rows;
}}

// The kept rows' output columns, at each block's first output row plus their rank.
extern \"C\" __global__ void {ROWS_WRITE_ENTRY}(long long rows, long long chunk,
        const unsigned char* __restrict__ keep, const unsigned long long* __restrict__ bases{outputs}{columns}) {{
{fault_prologue}    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = min(rows, begin + chunk);
    unsigned long long base = bases[blockIdx.x];
    for (long long tile = begin; tile < end; tile += blockDim.x) {{
        const long long row = tile + threadIdx.x;
        const bool kept = row < end && keep[row] != 0;
        unsigned tile_kept = 0u;
        const unsigned rank = aether_block_rank(kept, tile_kept);
        if (kept) do {{
            const unsigned long long out = base + rank;
{write_body}{writes}        }} while (0);
        base += tile_kept;
    }}
{fault_epilogue}}}
",
        outputs = output_params(outputs.len()),
        strings = compiler.string_prelude(),
        fault_prologue = compiler.fault_prologue(),
        fault_epilogue = compiler.fault_epilogue(),
        write_body = compiler.body(),
    );
    super::generated::generated(&source);
    Ok(RowKernels {
        source,
        schema: Arc::clone(output),
        outputs,
        column_slots: slots,
        lookups: compiler.lookups().to_vec(),
        faults: compiler.faults(),
    })
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::common::DFSchema;
    use datafusion::physical_expr::PhysicalExpr;
    use datafusion::prelude::SessionContext;

    use super::*;

    fn input() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("p", DataType::Decimal128(15, 2), false),
            Field::new("s", DataType::Utf8View, true),
            Field::new("d", DataType::Date32, false),
        ]))
    }

    fn physical(sql: &str, schema: &SchemaRef) -> Arc<dyn PhysicalExpr> {
        let ctx = SessionContext::new();
        let df_schema =
            DFSchema::try_from(schema.as_ref().clone()).unwrap_or_else(|e| panic!("schema: {e}"));
        let expr = ctx
            .parse_sql_expr(sql, &df_schema)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        ctx.create_physical_expr(expr, &df_schema)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// A filter on `predicate`, then a projection of `exprs` named `names`.
    fn kernels(
        predicate: &str,
        exprs: &[(&str, &str)],
    ) -> Result<RowKernels, Vec<PlacementReason>> {
        let schema = input();
        let projected: Vec<Arc<dyn PhysicalExpr>> =
            exprs.iter().map(|(e, _)| physical(e, &schema)).collect();
        let fields: Vec<Field> = projected
            .iter()
            .zip(exprs)
            .map(|(e, (_, name))| {
                Field::new(
                    *name,
                    e.data_type(&schema).unwrap_or(DataType::Null),
                    e.nullable(&schema).unwrap_or(true),
                )
            })
            .collect();
        let stages = vec![
            Stage::Filter {
                input: Arc::clone(&schema),
                predicate: physical(predicate, &schema),
                projection: None,
            },
            Stage::Project {
                input: Arc::clone(&schema),
                exprs: projected,
            },
        ];
        row_kernels(&schema, &stages, &Arc::new(Schema::new(fields)), &[])
    }

    /// A filter on `predicate` returning column `a`, with `s` uploaded as bytes.
    fn bytes_kernels(predicate: &str, keep_s: bool) -> Result<RowKernels, Vec<PlacementReason>> {
        let schema = input();
        let projection = if keep_s { vec![0, 2] } else { vec![0] };
        let output = Arc::new(
            schema
                .project(&projection)
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let stages = vec![Stage::Filter {
            input: Arc::clone(&schema),
            predicate: physical(predicate, &schema),
            projection: Some(projection),
        }];
        row_kernels(&schema, &stages, &output, &[2])
    }

    #[test]
    fn string_predicates_read_a_bytes_column_on_the_device() {
        let kernels = bytes_kernels(
            "(s LIKE '%spe_cial%req%' OR s NOT LIKE 'x%' OR s IN ('a', NULL) \
             OR starts_with(s, 'q') OR ends_with(s, 'z') OR s >= 'm' OR s IS NULL \
             OR substr(s, 2, 3) = 'bcd' OR substr(s, 4) LIKE 'x%') AND a > 1",
            false,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        for helper in [
            "aether_like(",
            "aether_str_eq(",
            "aether_starts_with(",
            "aether_ends_with(",
            "aether_str_cmp(",
            "aether_utf8_advance(",
        ] {
            assert!(kernels.source.contains(helper), "{helper}");
        }
        // No dictionary: the offsets of `s` take the pointer pair after the 4 inputs.
        assert!(kernels.lookups.is_empty());
        assert_eq!(kernels.column_slots, 2 * (4 + 1));
        assert!(kernels.source.contains("((const int*)col8)[row + 1]"));
        // The row's string is loaded once, however many predicates read it.
        assert_eq!(kernels.source.matches("const int s2_len").count(), 2);
    }

    #[test]
    fn a_bytes_column_read_otherwise_is_refused() {
        for (predicate, keep_s) in [
            ("s LIKE 'a%'", true),
            ("upper(s) = 'A'", false),
            ("s LIKE 'a\\%'", false),
            ("s ILIKE 'a%'", false),
            ("substr(s, 0, 2) = 'a'", false),
        ] {
            let reasons = bytes_kernels(predicate, keep_s)
                .err()
                .unwrap_or_else(|| panic!("{predicate} should be refused"));
            assert!(!reasons.is_empty());
            if keep_s {
                assert!(
                    reasons
                        .iter()
                        .any(|r| r.message.contains("uploaded as bytes")),
                    "{predicate}: {reasons:?}"
                );
            }
        }
    }

    #[test]
    fn a_filter_and_projection_make_a_count_and_a_write_kernel() {
        let kernels = kernels(
            "a > 10 AND s = 'x'",
            &[("a + 1", "b"), ("s", "s"), ("d", "d")],
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(kernels.source.contains(ROWS_COUNT_ENTRY));
        assert!(kernels.source.contains(ROWS_WRITE_ENTRY));
        assert_eq!(
            kernels.outputs,
            vec![
                RowOutput::Values { ty: CudaType::I64 },
                RowOutput::Codes { input: 2 },
                RowOutput::Values { ty: CudaType::I32 },
            ]
        );
        // The string predicate is looked up by code, its table after the 4 columns.
        assert_eq!(kernels.lookups.len(), 1);
        assert_eq!(kernels.column_slots, 2 * (4 + 1));
        // `a + 1` is computed only where a row is written.
        let write = kernels
            .source
            .split(ROWS_WRITE_ENTRY)
            .nth(1)
            .unwrap_or_default();
        let count = kernels
            .source
            .split(ROWS_WRITE_ENTRY)
            .next()
            .unwrap_or_default();
        assert!(write.contains("out0"), "{write}");
        assert!(!count.contains("out0"), "{count}");
        // Nullable outputs set validity bits; non-nullable ones (d) do not.
        assert!(write.contains("aether_set_bit(outv0"), "{write}");
        assert!(!write.contains("aether_set_bit(outv2"), "{write}");
    }

    #[test]
    fn a_computed_value_that_can_fault_takes_the_fault_word() {
        let kernels = kernels("a > 0", &[("a / a", "q")]).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(kernels.faults);
        assert_eq!(kernels.column_slots, 2 * 4 + 1);
    }

    #[test]
    fn computed_strings_are_refused_with_a_reason() {
        let reasons = kernels("a > 0", &[("upper(s)", "u")])
            .err()
            .unwrap_or_else(|| panic!("upper(s) should be refused"));
        assert!(!reasons.is_empty());
    }
}
