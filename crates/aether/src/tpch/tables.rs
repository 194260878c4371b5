//! The eight TPC-H tables and their Arrow generators.
//!
//! Generation uses `tpchgen`'s part splitting: part `k` of `n` of a table is an
//! independent, deterministic slice of its rows, so parts can be generated on separate
//! threads (or written to separate files) and together equal the whole table.

use std::fmt;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// Rows per generated batch, eight times DataFusion's default batch size.
///
/// DataFusion sizes an in-memory table by visiting every batch each time an optimizer
/// rule asks for its statistics, so planning time grows with the number of batches:
/// with 8,192-row batches, planning TPC-H Q1 took 20-45 ms at SF10 on the H200 host
/// (7,324 lineitem batches), more than resident GPU execution; with 65,536-row batches
/// it took 6-10 ms. Operators take input batches of any size.
pub const GENERATED_BATCH_ROWS: usize = 65_536;

/// A stream of generated batches.
pub type BatchIter = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>;

/// One of the TPC-H tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TpchTable {
    Region,
    Nation,
    Supplier,
    Customer,
    Part,
    PartSupp,
    Orders,
    LineItem,
}

impl TpchTable {
    /// All tables, smallest first.
    pub const ALL: [TpchTable; 8] = [
        Self::Region,
        Self::Nation,
        Self::Supplier,
        Self::Customer,
        Self::Part,
        Self::PartSupp,
        Self::Orders,
        Self::LineItem,
    ];

    /// The SQL name of the table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Region => "region",
            Self::Nation => "nation",
            Self::Supplier => "supplier",
            Self::Customer => "customer",
            Self::Part => "part",
            Self::PartSupp => "partsupp",
            Self::Orders => "orders",
            Self::LineItem => "lineitem",
        }
    }

    /// The table's Arrow schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            Self::Region => RegionArrow::schema_ref(),
            Self::Nation => NationArrow::schema_ref(),
            Self::Supplier => SupplierArrow::schema_ref(),
            Self::Customer => CustomerArrow::schema_ref(),
            Self::Part => PartArrow::schema_ref(),
            Self::PartSupp => PartSuppArrow::schema_ref(),
            Self::Orders => OrderArrow::schema_ref(),
            Self::LineItem => LineItemArrow::schema_ref(),
        }
    }

    /// Approximate rows at scale factor 1, to split work into parts of similar size.
    pub fn rows_at_sf1(self) -> u64 {
        match self {
            Self::Region => 5,
            Self::Nation => 25,
            Self::Supplier => 10_000,
            Self::Customer => 150_000,
            Self::Part => 200_000,
            Self::PartSupp => 800_000,
            Self::Orders => 1_500_000,
            Self::LineItem => 6_001_215,
        }
    }

    /// How many parts to split this table into at `scale_factor`, given `target` parts for
    /// the largest table: small tables get one part, since splitting them costs more
    /// than it saves.
    pub fn parts_for(self, scale_factor: f64, target: usize) -> usize {
        const MIN_ROWS_PER_PART: f64 = 100_000.0;
        let rows = self.rows_at_sf1() as f64 * scale_factor.max(0.0);
        let useful = (rows / MIN_ROWS_PER_PART).ceil().max(1.0) as usize;
        useful.min(target.max(1))
    }

    /// The batches of part `part` (1-based) of `parts` at `scale_factor`.
    pub fn generate(self, scale_factor: f64, part: usize, parts: usize) -> BatchIter {
        let (part, parts) = (part as i32, parts as i32);
        let rows = GENERATED_BATCH_ROWS;
        match self {
            Self::Region => Box::new(
                RegionArrow::new(RegionGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
            Self::Nation => Box::new(
                NationArrow::new(NationGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
            Self::Supplier => Box::new(
                SupplierArrow::new(SupplierGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
            Self::Customer => Box::new(
                CustomerArrow::new(CustomerGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
            Self::Part => Box::new(
                PartArrow::new(PartGenerator::new(scale_factor, part, parts)).with_batch_size(rows),
            ),
            Self::PartSupp => Box::new(
                PartSuppArrow::new(PartSuppGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
            Self::Orders => Box::new(
                OrderArrow::new(OrderGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
            Self::LineItem => Box::new(
                LineItemArrow::new(LineItemGenerator::new(scale_factor, part, parts))
                    .with_batch_size(rows),
            ),
        }
    }
}

impl fmt::Display for TpchTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_generate_the_whole_table() {
        let whole: usize = TpchTable::Supplier
            .generate(0.1, 1, 1)
            .map(|b| b.unwrap().num_rows())
            .sum();
        let split: usize = (1..=3)
            .flat_map(|part| TpchTable::Supplier.generate(0.1, part, 3))
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(whole, 1_000);
        assert_eq!(split, whole);
    }

    #[test]
    fn small_tables_are_not_split() {
        assert_eq!(TpchTable::Nation.parts_for(10.0, 16), 1);
        assert_eq!(TpchTable::LineItem.parts_for(10.0, 16), 16);
        assert_eq!(TpchTable::LineItem.parts_for(0.01, 16), 1);
    }
}
