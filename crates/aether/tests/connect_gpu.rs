//! Spark Connect on a GPU host: `explain` shows the GPU placement of a TPC-H query,
//! and its answers through the server, with and without `cacheTable` (GPU-resident
//! inputs), equal the CPU engine's.
//!
//! Needs a GPU: the test is `#[ignore = "needs a GPU"]`. On a GPU host:
//! `cargo test --release --test connect_gpu -- --include-ignored`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod connect_support;

use aether::tpch::{query_sql, register_tpch};
use aether::{AetherContext, Setting};
use aether_connect::proto::analyze_plan_request::explain::ExplainMode;
use aether_connect::proto::analyze_plan_request::{Analyze, Explain};
use aether_connect::proto::analyze_plan_response::Result as AnalyzeResult;
use aether_connect::proto::catalog::CatType;
use aether_connect::proto::plan::OpType;
use aether_connect::proto::relation::RelType;
use aether_connect::proto::{AnalyzePlanRequest, CacheTable, Catalog, Plan, Relation};
use connect_support::{SESSION, batches, connect, request, sql, start_server};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;

const SCALE_FACTOR: f64 = 1.0;

fn context(engine: &str) -> AetherContext {
    let settings = [Setting {
        key: "aether.engine".into(),
        value: engine.into(),
    }];
    let context = AetherContext::with_settings(&settings).unwrap().0;
    register_tpch(&context, SCALE_FACTOR).unwrap();
    context
}

async fn cpu_answer(cpu: &AetherContext, query: &str) -> String {
    let frame = cpu.session().sql(query).await.unwrap();
    text(&frame.collect().await.unwrap())
}

fn text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a GPU"]
async fn explain_and_answers_on_the_gpu_through_connect() {
    let template = context("gpu");
    // Every node in the placement report, GPU ones included.
    let settings = vec![
        Setting {
            key: "aether.engine".into(),
            value: "gpu".into(),
        },
        Setting {
            key: "aether.sql.explain".into(),
            value: "ALL".into(),
        },
    ];
    let address = start_server(settings, &template).await;
    let mut client = connect(address).await;
    let cpu = context("cpu");

    for n in [1, 6] {
        let query = query_sql(n, SCALE_FACTOR).unwrap();
        let explain = client
            .analyze_plan(AnalyzePlanRequest {
                session_id: SESSION.to_string(),
                user_context: request(sql("SELECT 1")).user_context,
                analyze: Some(Analyze::Explain(Explain {
                    plan: Some(Plan {
                        op_type: Some(OpType::Root(Relation {
                            common: None,
                            rel_type: Some(sql(&query)),
                        })),
                    }),
                    explain_mode: ExplainMode::Simple as i32,
                })),
                ..AnalyzePlanRequest::default()
            })
            .await
            .unwrap()
            .into_inner();
        let Some(AnalyzeResult::Explain(explain)) = explain.result else {
            panic!("Q{n}: no explain result");
        };
        println!("Q{n} explain through Connect:\n{}", explain.explain_string);
        assert!(
            explain.explain_string.contains("GpuSegmentExec")
                && explain.explain_string.contains("== GPU Placement ==")
                && explain.explain_string.contains("will run on GPU"),
            "Q{n}: {}",
            explain.explain_string
        );

        let expected = cpu_answer(&cpu, &query).await;
        let answer = text(&batches(&mut client, request(sql(&query))).await);
        assert_eq!(answer, expected, "Q{n} through Connect on the GPU");
        println!("Q{n}: same answer as the CPU engine");
    }

    // cacheTable keeps the inputs of GPU segments resident; answers stay the same.
    let cache = RelType::Catalog(Catalog {
        cat_type: Some(CatType::CacheTable(CacheTable {
            table_name: "lineitem".into(),
            storage_level: None,
        })),
    });
    batches(&mut client, request(cache)).await;
    for n in [1, 6] {
        let query = query_sql(n, SCALE_FACTOR).unwrap();
        let expected = cpu_answer(&cpu, &query).await;
        for run in 0..2 {
            let started = std::time::Instant::now();
            let answer = text(&batches(&mut client, request(sql(&query))).await);
            assert_eq!(answer, expected, "Q{n} after cacheTable, run {run}");
            println!(
                "Q{n} after cacheTable, run {run}: same answer, {:.1} ms through Connect",
                started.elapsed().as_secs_f64() * 1000.0
            );
        }
    }
}
