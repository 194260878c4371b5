//! Errors as PySpark understands them.
//!
//! The client turns a gRPC status into a Python exception by reading the
//! `google.rpc.ErrorInfo` in its details: `reason` and the `classes` metadata name JVM
//! exception classes (`org.apache.spark.sql.AnalysisException`, ...), `errorClass` and
//! `sqlState` follow Spark's error conditions. Without that detail the user would get a
//! generic `SparkConnectGrpcException`, so every failure here carries one.

use std::collections::HashMap;

use datafusion::error::DataFusionError;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The JVM class PySpark maps to `AnalysisException`.
const ANALYSIS: &str = "org.apache.spark.sql.AnalysisException";
/// The JVM class PySpark maps to `ParseException`.
const PARSE: &str = "org.apache.spark.sql.catalyst.parser.ParseException";
/// The JVM class PySpark maps to `IllegalArgumentException`.
const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";
/// The JVM class PySpark maps to `UnsupportedOperationException`.
const UNSUPPORTED: &str = "java.lang.UnsupportedOperationException";
/// The JVM class PySpark maps to `SparkNoSuchElementException`.
const NO_SUCH_ELEMENT: &str = "org.apache.spark.SparkNoSuchElementException";
/// The JVM class PySpark maps to `SparkException`.
const SPARK: &str = "org.apache.spark.SparkException";
/// The JVM class PySpark maps to `SparkRuntimeException`.
const RUNTIME: &str = "org.apache.spark.SparkRuntimeException";
/// The JVM class PySpark maps to `ArithmeticException`.
const ARITHMETIC: &str = "java.lang.ArithmeticException";

/// A request that failed, with what PySpark needs to raise the right exception.
#[derive(Debug, Clone)]
pub struct ConnectError {
    code: Code,
    class: &'static str,
    error_class: &'static str,
    sql_state: &'static str,
    message: String,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectError {}

/// Result of the server's request handling.
pub type ConnectResult<T> = std::result::Result<T, ConnectError>;

impl ConnectError {
    fn new(
        code: Code,
        class: &'static str,
        error_class: &'static str,
        sql_state: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code,
            class,
            error_class,
            sql_state,
            message: message.into(),
        }
    }

    /// A plan that refers to something that does not exist or does not fit
    /// (`AnalysisException`).
    pub fn analysis(error_class: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            Code::InvalidArgument,
            ANALYSIS,
            error_class,
            "42000",
            message,
        )
    }

    /// A table or view that does not exist.
    pub fn table_not_found(name: &str) -> Self {
        Self::new(
            Code::InvalidArgument,
            ANALYSIS,
            "TABLE_OR_VIEW_NOT_FOUND",
            "42P01",
            format!(
                "[TABLE_OR_VIEW_NOT_FOUND] The table or view `{name}` cannot be found. \
                 Verify the spelling and correctness of the schema and catalog."
            ),
        )
    }

    /// SQL that does not parse (`ParseException`).
    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(
            Code::InvalidArgument,
            PARSE,
            "PARSE_SYNTAX_ERROR",
            "42601",
            message,
        )
    }

    /// A request that is malformed (`IllegalArgumentException`).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(
            Code::InvalidArgument,
            ILLEGAL_ARGUMENT,
            "INVALID_PARAMETER_VALUE",
            "22023",
            message,
        )
    }

    /// A configuration value of the wrong type (`IllegalArgumentException`).
    pub fn invalid_conf(message: impl Into<String>) -> Self {
        Self::new(
            Code::InvalidArgument,
            ILLEGAL_ARGUMENT,
            "INVALID_CONF_VALUE.TYPE_MISMATCH",
            "22022",
            message,
        )
    }

    /// Something Spark has that Aether does not support yet.
    pub fn unsupported(what: impl std::fmt::Display) -> Self {
        Self::new(
            Code::Unimplemented,
            UNSUPPORTED,
            "UNSUPPORTED_FEATURE",
            "0A000",
            format!("[UNSUPPORTED_FEATURE] Aether does not support {what}"),
        )
    }

    /// A configuration key with no value (`SparkNoSuchElementException`).
    pub fn conf_not_found(key: &str) -> Self {
        Self::new(
            Code::NotFound,
            NO_SUCH_ELEMENT,
            "SQL_CONF_NOT_FOUND",
            "42K0I",
            format!(
                "[SQL_CONF_NOT_FOUND] The SQL config \"{key}\" cannot be found. Please verify \
                 that the config exists."
            ),
        )
    }

    /// A session id that is not of this server, or was released.
    pub fn session_changed(message: impl Into<String>) -> Self {
        Self::new(
            Code::FailedPrecondition,
            SPARK,
            "INVALID_HANDLE.SESSION_CHANGED",
            "HY000",
            message,
        )
    }

    /// An operation the client asked about that the server does not know.
    pub fn operation_not_found(operation_id: &str) -> Self {
        Self::new(
            Code::NotFound,
            SPARK,
            "INVALID_HANDLE.OPERATION_NOT_FOUND",
            "HY000",
            format!(
                "[INVALID_HANDLE.OPERATION_NOT_FOUND] The operation {operation_id} cannot be \
                 found: it finished and its results were sent"
            ),
        )
    }

    /// The query was cancelled by an interrupt.
    pub fn cancelled() -> Self {
        Self::new(
            Code::Cancelled,
            SPARK,
            "OPERATION_CANCELED",
            "HY008",
            "[OPERATION_CANCELED] Operation has been canceled.",
        )
    }

    /// A failure while running a valid plan.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(Code::Internal, SPARK, "INTERNAL_ERROR", "XX000", message)
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The gRPC status with its `ErrorInfo` detail.
    pub fn to_status(&self) -> Status {
        let mut metadata = HashMap::new();
        metadata.insert("classes".to_string(), format!("[\"{}\"]", self.class));
        metadata.insert("errorClass".to_string(), self.error_class.to_string());
        metadata.insert("sqlState".to_string(), self.sql_state.to_string());
        metadata.insert("messageParameters".to_string(), "{}".to_string());
        let details = ErrorDetails::with_error_info(self.class, "org.apache.spark", metadata);
        // gRPC headers are limited (16 KiB in all); a huge message is cut.
        let mut message = self.message.clone();
        if message.len() > 8192 {
            let mut end = 8192;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push_str("...");
        }
        Status::with_error_details(self.code, message, details)
    }
}

impl From<ConnectError> for Status {
    fn from(error: ConnectError) -> Self {
        error.to_status()
    }
}

impl From<DataFusionError> for ConnectError {
    fn from(error: DataFusionError) -> Self {
        from_datafusion(error)
    }
}

impl From<arrow::error::ArrowError> for ConnectError {
    fn from(error: arrow::error::ArrowError) -> Self {
        from_datafusion(DataFusionError::ArrowError(Box::new(error), None))
    }
}

/// The Spark exception a DataFusion error corresponds to.
fn from_datafusion(error: DataFusionError) -> ConnectError {
    use arrow::error::ArrowError;
    let root = error.find_root();
    match root {
        DataFusionError::External(inner) => match inner.downcast_ref::<ConnectError>() {
            Some(connect) => connect.clone(),
            None => ConnectError::execution(root.to_string()),
        },
        DataFusionError::SQL(parser, _) => {
            ConnectError::parse(format!("[PARSE_SYNTAX_ERROR] Syntax error: {parser}"))
        }
        DataFusionError::Plan(message) if is_missing_table(message) => ConnectError::new(
            Code::InvalidArgument,
            ANALYSIS,
            "TABLE_OR_VIEW_NOT_FOUND",
            "42P01",
            format!("[TABLE_OR_VIEW_NOT_FOUND] {message}"),
        ),
        DataFusionError::SchemaError(_, _) => ConnectError::new(
            Code::InvalidArgument,
            ANALYSIS,
            "UNRESOLVED_COLUMN.WITH_SUGGESTION",
            "42703",
            format!("[UNRESOLVED_COLUMN.WITH_SUGGESTION] {root}"),
        ),
        DataFusionError::Plan(message) => ConnectError::analysis(
            "DATATYPE_MISMATCH",
            format!("[DATATYPE_MISMATCH] {message}"),
        ),
        DataFusionError::NotImplemented(message) => ConnectError::unsupported(message),
        DataFusionError::Configuration(message) => ConnectError::invalid(message.clone()),
        DataFusionError::ArrowError(inner, _) if matches!(**inner, ArrowError::DivideByZero) => {
            ConnectError::new(
                Code::Internal,
                ARITHMETIC,
                "DIVIDE_BY_ZERO",
                "22012",
                "[DIVIDE_BY_ZERO] Division by zero.",
            )
        }
        // A value out of the target type's range (`int` arithmetic checked through a
        // cast, or an explicit narrowing cast): Spark's ANSI overflow error.
        DataFusionError::ArrowError(inner, _) if matches!(&**inner, ArrowError::CastError(m) if m.starts_with("Can't cast value")) => {
            ConnectError::new(
                Code::Internal,
                ARITHMETIC,
                "ARITHMETIC_OVERFLOW",
                "22003",
                format!("[ARITHMETIC_OVERFLOW] {inner}"),
            )
        }
        DataFusionError::ArrowError(inner, _) if matches!(**inner, ArrowError::CastError(_)) => {
            ConnectError::new(
                Code::Internal,
                RUNTIME,
                "CAST_INVALID_INPUT",
                "22018",
                format!("[CAST_INVALID_INPUT] {inner}"),
            )
        }
        _ => ConnectError::execution(root.to_string()),
    }
}

/// Whether DataFusion's message says a table or view does not exist.
fn is_missing_table(message: &str) -> bool {
    message.contains("table") && message.contains("not found")
}
