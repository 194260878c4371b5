//! Predicates over strings read as bytes on the device.
//!
//! A string column of many distinct values (TPC-H's comments, names, phone numbers)
//! is not coded on the host: it is uploaded as Arrow keeps it, i32 offsets and the
//! bytes they index (`DeviceForm::Strings`), and each row's predicate runs on the GPU
//! over its bytes (`cuda/strings.cuh`). What compiles this way is a comparison of the
//! column, or of a `substr` of it with constant positions (TPC-H Q22's country codes),
//! with constants: `=`, `<>`, `<`, `<=`, `>`, `>=`, `[NOT] IN (...)`, `[NOT] LIKE`
//! (any pattern without the escape character), `starts_with`, `ends_with` and
//! `IS [NOT] NULL`, combined by the usual AND/OR/NOT/CASE code.
//!
//! Which columns travel as bytes is decided by placement
//! (`placement/string_bytes.rs`); the compiler is told up front. A column read as bytes
//! anywhere else (passed through, grouped on, joined on, an unsupported function) is
//! refused with a reason, and placement then codes that column instead.

use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr, Literal,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::scalar::ScalarValue;

use super::{Binding, ExprCompiler, Value, column_word};
use crate::codegen::types::CudaType;

/// The CUDA helpers every kernel reading string bytes includes.
pub(crate) const STRINGS_PRELUDE: &str = include_str!("../cuda/strings.cuh");

/// The variables holding one row's string of a bytes column: its first byte, its
/// length and whether it is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RowString {
    bytes: String,
    len: String,
    valid: String,
}

/// A string a predicate reads: a bytes column, or the characters `skip + 1` to
/// `skip + take` of it (`substr(column, skip + 1, take)`; to its end without `take`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Operand {
    input: usize,
    substring: Option<(i64, Option<i64>)>,
}

/// A constant integer argument.
fn int_literal(expr: &Arc<dyn PhysicalExpr>) -> Option<i64> {
    let any: &dyn PhysicalExpr = expr.as_ref();
    match any.downcast_ref::<Literal>()?.value() {
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        _ => None,
    }
}

/// A constant string operand: `None` for NULL. A cast of a string constant to
/// another string type (`CAST('a%' AS Utf8View)`, left when the plan was not
/// simplified) is the same constant.
fn string_literal(expr: &Arc<dyn PhysicalExpr>) -> Option<Option<String>> {
    let any: &dyn PhysicalExpr = expr.as_ref();
    if let Some(cast) = any.downcast_ref::<CastExpr>() {
        return cast
            .cast_type()
            .is_string()
            .then(|| string_literal(cast.expr()))
            .flatten();
    }
    match any.downcast_ref::<Literal>()?.value() {
        ScalarValue::Utf8(v) | ScalarValue::Utf8View(v) | ScalarValue::LargeUtf8(v) => {
            Some(v.clone())
        }
        ScalarValue::Null => Some(None),
        _ => None,
    }
}

/// `bytes` as a C string literal with its length: octal escapes (at most three
/// digits, so a digit after one is never read into it) for everything but letters,
/// digits and spaces.
pub(super) fn c_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out.push('"');
    format!("(const unsigned char*){out}, {}", bytes.len())
}

impl ExprCompiler {
    /// Whether input column `input` is uploaded as offsets and bytes.
    pub(super) fn reads_bytes(&self, input: usize) -> bool {
        self.string_bytes.contains(&input)
    }

    /// The pointer pair after the input columns that holds input column `input`'s
    /// offsets: bytes columns' offsets come in input order, right after the inputs.
    fn offsets_pair(&self, input: usize) -> usize {
        let rank = self.string_bytes.iter().filter(|c| **c < input).count();
        self.input.fields().len() + rank
    }

    /// Loads the row's string of bytes column `input` (once per kernel).
    fn row_string(&mut self, input: usize) -> RowString {
        let name = format!("s{input}");
        let string = RowString {
            bytes: format!("{name}_bytes"),
            len: format!("{name}_len"),
            valid: format!("{name}_valid"),
        };
        if self.loaded_strings.insert(input) {
            let nullable = self
                .input
                .fields()
                .get(input)
                .is_some_and(|f| f.is_nullable());
            let valid = if nullable {
                format!("aether_valid({}, row)", column_word(2 * input + 1))
            } else {
                "true".to_string()
            };
            let offsets = column_word(2 * self.offsets_pair(input));
            self.loads.push_str(&format!(
                "        const bool {valid_var} = {valid};\n        const int {name}_begin = ((const int*){offsets})[row];\n        const int {len} = ((const int*){offsets})[row + 1] - {name}_begin;\n        const unsigned char* {bytes} = (const unsigned char*){values} + {name}_begin;\n",
                valid_var = string.valid,
                len = string.len,
                bytes = string.bytes,
                values = column_word(2 * input),
            ));
        }
        string
    }

    /// The bytes column `expr` reads, when `expr` is a plain column bound to one.
    fn bytes_column(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<usize> {
        let any: &dyn PhysicalExpr = expr.as_ref();
        let column = any.downcast_ref::<Column>()?;
        match self.bindings.get(column.index())? {
            Binding::Input(input) if self.reads_bytes(*input) => Some(*input),
            _ => None,
        }
    }

    /// The string `expr` reads, when it is a bytes column or a `substr` of one with
    /// a constant start of at least 1 and a constant, non-negative length (where
    /// DataFusion's rules for other starts and lengths are not generated).
    fn operand(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<Operand> {
        if let Some(input) = self.bytes_column(expr) {
            return Some(Operand {
                input,
                substring: None,
            });
        }
        let any: &dyn PhysicalExpr = expr.as_ref();
        let function = any.downcast_ref::<ScalarFunctionExpr>()?;
        if function.name() != "substr" {
            return None;
        }
        let (string, start, take) = match function.args() {
            [string, start] => (string, start, None),
            [string, start, take] => (string, start, Some(int_literal(take)?)),
            _ => return None,
        };
        let input = self.bytes_column(string)?;
        let start = int_literal(start)?;
        if start < 1 || take.is_some_and(|t| t < 0) {
            return None;
        }
        Some(Operand {
            input,
            substring: Some((start - 1, take)),
        })
    }

    /// Loads the string `operand` reads for the row.
    fn load_operand(&mut self, operand: Operand) -> RowString {
        let whole = self.row_string(operand.input);
        let Some((skip, take)) = operand.substring else {
            return whole;
        };
        let name = self.next_name("sub");
        let end = match take {
            Some(take) => format!(
                "aether_utf8_advance({b}, {n}, {name}_begin, {take}LL)",
                b = whole.bytes,
                n = whole.len
            ),
            None => whole.len.clone(),
        };
        self.push_statement(&format!(
            "const int {name}_begin = aether_utf8_advance({b}, {n}, 0, {skip}LL);",
            b = whole.bytes,
            n = whole.len
        ));
        self.push_statement(&format!("const int {name}_end = {end};"));
        self.push_statement(&format!(
            "const unsigned char* {name}_bytes = {b} + {name}_begin;",
            b = whole.bytes
        ));
        self.push_statement(&format!(
            "const int {name}_len = {name}_end - {name}_begin;"
        ));
        RowString {
            bytes: format!("{name}_bytes"),
            len: format!("{name}_len"),
            valid: whole.valid,
        }
    }

    /// A boolean of the row's string and a constant: `test` is the C test given the
    /// string's bytes and length; NULL when the string or the constant is NULL.
    fn string_test(
        &mut self,
        operand: Operand,
        constant: Option<&str>,
        test: impl FnOnce(&RowString, &str) -> String,
    ) -> Value {
        let string = self.load_operand(operand);
        match constant {
            Some(constant) => {
                let value = test(&string, &c_bytes(constant.as_bytes()));
                let valid = string.valid.clone();
                self.emit(
                    CudaType::Bool,
                    &format!("({valid} && {value})"),
                    &string.valid,
                )
            }
            None => self.emit(CudaType::Bool, "false", "false"),
        }
    }

    /// `expr` compiled over the bytes of a string column, when it is one of the
    /// predicates listed in the module header; `None` otherwise (the caller goes on
    /// with the general code, which refuses a bytes column it reaches).
    pub(super) fn bytes_predicate(&mut self, expr: &Arc<dyn PhysicalExpr>) -> Option<Value> {
        let any: &dyn PhysicalExpr = expr.as_ref();
        if let Some(like) = any.downcast_ref::<LikeExpr>() {
            let input = self.operand(like.expr())?;
            let pattern = string_literal(like.pattern())?;
            if like.case_insensitive() || pattern.as_deref().is_some_and(|p| p.contains('\\')) {
                return None;
            }
            let negated = like.negated();
            let value = self.string_test(input, pattern.as_deref(), |s, p| {
                format!(
                    "{}aether_like({}, {}, {p})",
                    if negated { "!" } else { "" },
                    s.bytes,
                    s.len
                )
            });
            return Some(value);
        }
        if let Some(binary) = any.downcast_ref::<BinaryExpr>() {
            let (input, constant, op) =
                match (self.operand(binary.left()), self.operand(binary.right())) {
                    (Some(input), None) => (input, string_literal(binary.right())?, *binary.op()),
                    (None, Some(input)) => {
                        (input, string_literal(binary.left())?, binary.op().swap()?)
                    }
                    _ => return None,
                };
            let test = match op {
                Operator::Eq => "== 0",
                Operator::NotEq => "!= 0",
                Operator::Lt => "< 0",
                Operator::LtEq => "<= 0",
                Operator::Gt => "> 0",
                Operator::GtEq => ">= 0",
                _ => return None,
            };
            let value = self.string_test(input, constant.as_deref(), |s, c| {
                format!("(aether_str_cmp({}, {}, {c}) {test})", s.bytes, s.len)
            });
            return Some(value);
        }
        if let Some(in_list) = any.downcast_ref::<InListExpr>() {
            return self.bytes_in_list(in_list);
        }
        if let Some(function) = any.downcast_ref::<ScalarFunctionExpr>() {
            let helper = match function.name() {
                "starts_with" => "aether_starts_with",
                "ends_with" => "aether_ends_with",
                _ => return None,
            };
            let [string, prefix] = function.args() else {
                return None;
            };
            let input = self.operand(string)?;
            let constant = string_literal(prefix)?;
            let value = self.string_test(input, constant.as_deref(), |s, c| {
                format!("{helper}({}, {}, {c})", s.bytes, s.len)
            });
            return Some(value);
        }
        if let Some(is_null) = any.downcast_ref::<IsNullExpr>() {
            let input = self.bytes_column(is_null.arg())?;
            let string = self.row_string(input);
            return Some(self.emit(CudaType::Bool, &format!("!{}", string.valid), "true"));
        }
        if let Some(is_not_null) = any.downcast_ref::<IsNotNullExpr>() {
            let input = self.bytes_column(is_not_null.arg())?;
            let string = self.row_string(input);
            return Some(self.emit(CudaType::Bool, &string.valid, "true"));
        }
        None
    }

    /// `s [NOT] IN (constants)`: TRUE if found, else NULL if `s` or a constant is
    /// NULL, else FALSE (negated: NOT of that).
    fn bytes_in_list(&mut self, in_list: &InListExpr) -> Option<Value> {
        let input = self.operand(in_list.expr())?;
        let constants = in_list
            .list()
            .iter()
            .map(string_literal)
            .collect::<Option<Vec<_>>>()?;
        let string = self.load_operand(input);
        let found = constants
            .iter()
            .flatten()
            .map(|c| {
                format!(
                    "aether_str_eq({}, {}, {})",
                    string.bytes,
                    string.len,
                    c_bytes(c.as_bytes())
                )
            })
            .collect::<Vec<_>>();
        let found = if found.is_empty() {
            "false".to_string()
        } else {
            found.join(" || ")
        };
        let found = self.emit(
            CudaType::Bool,
            &format!("({} && ({found}))", string.valid),
            "true",
        );
        let any_null = constants.iter().any(Option::is_none);
        let valid = if any_null {
            format!("({} && {})", string.valid, found.value)
        } else {
            string.valid.clone()
        };
        let value = if in_list.negated() {
            format!("!{}", found.value)
        } else {
            found.value.clone()
        };
        Some(self.emit(CudaType::Bool, &value, &valid))
    }
}

#[cfg(test)]
mod tests {
    use super::c_bytes;

    #[test]
    fn c_bytes_escapes_everything_but_letters_digits_and_spaces() {
        assert_eq!(c_bytes(b"ab 1"), "(const unsigned char*)\"ab 1\", 4");
        // "%7" would read as one escape with a hex \x; octal stops at three digits.
        assert_eq!(
            c_bytes("%7\"é".as_bytes()),
            "(const unsigned char*)\"\\0457\\042\\303\\251\", 5"
        );
    }
}
