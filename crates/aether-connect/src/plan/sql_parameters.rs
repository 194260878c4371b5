//! Parameter markers of `spark.sql(query, args)`: positional `?` and named `:name`,
//! replaced by the SQL text of their values outside string literals, quoted
//! identifiers and comments.

use crate::error::{ConnectError, ConnectResult};

/// `query` with its markers replaced.
pub fn substitute(
    query: &str,
    positional: &[String],
    named: &[(String, String)],
) -> ConnectResult<String> {
    let chars: Vec<char> = query.chars().collect();
    let mut out = String::with_capacity(query.len());
    let mut next_positional = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' | '`' => {
                let end = closing(&chars, i, c);
                out.extend(&chars[i..end]);
                i = end;
            }
            '-' if chars.get(i + 1) == Some(&'-') => {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(chars.len(), |p| i + p);
                out.extend(&chars[i..end]);
                i = end;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let end = find_comment_end(&chars, i + 2);
                out.extend(&chars[i..end]);
                i = end;
            }
            '?' => {
                let value = positional.get(next_positional).ok_or_else(|| {
                    ConnectError::analysis(
                        "UNBOUND_SQL_PARAMETER",
                        format!(
                            "[UNBOUND_SQL_PARAMETER] Found the unbound parameter: _{next_positional}."
                        ),
                    )
                })?;
                out.push_str(value);
                next_positional += 1;
                i += 1;
            }
            ':' if chars
                .get(i + 1)
                .is_some_and(|c| c.is_alphabetic() || *c == '_')
                && chars.get(i.wrapping_sub(1)) != Some(&':') =>
            {
                let start = i + 1;
                let end = chars[start..]
                    .iter()
                    .position(|c| !(c.is_alphanumeric() || *c == '_'))
                    .map_or(chars.len(), |p| start + p);
                let name: String = chars[start..end].iter().collect();
                let value = named
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value)
                    .ok_or_else(|| {
                        ConnectError::analysis(
                            "UNBOUND_SQL_PARAMETER",
                            format!("[UNBOUND_SQL_PARAMETER] Found the unbound parameter: {name}."),
                        )
                    })?;
                out.push_str(value);
                i = end;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The index after the quote that closes the one at `start` (doubled quotes escape).
fn closing(chars: &[char], start: usize, quote: char) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == '\\' && quote != '`' {
            i += 2;
            continue;
        }
        if chars[i] == quote {
            if chars.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

fn find_comment_end(chars: &[char], from: usize) -> usize {
    let mut i = from;
    while i + 1 < chars.len() {
        if chars[i] == '*' && chars[i + 1] == '/' {
            return i + 2;
        }
        i += 1;
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn markers_outside_literals_are_replaced() {
        let sql = "SELECT '?', :x FROM t WHERE a = ? AND b = :y -- ? :z\n AND c::int = 1";
        let out = substitute(
            sql,
            &["5".to_string()],
            &[
                ("x".to_string(), "'a'".to_string()),
                ("y".to_string(), "2".to_string()),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            "SELECT '?', 'a' FROM t WHERE a = 5 AND b = 2 -- ? :z\n AND c::int = 1"
        );
        assert!(substitute("SELECT ?", &[], &[]).is_err());
        assert!(substitute("SELECT :missing", &[], &[]).is_err());
    }
}
