//! The `ExecutePlan` RPC: runs a query or a command and streams its results.
//!
//! A query's answer is a response with its Spark schema, Arrow IPC batches of at most
//! [`BATCH_BYTES`] with exact row counts (at least one, even for no rows), and
//! `ResultComplete` when the client asked for a reattachable execution. The work runs in
//! its own task on the query runtime; an interrupt or a client that goes away aborts it
//! (see [`InterruptibleResponses`]), which stops DataFusion.

use std::pin::Pin;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::arrow_ipc;
use crate::command;
use crate::config;
use crate::error::{ConnectError, ConnectResult};
use crate::interruptible::{InterruptibleResponses, interrupted};
use crate::plan::Translator;
use crate::proto::execute_plan_request::request_option::RequestOption;
use crate::proto::execute_plan_response::{ArrowBatch, ResponseType, ResultComplete};
use crate::proto::plan::OpType;
use crate::proto::{ExecutePlanRequest, ExecutePlanResponse, Relation};
use crate::session::{Session, Sessions};
use crate::types;

/// Rows are sent in IPC streams of about this many bytes.
const BATCH_BYTES: usize = 4 << 20;

/// The stream of responses of one execution.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<ExecutePlanResponse, Status>> + Send>>;

/// Sends the responses of one operation, each with the ids the client checks.
#[derive(Debug, Clone)]
pub struct Responder {
    session_id: String,
    server_side_id: String,
    operation_id: String,
    sender: mpsc::Sender<Result<ExecutePlanResponse, Status>>,
}

impl Responder {
    /// Sends one response; `false` when the client has gone.
    pub async fn send(&self, response_type: ResponseType) -> bool {
        let response = ExecutePlanResponse {
            session_id: self.session_id.clone(),
            server_side_session_id: self.server_side_id.clone(),
            operation_id: self.operation_id.clone(),
            response_id: uuid::Uuid::new_v4().to_string(),
            response_type: Some(response_type),
            ..ExecutePlanResponse::default()
        };
        self.sender.send(Ok(response)).await.is_ok()
    }

    /// Sends the schema-only response that precedes a query's rows.
    async fn send_schema(&self, schema: &arrow::datatypes::Schema) -> ConnectResult<()> {
        let response = ExecutePlanResponse {
            session_id: self.session_id.clone(),
            server_side_session_id: self.server_side_id.clone(),
            operation_id: self.operation_id.clone(),
            response_id: uuid::Uuid::new_v4().to_string(),
            schema: Some(types::schema_to_spark(schema)?),
            ..ExecutePlanResponse::default()
        };
        // A client that went away is noticed at the next batch.
        let _ = self.sender.send(Ok(response)).await;
        Ok(())
    }

    async fn fail(&self, error: &ConnectError) {
        let _ = self.sender.send(Err(error.to_status())).await;
    }
}

/// Starts executing `request` and returns the stream of its responses.
pub fn execute(sessions: &Sessions, request: ExecutePlanRequest) -> ConnectResult<ResponseStream> {
    let user_id = request
        .user_context
        .as_ref()
        .map_or("", |u| u.user_id.as_str());
    let session = sessions.get_or_create(
        user_id,
        &request.session_id,
        request.client_observed_server_side_session_id.as_deref(),
    )?;
    let operation_id = request
        .operation_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let reattachable = request.request_options.iter().any(|option| {
        matches!(&option.request_option, Some(RequestOption::ReattachOptions(o)) if o.reattachable)
    });
    let plan = request
        .plan
        .and_then(|plan| plan.op_type)
        .ok_or_else(|| ConnectError::invalid("an ExecutePlan request without a plan"))?;
    let (guard, cancelled) = session.start_operation(&operation_id, request.tags)?;
    let (sender, receiver) = mpsc::channel(4);
    let responder = Responder {
        session_id: session.session_id.clone(),
        server_side_id: session.server_side_id.clone(),
        operation_id,
        sender,
    };
    // The work also watches for the interrupt itself, for a client that has stopped
    // reading (and so stopped polling the response stream).
    let interrupt = interrupted(cancelled.clone());
    let work = query_runtime()?.spawn(async move {
        let _operation = guard;
        tokio::select! {
            result = run(&session, plan, &responder) => match result {
                Ok(()) if reattachable => {
                    responder.send(ResponseType::ResultComplete(ResultComplete {})).await;
                }
                Ok(()) => {}
                Err(error) => responder.fail(&error).await,
            },
            () = interrupt => {}
        }
    });
    Ok(Box::pin(InterruptibleResponses::new(
        ReceiverStream::new(receiver),
        cancelled,
        work.abort_handle(),
    )))
}

/// The runtime queries run on, apart from the one serving RPCs: DataFusion keeps its
/// worker threads busy, and interrupts, config calls and other sessions' requests must
/// still be answered meanwhile.
fn query_runtime() -> ConnectResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("aether-query")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ConnectError::execution(format!("starting the query runtime: {e}")))
}

async fn run(session: &Arc<Session>, plan: OpType, responder: &Responder) -> ConnectResult<()> {
    match plan {
        OpType::Root(relation) => run_query(session, &relation, responder).await,
        OpType::Command(command) => command::run(session, command, responder).await,
        OpType::CompressedOperation(_) => Err(ConnectError::unsupported(
            "compressed plans (spark.connect.session.planCompression.threshold is -1 here)",
        )),
    }
}

/// Runs a query and streams its rows.
async fn run_query(
    session: &Arc<Session>,
    relation: &Relation,
    responder: &Responder,
) -> ConnectResult<()> {
    let plan = Translator::new(Arc::clone(session))
        .relation(relation)
        .await?;
    let time_zone = config::time_zone(session);
    let wire = types::to_spark_arrow(plan.schema().as_arrow(), &time_zone);
    responder.send_schema(&wire).await?;
    let engine = &session.engine;
    let (physical, _) = engine.physical_plan(plan).await?;
    let mut stream =
        datafusion::physical_plan::execute_stream(physical, engine.context().task_ctx())?;
    let mut pending: Vec<RecordBatch> = Vec::new();
    let mut pending_bytes = 0;
    let mut sent_rows: i64 = 0;
    let mut sent_any = false;
    while let Some(batch) = stream.next().await {
        let batch = arrow_ipc::cast_batch(&batch?, &wire)?;
        if batch.num_rows() == 0 {
            continue;
        }
        pending_bytes += batch.get_array_memory_size();
        pending.push(batch);
        if pending_bytes >= BATCH_BYTES {
            if !send_rows(responder, &wire, &pending, &mut sent_rows).await? {
                return Ok(());
            }
            sent_any = true;
            pending.clear();
            pending_bytes = 0;
        }
    }
    if !pending.is_empty() || !sent_any {
        send_rows(responder, &wire, &pending, &mut sent_rows).await?;
    }
    Ok(())
}

/// Sends `batches` as one IPC stream of one record batch (PySpark checks the row count
/// after each batch of a stream); `false` when the client has gone.
async fn send_rows(
    responder: &Responder,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    sent_rows: &mut i64,
) -> ConnectResult<bool> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let row_count = i64::try_from(rows).unwrap_or(i64::MAX);
    let batch = arrow::compute::concat_batches(schema, batches)?;
    let data = arrow_ipc::encode(schema, std::slice::from_ref(&batch))?;
    let batch = ArrowBatch {
        row_count,
        data,
        start_offset: Some(*sent_rows),
        chunk_index: None,
        num_chunks_in_batch: None,
    };
    *sent_rows += row_count;
    Ok(responder.send(ResponseType::ArrowBatch(batch)).await)
}
