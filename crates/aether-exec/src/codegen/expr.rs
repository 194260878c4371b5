//! Translates DataFusion `PhysicalExpr` trees into CUDA C statements.
//!
//! Each expression node becomes two local variables per row: `xN`, its value, and
//! `vN`, whether it is valid (not NULL). Semantics follow DataFusion and Arrow exactly:
//! integer arithmetic wraps (done in unsigned types, since signed overflow is undefined
//! in C), float comparisons treat NaN as equal to itself and greater than every number
//! while -0.0 equals 0.0 (Arrow's comparison kernels), AND/OR/NOT follow SQL's
//! three-valued logic, and decimals are scaled integers whose result scales must match
//! the types DataFusion assigned. Anything else is refused with a reason; every reason
//! in the tree is collected, not just the first.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal,
    NegativeExpr, NotExpr,
};
use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::scalar::ScalarValue;

use super::types::CudaType;
use crate::one_column::{on_column_zero, only_column};
use crate::reason::{PlacementReason, ReasonCode};

mod checked_decimal;
mod deferred;
mod numeric_cast;
mod quotient;
mod scalar_parameter;
mod string_bytes;
mod temporal;
pub(crate) use numeric_cast::NUMERIC_CAST_PRELUDE;
pub use scalar_parameter::{SCALAR_PARAMETER_BYTES, SCALAR_VALIDITY_OFFSET, ScalarParameter};
pub(crate) use string_bytes::STRINGS_PRELUDE;
pub(crate) use temporal::DATE_PRELUDE;

/// A compiled sub-expression: the variables holding its value and validity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    pub value: String,
    pub valid: String,
    pub ty: CudaType,
}

/// Where the value of a column of the current schema comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// Column `n` of the kernel's input batch, loaded on first use.
    Input(usize),
    /// A value an earlier stage of a fused pipeline computed.
    Value(Value),
    /// A value a projection computed, its statements held back until the value is
    /// first read (see the `deferred` module).
    Deferred(usize),
    /// A value an earlier stage could not compute; its reason is already recorded, so
    /// a later read refuses without a second reason.
    Refused,
}

/// A boolean expression over one string column, evaluated by DataFusion on the CPU over
/// the column's dictionary (each distinct string once) and looked up per row on the GPU
/// by the row's code.
///
/// Strings reach the GPU as codes into a dictionary that only grows, so `flag = 'R'`,
/// `p_type LIKE 'PROMO%'` or `mode IN ('MAIL', 'SHIP')` become one byte per distinct
/// value: 0 false, 1 true, 2 NULL. Entry 0 is the result for a NULL string; code `c`
/// is at `c + 1`.
#[derive(Debug, Clone)]
pub struct DictionaryLookup {
    /// The input column holding the codes.
    pub input: usize,
    /// The predicate, rewritten to read column 0 of a one-column batch named `name`.
    pub predicate: Arc<dyn PhysicalExpr>,
    pub name: String,
    pub data_type: DataType,
}

/// A string-valued function of one string column (`substr(c_phone, 1, 2)`,
/// `upper(name)`), evaluated by DataFusion on the CPU over the column's dictionary and
/// mapped on the GPU from the row's code to a code into the dictionary of the
/// function's distinct results: four bytes per dictionary entry, the result's code or
/// -1 for NULL (entry 0 for a NULL string, code `c` at `c + 1`, as for
/// [`DictionaryLookup`]). Only group keys read such codes; the aggregate decodes them
/// through the results' dictionary.
#[derive(Debug, Clone)]
pub struct DictionaryMapping {
    /// The function, over the input column as a [`DictionaryLookup`] reads it.
    pub function: DictionaryLookup,
}

/// A small device buffer the host computes for each batch and a kernel reads through
/// one of its column pointers (after the bytes columns' offsets, in the order of
/// [`ExprCompiler::lookups`]).
#[derive(Debug, Clone)]
pub enum HostTable {
    /// A string predicate's result per dictionary entry.
    Dictionary(DictionaryLookup),
    /// A string function's result per dictionary entry, as a code into the results'
    /// own dictionary ([`DictionaryMapping`]).
    Mapping(DictionaryMapping),
    /// A value every row reads (a scalar subquery's result).
    Scalar(ScalarParameter),
}

/// Accumulates the statements of one kernel body.
///
/// A fused pipeline compiles its stages in order into one body: after a stage, the
/// next stage's columns are re-bound ([`ExprCompiler::rebind`]) to the values the
/// stage computed, so a projection over a filter reads the filter's values directly.
#[derive(Debug)]
pub struct ExprCompiler {
    /// The kernel's input columns.
    input: SchemaRef,
    /// The schema the expressions being compiled are typed against.
    schema: SchemaRef,
    bindings: Vec<Binding>,
    loaded: HashMap<usize, Value>,
    /// Input loads, placed ahead of every other statement (see [`Self::body`]).
    loads: String,
    body: String,
    next: usize,
    reasons: Vec<PlacementReason>,
    lookups: Vec<HostTable>,
    /// Values read from a [`DictionaryMapping`]: codes into its results' dictionary,
    /// with the index of its table in [`Self::lookups`].
    mapped: Vec<(Value, usize)>,
    /// Input string columns uploaded as offsets and bytes (ascending), read only by
    /// the predicates of the `string_bytes` module.
    string_bytes: Vec<usize>,
    /// Bytes columns whose row string is loaded already.
    loaded_strings: HashSet<usize>,
    /// Whether some row can fault (see the `quotient` module): the kernel then takes
    /// one more column pointer, the fault word, after the lookup tables.
    faults: bool,
    /// Projected values whose statements wait for their first use.
    deferred: Vec<deferred::Deferred>,
    /// The kernel's body while a deferred value's statements are collected in `body`.
    held_body: Option<String>,
}

fn unsupported(message: String) -> PlacementReason {
    PlacementReason::new(ReasonCode::UnsupportedExpression, message)
}

/// The value of `expr` when it is a non-NULL integer literal.
fn literal_integer(expr: &Arc<dyn PhysicalExpr>) -> Option<i128> {
    let any: &dyn PhysicalExpr = expr.as_ref();
    let literal = any.downcast_ref::<Literal>()?;
    Some(match literal.value() {
        ScalarValue::Int8(Some(v)) => i128::from(*v),
        ScalarValue::Int16(Some(v)) => i128::from(*v),
        ScalarValue::Int32(Some(v)) => i128::from(*v),
        ScalarValue::Int64(Some(v)) => i128::from(*v),
        ScalarValue::UInt8(Some(v)) => i128::from(*v),
        ScalarValue::UInt16(Some(v)) => i128::from(*v),
        ScalarValue::UInt32(Some(v)) => i128::from(*v),
        ScalarValue::UInt64(Some(v)) => i128::from(*v),
        _ => return None,
    })
}

/// A C literal for an `i64`, valid for `i64::MIN` too.
fn int_literal(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1LL)".to_string()
    } else {
        format!("{v}LL")
    }
}

/// A C literal for an `i128`, built from its two 64-bit halves.
pub(crate) fn int128_literal(v: i128) -> String {
    let high = (v >> 64) as u64;
    let low = v as u64;
    format!("((__int128)((((unsigned __int128){high}ULL) << 64) | (unsigned __int128){low}ULL))")
}

/// The most column pointers a kernel takes as parameters: CUDA's parameter space is 4
/// KiB, of which a kernel's other parameters take under 128 bytes.
pub const MAX_COLUMN_SLOTS: usize = 496;

/// The variable holding column pointer `slot` in generated code: a kernel parameter
/// (see [`column_params`]), which the GPU reads from its constant bank, so a row's
/// loads need no memory read to find their column.
pub fn column_word(slot: usize) -> String {
    format!("col{slot}")
}

/// The parameter list declaring column pointers `0..slots` (each preceded by a comma).
pub fn column_params(slots: usize) -> String {
    (0..slots)
        .map(|slot| format!(", const u64 {}", column_word(slot)))
        .collect()
}

impl ExprCompiler {
    /// A compiler for expressions over the kernel's input columns, `input`.
    pub fn new(input: SchemaRef) -> Self {
        let bindings = (0..input.fields().len()).map(Binding::Input).collect();
        Self {
            schema: Arc::clone(&input),
            input,
            bindings,
            loaded: HashMap::new(),
            loads: String::new(),
            body: String::new(),
            next: 0,
            reasons: Vec::new(),
            lookups: Vec::new(),
            mapped: Vec::new(),
            string_bytes: Vec::new(),
            loaded_strings: HashSet::new(),
            faults: false,
            deferred: Vec::new(),
            held_body: None,
        }
    }

    /// A compiler whose input string columns `string_bytes` are uploaded as offsets
    /// and bytes (see the `string_bytes` module).
    pub fn with_string_bytes(input: SchemaRef, string_bytes: &[usize]) -> Self {
        let mut compiler = Self::new(input);
        let mut columns = string_bytes.to_vec();
        columns.sort_unstable();
        columns.dedup();
        compiler.string_bytes = columns;
        compiler
    }

    /// The tables the host computes for the kernel (string predicates' results,
    /// scalar parameters); they follow the input columns (and the offsets of bytes
    /// columns) in the kernel's column pointers, in this order.
    pub fn lookups(&self) -> &[HostTable] {
        &self.lookups
    }

    /// Appends a host table and returns the column word (pointer index) it is read
    /// through.
    fn push_host_table(&mut self, table: HostTable) -> usize {
        let slot = self.pointer_pairs();
        self.lookups.push(table);
        slot * 2
    }

    /// How many column pointers the kernel reads: two per input column (values, then
    /// the validity bitmap or 0), then two per bytes column (its offsets, then 0),
    /// then two per lookup table (the table, then 0), then the fault word when
    /// [`Self::faults`].
    pub fn column_slots(&self) -> usize {
        2 * self.pointer_pairs() + usize::from(self.faults)
    }

    /// The CUDA helpers the kernel's string-bytes predicates call ("" without any).
    pub fn string_prelude(&self) -> &'static str {
        if self.string_bytes.is_empty() {
            ""
        } else {
            STRINGS_PRELUDE
        }
    }

    /// Pointer pairs before the fault word: inputs, bytes columns' offsets, lookups.
    fn pointer_pairs(&self) -> usize {
        self.input.fields().len() + self.string_bytes.len() + self.lookups.len()
    }

    /// Whether the kernel may fault on some row (a zero divisor, a decimal overflow):
    /// it then takes a zeroed 32-bit fault word as its last column pointer, which the
    /// host reads after the kernels and, when set, runs the work on the CPU instead.
    pub fn faults(&self) -> bool {
        self.faults
    }

    /// Makes `schema` the schema of the next expressions, its columns bound to
    /// `bindings` (one per field).
    pub fn rebind(&mut self, schema: SchemaRef, bindings: Vec<Binding>) {
        self.schema = schema;
        self.bindings = bindings;
    }

    /// The current binding of every column of the current schema.
    pub fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// The value of column `index` of the current schema.
    pub fn column_value(&mut self, index: usize) -> Option<Value> {
        match self.bindings.get(index).cloned() {
            Some(Binding::Value(value)) => Some(value),
            Some(Binding::Input(input)) => self.load_input(input),
            Some(Binding::Deferred(id)) => self.emit_deferred(id),
            Some(Binding::Refused) => None,
            None => self.refuse(unsupported(format!(
                "column {index} is not in the input of a GPU stage"
            ))),
        }
    }

    /// The input column `value` was loaded from, if it is a plain input load.
    pub fn input_column_of(&self, value: &Value) -> Option<usize> {
        self.loaded
            .iter()
            .find(|(_, loaded)| *loaded == value)
            .map(|(index, _)| *index)
    }

    /// The [`Self::lookups`] index of the [`DictionaryMapping`] whose codes `value`
    /// holds, if it holds such codes.
    pub fn mapping_of(&self, value: &Value) -> Option<usize> {
        self.mapped
            .iter()
            .find(|(mapped, _)| mapped == value)
            .map(|(_, index)| *index)
    }

    /// Appends a raw statement (control flow of a fused kernel).
    pub fn push_statement(&mut self, statement: &str) {
        self.body.push_str("        ");
        self.body.push_str(statement);
        self.body.push('\n');
    }

    /// Records a reason found outside expression compilation (an aggregate, a key).
    pub fn add_reason(&mut self, reason: PlacementReason) {
        let _ = self.refuse(reason);
    }

    /// The statements emitted so far, every input load first. A filter stage ends
    /// with `continue`, and a load placed after it would wait for the loads the filter
    /// read: one DRAM round trip per stage. Loaded up front, a row's columns are in
    /// flight together (each load reads inside its column, whatever the filters keep).
    pub fn body(&self) -> String {
        format!("{}{}", self.loads, self.body)
    }

    /// Takes the statements emitted since the last call (input loads stay, for
    /// [`Self::body`]), so a kernel can place a value's code right where the value is
    /// used: a value computed early stays live, in registers, until its use.
    pub fn take_statements(&mut self) -> String {
        std::mem::take(&mut self.body)
    }

    /// The statement a kernel runs before its row loop: each thread collects its rows'
    /// fault bits in a register (see `quotient.rs`), so a row that may fault costs no
    /// atomic and no branch on a side effect.
    pub fn fault_prologue(&self) -> String {
        if self.faults {
            "    unsigned aether_fault_bits = 0u;\n".to_string()
        } else {
            String::new()
        }
    }

    /// The statement a kernel runs after its row loop: one atomic per thread that met a
    /// faulting row, into the fault word (the last column pointer).
    pub fn fault_epilogue(&self) -> String {
        if self.faults {
            let slot = 2 * self.pointer_pairs();
            format!(
                "    if (aether_fault_bits != 0u) atomicOr((unsigned*){}, aether_fault_bits);\n",
                column_word(slot)
            )
        } else {
            String::new()
        }
    }

    /// Every reason found so far that the expression cannot run on the GPU.
    pub fn reasons(&self) -> &[PlacementReason] {
        &self.reasons
    }

    fn refuse(&mut self, reason: PlacementReason) -> Option<Value> {
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
        None
    }

    /// Declares a new value: `const T xN = value; const bool vN = valid;`.
    fn emit(&mut self, ty: CudaType, value: &str, valid: &str) -> Value {
        let (declared, statement) = self.declare(ty, value, valid);
        self.body.push_str(&statement);
        declared
    }

    /// A fresh local variable name starting with `prefix`.
    fn next_name(&mut self, prefix: &str) -> String {
        let n = self.next;
        self.next += 1;
        format!("{prefix}{n}")
    }

    /// A new value's name and the statement declaring it.
    fn declare(&mut self, ty: CudaType, value: &str, valid: &str) -> (Value, String) {
        let n = self.next;
        self.next += 1;
        let statement = format!(
            "        const bool v{n} = {valid};\n        const {} x{n} = {value};\n",
            ty.c_name()
        );
        let declared = Value {
            value: format!("x{n}"),
            valid: format!("v{n}"),
            ty,
        };
        (declared, statement)
    }

    /// Compiles `expr`; `None` when it (or a child) is unsupported, with the reasons
    /// recorded.
    pub fn compile(&mut self, expr: &Arc<dyn PhysicalExpr>) -> Option<Value> {
        if let Some(value) = self.bytes_predicate(expr) {
            return Some(value);
        }
        if let Some(value) = self.over_dictionary(expr) {
            return Some(value);
        }
        let any: &dyn PhysicalExpr = expr.as_ref();
        if let Some(column) = any.downcast_ref::<Column>() {
            return self.column(column);
        }
        if let Some(literal) = any.downcast_ref::<Literal>() {
            return self.literal(literal.value());
        }
        if let Some(binary) = any.downcast_ref::<BinaryExpr>() {
            return self.binary(expr, binary);
        }
        if let Some(not) = any.downcast_ref::<NotExpr>() {
            let arg = self.compile(not.arg())?;
            if self.refuse_strings(&[&arg], expr) {
                return None;
            }
            if arg.ty != CudaType::Bool {
                return self.refuse(unsupported(format!("NOT of a non-boolean: {expr}")));
            }
            return Some(self.emit(CudaType::Bool, &format!("!{}", arg.value), &arg.valid));
        }
        if let Some(is_null) = any.downcast_ref::<IsNullExpr>() {
            let arg = self.compile(is_null.arg())?;
            return Some(self.emit(CudaType::Bool, &format!("!{}", arg.valid), "true"));
        }
        if let Some(is_not_null) = any.downcast_ref::<IsNotNullExpr>() {
            let arg = self.compile(is_not_null.arg())?;
            return Some(self.emit(CudaType::Bool, &arg.valid, "true"));
        }
        if let Some(negative) = any.downcast_ref::<NegativeExpr>() {
            let arg = self.compile(negative.arg())?;
            if self.refuse_strings(&[&arg], expr) {
                return None;
            }
            let value = match arg.ty.unsigned_name() {
                Some(unsigned) => format!("({})(0 - ({unsigned}){})", arg.ty.c_name(), arg.value),
                None if arg.ty == CudaType::Bool => {
                    return self.refuse(unsupported(format!("negation of a boolean: {expr}")));
                }
                None => format!("-{}", arg.value),
            };
            return Some(self.emit(arg.ty, &value, &arg.valid));
        }
        if let Some(cast) = any.downcast_ref::<CastExpr>() {
            return self.cast(expr, cast);
        }
        if let Some(in_list) = any.downcast_ref::<InListExpr>() {
            return self.in_list(in_list);
        }
        if let Some(case) = any.downcast_ref::<CaseExpr>() {
            return self.case(expr, case);
        }
        if let Some(function) = any.downcast_ref::<ScalarFunctionExpr>() {
            return self.scalar_function(expr, function);
        }
        if any.downcast_ref::<ScalarSubqueryExpr>().is_some() {
            return match expr.data_type(&self.schema) {
                Ok(data_type) => self.scalar_parameter(expr, data_type),
                Err(e) => self.refuse(unsupported(format!("cannot type {expr}: {e}"))),
            };
        }
        self.refuse(unsupported(format!(
            "expression {expr} is not generated for the GPU yet"
        )))
    }

    fn column(&mut self, column: &Column) -> Option<Value> {
        if column.index() >= self.bindings.len() {
            return self.refuse(unsupported(format!("column {column} is not in the input")));
        }
        self.column_value(column.index())
    }

    /// Loads input column `index` (once per kernel; later uses reuse the variables).
    fn load_input(&mut self, index: usize) -> Option<Value> {
        if let Some(value) = self.loaded.get(&index) {
            return Some(value.clone());
        }
        let input = Arc::clone(&self.input);
        let Some(field) = input.fields().get(index) else {
            return self.refuse(unsupported(format!("input column {index} does not exist")));
        };
        if self.reads_bytes(index) {
            return self.refuse(unsupported(format!(
                "string column {} is uploaded as bytes, which only comparisons, IN, LIKE, starts_with and ends_with with constants read on the GPU",
                field.name()
            )));
        }
        // Strings arrive as dictionary codes; only grouping and counting read them.
        let ty = match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => CudaType::StrCode,
            other => match CudaType::of(other) {
                Ok(ty) => ty,
                Err(reason) => return self.refuse(reason),
            },
        };
        // A column the schema declares non-nullable holds no NULLs (Arrow checks this
        // when a batch is built), so its bitmap is never read.
        let valid = if field.is_nullable() {
            format!("aether_valid({}, row)", column_word(2 * index + 1))
        } else {
            "true".to_string()
        };
        let value = if ty == CudaType::Bool {
            format!("aether_bit({}, row)", column_word(2 * index))
        } else {
            format!("((const {}*){})[row]", ty.c_name(), column_word(2 * index))
        };
        let (value, statement) = self.declare(ty, &value, &valid);
        self.loads.push_str(&statement);
        self.loaded.insert(index, value.clone());
        Some(value)
    }

    /// An expression whose only column is a string input column reaching the kernel
    /// as dictionary codes (and which is more than that column), evaluated over the
    /// dictionary: a boolean one becomes a [`DictionaryLookup`], a string function a
    /// [`DictionaryMapping`]. Casts and CASE stay with the rest of the compiler (they
    /// keep their operands' codes or refuse them), and so do volatile functions, whose
    /// result depends on more than the value.
    fn over_dictionary(&mut self, expr: &Arc<dyn PhysicalExpr>) -> Option<Value> {
        let any: &dyn PhysicalExpr = expr.as_ref();
        if any.downcast_ref::<Column>().is_some() {
            return None;
        }
        let column = only_column(expr)?;
        let Some(Binding::Input(input)) = self.bindings.get(column.index()).cloned() else {
            return None;
        };
        if self.reads_bytes(input) {
            return None;
        }
        let field = Arc::clone(self.input.fields().get(input)?);
        if !field.data_type().is_string() {
            return None;
        }
        let result_type = expr.data_type(&self.schema).ok()?;
        let function = any.downcast_ref::<ScalarFunctionExpr>().is_some() && !is_volatile(expr);
        if result_type != DataType::Boolean && !(result_type.is_string() && function) {
            return None;
        }
        let name = field.name().clone();
        let lookup = DictionaryLookup {
            input,
            predicate: on_column_zero(expr, &name)?,
            name,
            data_type: field.data_type().clone(),
        };
        if result_type == DataType::Boolean {
            self.dictionary_predicate(lookup)
        } else {
            self.dictionary_mapping(lookup)
        }
    }

    /// A boolean expression of one coded string column, looked up by code.
    fn dictionary_predicate(&mut self, lookup: DictionaryLookup) -> Option<Value> {
        let code = self.load_input(lookup.input)?;
        let word = self.push_host_table(HostTable::Dictionary(lookup));
        let entry = format!(
            "((const unsigned char*){})[{} ? (long long){} + 1 : 0]",
            column_word(word),
            code.valid,
            code.value
        );
        let looked_up = self.emit(CudaType::I8, &format!("(signed char){entry}"), "true");
        Some(self.emit(
            CudaType::Bool,
            &format!("({} == 1)", looked_up.value),
            &format!("({} != 2)", looked_up.value),
        ))
    }

    /// A string function of one coded string column: its value is a code into the
    /// function's distinct results.
    fn dictionary_mapping(&mut self, function: DictionaryLookup) -> Option<Value> {
        let code = self.load_input(function.input)?;
        let index = self.lookups.len();
        let word = self.push_host_table(HostTable::Mapping(DictionaryMapping { function }));
        let entry = format!(
            "((const int*){})[{} ? (long long){} + 1 : 0]",
            column_word(word),
            code.valid,
            code.value
        );
        let mapped = self.emit(CudaType::StrCode, &entry, "true");
        let value = self.emit(
            CudaType::StrCode,
            &mapped.value,
            &format!("({} >= 0)", mapped.value),
        );
        self.mapped.push((value.clone(), index));
        Some(value)
    }

    /// Refuses string operands: strings reach kernels as dictionary codes, which only
    /// grouping reads.
    fn refuse_strings(&mut self, values: &[&Value], expr: &Arc<dyn PhysicalExpr>) -> bool {
        if values.iter().any(|v| v.ty == CudaType::StrCode) {
            let ty = expr
                .data_type(&self.schema)
                .map_or_else(|_| "strings".to_string(), |t| t.to_string());
            let _ = self.refuse(PlacementReason::new(
                ReasonCode::UnsupportedType,
                format!(
                    "string operations ({ty} operands) are not generated for the GPU yet: {expr}"
                ),
            ));
            return true;
        }
        false
    }

    fn literal(&mut self, scalar: &ScalarValue) -> Option<Value> {
        let ty = match CudaType::of(&scalar.data_type()) {
            Ok(ty) => ty,
            Err(reason) => return self.refuse(reason),
        };
        let valid = if scalar.is_null() { "false" } else { "true" };
        let value = match scalar {
            ScalarValue::Boolean(v) => v.unwrap_or(false).to_string(),
            ScalarValue::Int8(v) => int_literal(v.unwrap_or(0).into()),
            ScalarValue::Int16(v) => int_literal(v.unwrap_or(0).into()),
            ScalarValue::Int32(v) | ScalarValue::Date32(v) => int_literal(v.unwrap_or(0).into()),
            ScalarValue::Int64(v) => int_literal(v.unwrap_or(0)),
            // Floats by their bits, so the literal is exact (NaN and -0.0 included).
            ScalarValue::Float32(v) => {
                format!("__int_as_float({})", v.unwrap_or(0.0).to_bits() as i32)
            }
            ScalarValue::Float64(v) => format!(
                "__longlong_as_double({})",
                int_literal(v.unwrap_or(0.0).to_bits() as i64)
            ),
            ScalarValue::Decimal128(v, _, _) => match ty {
                CudaType::Dec64 { .. } => int_literal(v.unwrap_or(0) as i64),
                _ => int128_literal(v.unwrap_or(0)),
            },
            other => {
                return self.refuse(unsupported(format!(
                    "literal {other} of type {} is not generated for the GPU yet",
                    other.data_type()
                )));
            }
        };
        Some(self.emit(ty, &value, valid))
    }

    /// `-1`, `0` or `1` comparing `l` and `r` of type `ty`, as a C expression.
    fn three_way(ty: CudaType, l: &str, r: &str) -> String {
        if ty.is_float() {
            format!("aether_cmp_f({l}, {r})")
        } else {
            format!("(({l} > {r}) - ({l} < {r}))")
        }
    }

    fn binary(&mut self, expr: &Arc<dyn PhysicalExpr>, binary: &BinaryExpr) -> Option<Value> {
        if let Some(result) = self.date_interval(expr, *binary.op(), binary.left(), binary.right())
        {
            return result;
        }
        // Compile both sides first, so reasons from both are collected.
        let left = self.compile(binary.left());
        let right = self.compile(binary.right());
        let (left, right) = (left?, right?);
        if self.refuse_strings(&[&left, &right], expr) {
            return None;
        }
        let op = *binary.op();
        let both_valid = format!("({} && {})", left.valid, right.valid);
        match op {
            Operator::And | Operator::Or => {
                if left.ty != CudaType::Bool || right.ty != CudaType::Bool {
                    return self.refuse(unsupported(format!("{op} of non-booleans: {expr}")));
                }
                let (l, lv, r, rv) = (&left.value, &left.valid, &right.value, &right.valid);
                // SQL three-valued logic: FALSE decides AND, TRUE decides OR, even when
                // the other side is NULL.
                let (valid, value) = if op == Operator::And {
                    (
                        format!("(({lv} && !{l}) || ({rv} && !{r}) || ({lv} && {rv}))"),
                        format!("({lv} && {rv} && {l} && {r})"),
                    )
                } else {
                    (
                        format!("(({lv} && {l}) || ({rv} && {r}) || ({lv} && {rv}))"),
                        format!("(({lv} && {l}) || ({rv} && {r}))"),
                    )
                };
                Some(self.emit(CudaType::Bool, &value, &valid))
            }
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom => {
                if left.ty != right.ty {
                    return self.refuse(unsupported(format!(
                        "comparison of different types ({:?} and {:?}): {expr}",
                        left.ty, right.ty
                    )));
                }
                let cmp = Self::three_way(left.ty, &left.value, &right.value);
                let (value, valid) = match op {
                    Operator::Eq => (format!("({cmp} == 0)"), both_valid),
                    Operator::NotEq => (format!("({cmp} != 0)"), both_valid),
                    Operator::Lt => (format!("({cmp} < 0)"), both_valid),
                    Operator::LtEq => (format!("({cmp} <= 0)"), both_valid),
                    Operator::Gt => (format!("({cmp} > 0)"), both_valid),
                    Operator::GtEq => (format!("({cmp} >= 0)"), both_valid),
                    // NULLs are equal to each other and distinct from every value.
                    Operator::IsDistinctFrom => (
                        format!(
                            "({lv} != {rv} || ({lv} && {cmp} != 0))",
                            lv = left.valid,
                            rv = right.valid
                        ),
                        "true".to_string(),
                    ),
                    _ => (
                        format!(
                            "({lv} == {rv} && (!{lv} || {cmp} == 0))",
                            lv = left.valid,
                            rv = right.valid
                        ),
                        "true".to_string(),
                    ),
                };
                Some(self.emit(CudaType::Bool, &value, &valid))
            }
            Operator::Plus
            | Operator::Minus
            | Operator::Multiply
            | Operator::Divide
            | Operator::Modulo => {
                let divisor = literal_integer(binary.right());
                self.arithmetic(expr, op, (&left, &right, divisor), &both_valid)
            }
            other => self.refuse(unsupported(format!(
                "operator {other} is not generated for the GPU yet: {expr}"
            ))),
        }
    }

    fn arithmetic(
        &mut self,
        expr: &Arc<dyn PhysicalExpr>,
        op: Operator,
        (left, right, divisor): (&Value, &Value, Option<i128>),
        valid: &str,
    ) -> Option<Value> {
        let result = match expr.data_type(&self.schema).map(|t| CudaType::of(&t)) {
            Ok(Ok(ty)) => ty,
            Ok(Err(reason)) => return self.refuse(reason),
            Err(e) => return self.refuse(unsupported(format!("cannot type {expr}: {e}"))),
        };
        let symbol = match op {
            Operator::Plus => "+",
            Operator::Minus => "-",
            Operator::Multiply => "*",
            Operator::Modulo => "%",
            _ => "/",
        };
        let (l, r) = (&left.value, &right.value);
        let is_quotient = matches!(op, Operator::Divide | Operator::Modulo);
        let value = if result.is_integer() && left.ty == result && right.ty == result {
            if is_quotient {
                // By a constant other than 0 and -1, C's division and remainder are
                // Arrow's (truncating toward zero) and cannot fail; otherwise Arrow's
                // errors become faults.
                return match divisor {
                    Some(d) if d != 0 && d != -1 => {
                        Some(self.emit(result, &format!("({l} {symbol} {r})"), valid))
                    }
                    _ => self.integer_quotient(op, (left, right), result, valid),
                };
            }
            let unsigned = result.unsigned_name().unwrap_or("unsigned long long");
            format!(
                "({})(({unsigned}){l} {symbol} ({unsigned}){r})",
                result.c_name()
            )
        } else if result.is_float() && left.ty == result && right.ty == result {
            if op == Operator::Modulo {
                return self.float_remainder((left, right), result, valid);
            }
            format!("{l} {symbol} {r}")
        } else if let (Some(ls), Some(rs), Some(scale)) = (
            left.ty.decimal_scale(),
            right.ty.decimal_scale(),
            result.decimal_scale(),
        ) {
            let c = result.c_name();
            match op {
                // Arrow rescales both operands to the result's scale, then adds (by
                // at most 10^38: a larger factor only comes with negative scales).
                Operator::Plus | Operator::Minus
                    if scale.abs_diff(ls).max(scale.abs_diff(rs)) > 38 =>
                {
                    return self.refuse(unsupported(format!(
                        "decimal {op} rescaling by more than 38 digits is not generated for the GPU: {expr}"
                    )));
                }
                Operator::Plus | Operator::Minus
                    if ls <= scale && rs <= scale && c == "__int128" =>
                {
                    let subtract = op == Operator::Minus;
                    self.checked_decimal_sum(subtract, (left, right), scale, valid)
                }
                Operator::Plus | Operator::Minus if ls <= scale && rs <= scale => {
                    let rescale = |v: &str, from: i8| {
                        let factor = 10i128.pow((scale - from) as u32);
                        if factor == 1 {
                            format!("({c}){v}")
                        } else {
                            format!("(({c}){v} * ({c}){factor})")
                        }
                    };
                    format!("({} {symbol} {})", rescale(l, ls), rescale(r, rs))
                }
                // A product's scale is the sum of the operands' scales.
                Operator::Multiply if i16::from(ls) + i16::from(rs) == i16::from(scale) => {
                    if c == "__int128" {
                        self.checked_decimal_product(left, right, valid)
                    } else {
                        format!("(({c}){l} {symbol} ({c}){r})")
                    }
                }
                Operator::Divide => {
                    return self.decimal_quotient(expr, (left, right), result, valid);
                }
                Operator::Modulo => {
                    return self.refuse(unsupported(format!(
                        "decimal % (remainder) is not generated for the GPU yet: {expr}"
                    )));
                }
                _ => {
                    return self.refuse(unsupported(format!(
                        "decimal {op} with these scales is not generated for the GPU yet: {expr}"
                    )));
                }
            }
        } else {
            return self.refuse(unsupported(format!(
                "arithmetic on {:?} and {:?} giving {:?} is not generated for the GPU yet: {expr}",
                left.ty, right.ty, result
            )));
        };
        Some(self.emit(result, &value, valid))
    }

    fn cast(&mut self, expr: &Arc<dyn PhysicalExpr>, cast: &CastExpr) -> Option<Value> {
        // A cast of a literal is folded here, on the CPU, with DataFusion's own cast, so
        // constants such as `CAST('1994-01-01' AS Date32)` or `CAST(0.05 AS Decimal)`
        // arrive in the kernel as exact literals of the target type.
        let child: &dyn PhysicalExpr = cast.expr().as_ref();
        if let Some(literal) = child.downcast_ref::<Literal>() {
            return match literal.value().cast_to(cast.cast_type()) {
                Ok(folded) => self.literal(&folded),
                Err(e) => self.refuse(unsupported(format!("cannot fold {expr}: {e}"))),
            };
        }
        let from_type = cast.expr().data_type(&self.schema).ok();
        let arg = self.compile(cast.expr())?;
        if arg.ty == CudaType::StrCode && from_type.as_ref() != Some(cast.cast_type()) {
            self.refuse_strings(&[&arg], cast.expr());
            return None;
        }
        let target = match CudaType::of(cast.cast_type()) {
            Ok(ty) => ty,
            Err(reason) => return self.refuse(reason),
        };
        let from_text = from_type
            .as_ref()
            .map_or_else(|| "?".to_string(), |t| t.to_string());
        let refuse_cast = |this: &mut Self| {
            this.refuse(unsupported(format!(
                "CAST from {from_text} to {} is not generated for the GPU yet: {expr}",
                cast.cast_type()
            )))
        };
        // Date32 and Int32 share a CUDA type; only identical types pass as identity.
        if from_type.as_ref() == Some(cast.cast_type()) {
            return Some(arg);
        }
        if from_type.as_ref().is_some_and(|t| t.is_temporal()) || cast.cast_type().is_temporal() {
            return refuse_cast(self);
        }
        let value = match (arg.ty, target) {
            (from, to) if from.is_integer() && to.is_integer() && from.width() <= to.width() => {
                format!("({}){}", to.c_name(), arg.value)
            }
            (from, to) if (from.is_integer() || from.is_float()) && to.is_float() => {
                format!("({}){}", to.c_name(), arg.value)
            }
            (from, to) if from.decimal_scale().is_some() && to.is_float() => {
                return self.decimal_to_float(&arg, to);
            }
            (from, to) if from.is_integer() && to.decimal_scale().is_some() => {
                return self
                    .integer_to_decimal(&arg, to)
                    .or_else(|| refuse_cast(self));
            }
            (from, to) if from.is_float() && to.decimal_scale().is_some() => {
                return self
                    .float_to_decimal(&arg, to)
                    .or_else(|| refuse_cast(self));
            }
            (CudaType::Dec64 { precision, scale } | CudaType::Dec128 { precision, scale }, to)
                if to.decimal_scale().is_some() =>
            {
                return self
                    .decimal_scale_up(&arg, (precision, scale), to)
                    .or_else(|| refuse_cast(self));
            }
            _ => return refuse_cast(self),
        };
        Some(self.emit(target, &value, &arg.valid))
    }

    /// `CASE [x] WHEN ... THEN ... [ELSE ...] END`: the first WHEN that is TRUE (or,
    /// with an operand, equal to it; NULL matches nothing) picks its THEN; otherwise the
    /// ELSE, or NULL. Every branch is computed (they have no side effects) and the
    /// choice is a chain of selects, so no row diverges.
    fn case(&mut self, expr: &Arc<dyn PhysicalExpr>, case: &CaseExpr) -> Option<Value> {
        let result = match expr.data_type(&self.schema).map(|t| CudaType::of(&t)) {
            Ok(Ok(ty)) => ty,
            Ok(Err(reason)) => return self.refuse(reason),
            Err(e) => return self.refuse(unsupported(format!("cannot type {expr}: {e}"))),
        };
        let operand = case.expr().map(|e| self.compile(e));
        let branches: Vec<(Option<Value>, Option<Value>)> = case
            .when_then_expr()
            .iter()
            .map(|(when, then)| (self.compile(when), self.compile(then)))
            .collect();
        let otherwise = case.else_expr().map(|e| self.compile(e));
        let operand = match operand {
            Some(Some(value)) => Some(value),
            Some(None) => return None,
            None => None,
        };
        let otherwise = match otherwise {
            Some(Some(value)) => Some(value),
            Some(None) => return None,
            None => None,
        };
        let mut picks = Vec::with_capacity(branches.len());
        for (when, then) in branches {
            let (when, then) = (when?, then?);
            let taken = match &operand {
                Some(x) => {
                    if x.ty != when.ty || x.ty == CudaType::StrCode {
                        return self.refuse(unsupported(format!(
                            "CASE comparing {:?} with {:?}: {expr}",
                            x.ty, when.ty
                        )));
                    }
                    format!(
                        "({} && {} && {} == 0)",
                        x.valid,
                        when.valid,
                        Self::three_way(x.ty, &x.value, &when.value)
                    )
                }
                None if when.ty == CudaType::Bool => format!("({} && {})", when.valid, when.value),
                None => {
                    return self.refuse(unsupported(format!("CASE WHEN of a non-boolean: {expr}")));
                }
            };
            if then.ty != result {
                return self.refuse(unsupported(format!(
                    "CASE branch of {:?} where the result is {result:?}: {expr}",
                    then.ty
                )));
            }
            picks.push((taken, then));
        }
        if let Some(otherwise) = &otherwise
            && otherwise.ty != result
        {
            return self.refuse(unsupported(format!(
                "CASE ELSE of {:?} where the result is {result:?}: {expr}",
                otherwise.ty
            )));
        }
        let (mut value, mut valid) = match &otherwise {
            Some(v) => (v.value.clone(), v.valid.clone()),
            None => (format!("({})0", result.c_name()), "false".to_string()),
        };
        for (taken, then) in picks.iter().rev() {
            value = format!("({taken} ? {} : {value})", then.value);
            valid = format!("({taken} ? {} : {valid})", then.valid);
        }
        Some(self.emit(result, &value, &valid))
    }

    fn in_list(&mut self, in_list: &InListExpr) -> Option<Value> {
        let needle = self.compile(in_list.expr());
        let items: Vec<Option<Value>> = in_list.list().iter().map(|e| self.compile(e)).collect();
        let needle = needle?;
        let items: Vec<Value> = items.into_iter().collect::<Option<_>>()?;
        if self.refuse_strings(&[&needle], in_list.expr()) {
            return None;
        }
        if let Some(other) = items.iter().find(|item| item.ty != needle.ty) {
            return self.refuse(unsupported(format!(
                "IN list mixing {:?} and {:?}",
                needle.ty, other.ty
            )));
        }
        // IN compares floats by their bits, as DataFusion's hashed IN list does: -0.0 is
        // not in (0.0), NaN is in (NaN).
        let equal = |item: &Value| match needle.ty {
            CudaType::F64 => format!(
                "__double_as_longlong({}) == __double_as_longlong({})",
                needle.value, item.value
            ),
            CudaType::F32 => format!(
                "__float_as_int({}) == __float_as_int({})",
                needle.value, item.value
            ),
            ty => format!("{} == 0", Self::three_way(ty, &needle.value, &item.value)),
        };
        let found = items
            .iter()
            .map(|item| format!("({} && {})", item.valid, equal(item)))
            .collect::<Vec<_>>()
            .join(" || ");
        let any_null_item = items
            .iter()
            .map(|item| format!("!{}", item.valid))
            .collect::<Vec<_>>()
            .join(" || ");
        let found = if found.is_empty() {
            "false".to_string()
        } else {
            found
        };
        let any_null_item = if any_null_item.is_empty() {
            "false".to_string()
        } else {
            any_null_item
        };
        let found = self.emit(CudaType::Bool, &found, "true");
        // x IN (...) is TRUE if found, else NULL if x or any item is NULL, else FALSE.
        let valid = format!(
            "({} && ({} || !({any_null_item})))",
            needle.valid, found.value
        );
        let value = if in_list.negated() {
            format!("!{}", found.value)
        } else {
            found.value.clone()
        };
        Some(self.emit(CudaType::Bool, &value, &valid))
    }
}
