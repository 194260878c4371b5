//! A Spark Connect client for the server tests: start a server in process, connect,
//! and build and run requests.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use aether::connect::ConnectBackend;
use aether::{AetherContext, Setting};
use aether_connect::proto::execute_plan_response::ResponseType;
use aether_connect::proto::plan::OpType;
use aether_connect::proto::relation::RelType;
use aether_connect::proto::spark_connect_service_client::SparkConnectServiceClient;
use aether_connect::proto::{ExecutePlanRequest, Plan, Relation, Sql, UserContext};
use aether_connect::{ServeOptions, serve};
use futures::StreamExt;
use tonic::Status;
use tonic::transport::Channel;

pub const SESSION: &str = "8f6c6a36-6f5d-4bc4-9d36-0b6d4a5bc001";

/// Starts a server on a free port, its sessions configured by `settings` and sharing
/// `template`'s tables, and returns its address.
pub async fn start_server(settings: Vec<Setting>, template: &AetherContext) -> SocketAddr {
    let backend = ConnectBackend::new(settings, template).await.unwrap();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let options = ServeOptions {
        address: "127.0.0.1:0".parse().unwrap(),
        token: None,
    };
    tokio::spawn(async move {
        serve(
            options,
            Arc::new(backend),
            move |address| {
                let _ = ready_tx.send(address);
            },
            std::future::pending(),
        )
        .await
        .unwrap();
    });
    ready_rx.await.unwrap()
}

pub async fn connect(address: SocketAddr) -> SparkConnectServiceClient<Channel> {
    SparkConnectServiceClient::connect(format!("http://{address}"))
        .await
        .unwrap()
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(256 << 20)
}

pub fn request(relation: RelType) -> ExecutePlanRequest {
    ExecutePlanRequest {
        session_id: SESSION.to_string(),
        user_context: Some(UserContext {
            user_id: "test".into(),
            ..UserContext::default()
        }),
        plan: Some(Plan {
            op_type: Some(OpType::Root(Relation {
                common: None,
                rel_type: Some(relation),
            })),
        }),
        ..ExecutePlanRequest::default()
    }
}

pub fn sql(query: &str) -> RelType {
    RelType::Sql(Sql {
        query: query.to_string(),
        ..Sql::default()
    })
}

/// Runs `request` and returns its rows, or the status it failed with.
pub async fn rows_or_status(
    client: &mut SparkConnectServiceClient<Channel>,
    request: ExecutePlanRequest,
) -> Result<i64, Status> {
    let mut stream = client.execute_plan(request).await?.into_inner();
    let mut rows = 0;
    while let Some(response) = stream.next().await {
        if let Some(ResponseType::ArrowBatch(batch)) = response?.response_type {
            rows += batch.row_count;
        }
    }
    Ok(rows)
}

/// Runs `request` and returns its Arrow batches, decoded.
pub async fn batches(
    client: &mut SparkConnectServiceClient<Channel>,
    request: ExecutePlanRequest,
) -> Vec<datafusion::arrow::array::RecordBatch> {
    let mut stream = client.execute_plan(request).await.unwrap().into_inner();
    let mut batches = Vec::new();
    while let Some(response) = stream.next().await {
        if let Some(ResponseType::ArrowBatch(batch)) = response.unwrap().response_type {
            let reader = datafusion::arrow::ipc::reader::StreamReader::try_new(
                std::io::Cursor::new(batch.data),
                None,
            )
            .unwrap();
            batches.extend(reader.map(Result::unwrap));
        }
    }
    batches
}
