//! Commands: `spark.sql` (queries lazily, everything else at once), temporary views and
//! `df.write`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::catalog::view::ViewTable;
use datafusion::common::config::{CsvOptions, TableParquetOptions};
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, SetVariable, Statement};

use crate::arrow_ipc;
use crate::error::{ConnectError, ConnectResult};
use crate::execute::Responder;
use crate::plan::Translator;
use crate::proto::command::CommandType;
use crate::proto::execute_plan_response::{ResponseType, SqlCommandResult};
use crate::proto::relation::RelType;
use crate::proto::write_operation::{SaveMode, SaveType};
use crate::proto::{
    self, Command, CreateDataFrameViewCommand, LocalRelation, Relation, SqlCommand, WriteOperation,
};
use crate::session::Session;

/// Runs one command and sends its result.
pub async fn run(
    session: &Arc<Session>,
    command: Command,
    responder: &Responder,
) -> ConnectResult<()> {
    let kind = command
        .command_type
        .ok_or_else(|| ConnectError::invalid("a command without a type"))?;
    match kind {
        CommandType::SqlCommand(sql) => sql_command(session, sql, responder).await,
        CommandType::CreateDataframeView(view) => create_view(session, view).await,
        CommandType::WriteOperation(write) => write_operation(session, write).await,
        other => Err(ConnectError::unsupported(format!(
            "the command '{}'",
            command_name(&other)
        ))),
    }
}

/// `spark.sql(...)`: a query comes back as the relation the client runs later; any
/// other statement (DDL, `SET`, ...) runs now and its output comes back as rows.
async fn sql_command(
    session: &Arc<Session>,
    command: SqlCommand,
    responder: &Responder,
) -> ConnectResult<()> {
    let relation = match command.input {
        Some(input) => input,
        None => Relation {
            common: None,
            rel_type: Some(RelType::Sql(proto::Sql {
                query: command.sql,
                args: command.args,
                pos_args: command.pos_args,
                named_arguments: command.named_arguments,
                pos_arguments: command.pos_arguments,
            })),
        },
    };
    let Some(RelType::Sql(_)) = &relation.rel_type else {
        return Err(ConnectError::invalid(
            "a SQL command whose input is not SQL",
        ));
    };
    let mut translator = Translator::new(Arc::clone(session));
    let plan = translator.relation(&relation).await?;
    let result = if is_query(&plan) {
        relation
    } else {
        let (schema, batches) = run_statement(session, plan).await?;
        Relation {
            common: None,
            rel_type: Some(RelType::LocalRelation(LocalRelation {
                data: Some(arrow_ipc::encode(&schema, &batches)?),
                schema: None,
            })),
        }
    };
    responder
        .send(ResponseType::SqlCommandResult(SqlCommandResult {
            relation: Some(result),
        }))
        .await;
    Ok(())
}

/// Whether `plan` returns rows rather than changing state.
fn is_query(plan: &LogicalPlan) -> bool {
    !matches!(
        plan,
        LogicalPlan::Ddl(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Dml(_)
            | LogicalPlan::Copy(_)
    )
}

/// Runs a statement; `SET` of a Spark key is kept in the session like `spark.conf.set`.
async fn run_statement(
    session: &Arc<Session>,
    plan: LogicalPlan,
) -> ConnectResult<(arrow::datatypes::SchemaRef, Vec<arrow::array::RecordBatch>)> {
    if let LogicalPlan::Statement(Statement::SetVariable(SetVariable { variable, value })) = &plan {
        crate::config::set_from_sql(session, variable, value)?;
        let schema = Arc::new(arrow::datatypes::Schema::empty());
        return Ok((schema, Vec::new()));
    }
    // Views made by SQL live in this session's own catalog: temporary views, as Spark
    // lists them.
    let view_change = match &plan {
        LogicalPlan::Ddl(DdlStatement::CreateView(view)) => {
            Some((view.name.table().to_string(), true))
        }
        LogicalPlan::Ddl(DdlStatement::DropView(view)) => {
            Some((view.name.table().to_string(), false))
        }
        _ => None,
    };
    let frame = session.engine.context().execute_logical_plan(plan).await?;
    match view_change {
        Some((name, true)) => session.remember_temp_view(&name),
        Some((name, false)) => session.forget_temp_view(&name),
        None => {}
    }
    let schema = Arc::clone(frame.schema().inner());
    let batches = frame.collect().await?;
    Ok((schema, batches))
}

/// `df.createOrReplaceTempView(name)` and friends.
async fn create_view(
    session: &Arc<Session>,
    command: CreateDataFrameViewCommand,
) -> ConnectResult<()> {
    if command.is_global {
        return Err(ConnectError::unsupported("global temporary views"));
    }
    let input = command
        .input
        .ok_or_else(|| ConnectError::invalid("a view without a relation"))?;
    let plan = Translator::new(Arc::clone(session))
        .relation(&input)
        .await?;
    let context = session.engine.context();
    let name = command.name.as_str();
    if context.table_exist(name)? {
        if !command.replace || !session.is_temp_view(name) {
            return Err(ConnectError::analysis(
                "TEMP_TABLE_OR_VIEW_ALREADY_EXISTS",
                format!(
                    "[TEMP_TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create the temporary view `{name}` \
                     because it already exists."
                ),
            ));
        }
        context.deregister_table(name)?;
    }
    context.register_table(name, Arc::new(ViewTable::new(plan, None)))?;
    session.remember_temp_view(name);
    Ok(())
}

/// `df.write`: files are written to a hidden directory next to the target and moved
/// into place once complete, so a failed write leaves no partial output visible.
async fn write_operation(session: &Arc<Session>, write: WriteOperation) -> ConnectResult<()> {
    let path = match &write.save_type {
        Some(SaveType::Path(path)) => PathBuf::from(path),
        Some(SaveType::Table(_)) => {
            return Err(ConnectError::unsupported("saveAsTable/insertInto"));
        }
        None => return Err(ConnectError::invalid("a write without a path")),
    };
    if !write.sort_column_names.is_empty() || write.bucket_by.is_some() {
        return Err(ConnectError::unsupported("bucketBy/sortBy"));
    }
    let format = write
        .source
        .as_deref()
        .unwrap_or("parquet")
        .to_ascii_lowercase();
    let mode = SaveMode::try_from(write.mode).unwrap_or(SaveMode::ErrorIfExists);
    let exists = path.exists();
    match mode {
        SaveMode::Ignore if exists => return Ok(()),
        SaveMode::ErrorIfExists | SaveMode::Unspecified if exists => {
            return Err(ConnectError::analysis(
                "PATH_ALREADY_EXISTS",
                format!(
                    "[PATH_ALREADY_EXISTS] Path file:{} already exists. Set mode as \
                     \"overwrite\" to overwrite the existing path.",
                    path.display()
                ),
            ));
        }
        _ => {}
    }
    let input = write
        .input
        .ok_or_else(|| ConnectError::invalid("a write without a relation"))?;
    let plan = Translator::new(Arc::clone(session))
        .relation(&input)
        .await?;
    let staging = sibling(&path, "staging")?;
    let result = write_files(
        session,
        plan,
        &format,
        &write.options,
        &write.partitioning_columns,
        &staging,
    )
    .await;
    if let Err(error) = result {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    let moved = match mode {
        SaveMode::Append if exists => move_files_into(&staging, &path),
        SaveMode::Overwrite if exists => replace_dir(&staging, &path),
        _ => std::fs::rename(&staging, &path),
    };
    moved.map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        ConnectError::execution(format!(
            "moving the written files to {}: {e}",
            path.display()
        ))
    })
}

async fn write_files(
    session: &Arc<Session>,
    plan: LogicalPlan,
    format: &str,
    options: &std::collections::HashMap<String, String>,
    partitioning: &[String],
    staging: &Path,
) -> ConnectResult<()> {
    let frame = session.engine.context().execute_logical_plan(plan).await?;
    std::fs::create_dir_all(staging)
        .map_err(|e| ConnectError::execution(format!("creating {}: {e}", staging.display())))?;
    let target = format!("{}/", staging.display());
    let write_options = DataFrameWriteOptions::new().with_partition_by(partitioning.to_vec());
    let option = |key: &str| {
        options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    };
    match format {
        "parquet" => {
            frame
                .write_parquet(&target, write_options, Some(TableParquetOptions::default()))
                .await?;
        }
        "csv" => {
            let mut csv = CsvOptions {
                has_header: Some(option("header").is_some_and(|v| v.eq_ignore_ascii_case("true"))),
                ..CsvOptions::default()
            };
            if let Some(sep) = option("sep").or_else(|| option("delimiter")) {
                let [byte] = sep.as_bytes() else {
                    return Err(ConnectError::unsupported(format!(
                        "the CSV separator '{sep}'"
                    )));
                };
                csv.delimiter = *byte;
            }
            frame.write_csv(&target, write_options, Some(csv)).await?;
        }
        "json" => {
            frame.write_json(&target, write_options, None).await?;
        }
        other => {
            return Err(ConnectError::unsupported(format!(
                "writing the format '{other}'"
            )));
        }
    }
    Ok(())
}

/// A hidden, unique path next to `path`.
fn sibling(path: &Path, purpose: &str) -> ConnectResult<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| ConnectError::invalid(format!("cannot write to {}", path.display())))?;
    let hidden = format!(
        ".{}.aether-{purpose}-{}",
        name.to_string_lossy(),
        uuid::Uuid::new_v4()
    );
    Ok(path.with_file_name(hidden))
}

/// Moves every file of `from` into `into` under new unique names, then removes `from`.
fn move_files_into(from: &Path, into: &Path) -> std::io::Result<()> {
    for entry in walk(from)? {
        let relative = entry.strip_prefix(from).map_err(std::io::Error::other)?;
        let mut target = into.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if target.exists() {
            let unique =
                format!("{}-{}", uuid::Uuid::new_v4(), relative.display()).replace('/', "_");
            target = target.with_file_name(unique);
        }
        std::fs::rename(&entry, target)?;
    }
    std::fs::remove_dir_all(from)
}

fn walk(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(walk(&path)?);
        } else {
            files.push(path);
        }
    }
    Ok(files)
}

/// Swaps `staging` in for `target`, removing the old contents afterwards.
fn replace_dir(staging: &Path, target: &Path) -> std::io::Result<()> {
    let old = target.with_file_name(format!(
        ".{}.aether-old-{}",
        target
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default(),
        uuid::Uuid::new_v4()
    ));
    std::fs::rename(target, &old)?;
    if let Err(e) = std::fs::rename(staging, target) {
        // Put the old output back.
        let _ = std::fs::rename(&old, target);
        return Err(e);
    }
    if old.is_dir() {
        std::fs::remove_dir_all(&old)
    } else {
        std::fs::remove_file(&old)
    }
}

fn command_name(command: &CommandType) -> &'static str {
    match command {
        CommandType::RegisterFunction(_) => "register_function (Python UDFs)",
        CommandType::WriteOperationV2(_) => "writeTo (DataFrameWriterV2)",
        CommandType::WriteStreamOperationStart(_) => "writeStream",
        CommandType::StreamingQueryCommand(_) => "streaming query",
        CommandType::GetResourcesCommand(_) => "get_resources",
        CommandType::StreamingQueryManagerCommand(_) => "streams",
        CommandType::RegisterTableFunction(_) => "register_table_function (Python UDTFs)",
        CommandType::StreamingQueryListenerBusCommand(_) => "streaming listener",
        CommandType::RegisterDataSource(_) => "register_data_source (Python data sources)",
        CommandType::CreateResourceProfileCommand(_) => "resource profiles",
        CommandType::CheckpointCommand(_) => "checkpoint/localCheckpoint",
        CommandType::RemoveCachedRemoteRelationCommand(_) => "remove_cached_remote_relation",
        CommandType::MergeIntoTableCommand(_) => "mergeInto",
        CommandType::MlCommand(_) => "pyspark.ml",
        CommandType::ExecuteExternalCommand(_) => "execute_external_command",
        CommandType::PipelineCommand(_) => "pipelines",
        CommandType::Extension(_) => "extension",
        _ => "command",
    }
}
