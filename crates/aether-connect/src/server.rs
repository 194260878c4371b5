//! The gRPC service and `serve`: binds the port, checks the bearer token, and answers
//! every RPC of `spark.connect.SparkConnectService`.

use std::net::SocketAddr;
use std::sync::Arc;

use tonic::codec::CompressionEncoding;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use crate::backend::SessionFactory;
use crate::error::ConnectError;
use crate::execute::{self, ResponseStream};
use crate::proto::interrupt_request::{Interrupt, InterruptType};
use crate::proto::spark_connect_service_server::{SparkConnectService, SparkConnectServiceServer};
use crate::proto::*;
use crate::session::{InterruptTarget, Sessions};
use crate::{analyze, config};

/// Messages up to this size are accepted and sent, as PySpark's own limit.
const MESSAGE_LIMIT: usize = 128 << 20;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub address: SocketAddr,
    /// When set, clients must send `authorization: Bearer <token>`.
    pub token: Option<String>,
}

/// Serves Spark Connect until `shutdown` resolves; calls `ready` with the bound address
/// once connections are accepted.
pub async fn serve(
    options: ServeOptions,
    factory: Arc<dyn SessionFactory>,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let listener = tokio::net::TcpListener::bind(options.address).await?;
    let address = listener.local_addr()?;
    let service = ConnectService {
        sessions: Arc::new(Sessions::new(factory)),
    };
    let server = SparkConnectServiceServer::new(service)
        .max_decoding_message_size(MESSAGE_LIMIT)
        .max_encoding_message_size(MESSAGE_LIMIT)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);
    let token = options.token.map(|t| format!("Bearer {t}"));
    let check_token = move |request: Request<()>| -> Result<Request<()>, Status> {
        let Some(expected) = &token else {
            return Ok(request);
        };
        match request.metadata().get("authorization") {
            Some(given) if given.as_bytes() == expected.as_bytes() => Ok(request),
            Some(_) => Err(Status::unauthenticated("invalid authentication token")),
            None => Err(Status::unauthenticated("authentication token required")),
        }
    };
    ready(address);
    tonic::transport::Server::builder()
        .add_service(tonic::service::interceptor::InterceptedService::new(
            server,
            check_token,
        ))
        // Without TCP_NODELAY each small response waits for the client's delayed ACK
        // (40 ms on Linux), which would dominate every short query.
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await?;
    Ok(())
}

#[derive(Debug)]
struct ConnectService {
    sessions: Arc<Sessions>,
}

fn user_of(context: Option<&UserContext>) -> &str {
    context.map_or("", |c| c.user_id.as_str())
}

/// Requests that name a session: user, session id and the server-side id the client saw.
trait SessionRequest {
    fn session_key(&self) -> (&str, &str, Option<&str>);
}

macro_rules! session_request {
    ($($request:ty),*) => {$(
        impl SessionRequest for $request {
            fn session_key(&self) -> (&str, &str, Option<&str>) {
                (
                    user_of(self.user_context.as_ref()),
                    &self.session_id,
                    self.client_observed_server_side_session_id.as_deref(),
                )
            }
        }
    )*};
}

session_request!(
    AnalyzePlanRequest,
    ConfigRequest,
    ArtifactStatusesRequest,
    InterruptRequest,
    ReattachExecuteRequest,
    ReleaseExecuteRequest,
    FetchErrorDetailsRequest,
    GetStatusRequest
);

impl ConnectService {
    /// The session a request names (created on first use).
    fn session(
        &self,
        request: &impl SessionRequest,
    ) -> Result<Arc<crate::session::Session>, ConnectError> {
        let (user, session_id, observed) = request.session_key();
        self.sessions.get_or_create(user, session_id, observed)
    }
}

#[tonic::async_trait]
impl SparkConnectService for ConnectService {
    type ExecutePlanStream = ResponseStream;
    type ReattachExecuteStream = ResponseStream;

    async fn execute_plan(
        &self,
        request: Request<ExecutePlanRequest>,
    ) -> Result<Response<ResponseStream>, Status> {
        let stream = execute::execute(&self.sessions, request.into_inner())?;
        Ok(Response::new(stream))
    }

    async fn analyze_plan(
        &self,
        request: Request<AnalyzePlanRequest>,
    ) -> Result<Response<AnalyzePlanResponse>, Status> {
        let request = request.into_inner();
        let session = self.session(&request)?;
        Ok(Response::new(analyze::handle(session, request).await?))
    }

    async fn config(
        &self,
        request: Request<ConfigRequest>,
    ) -> Result<Response<ConfigResponse>, Status> {
        let request = request.into_inner();
        let session = self.session(&request)?;
        Ok(Response::new(config::handle(&session, request)?))
    }

    async fn add_artifacts(
        &self,
        _request: Request<tonic::Streaming<AddArtifactsRequest>>,
    ) -> Result<Response<AddArtifactsResponse>, Status> {
        Err(ConnectError::unsupported(
            "artifacts (addArtifacts, Python UDF files, cached local relations)",
        )
        .into())
    }

    async fn artifact_status(
        &self,
        request: Request<ArtifactStatusesRequest>,
    ) -> Result<Response<ArtifactStatusesResponse>, Status> {
        let request = request.into_inner();
        let session = self.session(&request)?;
        let statuses = request
            .names
            .into_iter()
            .map(|name| {
                (
                    name,
                    artifact_statuses_response::ArtifactStatus { exists: false },
                )
            })
            .collect();
        Ok(Response::new(ArtifactStatusesResponse {
            session_id: session.session_id.clone(),
            server_side_session_id: session.server_side_id.clone(),
            statuses,
        }))
    }

    async fn interrupt(
        &self,
        request: Request<InterruptRequest>,
    ) -> Result<Response<InterruptResponse>, Status> {
        let request = request.into_inner();
        let session = self.session(&request)?;
        let target = match (
            InterruptType::try_from(request.interrupt_type),
            request.interrupt,
        ) {
            (Ok(InterruptType::All), _) => InterruptTarget::All,
            (Ok(InterruptType::Tag), Some(Interrupt::OperationTag(tag))) => {
                InterruptTarget::Tag(tag)
            }
            (Ok(InterruptType::OperationId), Some(Interrupt::OperationId(id))) => {
                InterruptTarget::Operation(id)
            }
            _ => return Err(ConnectError::invalid("an interrupt without a valid target").into()),
        };
        Ok(Response::new(InterruptResponse {
            session_id: session.session_id.clone(),
            server_side_session_id: session.server_side_id.clone(),
            interrupted_ids: session.interrupt(&target),
        }))
    }

    async fn reattach_execute(
        &self,
        request: Request<ReattachExecuteRequest>,
    ) -> Result<Response<ResponseStream>, Status> {
        // Executions always end with ResultComplete and are not kept for replay; a
        // reattach can only follow a broken connection.
        let request = request.into_inner();
        self.session(&request)?;
        Err(ConnectError::operation_not_found(&request.operation_id).into())
    }

    async fn release_execute(
        &self,
        request: Request<ReleaseExecuteRequest>,
    ) -> Result<Response<ReleaseExecuteResponse>, Status> {
        let request = request.into_inner();
        let session = self.session(&request)?;
        Ok(Response::new(ReleaseExecuteResponse {
            session_id: session.session_id.clone(),
            server_side_session_id: session.server_side_id.clone(),
            operation_id: Some(request.operation_id),
        }))
    }

    async fn release_session(
        &self,
        request: Request<ReleaseSessionRequest>,
    ) -> Result<Response<ReleaseSessionResponse>, Status> {
        let request = request.into_inner();
        let server_side_session_id = self.sessions.release(
            user_of(request.user_context.as_ref()),
            &request.session_id,
            request.allow_reconnect,
        );
        Ok(Response::new(ReleaseSessionResponse {
            session_id: request.session_id,
            server_side_session_id,
        }))
    }

    async fn fetch_error_details(
        &self,
        request: Request<FetchErrorDetailsRequest>,
    ) -> Result<Response<FetchErrorDetailsResponse>, Status> {
        // Errors carry everything in their ErrorInfo; there are no stored details.
        let request = request.into_inner();
        let session = self.session(&request)?;
        Ok(Response::new(FetchErrorDetailsResponse {
            server_side_session_id: session.server_side_id.clone(),
            session_id: session.session_id.clone(),
            root_error_idx: None,
            errors: Vec::new(),
        }))
    }

    async fn clone_session(
        &self,
        _request: Request<CloneSessionRequest>,
    ) -> Result<Response<CloneSessionResponse>, Status> {
        Err(ConnectError::unsupported("cloning sessions").into())
    }

    async fn get_status(
        &self,
        request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        let request = request.into_inner();
        let session = self.session(&request)?;
        Ok(Response::new(GetStatusResponse {
            session_id: session.session_id.clone(),
            server_side_session_id: session.server_side_id.clone(),
            operation_statuses: Vec::new(),
            extensions: Vec::new(),
        }))
    }
}
