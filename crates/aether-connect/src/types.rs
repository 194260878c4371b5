//! Spark data types: Arrow <-> Spark Connect `DataType`, and Spark's schema strings.
//!
//! Clients describe schemas three ways: the `DataType` message (analyze, results), Spark's
//! JSON form (`StructType.json()`, sent with `createDataFrame` and `read.schema(...)`), and
//! DDL strings (`"a INT, b STRING"`). Results go back as Arrow in the types Spark uses on
//! the wire (microsecond timestamps, plain `Utf8`), so [`to_spark_arrow`] normalizes
//! DataFusion's types before they are sent.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use serde_json::Value;

use crate::error::{ConnectError, ConnectResult};
use crate::proto::DataType as SparkType;
use crate::proto::data_type::{self as sdt, Kind};

/// The Spark `DataType` of an Arrow type.
pub fn to_spark(data_type: &DataType) -> ConnectResult<SparkType> {
    let kind = match data_type {
        DataType::Null => Kind::Null(sdt::Null::default()),
        DataType::Boolean => Kind::Boolean(sdt::Boolean::default()),
        DataType::Int8 => Kind::Byte(sdt::Byte::default()),
        DataType::Int16 | DataType::UInt8 => Kind::Short(sdt::Short::default()),
        DataType::Int32 | DataType::UInt16 => Kind::Integer(sdt::Integer::default()),
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => Kind::Long(sdt::Long::default()),
        DataType::Float16 | DataType::Float32 => Kind::Float(sdt::Float::default()),
        DataType::Float64 => Kind::Double(sdt::Double::default()),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => Kind::Decimal(sdt::Decimal {
            precision: Some(i32::from(*p)),
            scale: Some(i32::from(*s)),
            type_variation_reference: 0,
        }),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Kind::String(sdt::String::default())
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Kind::Binary(sdt::Binary::default()),
        DataType::Date32 | DataType::Date64 => Kind::Date(sdt::Date::default()),
        DataType::Timestamp(_, Some(_)) => Kind::Timestamp(sdt::Timestamp::default()),
        DataType::Timestamp(_, None) => Kind::TimestampNtz(sdt::TimestampNtz::default()),
        DataType::List(field) | DataType::LargeList(field) | DataType::FixedSizeList(field, _) => {
            Kind::Array(Box::new(sdt::Array {
                element_type: Some(Box::new(to_spark(field.data_type())?)),
                contains_null: field.is_nullable(),
                type_variation_reference: 0,
            }))
        }
        DataType::Struct(fields) => Kind::Struct(struct_type(fields)?),
        DataType::Map(entries, _) => {
            let DataType::Struct(pair) = entries.data_type() else {
                return Err(ConnectError::unsupported(format!(
                    "the map type {data_type}"
                )));
            };
            let (Some(key), Some(value)) = (pair.first(), pair.get(1)) else {
                return Err(ConnectError::unsupported(format!(
                    "the map type {data_type}"
                )));
            };
            Kind::Map(Box::new(sdt::Map {
                key_type: Some(Box::new(to_spark(key.data_type())?)),
                value_type: Some(Box::new(to_spark(value.data_type())?)),
                value_contains_null: value.is_nullable(),
                type_variation_reference: 0,
            }))
        }
        DataType::Dictionary(_, value) => return to_spark(value),
        DataType::Interval(_) | DataType::Duration(_) => {
            Kind::DayTimeInterval(sdt::DayTimeInterval::default())
        }
        other => {
            return Err(ConnectError::unsupported(format!(
                "results of type {other}"
            )));
        }
    };
    Ok(SparkType { kind: Some(kind) })
}

/// The Spark struct type of an Arrow schema's fields.
pub fn struct_type(fields: &Fields) -> ConnectResult<sdt::Struct> {
    let fields = fields
        .iter()
        .map(|field| {
            Ok(sdt::StructField {
                name: field.name().clone(),
                data_type: Some(to_spark(field.data_type())?),
                nullable: field.is_nullable(),
                metadata: None,
            })
        })
        .collect::<ConnectResult<Vec<_>>>()?;
    Ok(sdt::Struct {
        fields,
        type_variation_reference: 0,
    })
}

/// The Spark `DataType` of a whole schema (a struct).
pub fn schema_to_spark(schema: &Schema) -> ConnectResult<SparkType> {
    Ok(SparkType {
        kind: Some(Kind::Struct(struct_type(schema.fields())?)),
    })
}

/// The Arrow type of a Spark `DataType`.
pub fn from_spark(data_type: &SparkType) -> ConnectResult<DataType> {
    let Some(kind) = &data_type.kind else {
        return Err(ConnectError::invalid("a data type without a kind"));
    };
    Ok(match kind {
        Kind::Null(_) => DataType::Null,
        Kind::Boolean(_) => DataType::Boolean,
        Kind::Byte(_) => DataType::Int8,
        Kind::Short(_) => DataType::Int16,
        Kind::Integer(_) => DataType::Int32,
        Kind::Long(_) => DataType::Int64,
        Kind::Float(_) => DataType::Float32,
        Kind::Double(_) => DataType::Float64,
        Kind::Decimal(d) => decimal(d.precision.unwrap_or(10), d.scale.unwrap_or(0))?,
        Kind::String(_) | Kind::Char(_) | Kind::VarChar(_) => DataType::Utf8,
        Kind::Binary(_) => DataType::Binary,
        Kind::Date(_) => DataType::Date32,
        Kind::Timestamp(_) => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Kind::TimestampNtz(_) => DataType::Timestamp(TimeUnit::Microsecond, None),
        Kind::Array(array) => {
            let element = array
                .element_type
                .as_deref()
                .ok_or_else(|| ConnectError::invalid("an array type without an element type"))?;
            DataType::new_list(from_spark(element)?, array.contains_null)
        }
        Kind::Struct(fields) => DataType::Struct(fields_from_spark(&fields.fields)?),
        Kind::Map(map) => {
            let (Some(key), Some(value)) = (map.key_type.as_deref(), map.value_type.as_deref())
            else {
                return Err(ConnectError::invalid(
                    "a map type without key or value type",
                ));
            };
            map_type(
                from_spark(key)?,
                from_spark(value)?,
                map.value_contains_null,
            )
        }
        Kind::Unparsed(unparsed) => parse_type(&unparsed.data_type_string)?,
        other => {
            return Err(ConnectError::unsupported(format!(
                "the data type {}",
                kind_name(other)
            )));
        }
    })
}

/// Arrow fields of Spark struct fields.
fn fields_from_spark(fields: &[sdt::StructField]) -> ConnectResult<Fields> {
    fields
        .iter()
        .map(|field| {
            let data_type = field
                .data_type
                .as_ref()
                .ok_or_else(|| ConnectError::invalid("a struct field without a type"))?;
            Ok(Field::new(
                &field.name,
                from_spark(data_type)?,
                field.nullable,
            ))
        })
        .collect()
}

fn kind_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::CalendarInterval(_) => "interval",
        Kind::YearMonthInterval(_) => "interval year to month",
        Kind::DayTimeInterval(_) => "interval day to second",
        Kind::Variant(_) => "variant",
        Kind::Udt(_) => "user-defined type",
        Kind::Geometry(_) => "geometry",
        Kind::Geography(_) => "geography",
        Kind::Time(_) => "time",
        _ => "type",
    }
}

fn decimal(precision: i32, scale: i32) -> ConnectResult<DataType> {
    let p = u8::try_from(precision)
        .ok()
        .filter(|p| (1..=38).contains(p))
        .ok_or_else(|| {
            ConnectError::invalid(format!("decimal precision {precision} is not in 1..38"))
        })?;
    let s = i8::try_from(scale)
        .ok()
        .filter(|s| *s >= 0 && (*s as u8) <= p)
        .ok_or_else(|| ConnectError::invalid(format!("decimal scale {scale} is not in 0..{p}")))?;
    Ok(DataType::Decimal128(p, s))
}

fn map_type(key: DataType, value: DataType, value_nullable: bool) -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", key, false),
            Field::new("value", value, value_nullable),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// The schema a client's schema string describes: Spark's JSON form or DDL.
pub fn parse_schema(text: &str) -> ConnectResult<Schema> {
    let text = text.trim();
    if text.starts_with('{') {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ConnectError::parse(format!("invalid JSON schema: {e}")))?;
        return match json_type(&value)? {
            DataType::Struct(fields) => Ok(Schema::new(fields)),
            other => Ok(Schema::new(vec![Field::new("value", other, true)])),
        };
    }
    let mut parser = DdlParser::new(text);
    let fields = parser.field_list()?;
    parser.expect_end()?;
    Ok(Schema::new(fields))
}

/// The Arrow type of a Spark type string such as `int`, `decimal(10,2)` or
/// `array<string>`.
pub fn parse_type(text: &str) -> ConnectResult<DataType> {
    let mut parser = DdlParser::new(text.trim());
    let data_type = parser.data_type()?;
    parser.expect_end()?;
    Ok(data_type)
}

/// A type in Spark's JSON schema form.
fn json_type(value: &Value) -> ConnectResult<DataType> {
    let invalid = || ConnectError::parse(format!("invalid JSON data type: {value}"));
    match value {
        Value::String(name) => parse_type(name),
        Value::Object(object) => match object.get("type").and_then(Value::as_str) {
            Some("struct") => {
                let fields = object
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(invalid)?;
                let fields = fields
                    .iter()
                    .map(|field| {
                        let name = field
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(invalid)?;
                        let data_type = json_type(field.get("type").ok_or_else(invalid)?)?;
                        let nullable = field
                            .get("nullable")
                            .and_then(Value::as_bool)
                            .unwrap_or(true);
                        Ok(Field::new(name, data_type, nullable))
                    })
                    .collect::<ConnectResult<Vec<_>>>()?;
                Ok(DataType::Struct(Fields::from(fields)))
            }
            Some("array") => {
                let element = json_type(object.get("elementType").ok_or_else(invalid)?)?;
                let nullable = object
                    .get("containsNull")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                Ok(DataType::new_list(element, nullable))
            }
            Some("map") => {
                let key = json_type(object.get("keyType").ok_or_else(invalid)?)?;
                let value = json_type(object.get("valueType").ok_or_else(invalid)?)?;
                let nullable = object
                    .get("valueContainsNull")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                Ok(map_type(key, value, nullable))
            }
            Some("udt") => Err(ConnectError::unsupported("user-defined types")),
            _ => Err(invalid()),
        },
        _ => Err(invalid()),
    }
}

/// A small recursive-descent parser for Spark's DDL schema and type strings.
struct DdlParser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> DdlParser<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn error(&self, what: &str) -> ConnectError {
        ConnectError::parse(format!(
            "[PARSE_SYNTAX_ERROR] Syntax error in the data type string '{}' at position {}: {what}",
            self.text, self.pos
        ))
    }

    fn skip_space(&mut self) {
        while self.rest().starts_with(char::is_whitespace) {
            self.pos += self.rest().chars().next().map_or(1, char::len_utf8);
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn eat(&mut self, token: char) -> bool {
        self.skip_space();
        if self.rest().starts_with(token) {
            self.pos += token.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: char) -> ConnectResult<()> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{token}'")))
        }
    }

    fn expect_end(&mut self) -> ConnectResult<()> {
        self.skip_space();
        if self.rest().is_empty() {
            Ok(())
        } else {
            Err(self.error("unexpected text"))
        }
    }

    /// An identifier, plain or in backticks.
    fn identifier(&mut self) -> ConnectResult<String> {
        self.skip_space();
        if let Some(quoted) = self.rest().strip_prefix('`') {
            let mut name = String::new();
            let mut chars = quoted.char_indices().peekable();
            while let Some((i, c)) = chars.next() {
                if c == '`' {
                    if chars.peek().map(|(_, n)| *n) == Some('`') {
                        name.push('`');
                        chars.next();
                        continue;
                    }
                    self.pos += 1 + i + 1;
                    return Ok(name);
                }
                name.push(c);
            }
            return Err(self.error("unterminated backtick"));
        }
        let length = self
            .rest()
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(self.rest().len());
        if length == 0 {
            return Err(self.error("expected a name"));
        }
        let name = self.rest()[..length].to_string();
        self.pos += length;
        Ok(name)
    }

    fn keyword(&mut self, word: &str) -> bool {
        self.skip_space();
        let rest = self.rest();
        let matches = rest.len() >= word.len()
            && rest[..word.len()].eq_ignore_ascii_case(word)
            && !rest[word.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
        if matches {
            self.pos += word.len();
        }
        matches
    }

    /// `name [:] type [NOT NULL] [COMMENT '...']`, comma separated.
    fn field_list(&mut self) -> ConnectResult<Vec<Field>> {
        let mut fields = Vec::new();
        loop {
            let name = self.identifier()?;
            self.eat(':');
            let data_type = self.data_type()?;
            let nullable = !(self.keyword("NOT") && self.keyword("NULL"));
            if self.keyword("COMMENT") {
                self.string_literal()?;
            }
            fields.push(Field::new(name, data_type, nullable));
            if !self.eat(',') {
                return Ok(fields);
            }
        }
    }

    fn string_literal(&mut self) -> ConnectResult<String> {
        self.skip_space();
        let quote = self
            .rest()
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')
            .ok_or_else(|| self.error("expected a string"))?;
        let body = &self.rest()[1..];
        let end = body
            .find(quote)
            .ok_or_else(|| self.error("unterminated string"))?;
        let value = body[..end].to_string();
        self.pos += end + 2;
        Ok(value)
    }

    fn number(&mut self) -> ConnectResult<i32> {
        self.skip_space();
        let length = self
            .rest()
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(self.rest().len());
        let value = self.rest()[..length]
            .parse()
            .map_err(|_| self.error("expected a number"))?;
        self.pos += length;
        Ok(value)
    }

    fn data_type(&mut self) -> ConnectResult<DataType> {
        let name = self.identifier()?.to_ascii_lowercase();
        Ok(match name.as_str() {
            "boolean" | "bool" => DataType::Boolean,
            "tinyint" | "byte" => DataType::Int8,
            "smallint" | "short" => DataType::Int16,
            "int" | "integer" => DataType::Int32,
            "bigint" | "long" => DataType::Int64,
            "float" | "real" => DataType::Float32,
            "double" => DataType::Float64,
            "string" => DataType::Utf8,
            "char" | "varchar" | "character" => {
                if self.eat('(') {
                    self.number()?;
                    self.expect(')')?;
                }
                DataType::Utf8
            }
            "binary" => DataType::Binary,
            "date" => DataType::Date32,
            "timestamp" | "timestamp_ltz" => {
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            }
            "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
            "void" | "null" => DataType::Null,
            "decimal" | "dec" | "numeric" => {
                if self.eat('(') {
                    let precision = self.number()?;
                    let scale = if self.eat(',') { self.number()? } else { 0 };
                    self.expect(')')?;
                    decimal(precision, scale)?
                } else {
                    DataType::Decimal128(10, 0)
                }
            }
            "array" => {
                self.expect('<')?;
                let element = self.data_type()?;
                self.expect('>')?;
                DataType::new_list(element, true)
            }
            "map" => {
                self.expect('<')?;
                let key = self.data_type()?;
                self.expect(',')?;
                let value = self.data_type()?;
                self.expect('>')?;
                map_type(key, value, true)
            }
            "struct" => {
                self.expect('<')?;
                let fields = if self.eat('>') {
                    Vec::new()
                } else {
                    let fields = self.field_list()?;
                    self.expect('>')?;
                    fields
                };
                DataType::Struct(Fields::from(fields))
            }
            other => return Err(self.error(&format!("unknown data type '{other}'"))),
        })
    }
}

/// The Arrow type results are sent in for a DataFusion result type.
fn wire_type(data_type: &DataType, time_zone: &str) -> DataType {
    match data_type {
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::BinaryView | DataType::LargeBinary | DataType::FixedSizeBinary(_) => {
            DataType::Binary
        }
        DataType::UInt8 => DataType::Int16,
        DataType::UInt16 => DataType::Int32,
        DataType::UInt32 | DataType::UInt64 => DataType::Int64,
        DataType::Float16 => DataType::Float32,
        DataType::Date64 => DataType::Date32,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => DataType::Decimal128(*p, *s),
        DataType::Timestamp(_, Some(_)) => {
            DataType::Timestamp(TimeUnit::Microsecond, Some(time_zone.into()))
        }
        DataType::Timestamp(_, None) => DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Dictionary(_, value) => wire_type(value, time_zone),
        DataType::List(field) | DataType::LargeList(field) | DataType::ListView(field) => {
            DataType::new_list(wire_type(field.data_type(), time_zone), field.is_nullable())
        }
        DataType::Struct(fields) => DataType::Struct(
            fields
                .iter()
                .map(|f| {
                    f.as_ref()
                        .clone()
                        .with_data_type(wire_type(f.data_type(), time_zone))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The schema results are sent in (see [`wire_type`]).
pub fn to_spark_arrow(schema: &Schema, time_zone: &str) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| {
                f.as_ref()
                    .clone()
                    .with_data_type(wire_type(f.data_type(), time_zone))
            })
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ddl_strings_parse_to_arrow() {
        let schema =
            parse_schema("a INT, `b c` string NOT NULL, d decimal(12, 2), e array<bigint>, f map<string,double>, g struct<x: int, y: date>").unwrap();
        assert_eq!(schema.field(0).data_type(), &DataType::Int32);
        assert_eq!(schema.field(1).name(), "b c");
        assert!(!schema.field(1).is_nullable());
        assert_eq!(schema.field(2).data_type(), &DataType::Decimal128(12, 2));
        assert!(matches!(schema.field(4).data_type(), DataType::Map(_, _)));
        assert!(matches!(schema.field(5).data_type(), DataType::Struct(_)));
        assert!(parse_schema("a INT,").is_err());
        assert!(parse_schema("a widget").is_err());
    }

    #[test]
    fn json_schemas_parse_to_arrow() {
        let json = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"v","type":{"type":"array","elementType":"decimal(5,1)","containsNull":true},"nullable":true,"metadata":{}}]}"#;
        let schema = parse_schema(json).unwrap();
        assert_eq!(schema.field(0).data_type(), &DataType::Int64);
        assert!(!schema.field(0).is_nullable());
        assert_eq!(
            schema.field(1).data_type(),
            &DataType::new_list(DataType::Decimal128(5, 1), true)
        );
    }

    #[test]
    fn arrow_types_round_trip_through_spark_types() {
        for data_type in [
            DataType::Int32,
            DataType::Decimal128(38, 10),
            DataType::Date32,
            DataType::Timestamp(TimeUnit::Microsecond, None),
            DataType::new_list(DataType::Utf8, true),
        ] {
            assert_eq!(
                from_spark(&to_spark(&data_type).unwrap()).unwrap(),
                data_type
            );
        }
    }
}
