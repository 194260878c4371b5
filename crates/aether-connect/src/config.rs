//! `spark.conf`: the `Config` RPC.
//!
//! Keys the engine owns (`aether.*`, their `spark.rapids.*` aliases, `datafusion.*`) go
//! to the engine session; other Spark keys are kept per session, with Spark 4.2's
//! defaults for the keys PySpark reads (the client parses several of them and fails
//! without a value). Reading a key that has neither a value nor a default fails with
//! `SQL_CONF_NOT_FOUND`, as in Spark.

use crate::error::{ConnectError, ConnectResult};
use crate::proto::config_request::operation::OpType;
use crate::proto::{ConfigRequest, ConfigResponse, KeyValue};
use crate::session::Session;

/// Spark's version as reported to clients.
pub const SPARK_VERSION: &str = "4.2.0";

/// The session time zone key; mirrored into DataFusion's.
const TIME_ZONE: &str = "spark.sql.session.timeZone";

/// Spark defaults of the keys clients read.
fn spark_default(key: &str) -> Option<String> {
    let value = match key {
        TIME_ZONE => return Some(default_time_zone()),
        "spark.sql.timestampType" => "TIMESTAMP_LTZ",
        "spark.sql.execution.pandas.structHandlingMode" => "legacy",
        "spark.sql.execution.arrow.pyspark.selfDestruct.enabled" => "false",
        "spark.sql.execution.arrow.pyspark.enabled" => "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled" => "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch" => "10000",
        "spark.sql.execution.pyspark.binaryAsBytes" => "true",
        // Large, so that createDataFrame data stays inline instead of being uploaded as
        // artifacts.
        "spark.sql.session.localRelationCacheThreshold" => "2147483647",
        "spark.sql.session.localRelationSizeLimit" => "3221225472",
        "spark.sql.session.localRelationChunkSizeRows" => "10000",
        "spark.sql.session.localRelationChunkSizeBytes" => "16777216",
        "spark.sql.session.localRelationBatchOfChunksSizeBytes" => "1073741824",
        "spark.sql.execution.pandas.convertToArrowArraySafely" => "true",
        "spark.sql.execution.pandas.inferPandasDictAsMap" => "false",
        "spark.sql.pyspark.inferNestedDictAsStruct.enabled" => "false",
        "spark.sql.pyspark.legacy.inferArrayTypeFromFirstElement.enabled" => "false",
        "spark.sql.pyspark.legacy.inferMapTypeFromFirstPair.enabled" => "false",
        "spark.sql.execution.arrow.useLargeVarTypes" => "false",
        "spark.sql.repl.eagerEval.enabled" => "false",
        "spark.sql.repl.eagerEval.maxNumRows" => "20",
        "spark.sql.repl.eagerEval.truncate" => "20",
        // Plan compression off: plans arrive as plain messages.
        "spark.connect.session.planCompression.threshold" => "-1",
        "spark.connect.session.planCompression.defaultAlgorithm" => "NONE",
        "spark.sql.ansi.enabled" => "true",
        "spark.sql.caseSensitive" => "false",
        "spark.sql.shuffle.partitions" => "200",
        "spark.sql.pyspark.jvmStacktrace.enabled" => "false",
        "spark.sql.connect.serverStacktrace.enabled" => "false",
        "spark.sql.sources.default" => "parquet",
        "spark.app.name" => "Aether",
        "spark.master" => "local[*]",
        _ => return None,
    };
    Some(value.to_string())
}

/// The server's time zone: `TZ` when it names one, UTC otherwise.
fn default_time_zone() -> String {
    std::env::var("TZ")
        .ok()
        .filter(|tz| !tz.is_empty() && tz.parse::<arrow::array::timezone::Tz>().is_ok())
        .unwrap_or_else(|| "UTC".to_string())
}

/// Whether the engine owns `key`.
fn engine_key(key: &str) -> bool {
    key.starts_with("aether.") || key.starts_with("spark.rapids.") || key.starts_with("datafusion.")
}

/// The current value of `key` in `session`, if it has one.
pub fn get(session: &Session, key: &str) -> Option<String> {
    if engine_key(key) {
        return session.engine.get_config(key);
    }
    session.spark_conf(key).or_else(|| spark_default(key))
}

/// The session time zone.
pub fn time_zone(session: &Session) -> String {
    get(session, TIME_ZONE).unwrap_or_else(default_time_zone)
}

fn set(session: &Session, key: &str, value: &str) -> ConnectResult<()> {
    if engine_key(key) {
        return Ok(session.engine.set_config(key, value)?);
    }
    check_value_type(key, value)?;
    if key == TIME_ZONE {
        if value.parse::<arrow::array::timezone::Tz>().is_err() {
            return Err(ConnectError::invalid(format!(
                "[INVALID_CONF_VALUE.TIME_ZONE] The value '{value}' in the config \
                 \"{TIME_ZONE}\" is invalid. Cannot resolve the given timezone."
            )));
        }
        session
            .engine
            .set_config("datafusion.execution.time_zone", value)?;
    }
    session.set_spark_conf(key, value);
    Ok(())
}

/// Spark rejects a value of the wrong type for a key it knows; the type of each key
/// with a default here is the type of that default (`true`/`false`, an int, a long).
fn check_value_type(key: &str, value: &str) -> ConnectResult<()> {
    let Some(default) = spark_default(key) else {
        return Ok(());
    };
    let expected = if default == "true" || default == "false" {
        "boolean"
    } else if default.parse::<i32>().is_ok() {
        "int"
    } else if default.parse::<i64>().is_ok() {
        "long"
    } else {
        return Ok(());
    };
    let valid = match expected {
        "boolean" => {
            value.trim().eq_ignore_ascii_case("true") || value.trim().eq_ignore_ascii_case("false")
        }
        "int" => value.trim().parse::<i32>().is_ok(),
        _ => value.trim().parse::<i64>().is_ok(),
    };
    if valid {
        return Ok(());
    }
    Err(ConnectError::invalid_conf(format!(
        "[INVALID_CONF_VALUE.TYPE_MISMATCH] The value '{value}' in the config \"{key}\" is \
         invalid. It should be a/an '{expected}' value."
    )))
}

fn pair(key: &str, value: Option<String>) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value,
    }
}

/// Answers one `Config` request.
pub fn handle(session: &Session, request: ConfigRequest) -> ConnectResult<ConfigResponse> {
    let op = request
        .operation
        .and_then(|operation| operation.op_type)
        .ok_or_else(|| ConnectError::invalid("a Config request without an operation"))?;
    let mut pairs = Vec::new();
    match op {
        OpType::Set(set_op) => {
            for KeyValue { key, value } in set_op.pairs {
                let value = value.unwrap_or_default();
                set(session, &key, &value)?;
            }
        }
        OpType::Get(get_op) => {
            for key in get_op.keys {
                let value = get(session, &key).ok_or_else(|| ConnectError::conf_not_found(&key))?;
                pairs.push(pair(&key, Some(value)));
            }
        }
        OpType::GetWithDefault(op) => {
            for KeyValue {
                key,
                value: default,
            } in op.pairs
            {
                let set_value = if engine_key(&key) {
                    session.engine.get_config(&key)
                } else {
                    session.spark_conf(&key)
                };
                pairs.push(pair(&key, set_value.or(default)));
            }
        }
        OpType::GetOption(op) => {
            for key in op.keys {
                let value = get(session, &key);
                pairs.push(pair(&key, value));
            }
        }
        OpType::GetAll(op) => {
            let prefix = op.prefix.unwrap_or_default();
            let mut all = session.engine.config_entries();
            all.extend(session.spark_conf_entries());
            all.sort();
            pairs.extend(
                all.into_iter()
                    .filter(|(key, _)| key.starts_with(&prefix))
                    .map(|(key, value)| pair(&key, Some(value))),
            );
        }
        OpType::Unset(op) => {
            for key in op.keys {
                if engine_key(&key) {
                    session.engine.reset_config(&key)?;
                } else {
                    if key == TIME_ZONE {
                        session
                            .engine
                            .set_config("datafusion.execution.time_zone", &default_time_zone())?;
                    }
                    session.unset_spark_conf(&key);
                }
            }
        }
        OpType::IsModifiable(op) => {
            for key in op.keys {
                pairs.push(pair(&key, Some("true".to_string())));
            }
        }
    }
    Ok(ConfigResponse {
        session_id: session.session_id.clone(),
        server_side_session_id: session.server_side_id.clone(),
        pairs,
        warnings: Vec::new(),
    })
}

/// `SET key = value` in SQL: engine keys through the engine, Spark keys kept in the
/// session.
pub fn set_from_sql(session: &Session, key: &str, value: &str) -> ConnectResult<()> {
    set(session, key, value.trim_matches('\''))
}
