//! Expressions over one column, rebased to read column 0 of a one-column batch.
//!
//! A predicate of one string column is evaluated once per value of the column's
//! dictionary, not once per row: the GPU looks its results up by code
//! (`codegen/expr.rs`, `DictionaryLookup`), and so do the host filters over kept codes
//! (`ops/host_predicate.rs`). Both evaluate the predicate over a batch holding only the
//! dictionary's values, so the predicate must read that batch's only column.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::collect_columns;

/// The one column `expr` reads, or `None` when it reads none or several.
pub fn only_column(expr: &Arc<dyn PhysicalExpr>) -> Option<Column> {
    let columns = collect_columns(expr);
    let mut read = columns.into_iter();
    match (read.next(), read.next()) {
        (Some(column), None) => Some(column),
        _ => None,
    }
}

/// `expr` with every column it reads replaced by column 0, named `name`.
pub fn on_column_zero(expr: &Arc<dyn PhysicalExpr>, name: &str) -> Option<Arc<dyn PhysicalExpr>> {
    Arc::clone(expr)
        .transform(|node| {
            let any: &dyn PhysicalExpr = node.as_ref();
            Ok(match any.downcast_ref::<Column>() {
                Some(_) => Transformed::yes(Arc::new(Column::new(name, 0)) as _),
                None => Transformed::no(node),
            })
        })
        .ok()
        .map(|rebased| rebased.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{BinaryExpr, lit};

    #[test]
    fn one_column_is_read_at_index_zero_under_the_given_name() {
        let column = Arc::new(Column::new("flag", 3)) as Arc<dyn PhysicalExpr>;
        let equals = Arc::new(BinaryExpr::new(column, Operator::Eq, lit("A"))) as _;
        assert_eq!(only_column(&equals), Some(Column::new("flag", 3)));
        let rebased = on_column_zero(&equals, "value").unwrap();
        assert_eq!(only_column(&rebased), Some(Column::new("value", 0)));
        assert_eq!(rebased.to_string(), "value@0 = A");
    }

    #[test]
    fn expressions_of_no_column_or_several_have_no_only_column() {
        let a = Arc::new(Column::new("a", 0)) as Arc<dyn PhysicalExpr>;
        let b = Arc::new(Column::new("b", 1)) as Arc<dyn PhysicalExpr>;
        let both = Arc::new(BinaryExpr::new(a, Operator::Eq, b)) as _;
        assert_eq!(only_column(&both), None);
        assert_eq!(only_column(&lit(1)), None);
    }
}
