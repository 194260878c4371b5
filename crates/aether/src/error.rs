//! Errors that reach the user, and the exit code each one maps to.
//!
//! Exit codes follow the convention of command-line SQL tools: `2` when the user's input
//! is wrong (a bad statement, flag, `--table` spec or a missing input file), `1` when a
//! valid request failed while running. The CLI prints [`AetherError`]'s text and nothing
//! else: no Rust backtrace and no `Debug` formatting.

use std::path::PathBuf;

use datafusion::error::DataFusionError;

/// An error from any Aether entry point.
#[derive(Debug, thiserror::Error)]
pub enum AetherError {
    /// The request is malformed: bad flag values, specs or configuration.
    #[error("{0}")]
    Usage(String),
    /// An input path does not exist or cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Input {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A run completed but its outcome is wrong, e.g. results that differ from the
    /// expected answers.
    #[error("{0}")]
    Failed(String),
    /// DataFusion rejected or failed the statement.
    #[error("{}", render_datafusion_error(.0))]
    DataFusion(#[from] DataFusionError),
}

impl AetherError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) | Self::Input { .. } => 2,
            Self::Output { .. } | Self::Failed(_) => 1,
            Self::DataFusion(e) => {
                if is_statement_error(e) {
                    2
                } else {
                    1
                }
            }
        }
    }
}

/// True when DataFusion rejected the statement itself (syntax, unknown names, types)
/// rather than failing while running it.
fn is_statement_error(err: &DataFusionError) -> bool {
    match err.find_root() {
        DataFusionError::SQL(..)
        | DataFusionError::Plan(_)
        | DataFusionError::SchemaError(..)
        | DataFusionError::Configuration(_)
        | DataFusionError::NotImplemented(_) => true,
        _ => err.diagnostic().is_some(),
    }
}

/// DataFusion's message without the backtrace, followed by the location its diagnostic
/// points at, when it has one.
fn render_datafusion_error(err: &DataFusionError) -> String {
    let mut text = err.strip_backtrace();
    if let Some(diagnostic) = err.diagnostic()
        && let Some(span) = diagnostic.span
        && span.start.line > 0
    {
        text.push_str(&format!(
            "\n  at line {}, column {}",
            span.start.line, span.start.column
        ));
    }
    text
}

/// Shorthand for results of Aether entry points.
pub type Result<T, E = AetherError> = std::result::Result<T, E>;
