//! Does a whole subtree pay on the GPU? Predicted times of joins, sorts, aggregates,
//! filters and projections together, on the CPU and on the GPU.
//!
//! `--engine auto` asks this at the highest node whose subtree holds a join or a sort:
//! when the GPU's prediction for the whole subtree is lower, every supported operator
//! in it moves (device batches pass between them, one download at the top); when not,
//! the node stays on the CPU and each child subtree is asked in turn.
//!
//! The two sides cost different things. The CPU pays per row in each operator (filters
//! per byte they read, hash builds (one core for a collected build side), probes,
//! aggregates, sorts and hash exchanges), spread over its cores. The GPU pays to bring
//! the leaves' columns over (gathering into device layout on every core and PCIe, or
//! nothing when resident; string columns of many distinct values that the kernels need
//! as codes are coded on the host, one core per column), a fixed launch and
//! synchronization cost per operator, its kernels at memory speed, and the download of
//! the result. An operator the GPU cannot run is priced on both sides as on the CPU,
//! plus a download and upload around it on the GPU's side.
//!
//! Rows are estimated from the plan: an in-memory table counts its rows, a filter over
//! one is evaluated on a sample of its rows, other filters keep DataFusion's default
//! 20%, and an inner join keeps the rows of the side from the larger tables scaled by
//! the fraction of the other side its filters kept (a foreign key joined to a key). Estimates are rough; each
//! decision prints its figures so that they can be checked against `EXPLAIN ANALYZE`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::JoinType;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;

use super::cost::{CostModel, arrow_width, device_width};
use super::scans::below_exchanges;
use crate::memory_table::memory_source;
use crate::ops::{StringCodeCache, table_column_arrays};

/// DataFusion's selectivity for a filter it knows nothing about.
const DEFAULT_SELECTIVITY: f64 = 0.2;
/// Rows assumed for an input without any row count.
const UNKNOWN_ROWS: f64 = 1.0e6;
/// Rows of each partition's first batch a filter is tried on.
const SAMPLE_ROWS: usize = 2048;
/// Strings longer than this are found in the gatherer's view cache by their bytes, not
/// their view alone. Columns with at most [`FEW_DISTINCT`] distinct values in a sample
/// code at a few ns a row (the view cache, or each batch's few distinct values looked up
/// once); more, when at most [`REPEATED_SHARE`] of the sample is distinct, are charged
/// a dictionary lookup a row and the full coding only for their estimated distinct
/// values; more still are charged per value as many-valued.
const SHORT_STRING_BYTES: usize = 12;
const FEW_DISTINCT: usize = 64;
const REPEATED_SHARE: f64 = 0.5;

/// A subtree's predicted times, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubtreePrediction {
    pub cpu_ms: f64,
    pub gpu_ms: f64,
    /// The GPU's share spent on uploads, host string coding and the download.
    pub transfer_ms: f64,
    /// Rows the subtree is estimated to return.
    pub rows: f64,
    /// The GPU's share spent coding string columns whose codes would then be kept:
    /// paid by the first query only.
    pub kept_coding_ms: f64,
}

/// A subtree moves only when the GPU is predicted at most this share of the CPU's
/// time. Predictions miss by tens of percent either way (measured against 22 TPC-H
/// queries on the H100, 2026-12-07), and a miss that puts the GPU first costs more
/// than one that keeps the CPU: TPC-H Q14 was predicted at 69.8 ms on the GPU against
/// 71.3 on the CPU and took 85 against 43.
const GPU_MARGIN: f64 = 0.8;

impl SubtreePrediction {
    pub fn gpu_pays(&self) -> bool {
        self.gpu_ms < self.cpu_ms * GPU_MARGIN
    }

    /// Whether the GPU would pay once its string columns' codes are kept.
    pub fn pays_once_coded(&self) -> bool {
        !self.gpu_pays() && self.gpu_ms - self.kept_coding_ms < self.cpu_ms * GPU_MARGIN
    }

    pub fn describe(&self) -> String {
        let margin = if self.gpu_ms < self.cpu_ms && !self.gpu_pays() {
            format!(
                ", within the {:.0}% margin the GPU must win by",
                (1.0 - GPU_MARGIN) * 100.0
            )
        } else {
            String::new()
        };
        format!(
            "predicted GPU {:.1} ms (transfers {:.1} ms) vs CPU {:.1} ms for this subtree \
             (about {:.0} rows out{margin})",
            self.gpu_ms, self.transfer_ms, self.cpu_ms, self.rows
        )
    }
}

/// Predictions for every node of a plan, by node.
pub type Predictions = HashMap<usize, SubtreePrediction>;

/// The key of `plan` in [`Predictions`]: its address, stable while the plan lives.
pub fn node_key(plan: &Arc<dyn ExecutionPlan>) -> usize {
    Arc::as_ptr(plan) as *const () as usize
}

/// A walk of `plan`'s subtree with every node's prediction.
fn walk<'a>(
    plan: &Arc<dyn ExecutionPlan>,
    model: &'a CostModel,
    resident: &'a dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Walker<'a> {
    let mut walker = Walker {
        model,
        resident,
        cpu: 0.0,
        gpu: 0.0,
        transfer: 0.0,
        upload_share: 1.0,
        kept_coding: 0.0,
        to_code: Vec::new(),
        predictions: HashMap::new(),
    };
    walker.walk(plan, None);
    walker
}

/// Predicts every subtree of `plan` on both engines in one walk; `resident` says
/// whether a leaf's upload is already on the device.
pub fn predict_all(
    plan: &Arc<dyn ExecutionPlan>,
    model: &CostModel,
    resident: &dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Predictions {
    walk(plan, model, resident).predictions
}

/// The string columns (each its arrays) of in-memory tables that the GPU plan of
/// `plan`'s subtree would code and keep.
pub fn columns_to_code(
    plan: &Arc<dyn ExecutionPlan>,
    model: &CostModel,
    resident: &dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Vec<Vec<ArrayRef>> {
    walk(plan, model, resident).to_code
}

/// Whether `plan`'s subtree holds a hash join or a sort.
pub fn has_join_or_sort(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.is::<HashJoinExec>()
        || plan.is::<SortExec>()
        || plan.children().into_iter().any(has_join_or_sort)
}

/// Rows a node returns, and the rows its tables had before any filter.
#[derive(Debug, Clone, Copy)]
struct Flow {
    rows: f64,
    unfiltered: f64,
}

impl Flow {
    fn kept_fraction(&self) -> f64 {
        if self.unfiltered > 0.0 {
            (self.rows / self.unfiltered).min(1.0)
        } else {
            1.0
        }
    }
}

struct Walker<'a> {
    model: &'a CostModel,
    resident: &'a dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
    /// Seconds, summed over the walk.
    cpu: f64,
    gpu: f64,
    transfer: f64,
    /// The share of a table's rows its upload gathers: below 1 under a filter the
    /// upload runs on the host ([`super::host_filter`]).
    upload_share: f64,
    /// Seconds of host string coding (within `gpu`) whose codes would be kept for
    /// later queries, and the columns (each its arrays) they code.
    kept_coding: f64,
    to_code: Vec<Vec<ArrayRef>>,
    predictions: Predictions,
}

/// Column names an operator needs from its input, `None` for all of them.
type Needed = Option<HashSet<String>>;

impl Walker<'_> {
    fn cores(&self) -> f64 {
        self.model.cores.max(1.0)
    }

    /// Walks `plan`'s subtree, adding its costs to the totals, and records its
    /// prediction: what the walk added, and on the GPU the download of its rows.
    fn walk(&mut self, plan: &Arc<dyn ExecutionPlan>, needed: Needed) -> Flow {
        let (cpu, gpu, transfer) = (self.cpu, self.gpu, self.transfer);
        let kept_coding = self.kept_coding;
        let flow = self.walk_node(plan, needed);
        let download = self.download_seconds(&plan.schema(), flow.rows);
        self.predictions.insert(
            node_key(plan),
            SubtreePrediction {
                cpu_ms: (self.cpu - cpu) * 1e3,
                gpu_ms: (self.gpu - gpu + download) * 1e3,
                transfer_ms: (self.transfer - transfer + download) * 1e3,
                rows: flow.rows,
                kept_coding_ms: (self.kept_coding - kept_coding) * 1e3,
            },
        );
        flow
    }

    fn walk_node(&mut self, plan: &Arc<dyn ExecutionPlan>, needed: Needed) -> Flow {
        let m = self.model;
        let cores = self.cores();
        if let Some(exchange) = plan.downcast_ref::<RepartitionExec>() {
            let flow = self.walk(exchange.input(), needed);
            if matches!(
                exchange.partitioning(),
                datafusion::physical_plan::Partitioning::Hash(..)
            ) {
                self.cpu += flow.rows * m.cpu_exchange_row_ns * 1e-9 / cores;
            }
            return flow;
        }
        if plan.is::<CoalescePartitionsExec>() || plan.is::<SortPreservingMergeExec>() {
            let [input] = plan.children()[..] else {
                return self.other(plan);
            };
            return self.walk(input, needed);
        }
        if plan.children().is_empty() {
            return self.leaf(plan, needed.as_ref());
        }
        if let Some(filter) = plan.downcast_ref::<FilterExec>() {
            let resident = (self.resident)(&below_exchanges(Arc::clone(filter.input())));
            if !resident && super::host_prefilter::tested_only(plan).is_some() {
                return self.host_side_filter(plan, filter, needed);
            }
            // The predicate's columns are only tested, which string columns do as bytes
            // without host coding: only what the filter passes on is needed.
            let on_host = (!resident)
                .then(|| super::host_filter::host_filter(filter))
                .flatten();
            let share = on_host
                .as_ref()
                .map_or(1.0, |(_, selectivity)| *selectivity);
            let outer = std::mem::replace(&mut self.upload_share, share);
            let input = self.walk(filter.input(), needed);
            self.upload_share = outer;
            let width = row_width(&filter.input().schema(), arrow_width);
            self.cpu += input.rows * width / (m.cpu_filter_per_core * cores);
            if let Some((_, kept)) = &on_host {
                // The upload evaluates it on the host first (`ops/host_predicate.rs`):
                // its columns for every row, then the rows it keeps are cut out.
                let tested = tested_width(filter);
                self.gpu += input.rows * (tested + kept * width) / (m.cpu_filter_per_core * cores);
            }
            self.gpu += self.kernel_seconds(input.rows, &filter.input().schema());
            let selectivity = sampled_selectivity(filter).unwrap_or(DEFAULT_SELECTIVITY);
            return Flow {
                rows: input.rows * selectivity,
                unfiltered: input.unfiltered,
            };
        }
        if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
            let schema = projection.input().schema();
            let mut wants = HashSet::new();
            let mut computed = 0.0;
            for (i, item) in projection.expr().iter().enumerate() {
                let name = plan.schema().field(i).name().clone();
                if needed.as_ref().is_none_or(|n| n.contains(&name)) {
                    wants.extend(names_in(&schema, &item.expr));
                    if item
                        .expr
                        .downcast_ref::<datafusion::physical_expr::expressions::Column>()
                        .is_none()
                    {
                        computed += 1.0;
                    }
                }
            }
            let input = self.walk(projection.input(), Some(wants));
            self.cpu += input.rows * computed * m.cpu_expression_row_ns * 1e-9 / cores;
            if computed > 0.0 {
                self.gpu += self.kernel_seconds(input.rows, &plan.schema());
            }
            return input;
        }
        if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
            return self.join(join, needed);
        }
        if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
            let schema = aggregate.input().schema();
            let mut wants = HashSet::new();
            for (expr, _) in aggregate.group_expr().expr() {
                wants.extend(names_in(&schema, expr));
            }
            for call in aggregate.aggr_expr() {
                for arg in call.expressions() {
                    wants.extend(names_in(&schema, &arg));
                }
            }
            let input = self.walk(aggregate.input(), Some(wants));
            let calls = aggregate.aggr_expr().len() as f64;
            let per_row = m.cpu_aggregate_row_ns + calls * m.cpu_aggregate_call_ns;
            self.cpu += input.rows * per_row * 1e-9 / cores;
            self.gpu += self.kernel_seconds(input.rows, &schema);
            let grouped = !aggregate.group_expr().expr().is_empty();
            let rows = match (grouped, aggregate.mode()) {
                (false, AggregateMode::Partial) => cores,
                (false, _) => 1.0,
                (true, _) => (input.rows * 0.25).max(1.0),
            };
            return Flow {
                rows,
                unfiltered: rows,
            };
        }
        if let Some(sort) = plan.downcast_ref::<SortExec>() {
            let schema = sort.input().schema();
            let mut wants = needed.unwrap_or_else(|| names_of(&schema));
            for key in sort.expr().iter() {
                wants.extend(names_in(&schema, &key.expr));
            }
            let input = self.walk(sort.input(), Some(wants));
            let rows = input.rows.max(1.0);
            self.cpu += match sort.fetch() {
                Some(_) => rows * m.cpu_topk_row_ns,
                None => rows * (rows / cores).max(2.0).log2() * m.cpu_sort_compare_ns,
            } * 1e-9
                / cores;
            // A radix sort reads and writes its keys and the permutation once a pass.
            self.gpu += self.kernel_seconds(rows * 8.0, &schema);
            let rows = sort.fetch().map_or(rows, |fetch| rows.min(fetch as f64));
            return Flow {
                rows,
                unfiltered: rows,
            };
        }
        self.other(plan)
    }

    fn join(&mut self, join: &HashJoinExec, needed: Needed) -> Flow {
        let m = self.model;
        let cores = self.cores();
        let key_names = |schema: &Schema, left: bool| -> HashSet<String> {
            let mut names = HashSet::new();
            for (l, r) in join.on() {
                names.extend(names_in(schema, if left { l } else { r }));
            }
            names
        };
        let side = |schema: &Schema, left: bool| -> Needed {
            let mut names = match &needed {
                Some(n) => schema
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .filter(|name| n.contains(name))
                    .collect(),
                None => names_of(schema),
            };
            names.extend(key_names(schema, left));
            Some(names)
        };
        let left_schema = join.left().schema();
        let right_schema = join.right().schema();
        let left = self.walk(join.left(), side(&left_schema, true));
        let right = self.walk(join.right(), side(&right_schema, false));
        // The side whose tables were smaller before any filter holds the keys (a
        // dimension); each row of the other side matches one of its rows if its filters
        // kept that row.
        let (keys, foreign) = if left.unfiltered <= right.unfiltered {
            (left, right)
        } else {
            (right, left)
        };
        let matched = foreign.rows * keys.kept_fraction();
        let rows = match join.join_type() {
            JoinType::Inner => matched,
            JoinType::Left | JoinType::LeftMark => matched.max(left.rows),
            JoinType::Right | JoinType::RightMark => matched.max(right.rows),
            JoinType::Full => matched.max(left.rows).max(right.rows),
            JoinType::LeftSemi | JoinType::LeftAnti => left.rows * 0.5,
            JoinType::RightSemi | JoinType::RightAnti => right.rows * 0.5,
        };
        // DataFusion collects a `CollectLeft` build side into one table on one core.
        let build_cores = match join.partition_mode() {
            PartitionMode::CollectLeft => 1.0,
            _ => cores,
        };
        self.cpu += left.rows * m.cpu_build_row_ns * 1e-9 / build_cores
            + right.rows * m.cpu_probe_row_ns * 1e-9 / cores
            + rows * m.cpu_join_output_row_ns * 1e-9 / cores;
        // Build and probe read keys and write a table and match pairs; twice for the
        // count and write passes.
        self.gpu +=
            self.model.fixed_seconds + (left.rows + right.rows + rows) * 32.0 / self.model.hbm;
        Flow {
            rows,
            unfiltered: foreign.unfiltered,
        }
    }

    /// A filter the upload runs on the host as it reads its table
    /// ([`super::host_prefilter`]): the CPU evaluates it and copies the rows it keeps,
    /// as the upload does before gathering only the needed columns it passes on.
    fn host_side_filter(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        filter: &FilterExec,
        needed: Needed,
    ) -> Flow {
        let m = self.model;
        let scan = below_exchanges(Arc::clone(filter.input()));
        let rows = super::input_rows(&scan).map_or(UNKNOWN_ROWS, |r| r as f64);
        let input = filter.input().schema();
        let output = plan.schema();
        let sent = Schema::new(
            output
                .fields()
                .iter()
                .filter(|f| needed.as_ref().is_none_or(|n| n.contains(f.name())))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let selectivity = sampled_selectivity(filter).unwrap_or(DEFAULT_SELECTIVITY);
        let kept = rows * selectivity;
        let filtering = m.cpu_filter_per_core * self.cores();
        self.cpu += rows * row_width(&input, arrow_width) / filtering;
        let host =
            (rows * tested_width(filter) + kept * row_width(&output, arrow_width)) / filtering;
        let upload = self.upload_seconds(&sent, kept);
        self.gpu += host + upload;
        self.transfer += upload;
        Flow {
            rows: kept,
            unfiltered: rows,
        }
    }

    /// An input read from a table: on the GPU, its upload.
    fn leaf(&mut self, plan: &Arc<dyn ExecutionPlan>, needed: Option<&HashSet<String>>) -> Flow {
        let rows = super::input_rows(plan).map_or(UNKNOWN_ROWS, |r| r as f64);
        let schema = plan.schema();
        let m = self.model;
        if memory_source(plan.as_ref()).is_none() {
            // Files decode on the CPU whichever engine runs the rest.
            let decode =
                rows * row_width(&schema, arrow_width) / (m.cpu_decode_per_core * self.cores());
            self.cpu += decode;
            self.gpu += decode;
        }
        if !(self.resident)(plan) {
            // Strings are coded for the whole table, whatever a host filter keeps.
            let (coding, bytes, coded) = self.strings_seconds(plan, needed, rows);
            let upload = self.upload_seconds(&schema, rows * self.upload_share) + coding + bytes;
            self.gpu += upload;
            self.transfer += upload;
            // Codes of an in-memory table's columns are kept once made: a cost paid once.
            let columns: Option<Vec<Vec<ArrayRef>>> =
                memory_source(plan.as_ref()).and_then(|memory| {
                    coded
                        .iter()
                        .map(|i| table_column_arrays(memory, *i))
                        .collect()
                });
            // Codes of four bytes a row, and as much again for dictionaries, within the
            // budget; none already found too large.
            let cache = StringCodeCache::shared();
            let codes_bytes = rows * 8.0 * coded.len() as f64;
            if let Some(columns) = columns
                && codes_bytes <= cache.budget_bytes() as f64 / 2.0
                && !columns.iter().any(|arrays| cache.refused(arrays))
            {
                self.kept_coding += coding;
                self.to_code.extend(columns);
            }
        }
        Flow {
            rows,
            unfiltered: rows,
        }
    }

    /// An operator the GPU does not run: the CPU's cost on both sides, and on the
    /// GPU's a download of its input and an upload of its output.
    fn other(&mut self, plan: &Arc<dyn ExecutionPlan>) -> Flow {
        let mut rows: f64 = 0.0;
        let mut unfiltered: f64 = 0.0;
        for child in plan.children() {
            let flow = self.walk(child, None);
            let moved = self.download_seconds(&child.schema(), flow.rows);
            self.gpu += moved;
            self.transfer += moved;
            rows = rows.max(flow.rows);
            unfiltered = unfiltered.max(flow.unfiltered);
        }
        let cost = rows * self.model.cpu_expression_row_ns * 1e-9 / self.cores();
        self.cpu += cost;
        let upload = self.upload_seconds(&plan.schema(), rows);
        self.gpu += cost + upload;
        self.transfer += upload;
        Flow { rows, unfiltered }
    }

    fn upload_seconds(&self, schema: &Schema, rows: f64) -> f64 {
        let m = self.model;
        let gather = rows * row_width(schema, arrow_width) / (m.gather_per_core * self.cores());
        let pcie = rows * row_width(schema, device_width) / m.pcie;
        // Gathering and the DMA overlap; the slower of the two sets the pace.
        gather.max(pcie)
    }

    fn download_seconds(&self, schema: &Schema, rows: f64) -> f64 {
        let m = self.model;
        rows * row_width(schema, device_width) / m.pcie
            + rows * row_width(schema, arrow_width) / (m.gather_per_core * self.cores())
    }

    fn kernel_seconds(&self, rows: f64, schema: &Schema) -> f64 {
        self.model.fixed_seconds + rows * row_width(schema, device_width) / self.model.hbm
    }

    /// Host time to code the string columns a kernel needs as codes, and the bytes of
    /// those it only tests, which upload as offsets and bytes. Measured on the H200
    /// (2026-12-07, EXPLAIN ANALYZE at SF10): values of few distinct strings code
    /// through a view cache at a few ns a row on every core; many distinct values are
    /// hashed and looked up by every core in the column's sharded dictionary, and only
    /// appending a new value is serial (see [`CostModel::host_string_code_ns`]).
    /// Returns the coding and the bytes' seconds apart, and the columns coded.
    fn strings_seconds(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        needed: Option<&HashSet<String>>,
        rows: f64,
    ) -> (f64, f64, Vec<usize>) {
        let m = self.model;
        let schema = plan.schema();
        let sample = first_rows(plan);
        let (mut serial, mut parallel, mut tested_bytes) = (0.0, 0.0, 0.0);
        let mut coded = Vec::new();
        for (i, field) in schema.fields().iter().enumerate() {
            if !field.data_type().is_string() {
                continue;
            }
            let as_codes = needed.is_none_or(|n| n.contains(field.name()));
            if as_codes && codes_are_kept(plan, i) {
                // Copied like an `Int32` column (counted with the upload).
                continue;
            }
            if as_codes {
                coded.push(i);
            }
            let shape = sample
                .as_ref()
                .map(|batch| StringShape::of(batch.column(i).as_ref()));
            match shape {
                Some(shape) if needed.is_some_and(|n| !n.contains(field.name())) => {
                    tested_bytes += rows * shape.mean_bytes;
                }
                Some(shape) if shape.few && shape.longest > SHORT_STRING_BYTES => {
                    parallel += rows * m.host_long_string_ns;
                }
                Some(shape) if shape.few => parallel += rows * m.host_short_string_ns,
                Some(shape) if shape.distinct_share() <= REPEATED_SHARE => {
                    let new = shape.distinct_estimate(rows);
                    parallel += rows * m.host_repeated_string_ns + new * m.host_string_code_ns;
                    serial += new * m.host_string_append_ns;
                }
                // Many distinct values, or none sampled: coded through the dictionary.
                _ => {
                    parallel += rows * m.host_string_code_ns;
                    serial += rows * m.host_string_append_ns;
                }
            }
        }
        let bytes = tested_bytes / (m.gather_per_core * self.cores()) + tested_bytes / m.pcie;
        ((serial + parallel / self.cores()) * 1e-9, bytes, coded)
    }
}

/// Whether column `column` of `plan`, a scan of an in-memory table, has its codes
/// kept from an earlier upload ([`StringCodeCache`]).
fn codes_are_kept(plan: &Arc<dyn ExecutionPlan>, column: usize) -> bool {
    memory_source(plan.as_ref())
        .and_then(|memory| table_column_arrays(memory, column))
        .is_some_and(|arrays| StringCodeCache::shared().contains(&arrays))
}

/// What a sample of a string column looks like to the gatherer.
struct StringShape {
    /// At most [`FEW_DISTINCT`] distinct values.
    few: bool,
    /// Distinct and non-NULL values sampled.
    distinct: usize,
    sampled: usize,
    longest: usize,
    mean_bytes: f64,
}

impl StringShape {
    /// Distinct values over non-NULL values sampled.
    fn distinct_share(&self) -> f64 {
        self.distinct as f64 / self.sampled.max(1) as f64
    }

    /// Distinct values in `rows` rows of a column whose sample repeats values: the
    /// sample's distinct count grown with the square root of the rows it stands for, at
    /// most `rows`. An upper bound for a column of fixed values (150 part types in a
    /// 2,048-row sample of 2 M rows: about 4,700, where coding every row would charge
    /// 2 M), and it grows for a column whose distinct values keep coming.
    fn distinct_estimate(&self, rows: f64) -> f64 {
        let scale = (rows / self.sampled.max(1) as f64).max(1.0).sqrt();
        (self.distinct as f64 * scale).min(rows)
    }

    fn of(column: &dyn Array) -> Self {
        let values: Vec<Option<&str>> = match column.data_type() {
            DataType::Utf8View => column.as_string_view().iter().collect(),
            DataType::Utf8 => column.as_string::<i32>().iter().collect(),
            DataType::LargeUtf8 => column.as_string::<i64>().iter().collect(),
            _ => Vec::new(),
        };
        let present: Vec<&str> = values.into_iter().flatten().collect();
        let distinct: HashSet<&str> = present.iter().copied().collect();
        let total: usize = present.iter().map(|v| v.len()).sum();
        Self {
            few: distinct.len() <= FEW_DISTINCT,
            distinct: distinct.len(),
            sampled: present.len(),
            longest: present.iter().map(|v| v.len()).max().unwrap_or(0),
            mean_bytes: total as f64 / present.len().max(1) as f64,
        }
    }
}

fn row_width(schema: &Schema, width: fn(&DataType) -> usize) -> f64 {
    schema
        .fields()
        .iter()
        .map(|f| width(f.data_type()) as f64)
        .sum()
}

/// Bytes a row of the columns `filter`'s predicate reads.
fn tested_width(filter: &FilterExec) -> f64 {
    super::cost::tested_width(filter.predicate(), &filter.input().schema())
}

fn names_of(schema: &Schema) -> HashSet<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// The input column names `expr` reads.
fn names_in(schema: &Schema, expr: &Arc<dyn PhysicalExpr>) -> HashSet<String> {
    collect_columns(expr)
        .into_iter()
        .filter_map(|c| schema.fields().get(c.index()).map(|f| f.name().clone()))
        .collect()
}

/// The first rows of each partition of the in-memory table `plan` scans (below any
/// exchanges), in `plan`'s columns.
fn sample_batches(plan: &Arc<dyn ExecutionPlan>) -> Vec<RecordBatch> {
    let scan = below_exchanges(Arc::clone(plan));
    let Some(memory) = memory_source(scan.as_ref()) else {
        return Vec::new();
    };
    memory
        .partitions()
        .iter()
        .filter_map(|partition| partition.iter().find(|b| b.num_rows() > 0))
        .filter_map(|batch| {
            let batch = batch.slice(0, batch.num_rows().min(SAMPLE_ROWS));
            match memory.projection() {
                Some(columns) => batch.project(columns).ok(),
                None => Some(batch),
            }
        })
        .filter(|batch| batch.schema().fields().len() == plan.schema().fields().len())
        .collect()
}

fn first_rows(plan: &Arc<dyn ExecutionPlan>) -> Option<RecordBatch> {
    sample_batches(plan).into_iter().next()
}

/// The fraction of sampled rows `filter` keeps, when it reads an in-memory table.
pub(super) fn sampled_selectivity(filter: &FilterExec) -> Option<f64> {
    let mut kept = 0usize;
    let mut seen = 0usize;
    for batch in sample_batches(filter.input()) {
        let value = filter.predicate().evaluate(&batch).ok()?;
        let mask = value.into_array(batch.num_rows()).ok()?;
        let mask = mask.as_boolean_opt()?;
        kept += mask.true_count();
        seen += batch.num_rows();
    }
    // A filter that keeps nothing in the sample still keeps something of the table.
    (seen > 0).then(|| (kept.max(1) as f64) / seen as f64)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::Field;
    use datafusion::catalog::MemTable;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// `fact(k, v)` of `rows` rows in four partitions, `k` cycling through 1,000 keys,
    /// and `dim(k, name)` of 1,000 rows, one in ten named `x`.
    async fn plan_of(sql: &str, rows: i64) -> Arc<dyn ExecutionPlan> {
        let ctx = SessionContext::new();
        let fact = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, false),
        ]));
        let part = |p: i64| {
            let ids = (p * rows / 4)..((p + 1) * rows / 4);
            RecordBatch::try_new(
                Arc::clone(&fact),
                vec![
                    Arc::new(Int64Array::from_iter_values(ids.clone().map(|i| i % 1000))),
                    Arc::new(Int64Array::from_iter_values(ids)),
                ],
            )
            .unwrap()
        };
        let partitions = (0..4).map(|p| vec![part(p)]).collect();
        let fact_table = MemTable::try_new(Arc::clone(&fact), partitions).unwrap();
        ctx.register_table("fact", Arc::new(fact_table)).unwrap();
        let dim = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let names = (0..1000).map(|i| if i % 10 == 0 { "x" } else { "y" });
        let batch = RecordBatch::try_new(
            Arc::clone(&dim),
            vec![
                Arc::new(Int64Array::from_iter_values(0..1000)),
                Arc::new(StringArray::from_iter_values(names)),
            ],
        )
        .unwrap();
        let dim_table = MemTable::try_new(dim, vec![vec![batch]]).unwrap();
        ctx.register_table("dim", Arc::new(dim_table)).unwrap();
        ctx.sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap()
    }

    fn model() -> CostModel {
        CostModel {
            cores: 16.0,
            ..CostModel::default()
        }
    }

    fn root_prediction(plan: &Arc<dyn ExecutionPlan>, resident: bool) -> SubtreePrediction {
        let all = predict_all(plan, &model(), &|_| resident);
        all[&node_key(plan)]
    }

    #[test]
    fn a_subtree_moves_only_when_the_gpu_wins_by_the_margin() {
        let close = SubtreePrediction {
            cpu_ms: 71.3,
            gpu_ms: 69.8,
            transfer_ms: 66.2,
            rows: 1.0,
            kept_coding_ms: 0.0,
        };
        assert!(!close.gpu_pays());
        assert!(close.describe().contains("margin"), "{}", close.describe());
        let clear = SubtreePrediction {
            gpu_ms: 40.0,
            ..close
        };
        assert!(clear.gpu_pays());
        assert!(!clear.describe().contains("margin"));
        // Coding whose codes are kept is paid once: the next run would move it.
        let coding = SubtreePrediction {
            kept_coding_ms: 30.0,
            ..close
        };
        assert!(!coding.gpu_pays() && coding.pays_once_coded());
        assert!(!close.pays_once_coded());
    }

    #[test]
    fn repeating_strings_are_charged_for_their_distinct_values_only() {
        let types = StringArray::from_iter_values((0..2048).map(|i| format!("TYPE {}", i % 150)));
        let shape = StringShape::of(&types);
        assert!(!shape.few && shape.distinct_share() <= REPEATED_SHARE);
        let new = shape.distinct_estimate(2.0e6);
        assert!((150.0..5_000.0).contains(&new), "{new}");
        // Never more than the rows themselves.
        assert_eq!(shape.distinct_estimate(100.0), 100.0);
        let phones = StringArray::from_iter_values((0..2048).map(|i| format!("27-{i:07}")));
        assert!(StringShape::of(&phones).distinct_share() > REPEATED_SHARE);
    }

    #[tokio::test]
    async fn a_filter_over_a_table_keeps_its_sampled_fraction() {
        let plan = plan_of("select v from fact where v % 100 = 0", 400_000).await;
        let prediction = root_prediction(&plan, false);
        // 1% of 400,000 rows; the sample is each partition's first 2,048 rows.
        assert!(
            (3_000.0..5_000.0).contains(&prediction.rows),
            "{}",
            prediction.describe()
        );
    }

    #[tokio::test]
    async fn an_inner_join_keeps_the_large_side_scaled_by_the_small_sides_filter() {
        let sql = "select fact.v from fact join dim on fact.k = dim.k where dim.name = 'x'";
        let plan = plan_of(sql, 400_000).await;
        let prediction = root_prediction(&plan, false);
        // One key in ten survives the filter on `dim`: about 40,000 of 400,000 rows.
        assert!(
            (20_000.0..80_000.0).contains(&prediction.rows),
            "{}",
            prediction.describe()
        );
        let all = predict_all(&plan, &model(), &|_| false);
        assert!(all.len() >= 4, "every node has its prediction");
    }

    #[tokio::test]
    async fn small_joins_stay_on_the_cpu_and_resident_inputs_cost_no_transfer() {
        let sql = "select dim.name, sum(fact.v) from fact join dim on fact.k = dim.k \
                   group by dim.name order by dim.name";
        let small = plan_of(sql, 4_000).await;
        assert!(has_join_or_sort(&small));
        let prediction = root_prediction(&small, false);
        assert!(!prediction.gpu_pays(), "{}", prediction.describe());
        let large = plan_of(sql, 4_000_000).await;
        let from_host = root_prediction(&large, false);
        let resident = root_prediction(&large, true);
        assert!(
            resident.transfer_ms < from_host.transfer_ms && resident.gpu_ms < from_host.gpu_ms,
            "{} / {}",
            resident.describe(),
            from_host.describe()
        );
        assert_eq!(resident.cpu_ms, from_host.cpu_ms);
    }

    /// What `host_filter` says of the one filter of `sql`'s plan over 400,000 rows.
    async fn host_filter_of(sql: &str) -> Option<f64> {
        fn filters(plan: &Arc<dyn ExecutionPlan>) -> Vec<Arc<dyn ExecutionPlan>> {
            let mut found: Vec<Arc<dyn ExecutionPlan>> =
                plan.children().into_iter().flat_map(filters).collect();
            if plan.is::<FilterExec>() {
                found.push(Arc::clone(plan));
            }
            found
        }
        let plan = plan_of(sql, 400_000).await;
        let [filter] = &filters(&plan)[..] else {
            panic!("one filter expected in {sql}");
        };
        let filter = filter.downcast_ref::<FilterExec>().unwrap();
        super::super::host_filter::host_filter(filter).map(|(_, selectivity)| selectivity)
    }

    #[tokio::test]
    async fn only_filters_keeping_few_rows_of_a_table_run_on_the_host_and_cut_the_upload() {
        let selective = host_filter_of("select k, sum(v) from fact where k < 100 group by k");
        let selectivity = selective
            .await
            .expect("a filter keeping a tenth runs on the host");
        assert!((0.05..0.2).contains(&selectivity), "{selectivity}");
        let broad = host_filter_of("select k, sum(v) from fact where k >= 100 group by k");
        assert!(broad.await.is_none());
        // The GPU's upload is charged for the rows the host filter keeps.
        let join = "select dim.name, sum(fact.v) from fact join dim on fact.k = dim.k \
                    where fact.k {} group by dim.name order by dim.name";
        let few = root_prediction(
            &plan_of(&join.replace("{}", "< 100"), 4_000_000).await,
            false,
        );
        let most = root_prediction(
            &plan_of(&join.replace("{}", ">= 100"), 4_000_000).await,
            false,
        );
        assert!(
            few.transfer_ms * 4.0 < most.transfer_ms,
            "{} / {}",
            few.describe(),
            most.describe()
        );
    }
}
