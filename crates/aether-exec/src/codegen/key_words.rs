//! How a GPU aggregate's group keys are packed into 64-bit key words.
//!
//! The fold kernel hashes and compares a row's key word by word, once per row, so
//! fewer words mean fewer instructions on the hottest path. A key of 32 bits or fewer
//! (booleans, 8- to 32-bit integers, dates, `float`, string dictionary codes) takes
//! half a word, and two such keys share one: TPC-H Q1's two flag codes are one word.
//! Wider keys take one word, or two for a 128-bit decimal. The NULL flags, when some
//! key can be NULL, follow in one more word (see `aggregate.rs`).
//!
//! A float key is packed with `-0.0` folded into `+0.0`: DataFusion's group values
//! canonicalize floats so, making `-0.0` and `0.0` one group shown as `0.0`. A NaN
//! keeps its bits, so NaNs of different payloads stay apart, as they do there.

use std::fmt::Write as _;

use super::expr::Value;
use super::types::CudaType;

/// Where one key's value sits among the key words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlacement {
    /// The low (`shift` 0) or high (`shift` 32) half of word `word`.
    Half { word: usize, shift: u32 },
    /// Words `word..word + words`, low word first.
    Whole { word: usize, words: usize },
}

/// The packed layout of a key tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    pub placements: Vec<KeyPlacement>,
    /// Words the key values take (the NULL-flag word not counted).
    pub words: usize,
}

/// Places `values`, in order: a half-word value fills the half a previous one left
/// open, or opens a new word.
pub fn key_layout(values: &[Value]) -> KeyLayout {
    let mut placements = Vec::with_capacity(values.len());
    let mut words = 0;
    let mut open_half = None;
    for value in values {
        if half_word_expr(value).is_some() {
            let placement = match open_half.take() {
                Some(word) => KeyPlacement::Half { word, shift: 32 },
                None => {
                    open_half = Some(words);
                    words += 1;
                    KeyPlacement::Half {
                        word: words - 1,
                        shift: 0,
                    }
                }
            };
            placements.push(placement);
        } else {
            let count = whole_word_exprs(value).len();
            placements.push(KeyPlacement::Whole {
                word: words,
                words: count,
            });
            words += count;
        }
    }
    KeyLayout { placements, words }
}

/// Statements filling `key[0..layout.words]` from the row's key values (a NULL key
/// contributes zeros; its flag tells it apart).
pub fn key_word_statements(layout: &KeyLayout, values: &[Value]) -> String {
    let mut terms = vec![Vec::new(); layout.words];
    for (value, placement) in values.iter().zip(&layout.placements) {
        match *placement {
            KeyPlacement::Half { word, shift } => {
                let expr = half_word_expr(value).unwrap_or_default();
                let shifted = if shift == 0 {
                    format!("({} ? {expr} : 0ULL)", value.valid)
                } else {
                    format!("(({} ? {expr} : 0ULL) << {shift})", value.valid)
                };
                terms[word].push(shifted);
            }
            KeyPlacement::Whole { word, .. } => {
                for (i, expr) in whole_word_exprs(value).into_iter().enumerate() {
                    terms[word + i].push(format!("({} ? {expr} : 0ULL)", value.valid));
                }
            }
        }
    }
    let mut statements = String::new();
    for (word, parts) in terms.iter().enumerate() {
        let _ = writeln!(statements, "        key[{word}] = {};", parts.join(" | "));
    }
    statements
}

/// The C expression reading a key of type `ty` (C type `c_type`) back from the
/// group's key words `keys`.
pub fn key_value_expr(placement: KeyPlacement, ty: CudaType, c_type: &str) -> String {
    match placement {
        KeyPlacement::Half { word, shift } => {
            let bits = if shift == 0 {
                format!("(int)(unsigned)keys[{word}]")
            } else {
                format!("(int)(unsigned)(keys[{word}] >> {shift})")
            };
            if ty == CudaType::F32 {
                format!("__int_as_float({bits})")
            } else {
                format!("({c_type})({bits})")
            }
        }
        KeyPlacement::Whole { word, words: 2 } => format!(
            "(__int128)(((unsigned __int128)keys[{}] << 64) | (unsigned __int128)keys[{word}])",
            word + 1
        ),
        KeyPlacement::Whole { word, .. } if ty == CudaType::F64 => {
            format!("__longlong_as_double((long long)keys[{word}])")
        }
        KeyPlacement::Whole { word, .. } => format!("({c_type})(long long)keys[{word}]"),
    }
}

/// The 32 bits of a key value that fits half a word, zero-extended; `None` for
/// wider values.
fn half_word_expr(value: &Value) -> Option<String> {
    let x = &value.value;
    match value.ty {
        CudaType::Bool => Some(format!("({x} ? 1ULL : 0ULL)")),
        CudaType::F32 => Some(format!(
            "(u64)(unsigned)__float_as_int(({x}) == 0.0f ? 0.0f : ({x}))"
        )),
        CudaType::I8 | CudaType::I16 | CudaType::I32 | CudaType::StrCode => {
            Some(format!("(u64)(unsigned)({x})"))
        }
        _ => None,
    }
}

/// The whole 64-bit words of a wider key value (two for a 128-bit decimal).
fn whole_word_exprs(value: &Value) -> Vec<String> {
    let x = &value.value;
    match value.ty {
        CudaType::F64 => vec![format!(
            "(u64)__double_as_longlong(({x}) == 0.0 ? 0.0 : ({x}))"
        )],
        CudaType::Dec128 { .. } => vec![
            format!("(u64)({x})"),
            format!("(u64)((unsigned __int128)({x}) >> 64)"),
        ],
        _ => vec![format!("(u64)(long long)({x})")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(name: &str, ty: CudaType) -> Value {
        Value {
            value: format!("x_{name}"),
            valid: format!("v_{name}"),
            ty,
        }
    }

    #[test]
    fn narrow_keys_share_words_and_wide_ones_take_their_own() {
        let values = [
            value("flag", CudaType::StrCode),
            value(
                "total",
                CudaType::Dec128 {
                    precision: 38,
                    scale: 2,
                },
            ),
            value("status", CudaType::StrCode),
            value("year", CudaType::I32),
        ];
        let layout = key_layout(&values);
        assert_eq!(layout.words, 4);
        assert_eq!(
            layout.placements,
            vec![
                KeyPlacement::Half { word: 0, shift: 0 },
                KeyPlacement::Whole { word: 1, words: 2 },
                KeyPlacement::Half { word: 0, shift: 32 },
                KeyPlacement::Half { word: 3, shift: 0 },
            ]
        );
        let statements = key_word_statements(&layout, &values);
        assert!(statements.contains(
            "key[0] = (v_flag ? (u64)(unsigned)(x_flag) : 0ULL) | \
             ((v_status ? (u64)(unsigned)(x_status) : 0ULL) << 32);"
        ));
        assert!(statements.contains("key[3] = (v_year ? (u64)(unsigned)(x_year) : 0ULL);"));
        assert_eq!(
            key_value_expr(layout.placements[2], CudaType::StrCode, "int"),
            "(int)((int)(unsigned)(keys[0] >> 32))"
        );
    }

    #[test]
    fn float_keys_fold_negative_zero_into_zero() {
        let values = [value("f", CudaType::F32), value("d", CudaType::F64)];
        let layout = key_layout(&values);
        let statements = key_word_statements(&layout, &values);
        assert!(
            statements.contains("__float_as_int((x_f) == 0.0f ? 0.0f : (x_f))"),
            "{statements}"
        );
        assert!(
            statements.contains("__double_as_longlong((x_d) == 0.0 ? 0.0 : (x_d))"),
            "{statements}"
        );
    }
}
