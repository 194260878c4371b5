//! Spark's `range` table function for SQL (`SELECT id FROM range(10)`).
//!
//! DataFusion's `range` names its column `value`; Spark's names it `id`. Each Connect
//! session's context gets this wrapper in place of the built-in one: the same generator,
//! seen through a projection that renames the column.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::provider_as_source;
use datafusion::datasource::view::ViewTable;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{LogicalPlanBuilder, col};

/// DataFusion's `range` with its column named `id`.
#[derive(Debug)]
struct SparkRange {
    generator: Arc<dyn TableFunctionImpl>,
}

impl TableFunctionImpl for SparkRange {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let generated = self.generator.call_with_args(args)?;
        let plan = LogicalPlanBuilder::scan("range", provider_as_source(generated), None)?
            .project(vec![col("value").alias("id")])?
            .build()?;
        Ok(Arc::new(ViewTable::new(plan, None)))
    }
}

/// Replaces `context`'s `range` table function with Spark's.
pub fn install_spark_range(context: &SessionContext) -> Result<()> {
    let generator = Arc::clone(context.table_function("range")?.function());
    context.register_udtf("range", Arc::new(SparkRange { generator }));
    Ok(())
}
