//! `spark.catalog`: the session's tables and temporary views as small result tables in
//! the layout PySpark reads them (by column position).
//!
//! Tables the server registered (`--tpch`, `--table`) live in the `default` namespace of
//! the `spark_catalog` catalog; temporary views have no namespace, as in Spark.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, ListBuilder, RecordBatch, StringArray, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::logical_expr::LogicalPlan;

use crate::error::{ConnectError, ConnectResult};
use crate::proto::catalog::CatType;
use crate::proto::{self};

use super::Translator;
use super::naming::sql_type_name;
use super::relation::unqualified_scan;

const CATALOG: &str = "spark_catalog";
const DATABASE: &str = "default";

impl Translator {
    pub(super) async fn catalog(&mut self, catalog: &proto::Catalog) -> ConnectResult<LogicalPlan> {
        let Some(kind) = &catalog.cat_type else {
            return Err(ConnectError::invalid("a catalog request without a type"));
        };
        let session = Arc::clone(self.session());
        let batch = match kind {
            CatType::CurrentDatabase(_) => strings("value", &[DATABASE])?,
            CatType::CurrentCatalog(_) => strings("value", &[CATALOG])?,
            CatType::SetCurrentDatabase(set) if set.db_name == DATABASE => empty()?,
            CatType::ListDatabases(_) => databases()?,
            CatType::GetDatabase(get) if get.db_name == DATABASE => databases()?,
            CatType::DatabaseExists(exists) => booleans(&[exists.db_name == DATABASE])?,
            CatType::ListCatalogs(_) => {
                let schema = Schema::new(vec![
                    Field::new("name", DataType::Utf8, false),
                    Field::new("description", DataType::Utf8, true),
                ]);
                RecordBatch::try_new(
                    Arc::new(schema),
                    vec![
                        Arc::new(StringArray::from(vec![CATALOG])),
                        Arc::new(StringArray::from(vec![None::<&str>])),
                    ],
                )?
            }
            CatType::ListTables(list) => {
                let pattern = list.pattern.as_deref();
                let tables: Vec<(String, bool)> = self
                    .table_names()
                    .into_iter()
                    .filter(|(name, _)| pattern.is_none_or(|p| like(name, p)))
                    .collect();
                tables_batch(&tables)?
            }
            CatType::GetTable(get) => {
                let temporary = session.is_temp_view(&get.table_name);
                if !self.table_exists(&get.table_name) {
                    return Err(ConnectError::table_not_found(&get.table_name));
                }
                tables_batch(&[(get.table_name.clone(), temporary)])?
            }
            CatType::TableExists(exists) => booleans(&[self.table_exists(&exists.table_name)])?,
            CatType::ListColumns(list) => self.columns_batch(&list.table_name).await?,
            CatType::DropTempView(drop) => {
                let dropped = session.is_temp_view(&drop.view_name)
                    && session
                        .engine
                        .context()
                        .deregister_table(drop.view_name.as_str())?
                        .is_some();
                session.forget_temp_view(&drop.view_name);
                booleans(&[dropped])?
            }
            CatType::IsCached(cached) => booleans(&[session.is_cached(&cached.table_name)])?,
            CatType::CacheTable(cache) => {
                self.cache_table(&cache.table_name, true, false)?;
                empty()?
            }
            CatType::UncacheTable(uncache) => {
                self.cache_table(&uncache.table_name, false, false)?;
                empty()?
            }
            CatType::ClearCache(_) => {
                session.clear_cached();
                empty()?
            }
            CatType::RefreshTable(_) | CatType::RefreshByPath(_) => empty()?,
            _ => return Err(ConnectError::unsupported("this catalog operation")),
        };
        let schema = batch.schema();
        let table = MemTable::try_new(schema, vec![vec![batch]])?;
        unqualified_scan("catalog", Arc::new(table))
    }

    /// Every table and view of the session, with whether it is temporary.
    fn table_names(&self) -> Vec<(String, bool)> {
        let session = self.session();
        let context = session.engine.context();
        let mut names: Vec<(String, bool)> = Vec::new();
        if let Some(catalog) = context.catalog(&context.catalog_names()[0])
            && let Some(schema) = catalog.schema("public")
        {
            for name in schema.table_names() {
                let temporary = session.is_temp_view(&name);
                names.push((name, temporary));
            }
        }
        names.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        names
    }

    /// `cacheTable` (`cached`) or `uncacheTable`: a missing table is an error unless
    /// `if_exists`.
    pub(super) fn cache_table(
        &self,
        name: &str,
        cached: bool,
        if_exists: bool,
    ) -> ConnectResult<()> {
        if !self.table_exists(name) {
            return if if_exists {
                Ok(())
            } else {
                Err(ConnectError::table_not_found(name))
            };
        }
        self.session().set_cached(name, cached);
        Ok(())
    }

    fn table_exists(&self, name: &str) -> bool {
        self.session()
            .engine
            .context()
            .table_exist(name)
            .unwrap_or(false)
    }

    async fn columns_batch(&self, table: &str) -> ConnectResult<RecordBatch> {
        let context = self.session().engine.context();
        let frame = context
            .table(table)
            .await
            .map_err(|_| ConnectError::table_not_found(table))?;
        let fields = frame.schema().fields().clone();
        let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        let types: Vec<String> = fields
            .iter()
            .map(|f| sql_type_name(f.data_type()).to_lowercase())
            .collect();
        let nullable: Vec<bool> = fields.iter().map(|f| f.is_nullable()).collect();
        let none: Vec<Option<&str>> = vec![None; fields.len()];
        let no: Vec<bool> = vec![false; fields.len()];
        let schema = Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("description", DataType::Utf8, true),
            Field::new("dataType", DataType::Utf8, false),
            Field::new("nullable", DataType::Boolean, false),
            Field::new("isPartition", DataType::Boolean, false),
            Field::new("isBucket", DataType::Boolean, false),
            Field::new("isCluster", DataType::Boolean, false),
        ]);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(none)),
            Arc::new(StringArray::from(types)),
            Arc::new(BooleanArray::from(nullable)),
            Arc::new(BooleanArray::from(no.clone())),
            Arc::new(BooleanArray::from(no.clone())),
            Arc::new(BooleanArray::from(no)),
        ];
        Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
    }
}

fn strings(column: &str, values: &[&str]) -> ConnectResult<RecordBatch> {
    let schema = Schema::new(vec![Field::new(column, DataType::Utf8, false)]);
    Ok(RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(StringArray::from(values.to_vec()))],
    )?)
}

fn booleans(values: &[bool]) -> ConnectResult<RecordBatch> {
    let schema = Schema::new(vec![Field::new("value", DataType::Boolean, false)]);
    Ok(RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(BooleanArray::from(values.to_vec()))],
    )?)
}

fn empty() -> ConnectResult<RecordBatch> {
    Ok(RecordBatch::new_empty(Arc::new(Schema::empty())))
}

fn databases() -> ConnectResult<RecordBatch> {
    let schema = Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("catalog", DataType::Utf8, true),
        Field::new("description", DataType::Utf8, true),
        Field::new("locationUri", DataType::Utf8, false),
    ]);
    Ok(RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from(vec![DATABASE])),
            Arc::new(StringArray::from(vec![CATALOG])),
            Arc::new(StringArray::from(vec!["default database"])),
            Arc::new(StringArray::from(vec!["memory:/"])),
        ],
    )?)
}

/// `name, catalog, namespace, description, tableType, isTemporary` per table.
fn tables_batch(tables: &[(String, bool)]) -> ConnectResult<RecordBatch> {
    let mut namespace = ListBuilder::new(StringBuilder::new());
    for (_, temporary) in tables {
        if !temporary {
            namespace.values().append_value(DATABASE);
        }
        namespace.append(true);
    }
    let schema = Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("catalog", DataType::Utf8, true),
        Field::new("namespace", DataType::new_list(DataType::Utf8, true), true),
        Field::new("description", DataType::Utf8, true),
        Field::new("tableType", DataType::Utf8, false),
        Field::new("isTemporary", DataType::Boolean, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            tables.iter().map(|(n, _)| n.as_str()),
        )),
        Arc::new(StringArray::from_iter(
            tables.iter().map(|(_, t)| (!t).then_some(CATALOG)),
        )),
        Arc::new(namespace.finish()),
        Arc::new(StringArray::from(vec![None::<&str>; tables.len()])),
        Arc::new(StringArray::from_iter_values(
            tables
                .iter()
                .map(|(_, t)| if *t { "TEMPORARY" } else { "MANAGED" }),
        )),
        Arc::new(BooleanArray::from_iter(
            tables.iter().map(|(_, t)| Some(*t)),
        )),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
}

/// Spark's catalog patterns: `*` any characters, `|` alternatives, case-insensitive.
fn like(name: &str, pattern: &str) -> bool {
    pattern.split('|').any(|alternative| {
        let alternative = alternative.trim().to_ascii_lowercase();
        let name = name.to_ascii_lowercase();
        glob(&name, &alternative)
    })
}

fn glob(text: &str, pattern: &str) -> bool {
    match pattern.split_once('*') {
        None => text == pattern,
        Some((prefix, rest)) => {
            text.starts_with(prefix)
                && (0..=text.len() - prefix.len()).any(|i| {
                    text.is_char_boundary(prefix.len() + i) && glob(&text[prefix.len() + i..], rest)
                })
        }
    }
}
