//! TPC-H generated in memory, on all cores, and registered as DataFusion tables.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aether_exec::memory_table::CachedStatsMemTable;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;

use super::tables::TpchTable;
use crate::context::AetherContext;
use crate::error::{AetherError, Result};
use crate::parallel::{available_threads, map_parallel};

/// One table's rows, one inner `Vec` per generated part (a DataFusion partition).
#[derive(Debug)]
pub struct GeneratedTable {
    pub table: TpchTable,
    pub partitions: Vec<Vec<RecordBatch>>,
}

impl GeneratedTable {
    pub fn num_rows(&self) -> usize {
        self.partitions
            .iter()
            .flatten()
            .map(RecordBatch::num_rows)
            .sum()
    }
}

/// What [`register_tpch`] did.
#[derive(Debug, Clone, Copy)]
pub struct TpchLoad {
    pub scale_factor: f64,
    pub elapsed: Duration,
    pub rows: usize,
}

/// Checks a scale factor given by a user.
pub fn validate_scale_factor(scale_factor: f64) -> Result<f64> {
    if scale_factor.is_finite() && scale_factor > 0.0 && scale_factor <= 100_000.0 {
        Ok(scale_factor)
    } else {
        Err(AetherError::Usage(format!(
            "invalid TPC-H scale factor {scale_factor}: expected a number above 0, such as 0.1, 1 or 10"
        )))
    }
}

/// Every (table, part, parts) piece of TPC-H at `scale_factor`, largest tables first so
/// that threads taking them in order finish together.
pub fn generation_jobs(scale_factor: f64, partitions: usize) -> Vec<(TpchTable, usize, usize)> {
    TpchTable::ALL
        .iter()
        .rev()
        .flat_map(|table| {
            let parts = table.parts_for(scale_factor, partitions);
            (1..=parts).map(move |part| (*table, part, parts))
        })
        .collect()
}

/// Generates all eight tables at `scale_factor`, splitting each large table into up to
/// `partitions` parts generated on `threads` threads.
pub fn generate_tpch(
    scale_factor: f64,
    partitions: usize,
    threads: usize,
) -> Result<Vec<GeneratedTable>> {
    let jobs = generation_jobs(scale_factor, partitions);
    let parts = map_parallel(&jobs, threads, |(table, part, parts)| {
        table
            .generate(scale_factor, *part, *parts)
            .collect::<Result<Vec<_>, _>>()
    });
    let mut tables: Vec<GeneratedTable> = TpchTable::ALL
        .iter()
        .map(|table| GeneratedTable {
            table: *table,
            partitions: Vec::new(),
        })
        .collect();
    for ((table, _, _), batches) in jobs.iter().zip(parts) {
        let batches = batches.map_err(|e| AetherError::DataFusion(e.into()))?;
        if let Some(generated) = tables.iter_mut().find(|g| g.table == *table) {
            generated.partitions.push(batches);
        }
    }
    Ok(tables)
}

/// Generates TPC-H at `scale_factor` in memory and registers the eight tables in
/// `context`, replacing tables of the same names.
pub fn register_tpch(context: &AetherContext, scale_factor: f64) -> Result<TpchLoad> {
    let scale_factor = validate_scale_factor(scale_factor)?;
    let start = Instant::now();
    let session = context.session();
    let partitions = session.state().config().target_partitions();
    let mut rows = 0;
    for generated in generate_tpch(scale_factor, partitions, available_threads())? {
        rows += generated.num_rows();
        // Statistics cached per batch: planning asks for them many times.
        let table = CachedStatsMemTable::new(MemTable::try_new(
            generated.table.schema(),
            generated.partitions,
        )?);
        session.deregister_table(generated.table.name())?;
        session.register_table(generated.table.name(), Arc::new(table))?;
    }
    Ok(TpchLoad {
        scale_factor,
        elapsed: start.elapsed(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_every_table_with_expected_rows() {
        let tables = generate_tpch(0.01, 4, 2).unwrap();
        let rows = |t: TpchTable| {
            tables
                .iter()
                .find(|g| g.table == t)
                .map(GeneratedTable::num_rows)
                .unwrap()
        };
        assert_eq!(rows(TpchTable::Region), 5);
        assert_eq!(rows(TpchTable::Nation), 25);
        assert_eq!(rows(TpchTable::Supplier), 100);
        assert_eq!(rows(TpchTable::Orders), 15_000);
    }

    #[test]
    fn bad_scale_factors_are_rejected() {
        assert!(validate_scale_factor(0.0).is_err());
        assert!(validate_scale_factor(-1.0).is_err());
        assert!(validate_scale_factor(f64::NAN).is_err());
        assert!(validate_scale_factor(0.5).is_ok());
    }
}
