//! `--table name=path`: registering Parquet, CSV and JSON files (or directories of them).
//!
//! The format comes from the file extension; a directory takes the format of the data
//! files in it, which must all share one.

use std::path::{Path, PathBuf};

use datafusion::prelude::{CsvReadOptions, JsonReadOptions, ParquetReadOptions};

use crate::context::AetherContext;
use crate::error::{AetherError, Result};

/// A file format Aether reads tables from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    Csv,
    Json,
}

impl FileFormat {
    /// The format of a file with extension `extension` (without the dot).
    pub fn from_extension(extension: &str) -> Option<Self> {
        match extension.to_ascii_lowercase().as_str() {
            "parquet" | "parq" => Some(Self::Parquet),
            "csv" => Some(Self::Csv),
            "json" | "jsonl" | "ndjson" => Some(Self::Json),
            _ => None,
        }
    }
}

/// A parsed `name=path` table spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSpec {
    pub name: String,
    pub path: PathBuf,
}

impl std::str::FromStr for TableSpec {
    type Err = String;

    fn from_str(spec: &str) -> std::result::Result<Self, Self::Err> {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(format!(
                "invalid table spec '{spec}': expected NAME=PATH, e.g. trips=data/trips.parquet"
            ));
        };
        let name = name.trim();
        let valid_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(format!(
                "invalid table name '{name}' in '{spec}': use letters, digits and '_', starting with a letter"
            ));
        }
        if path.trim().is_empty() {
            return Err(format!("invalid table spec '{spec}': the path is empty"));
        }
        Ok(Self {
            name: name.to_string(),
            path: PathBuf::from(path.trim()),
        })
    }
}

/// The format and file extension of the data at `path`.
fn detect_format(path: &Path) -> Result<(FileFormat, String)> {
    let metadata = std::fs::metadata(path).map_err(|source| AetherError::Input {
        path: path.to_path_buf(),
        source,
    })?;
    let extension_of = |p: &Path| {
        p.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
    };
    if metadata.is_file() {
        let extension = extension_of(path).unwrap_or_default();
        let format = FileFormat::from_extension(&extension).ok_or_else(|| {
            AetherError::Usage(format!(
                "cannot tell the format of {}: expected a .parquet, .csv, .json or .jsonl file",
                path.display()
            ))
        })?;
        return Ok((format, extension));
    }
    let entries = std::fs::read_dir(path).map_err(|source| AetherError::Input {
        path: path.to_path_buf(),
        source,
    })?;
    let mut found: Option<(FileFormat, String)> = None;
    for entry in entries.flatten() {
        let file = entry.path();
        let Some(extension) = extension_of(&file) else {
            continue;
        };
        let Some(format) = FileFormat::from_extension(&extension) else {
            continue;
        };
        match &found {
            None => found = Some((format, extension)),
            Some((_, seen)) if *seen == extension => {}
            Some((_, seen)) => {
                return Err(AetherError::Usage(format!(
                    "directory {} mixes .{seen} and .{extension} files; a table reads one format",
                    path.display()
                )));
            }
        }
    }
    found.ok_or_else(|| {
        AetherError::Usage(format!(
            "directory {} holds no .parquet, .csv or .json files",
            path.display()
        ))
    })
}

/// Registers the table `spec` in `context`. CSV files are read with a header row.
pub async fn register_table(context: &AetherContext, spec: &TableSpec) -> Result<FileFormat> {
    let (format, extension) = detect_format(&spec.path)?;
    let path = spec.path.to_str().ok_or_else(|| {
        AetherError::Usage(format!("path {} is not valid UTF-8", spec.path.display()))
    })?;
    let extension = format!(".{extension}");
    let session = context.session();
    session.deregister_table(&spec.name)?;
    match format {
        FileFormat::Parquet => {
            let options = ParquetReadOptions::default().file_extension(&extension);
            session.register_parquet(&spec.name, path, options).await?
        }
        FileFormat::Csv => {
            let options = CsvReadOptions::new()
                .has_header(true)
                .file_extension(&extension);
            session.register_csv(&spec.name, path, options).await?
        }
        FileFormat::Json => {
            let options = JsonReadOptions::default().file_extension(&extension);
            session.register_json(&spec.name, path, options).await?
        }
    }
    Ok(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        let spec: TableSpec = "trips=data/t.parquet".parse().unwrap();
        assert_eq!(spec.name, "trips");
        assert_eq!(spec.path, PathBuf::from("data/t.parquet"));
        assert!(
            "trips"
                .parse::<TableSpec>()
                .unwrap_err()
                .contains("expected NAME=PATH")
        );
        assert!(
            "1x=a"
                .parse::<TableSpec>()
                .unwrap_err()
                .contains("invalid table name")
        );
        assert!(
            "x=".parse::<TableSpec>()
                .unwrap_err()
                .contains("path is empty")
        );
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(
            FileFormat::from_extension("PARQUET"),
            Some(FileFormat::Parquet)
        );
        assert_eq!(FileFormat::from_extension("jsonl"), Some(FileFormat::Json));
        assert_eq!(FileFormat::from_extension("txt"), None);
    }

    #[test]
    fn a_missing_path_is_an_input_error() {
        let err = detect_format(Path::new("/no/such/file.parquet")).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string()
                .contains("cannot read /no/such/file.parquet"),
            "{err}"
        );
    }
}
