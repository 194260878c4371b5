//! Running one TPC-H query through an [`AetherContext`] and timing it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aether_exec::placement::PlacementReport;

use datafusion::arrow::array::StringArray;
use datafusion::arrow::record_batch::RecordBatch;

use super::queries::query_sql;
use crate::context::AetherContext;
use crate::error::Result;

/// The rows of one run of a query and how long it took, planning included.
#[derive(Debug)]
pub struct QueryRun {
    pub batches: Vec<RecordBatch>,
    pub elapsed: Duration,
    /// Where the query's parts ran.
    pub placement: Arc<PlacementReport>,
}

impl QueryRun {
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// `GPU` when some part of the query ran on the GPU, else `CPU`.
    pub fn ran_on(&self) -> &'static str {
        if self.placement.gpu_nodes() > 0 && self.placement.whole_plan.is_none() {
            "GPU+CPU"
        } else {
            "CPU"
        }
    }
}

/// Runs TPC-H query `n` (parameters for `scale_factor`) and times it end to end.
pub async fn run_query(context: &AetherContext, n: usize, scale_factor: f64) -> Result<QueryRun> {
    let sql = query_sql(n, scale_factor)?;
    let start = Instant::now();
    let output = context.run_script(&sql).await?;
    let elapsed = start.elapsed();
    // Q15 is a script: the query is the one statement that returns rows.
    let placement = output
        .placements
        .into_iter()
        .max_by_key(|report| report.lines.len())
        .unwrap_or_default();
    Ok(QueryRun {
        batches: output.batches,
        elapsed,
        placement,
    })
}

/// Runs TPC-H query `n` once under `EXPLAIN ANALYZE` and returns the annotated plan:
/// each operator with its rows and times, GPU segments' gather, upload and kernel times
/// included. For Q15 the view is created and dropped around the explained query.
pub async fn explain_analyze(
    context: &AetherContext,
    n: usize,
    scale_factor: f64,
) -> Result<String> {
    let sql = query_sql(n, scale_factor)?;
    let script: Vec<String> = sql
        .split(';')
        .filter(|statement| !statement.trim().is_empty())
        .map(|statement| {
            if statement
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("select")
            {
                format!("explain analyze {statement};")
            } else {
                format!("{statement};")
            }
        })
        .collect();
    let output = context.run_script(&script.concat()).await?;
    let mut text = String::new();
    for batch in &output.batches {
        let Some(plans) = batch
            .column_by_name("plan")
            .and_then(|column| column.as_any().downcast_ref::<StringArray>())
        else {
            continue;
        };
        for plan in plans.iter().flatten() {
            text.push_str(plan);
            text.push('\n');
        }
    }
    Ok(text)
}
