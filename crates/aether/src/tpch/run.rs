//! Running one TPC-H query through an [`AetherContext`] and timing it.

use std::time::{Duration, Instant};

use datafusion::arrow::record_batch::RecordBatch;

use super::queries::query_sql;
use crate::context::AetherContext;
use crate::error::Result;

/// The rows of one run of a query and how long it took, planning included.
#[derive(Debug)]
pub struct QueryRun {
    pub batches: Vec<RecordBatch>,
    pub elapsed: Duration,
}

impl QueryRun {
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Runs TPC-H query `n` (parameters for `scale_factor`) and times it end to end.
pub async fn run_query(context: &AetherContext, n: usize, scale_factor: f64) -> Result<QueryRun> {
    let sql = query_sql(n, scale_factor)?;
    let start = Instant::now();
    let output = context.run_script(&sql).await?;
    Ok(QueryRun {
        batches: output.batches,
        elapsed: start.elapsed(),
    })
}
