//! Runs Aether's SQL tests: every `.slt` file under `tests/sqllogictest/`, each in a fresh
//! [`AetherContext`] with TPC-H at scale factor 0.01 registered.
//!
//! The runner is `sqllogictest` with DataFusion's result normalization
//! (`datafusion-sqllogictest`), driven through `AetherContext::run_script` so the tests
//! exercise Aether's own entry point: its configuration keys, aliases and statement
//! handling. `cargo test --release --test sqllogictests -- <filter>` runs the files whose
//! names contain `<filter>`; adding `--complete` rewrites the expected results in place
//! from what Aether returns (review the diff before committing it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use aether::AetherContext;
use aether::tpch::register_tpch;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion_sqllogictest::{
    DFColumnType, DFOutput, DFSqlLogicTestError, convert_batches, convert_schema_to_types,
    df_value_validator, value_normalizer,
};
use sqllogictest::{AsyncDB, DBOutput};

/// One `.slt` file's connection: an Aether context.
struct AetherDb {
    context: AetherContext,
}

#[async_trait::async_trait]
impl AsyncDB for AetherDb {
    type Error = DFSqlLogicTestError;
    type ColumnType = DFColumnType;

    async fn run(&mut self, sql: &str) -> Result<DFOutput, Self::Error> {
        let output = self
            .context
            .run_script(sql)
            .await
            .map_err(|e| DFSqlLogicTestError::Other(e.to_string()))?;
        let Some(schema) = output.schema else {
            return Ok(DBOutput::StatementComplete(0));
        };
        let types = convert_schema_to_types(schema.fields());
        let batches: Vec<RecordBatch> = output.batches;
        let rows = convert_batches(&schema, batches, false)?;
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        "Aether"
    }

    async fn sleep(duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    async fn shutdown(&mut self) {}
}

#[expect(
    clippy::expect_used,
    reason = "a test harness: a missing test folder should stop it"
)]
fn slt_files(dir: &Path, filter: Option<&str>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/sqllogictest exists")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "slt"))
        .filter(|path| filter.is_none_or(|f| path.to_string_lossy().contains(f)))
        .collect();
    files.sort();
    files
}

#[tokio::main]
async fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sqllogictest");
    // libtest-style arguments: the first free argument is a name filter.
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let complete = std::env::args().any(|arg| arg == "--complete");
    let files = slt_files(&dir, filter.as_deref());
    let (mut passed, mut failed) = (0, 0);
    for file in &files {
        let mut runner = sqllogictest::Runner::new(|| async {
            let context = AetherContext::new();
            register_tpch(&context, 0.01).map_err(|e| DFSqlLogicTestError::Other(e.to_string()))?;
            Ok(AetherDb { context })
        });
        runner.with_normalizer(value_normalizer);
        runner.with_validator(df_value_validator);
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let result = if complete {
            runner
                .update_test_file(
                    file,
                    " ",
                    df_value_validator,
                    value_normalizer,
                    sqllogictest::strict_column_validator,
                )
                .await
                .map_err(|e| e.to_string())
        } else {
            runner
                .run_file_async(file)
                .await
                .map_err(|e| e.display(false).to_string())
        };
        match result {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED\n{e}");
                failed += 1;
            }
        }
    }
    println!();
    println!(
        "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    // An empty selection is an error only when nothing filtered it: a `cargo test NAME`
    // aimed at other tests reaches this harness too.
    if failed > 0 || (files.is_empty() && filter.is_none()) {
        std::process::exit(1);
    }
}
