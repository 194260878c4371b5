//! `spark.read` and `spark.table`: tables of the session and Parquet, CSV and JSON files.
//!
//! Spark's reader options are honoured where they change results: CSV `header`,
//! `inferSchema` (off by default: every column a string, as in Spark), `sep`/`delimiter`,
//! and a user schema for every format. Columns of files read this way carry no
//! qualifier, as in Spark.

use std::collections::HashMap;

use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::file_format::options::{
    CsvReadOptions, JsonReadOptions, ParquetReadOptions,
};
use datafusion::logical_expr::LogicalPlan;

use crate::error::{ConnectError, ConnectResult};
use crate::proto;
use crate::proto::read::ReadType;

use super::Translator;
use super::relation::unqualify;

impl Translator {
    pub(super) async fn read(&mut self, read: &proto::Read) -> ConnectResult<LogicalPlan> {
        if read.is_streaming {
            return Err(ConnectError::unsupported("streaming reads"));
        }
        match &read.read_type {
            Some(ReadType::NamedTable(table)) => {
                let context = self.session().engine.context();
                let name = table.unparsed_identifier.as_str();
                match context.table(name).await {
                    Ok(frame) => Ok(frame.into_unoptimized_plan()),
                    Err(_) => Err(ConnectError::table_not_found(name)),
                }
            }
            Some(ReadType::DataSource(source)) => self.data_source(source).await,
            None => Err(ConnectError::invalid("a read without a source")),
        }
    }

    async fn data_source(
        &mut self,
        source: &proto::read::DataSource,
    ) -> ConnectResult<LogicalPlan> {
        let options: HashMap<String, String> = source
            .options
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        let schema = match source.schema.as_deref() {
            Some(text) if !text.trim().is_empty() => Some(crate::types::parse_schema(text)?),
            _ => None,
        };
        let format = source
            .format
            .as_deref()
            .unwrap_or("parquet")
            .to_ascii_lowercase();
        if source.paths.is_empty() {
            return Err(ConnectError::invalid(format!(
                "reading {format} needs a path ('path' option or load(path))"
            )));
        }
        for path in &source.paths {
            if !std::path::Path::new(path).exists() {
                return Err(ConnectError::analysis(
                    "PATH_NOT_FOUND",
                    format!("[PATH_NOT_FOUND] Path does not exist: file:{path}."),
                ));
            }
        }
        let context = self.session().engine.context();
        let paths = source.paths.clone();
        let frame = match format.as_str() {
            "parquet" => {
                // Spark reads every file column as nullable, whatever the file declares.
                let declared = match schema {
                    Some(schema) => schema,
                    None => {
                        let inferred = context
                            .read_parquet(paths.clone(), ParquetReadOptions::default())
                            .await?;
                        inferred.schema().as_arrow().clone()
                    }
                };
                let nullable = all_nullable(&declared);
                let read = ParquetReadOptions {
                    schema: Some(&nullable),
                    ..ParquetReadOptions::default()
                };
                context.read_parquet(paths, read).await?
            }
            "json" => {
                let read = JsonReadOptions {
                    schema: schema.as_ref(),
                    file_extension: "",
                    ..JsonReadOptions::default()
                };
                let frame = context.read_json(paths, read).await?;
                if schema.is_none() {
                    // Spark orders inferred JSON fields by name.
                    let mut names: Vec<String> = frame
                        .schema()
                        .fields()
                        .iter()
                        .map(|f| f.name().clone())
                        .collect();
                    names.sort();
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    frame.select_columns(&refs)?
                } else {
                    frame
                }
            }
            "csv" => return self.csv(paths, &options, schema).await,
            other => {
                return Err(ConnectError::unsupported(format!(
                    "reading the format '{other}'"
                )));
            }
        };
        unqualify(frame.into_unoptimized_plan())
    }

    async fn csv(
        &mut self,
        paths: Vec<String>,
        options: &HashMap<String, String>,
        schema: Option<Schema>,
    ) -> ConnectResult<LogicalPlan> {
        let flag = |key: &str| {
            options
                .get(key)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        };
        let header = flag("header");
        let infer = flag("inferschema");
        let delimiter = options
            .get("sep")
            .or_else(|| options.get("delimiter"))
            .map_or(Ok(b','), |d| match d.as_bytes() {
                [byte] => Ok(*byte),
                _ => Err(ConnectError::unsupported(format!(
                    "the CSV separator '{d}'"
                ))),
            })?;
        let context = self.session().engine.context();
        let base = || {
            CsvReadOptions::new()
                .has_header(header)
                .delimiter(delimiter)
                .file_extension("")
        };
        let schema = match schema {
            Some(schema) => schema,
            None => {
                let inferred = context.read_csv(paths.clone(), base()).await?;
                let fields: Vec<Field> = inferred
                    .schema()
                    .fields()
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let name = if header {
                            f.name().clone()
                        } else {
                            format!("_c{i}")
                        };
                        let data_type = if infer {
                            f.data_type().clone()
                        } else {
                            DataType::Utf8
                        };
                        Field::new(name, data_type, true)
                    })
                    .collect();
                Schema::new(fields)
            }
        };
        let frame = context.read_csv(paths, base().schema(&schema)).await?;
        unqualify(frame.into_unoptimized_plan())
    }
}

/// `schema` with every field (nested ones kept as they are) nullable.
fn all_nullable(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}
