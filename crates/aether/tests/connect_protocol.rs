//! The Spark Connect server against bad input: garbage bytes, truncated messages,
//! unknown relation types, oversized messages and a wrong session. Each request fails
//! with a gRPC error and the server keeps answering well-formed requests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod connect_support;

use std::net::SocketAddr;

use aether::AetherContext;
use aether_connect::proto::plan::OpType;
use aether_connect::proto::relation::RelType;
use aether_connect::proto::{Plan, Relation};
use bytes::{Buf, BufMut};
use connect_support::{connect, request, rows_or_status, sql, start_server};
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// Sends raw bytes as the body of an RPC, to test what a broken client could send.
#[derive(Debug, Clone, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }
    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        Ok(Some(bytes.to_vec()))
    }
}

async fn send_raw(address: SocketAddr, method: &str, body: Vec<u8>) -> Status {
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel).max_encoding_message_size(256 << 20);
    grpc.ready().await.unwrap();
    let path = format!("/spark.connect.SparkConnectService/{method}")
        .parse()
        .unwrap();
    match grpc
        .unary::<Vec<u8>, Vec<u8>, RawCodec>(tonic::Request::new(body), path, RawCodec)
        .await
    {
        Ok(_) => panic!("{method} accepted a malformed body"),
        Err(status) => status,
    }
}

#[tokio::test]
async fn bad_requests_fail_alone_and_the_server_keeps_serving() {
    let address = start_server(Vec::new(), &AetherContext::new()).await;
    let mut client = connect(address).await;
    assert_eq!(
        rows_or_status(&mut client, request(sql("SELECT 1 AS x")))
            .await
            .unwrap(),
        1
    );

    // Garbage bytes.
    let status = send_raw(address, "AnalyzePlan", vec![0xff; 64]).await;
    assert_eq!(status.code(), Code::Internal, "{status:?}");

    // A valid request cut in half.
    let mut truncated = request(sql("SELECT 42")).encode_to_vec();
    truncated.truncate(truncated.len() / 2);
    let status = send_raw(address, "Config", truncated).await;
    assert_eq!(status.code(), Code::Internal, "{status:?}");

    // A relation type the server does not support names itself.
    let status = rows_or_status(&mut client, request(RelType::Sample(Vec::new())))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented, "{status:?}");
    assert!(status.message().contains("sample"), "{}", status.message());

    // A request without a relation type.
    let mut empty = request(sql("SELECT 1"));
    empty.plan = Some(Plan {
        op_type: Some(OpType::Root(Relation::default())),
    });
    let status = rows_or_status(&mut client, empty).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    // Over the 128 MiB message limit.
    let huge = request(sql(&format!("SELECT '{}'", "x".repeat(130 << 20))));
    let status = rows_or_status(&mut client, huge).await.unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");

    // A session id that is not a UUID.
    let mut bad_session = request(sql("SELECT 1"));
    bad_session.session_id = "not-a-uuid".into();
    let status = rows_or_status(&mut client, bad_session).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    // Bad SQL is the client's error, and says where.
    let status = rows_or_status(&mut client, request(sql("SELEC 1")))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    // Still serving.
    let mut fresh = connect(address).await;
    assert_eq!(
        rows_or_status(
            &mut fresh,
            request(sql("SELECT * FROM (VALUES (1), (2), (3)) t(x)"))
        )
        .await
        .unwrap(),
        3
    );
}
