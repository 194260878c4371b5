//! Printing query results: an aligned table for people, CSV and JSON lines for scripts.

use std::io::Write;

use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::LineDelimitedWriter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches_with_schema;

use crate::error::{AetherError, Result};

/// How `aether sql` prints results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// An aligned table with a header, as `psql` or Spark's `show()` print.
    #[default]
    Table,
    /// CSV with a header row.
    Csv,
    /// One JSON object per row (JSON lines).
    Json,
}

impl std::str::FromStr for OutputFormat {
    type Err = String;

    fn from_str(name: &str) -> std::result::Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "table" => Ok(Self::Table),
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            _ => Err(format!(
                "unknown format '{name}': expected table, csv or json"
            )),
        }
    }
}

fn arrow_error(e: datafusion::arrow::error::ArrowError) -> AetherError {
    AetherError::DataFusion(e.into())
}

/// Writes `batches` (with `schema`) to `out` in `format`.
pub fn write_results(
    out: &mut dyn Write,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    format: OutputFormat,
) -> Result<()> {
    let io = |source| AetherError::Output {
        path: "standard output".into(),
        source,
    };
    match format {
        OutputFormat::Table => {
            let table = pretty_format_batches_with_schema(std::sync::Arc::clone(schema), batches)
                .map_err(arrow_error)?;
            writeln!(out, "{table}").map_err(io)?;
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            writeln!(out, "{rows} row{}", if rows == 1 { "" } else { "s" }).map_err(io)?;
        }
        OutputFormat::Csv => {
            let mut writer = CsvWriterBuilder::new().with_header(true).build(&mut *out);
            if batches.is_empty() {
                writer
                    .write(&RecordBatch::new_empty(std::sync::Arc::clone(schema)))
                    .map_err(arrow_error)?;
            }
            for batch in batches {
                writer.write(batch).map_err(arrow_error)?;
            }
        }
        OutputFormat::Json => {
            let mut writer = LineDelimitedWriter::new(&mut *out);
            for batch in batches {
                writer.write(batch).map_err(arrow_error)?;
            }
            writer.finish().map_err(arrow_error)?;
        }
    }
    out.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn sample() -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("a,b"), None])),
            ],
        )
        .unwrap();
        (schema, vec![batch])
    }

    fn render(format: OutputFormat, batches: &[RecordBatch], schema: &SchemaRef) -> String {
        let mut out = Vec::new();
        write_results(&mut out, schema, batches, format).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_format_renders() {
        let (schema, batches) = sample();
        let table = render(OutputFormat::Table, &batches, &schema);
        assert!(table.contains("| id | name |"), "{table}");
        assert!(table.ends_with("2 rows\n"), "{table}");
        assert_eq!(
            render(OutputFormat::Csv, &batches, &schema),
            "id,name\n1,\"a,b\"\n2,\n"
        );
        assert_eq!(
            render(OutputFormat::Json, &batches, &schema),
            "{\"id\":1,\"name\":\"a,b\"}\n{\"id\":2}\n"
        );
    }

    #[test]
    fn empty_results_keep_their_header() {
        let (schema, _) = sample();
        assert_eq!(render(OutputFormat::Csv, &[], &schema), "id,name\n");
        assert!(render(OutputFormat::Table, &[], &schema).contains("| id | name |"));
    }
}
