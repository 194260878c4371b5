//! Arrow IPC streams, the form Spark Connect carries rows in both directions.
//!
//! Each `ArrowBatch` response holds a whole IPC stream (schema, batches, end marker) and
//! its exact row count; `LocalRelation.data` (rows from `createDataFrame`) is one too.

use std::io::Cursor;

use arrow::array::RecordBatch;
use arrow::compute::cast;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;

use crate::error::{ConnectError, ConnectResult};

/// One IPC stream holding `batches` (which may be none: the schema alone).
pub fn encode(schema: &Schema, batches: &[RecordBatch]) -> ConnectResult<Vec<u8>> {
    let mut buffer = Vec::new();
    {
        let mut writer = StreamWriter::try_new(&mut buffer, schema)?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    Ok(buffer)
}

/// The schema and batches of one IPC stream.
pub fn decode(data: &[u8]) -> ConnectResult<(SchemaRef, Vec<RecordBatch>)> {
    let reader = StreamReader::try_new(Cursor::new(data), None)
        .map_err(|e| ConnectError::invalid(format!("invalid Arrow IPC data: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ConnectError::invalid(format!("invalid Arrow IPC data: {e}")))?;
    Ok((schema, batches))
}

/// `batch` with its columns cast to `schema`'s types (same names and order).
pub fn cast_batch(batch: &RecordBatch, schema: &SchemaRef) -> ConnectResult<RecordBatch> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                Ok(std::sync::Arc::clone(column))
            } else {
                cast(column, field.data_type())
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        std::sync::Arc::clone(schema),
        columns,
        &options,
    )?)
}
