//! The `AnalyzePlan` RPC: schema, explain (with the GPU placement report), tree string,
//! Spark version, DDL parsing, and the small questions PySpark asks about a plan.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use datafusion::physical_plan::displayable;

use crate::config::SPARK_VERSION;
use crate::error::{ConnectError, ConnectResult};
use crate::plan::Translator;
use crate::proto::analyze_plan_request::Analyze;
use crate::proto::analyze_plan_request::explain::ExplainMode;
use crate::proto::analyze_plan_response::{self as response, Result as Answer};
use crate::proto::plan::OpType;
use crate::proto::relation::RelType;
use crate::proto::{AnalyzePlanRequest, AnalyzePlanResponse, Plan, Relation, StorageLevel};
use crate::session::Session;
use crate::types;

/// Answers one `AnalyzePlan` request.
pub async fn handle(
    session: Arc<Session>,
    request: AnalyzePlanRequest,
) -> ConnectResult<AnalyzePlanResponse> {
    let analyze = request
        .analyze
        .ok_or_else(|| ConnectError::invalid("an AnalyzePlan request without a question"))?;
    let answer = match analyze {
        Analyze::Schema(schema) => {
            let plan = logical_plan(&session, schema.plan.as_ref()).await?;
            Answer::Schema(response::Schema {
                schema: Some(types::schema_to_spark(plan.schema().as_arrow())?),
            })
        }
        Analyze::Explain(explain) => {
            let mode = ExplainMode::try_from(explain.explain_mode).unwrap_or(ExplainMode::Simple);
            let text = explain_text(&session, explain.plan.as_ref(), mode).await?;
            Answer::Explain(response::Explain {
                explain_string: text,
            })
        }
        Analyze::TreeString(tree) => {
            let plan = logical_plan(&session, tree.plan.as_ref()).await?;
            let level = tree
                .level
                .and_then(|l| usize::try_from(l).ok())
                .filter(|l| *l > 0);
            Answer::TreeString(response::TreeString {
                tree_string: tree_string(plan.schema().as_arrow().fields(), level),
            })
        }
        Analyze::IsLocal(local) => Answer::IsLocal(response::IsLocal {
            is_local: matches!(
                root(local.plan.as_ref()).and_then(|r| r.rel_type.as_ref()),
                Some(RelType::LocalRelation(_))
            ),
        }),
        Analyze::IsStreaming(_) => Answer::IsStreaming(response::IsStreaming {
            is_streaming: false,
        }),
        Analyze::InputFiles(files) => Answer::InputFiles(response::InputFiles {
            files: input_files(root(files.plan.as_ref())),
        }),
        Analyze::SparkVersion(_) => Answer::SparkVersion(response::SparkVersion {
            version: SPARK_VERSION.to_string(),
        }),
        Analyze::DdlParse(ddl) => {
            let text = ddl.ddl_string.trim();
            let parsed = match types::parse_schema(text) {
                Ok(schema) => types::schema_to_spark(&schema)?,
                Err(_) => types::to_spark(&types::parse_type(text)?)?,
            };
            Answer::DdlParse(response::DdlParse {
                parsed: Some(parsed),
            })
        }
        Analyze::JsonToDdl(json) => {
            let schema = types::parse_schema(&json.json_string)?;
            let ddl = schema
                .fields()
                .iter()
                .map(|f| format!("{} {}", f.name(), crate::plan::sql_type_name(f.data_type())))
                .collect::<Vec<_>>()
                .join(",");
            Answer::JsonToDdl(response::JsonToDdl { ddl_string: ddl })
        }
        // `df.cache()`/`persist()`: results are recomputed; accepted so programs run.
        Analyze::Persist(_) => Answer::Persist(Vec::new()),
        Analyze::Unpersist(_) => Answer::Unpersist(Vec::new()),
        Analyze::GetStorageLevel(_) => {
            let level = StorageLevel {
                use_disk: false,
                use_memory: true,
                use_off_heap: false,
                deserialized: true,
                replication: 1,
            };
            // GetStorageLevel { StorageLevel storage_level = 1; }
            let mut message = Vec::new();
            prost::encoding::message::encode(1, &level, &mut message);
            Answer::GetStorageLevel(message)
        }
        Analyze::SameSemantics(_) => return Err(ConnectError::unsupported("sameSemantics")),
        Analyze::SemanticHash(_) => return Err(ConnectError::unsupported("semanticHash")),
    };
    Ok(AnalyzePlanResponse {
        session_id: session.session_id.clone(),
        server_side_session_id: session.server_side_id.clone(),
        result: Some(answer),
    })
}

fn root(plan: Option<&Plan>) -> Option<&Relation> {
    match plan?.op_type.as_ref()? {
        OpType::Root(relation) => Some(relation),
        _ => None,
    }
}

async fn logical_plan(
    session: &Arc<Session>,
    plan: Option<&Plan>,
) -> ConnectResult<datafusion::logical_expr::LogicalPlan> {
    let relation = root(plan).ok_or_else(|| ConnectError::invalid("a plan without a relation"))?;
    Translator::new(Arc::clone(session))
        .relation(relation)
        .await
}

/// Spark's explain sections with Aether's physical plan and GPU placement report.
async fn explain_text(
    session: &Arc<Session>,
    plan: Option<&Plan>,
    mode: ExplainMode,
) -> ConnectResult<String> {
    let logical = logical_plan(session, plan).await?;
    let mut text = String::new();
    if matches!(mode, ExplainMode::Extended) {
        text.push_str("== Parsed Logical Plan ==\n");
        text.push_str(&logical.display_indent().to_string());
        text.push_str("\n\n== Analyzed Logical Plan ==\n");
        text.push_str(&logical.display_indent().to_string());
        text.push_str("\n\n== Optimized Logical Plan ==\n");
        let optimized = session.engine.context().state().optimize(&logical)?;
        text.push_str(&optimized.display_indent().to_string());
        text.push_str("\n\n");
    }
    let (physical, placement) = session.engine.physical_plan(logical).await?;
    text.push_str("== Physical Plan ==\n");
    text.push_str(&displayable(physical.as_ref()).indent(true).to_string());
    if !placement.trim().is_empty() {
        text.push_str("\n== GPU Placement ==\n");
        text.push_str(placement.trim_end());
        text.push('\n');
    }
    text.push('\n');
    Ok(text)
}

/// `printSchema()`'s text.
pub fn tree_string(fields: &arrow::datatypes::Fields, level: Option<usize>) -> String {
    let mut text = String::from("root\n");
    for field in fields {
        field_tree(&mut text, field, 1, level);
    }
    text
}

fn field_tree(text: &mut String, field: &Field, depth: usize, level: Option<usize>) {
    if level.is_some_and(|l| depth > l) {
        return;
    }
    let prefix = " |   ".repeat(depth - 1);
    text.push_str(&format!(
        "{prefix} |-- {}: {} (nullable = {})\n",
        field.name(),
        type_name(field.data_type()),
        field.is_nullable()
    ));
    nested_tree(text, field.data_type(), depth, level);
}

fn nested_tree(text: &mut String, data_type: &DataType, depth: usize, level: Option<usize>) {
    if level.is_some_and(|l| depth + 1 > l) {
        return;
    }
    let prefix = " |   ".repeat(depth);
    match data_type {
        DataType::Struct(fields) => {
            for field in fields {
                field_tree(text, field, depth + 1, level);
            }
        }
        DataType::List(element) | DataType::LargeList(element) => {
            text.push_str(&format!(
                "{prefix} |-- element: {} (containsNull = {})\n",
                type_name(element.data_type()),
                element.is_nullable()
            ));
            nested_tree(text, element.data_type(), depth + 1, level);
        }
        DataType::Map(entries, _) => {
            if let DataType::Struct(pair) = entries.data_type()
                && let (Some(key), Some(value)) = (pair.first(), pair.get(1))
            {
                text.push_str(&format!(
                    "{prefix} |-- key: {}\n",
                    type_name(key.data_type())
                ));
                nested_tree(text, key.data_type(), depth + 1, level);
                text.push_str(&format!(
                    "{prefix} |-- value: {} (valueContainsNull = {})\n",
                    type_name(value.data_type()),
                    value.is_nullable()
                ));
                nested_tree(text, value.data_type(), depth + 1, level);
            }
        }
        _ => {}
    }
}

/// Spark's simple type name (`integer`, `decimal(10,2)`, `array`, ...).
fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Null => "void".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "byte".into(),
        DataType::Int16 | DataType::UInt8 => "short".into(),
        DataType::Int32 | DataType::UInt16 => "integer".into(),
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => "long".into(),
        DataType::Float16 | DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => format!("decimal({p},{s})"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "binary".into(),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Timestamp(_, Some(_)) => "timestamp".into(),
        DataType::Timestamp(_, None) => "timestamp_ntz".into(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            "array".into()
        }
        DataType::Struct(_) => "struct".into(),
        DataType::Map(_, _) => "map".into(),
        DataType::Dictionary(_, value) => type_name(value),
        other => other.to_string().to_lowercase(),
    }
}

/// The files a plan reads.
fn input_files(relation: Option<&Relation>) -> Vec<String> {
    let Some(relation) = relation else {
        return Vec::new();
    };
    let mut files = Vec::new();
    collect_files(relation, &mut files);
    files.sort();
    files.dedup();
    files
}

fn collect_files(relation: &Relation, files: &mut Vec<String>) {
    use crate::proto::read::ReadType;
    if let Some(RelType::Read(read)) = &relation.rel_type
        && let Some(ReadType::DataSource(source)) = &read.read_type
    {
        for path in &source.paths {
            files.extend(list_files(std::path::Path::new(path)));
        }
    }
    for child in children(relation) {
        collect_files(child, files);
    }
}

fn list_files(path: &std::path::Path) -> Vec<String> {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .flatten()
                    .flat_map(|e| list_files(&e.path()))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if name.starts_with('_') || name.starts_with('.') {
            Vec::new()
        } else {
            vec![format!("file://{}", path.display())]
        }
    }
}

/// The direct input relations of a relation.
fn children(relation: &Relation) -> Vec<&Relation> {
    let Some(rel) = &relation.rel_type else {
        return Vec::new();
    };
    match rel {
        RelType::Project(r) => boxed(&r.input),
        RelType::Filter(r) => boxed(&r.input),
        RelType::Join(r) => [boxed(&r.left), boxed(&r.right)].concat(),
        RelType::SetOp(r) => [boxed(&r.left_input), boxed(&r.right_input)].concat(),
        RelType::Sort(r) => boxed(&r.input),
        RelType::Limit(r) => boxed(&r.input),
        RelType::Aggregate(r) => boxed(&r.input),
        RelType::Offset(r) => boxed(&r.input),
        RelType::Deduplicate(r) => boxed(&r.input),
        RelType::SubqueryAlias(r) => boxed(&r.input),
        RelType::ToDf(r) => boxed(&r.input),
        RelType::WithColumnsRenamed(r) => boxed(&r.input),
        RelType::Drop(r) => boxed(&r.input),
        RelType::Tail(r) => boxed(&r.input),
        RelType::WithColumns(r) => boxed(&r.input),
        _ => Vec::new(),
    }
}

/// A boxed optional input as a list of zero or one relation.
fn boxed(relation: &Option<Box<Relation>>) -> Vec<&Relation> {
    relation.as_deref().into_iter().collect()
}
