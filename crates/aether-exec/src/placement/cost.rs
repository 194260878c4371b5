//! Does a GPU segment pay? A first cost model from byte counts and measured rates.
//!
//! The prediction compares the CPU scanning the segment's input in Arrow form on every
//! core with the GPU path: the host gathering the input into device layout (also on
//! every core, straight into pinned slabs), PCIe at the pinned rate `aether doctor`
//! measures on the H200 (55 GB/s, taken as 50), the kernel at HBM speed and a fixed
//! launch and synchronization cost. Gathering and PCIe overlap in practice; the model
//! adds them.
//! Resident input skips the gathering and PCIe. The rates are rough and deliberately
//! conservative for the GPU; each decision prints its numbers so they can be checked.

use datafusion::arrow::datatypes::{DataType, Schema};

/// Rates the model uses, in bytes per second unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// Arrow bytes one CPU core filters and aggregates per second.
    pub cpu_scan_per_core: f64,
    /// Arrow bytes one core gathers into device layout per second.
    pub gather_per_core: f64,
    /// Host-to-device DMA from pinned slabs.
    pub pcie: f64,
    /// Device memory read rate of a fused kernel.
    pub hbm: f64,
    /// Launches, synchronizations and the result download, in seconds.
    pub fixed_seconds: f64,
    pub cores: f64,
    /// Arrow bytes one core filters per second (the predicate and the copy of kept rows).
    pub cpu_filter_per_core: f64,
    /// Arrow bytes one core decodes from files per second.
    pub cpu_decode_per_core: f64,
    /// Nanoseconds of one core per row: a computed expression, a hash exchange, a hash
    /// join's build, probe and output, a grouped aggregate's row and each of its
    /// functions, a top-k's row, and a sort's comparison.
    pub cpu_expression_row_ns: f64,
    pub cpu_exchange_row_ns: f64,
    pub cpu_build_row_ns: f64,
    pub cpu_probe_row_ns: f64,
    pub cpu_join_output_row_ns: f64,
    pub cpu_aggregate_row_ns: f64,
    pub cpu_aggregate_call_ns: f64,
    pub cpu_topk_row_ns: f64,
    pub cpu_sort_compare_ns: f64,
    /// Nanoseconds per value to code strings on the host: per core, a column of many
    /// distinct values (hashed, then looked up in one of the dictionary's shards) and
    /// one of few distinct long or short values (found by view), a row of a column
    /// whose values repeat (hashed and found in a shard: no new value); and, on one
    /// core at a time, appending a new value to the column's dictionary.
    pub host_string_code_ns: f64,
    pub host_long_string_ns: f64,
    pub host_short_string_ns: f64,
    pub host_repeated_string_ns: f64,
    pub host_string_append_ns: f64,
}

impl Default for CostModel {
    fn default() -> Self {
        Self {
            cpu_scan_per_core: 1.0e9,
            // Measured on the H200 host (2026-12-01): 3.75 M lineitem rows of TPC-H Q1
            // (375 MB of Arrow) gathered into pinned slabs in 110-135 ms per core with 16
            // partitions at once, about 3 GB/s a core.
            gather_per_core: 3.0e9,
            pcie: 50.0e9,
            hbm: 3.0e12,
            fixed_seconds: 0.5e-3,
            cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
            cpu_filter_per_core: 3.0e9,
            cpu_decode_per_core: 1.0e9,
            cpu_expression_row_ns: 5.0,
            cpu_exchange_row_ns: 20.0,
            cpu_build_row_ns: 60.0,
            cpu_probe_row_ns: 40.0,
            cpu_join_output_row_ns: 20.0,
            cpu_aggregate_row_ns: 25.0,
            cpu_aggregate_call_ns: 5.0,
            cpu_topk_row_ns: 15.0,
            cpu_sort_compare_ns: 10.0,
            // Many distinct values, measured with the sharded dictionary (H100 host, 16
            // cores, SF10, 2026-12-07, gather summed over partitions in EXPLAIN
            // ANALYZE): one partition alone codes `supplier`'s four columns at about
            // 250 ns a value; sixteen at once take about 470 ns a value summed for
            // `c_name` (Q18) and 750-790 for `c_phone` (Q22) and `customer`'s four
            // columns (Q10), about 45 ns a value of wall time: 250 ns a value a core
            // plus 30 ns serialized on the shared values. (Before sharding, 1.5 M
            // `c_name` values took about 230 ms, one at a time under one lock.) Few long
            // values (`l_shipinstruct`) were hashed per row (about 50 ns a row a core)
            // before the view cache learnt long values.
            host_string_code_ns: 250.0,
            host_long_string_ns: 6.0,
            host_short_string_ns: 3.0,
            // TPC-H Q16's `part` (2 M rows: `p_type`, 150 values, beside `p_brand`, 25
            // values, and two integers) gathered in 167 ms summed over 16 partitions
            // (H100 host, SF10, 2026-12-07): about 80 ns a row a core for `p_type`.
            host_repeated_string_ns: 80.0,
            host_string_append_ns: 30.0,
        }
    }
}

/// A prediction, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub cpu_ms: f64,
    pub gpu_ms: f64,
    pub transfer_ms: f64,
    pub rows: usize,
}

impl Prediction {
    pub fn gpu_pays(&self) -> bool {
        self.gpu_ms < self.cpu_ms
    }

    pub fn describe(&self) -> String {
        format!(
            "predicted GPU {:.1} ms (host gather and PCIe {:.1} ms) vs CPU {:.1} ms for {} input rows",
            self.gpu_ms, self.transfer_ms, self.cpu_ms, self.rows
        )
    }
}

/// Bytes a row of the columns of `schema` that `predicate` reads.
pub(super) fn tested_width(
    predicate: &std::sync::Arc<dyn datafusion::physical_expr::PhysicalExpr>,
    schema: &Schema,
) -> f64 {
    datafusion::physical_expr::utils::collect_columns(predicate)
        .iter()
        .filter_map(|column| schema.fields().get(column.index()))
        .map(|field| arrow_width(field.data_type()) as f64)
        .sum()
}

pub(super) fn arrow_width(data_type: &DataType) -> usize {
    match data_type {
        DataType::Boolean | DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 | DataType::UInt32 | DataType::Float32 | DataType::Date32 => 4,
        DataType::Decimal128(_, _) | DataType::Utf8View => 16,
        DataType::Utf8 | DataType::LargeUtf8 => 20,
        _ => 8,
    }
}

pub(super) fn device_width(data_type: &DataType) -> usize {
    match data_type {
        DataType::Decimal128(p, _) if *p <= 18 => 8,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => 4,
        other => arrow_width(other),
    }
}

impl CostModel {
    /// The prediction for a segment reading `rows` rows of `schema`.
    pub fn predict(&self, schema: &Schema, rows: usize, resident: bool) -> Prediction {
        let per_row = |width: fn(&DataType) -> usize| -> f64 {
            schema
                .fields()
                .iter()
                .map(|f| width(f.data_type()) as f64)
                .sum()
        };
        let arrow_bytes = rows as f64 * per_row(arrow_width);
        let device_bytes = rows as f64 * per_row(device_width);
        let cpu = arrow_bytes / (self.cpu_scan_per_core * self.cores);
        let transfer = if resident {
            0.0
        } else {
            arrow_bytes / (self.gather_per_core * self.cores) + device_bytes / self.pcie
        };
        let gpu = transfer + device_bytes / self.hbm + self.fixed_seconds;
        Prediction {
            cpu_ms: cpu * 1e3,
            gpu_ms: gpu * 1e3,
            transfer_ms: transfer * 1e3,
            rows,
        }
    }
}

impl CostModel {
    /// [`Self::predict`] for an upload that filters on the host first and keeps
    /// `kept` of the rows (`placement/host_filter.rs`): the filter reads its columns
    /// (`tested_width` bytes a row) for every row and cuts out the rows it keeps
    /// (`ops/host_predicate.rs`); only those are gathered and sent.
    pub fn predict_host_filtered(
        &self,
        schema: &Schema,
        rows: usize,
        kept: f64,
        tested_width: f64,
    ) -> Prediction {
        let kept = kept.clamp(0.0, 1.0);
        let all = self.predict(schema, rows, false);
        let passed = self.predict(schema, (rows as f64 * kept) as usize, false);
        let width: f64 = schema
            .fields()
            .iter()
            .map(|f| arrow_width(f.data_type()) as f64)
            .sum();
        let filter_ms = rows as f64 * (tested_width + kept * width)
            / (self.cpu_filter_per_core * self.cores)
            * 1e3;
        Prediction {
            cpu_ms: all.cpu_ms,
            gpu_ms: passed.gpu_ms + filter_ms,
            transfer_ms: passed.transfer_ms + filter_ms,
            rows,
        }
    }

    /// The prediction for a segment reading `rows` rows of `input` and returning up to
    /// as many rows of `output` to the host (every row kept, the worst case), where the
    /// host rebuilds them at the gathering rate.
    pub fn predict_rows(
        &self,
        input: &Schema,
        output: &Schema,
        rows: usize,
        resident: bool,
    ) -> Prediction {
        let mut prediction = self.predict(input, rows, resident);
        let bytes = |width: fn(&DataType) -> usize| -> f64 {
            rows as f64
                * output
                    .fields()
                    .iter()
                    .map(|f| width(f.data_type()) as f64)
                    .sum::<f64>()
        };
        let back = bytes(device_width) / self.pcie
            + bytes(arrow_width) / (self.gather_per_core * self.cores);
        prediction.transfer_ms += back * 1e3;
        prediction.gpu_ms += back * 1e3;
        prediction
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::Field;

    use super::*;

    #[test]
    fn a_host_filter_cuts_the_transfer_to_the_rows_it_keeps() {
        let schema = Schema::new(vec![
            Field::new("d", DataType::Date32, false),
            Field::new("v", DataType::Decimal128(15, 2), false),
        ]);
        let model = CostModel {
            cores: 16.0,
            ..CostModel::default()
        };
        let all = model.predict(&schema, 60_000_000, false);
        // A filter on one date column (four bytes a row) keeping 2% of the rows.
        let few = model.predict_host_filtered(&schema, 60_000_000, 0.02, 4.0);
        assert_eq!(few.cpu_ms, all.cpu_ms);
        // The filter's host pass reads its column for every row; what it saves is the
        // PCIe and gathering of the rest.
        assert!(few.transfer_ms < all.transfer_ms, "{}", few.describe());
        assert!(few.gpu_ms < all.gpu_ms, "{}", few.describe());
        assert!(few.gpu_ms > model.predict(&schema, 1_200_000, false).gpu_ms);
        // Testing wider columns costs more.
        let wide = model.predict_host_filtered(&schema, 60_000_000, 0.02, 48.0);
        assert!(wide.gpu_ms > few.gpu_ms);
    }

    #[test]
    fn large_inputs_pay_small_ones_stay_on_the_cpu() {
        // TPC-H Q1's input: four decimals, a date and two one-letter flags.
        let mut fields: Vec<Field> = (0..4)
            .map(|i| Field::new(format!("v{i}"), DataType::Decimal128(15, 2), false))
            .collect();
        fields.push(Field::new("d", DataType::Date32, false));
        fields.push(Field::new("f", DataType::Utf8View, false));
        fields.push(Field::new("s", DataType::Utf8View, false));
        let schema = Schema::new(fields);
        let model = CostModel {
            cores: 16.0,
            ..CostModel::default()
        };
        assert!(!model.predict(&schema, 1_000, false).gpu_pays());
        // Q1 at SF10 from host memory: measured 209 ms on the GPU against 457 ms on the
        // CPU (H200 host, 2026-12-01); resident, 14 ms end to end.
        let from_host = model.predict(&schema, 60_000_000, false);
        assert!(from_host.gpu_pays(), "{}", from_host.describe());
        assert!(from_host.gpu_ms > 100.0, "{}", from_host.describe());
        let resident = model.predict(&schema, 60_000_000, true);
        assert!(
            resident.gpu_pays() && resident.gpu_ms < 5.0,
            "{}",
            resident.describe()
        );
    }
}
