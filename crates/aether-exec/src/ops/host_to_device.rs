//! `HostToDeviceExec`: the entry of a GPU segment.
//!
//! It reads every partition of its CPU input concurrently, gathers the small batches
//! DataFusion produces into large chunks already in device layout
//! ([`super::host_layout`]) and hands the device batches to the GPU operator above as
//! one stream: a GPU segment consumes one stream of large batches, not DataFusion's
//! many partitions.
//!
//! Over the scan of an in-memory table it is the GPU scan: it reads the table's
//! batches itself (the scan's projection applied), without DataFusion's scan stream;
//! over a filter of that scan placed on the host (`placement/host_prefilter.rs`) it
//! runs the filter itself on the batches it reads.
//!
//! Streaming uploads gather straight into pinned slabs ([`aether_gpu::SlabPool`]): a
//! full slab is queued as one asynchronous copy per buffer and the task goes on with
//! the next slab, so PCIe runs while the host gathers and no byte is copied twice on
//! the host. Chunks kept resident grow in ordinary memory instead (one large chunk per
//! partition, uploaded once through the staging pool).

use std::fmt;
use std::sync::Arc;

use aether_gpu::{DeviceBatch, DeviceBuffer, DeviceColumn, DeviceError, GpuDevice, HostColumn};
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSource;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::host_layout::{CHUNK_STRING_BYTES, ChunkBuilder, GatheredChunk, PinnedChunk};
use super::host_predicate::{HostPredicate, MAX_LOOKUP_VALUES};
use super::resident::ResidentTables;
use super::scan_rows::{ScanPiece, spread_rows};
use super::string_code_cache::{CodedColumn, StringCodeCache, table_column_arrays};
use super::{DeviceExec, DeviceStream, device_error};
use crate::memory_table::memory_source;
use aether_gpu::dictionary::GrowingDictionary;

const OWNER: &str = "HostToDeviceExec";

/// Uploads its CPU input to the GPU in large batches.
#[derive(Debug, Clone)]
pub struct HostToDeviceExec {
    input: Arc<dyn ExecutionPlan>,
    device: Arc<GpuDevice>,
    batch_bytes: usize,
    resident: Option<Arc<ResidentTables>>,
    /// String columns sent as offsets and bytes instead of codes (ascending).
    string_bytes: Vec<usize>,
    /// A filter evaluated on the host before gathering (see [`super::scan_rows`]);
    /// not applied to inputs kept resident, which serve every query.
    host_filter: Option<Arc<dyn PhysicalExpr>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

/// What EXPLAIN ANALYZE shows of an upload: time gathering Arrow batches into device
/// layout and queueing their copies (summed over the partitions, which run at once),
/// time waiting for the GPU operator above to take a chunk, and the rows uploaded.
#[derive(Debug, Clone)]
struct UploadMetrics {
    gather: Time,
    upload: Time,
    consumer_wait: Time,
    output_rows: Count,
    /// Chunks gathered into ordinary memory because every pinned slab was lent out
    /// (or, for resident inputs, by design): each uploads from pageable memory.
    heap_chunks: Count,
}

impl UploadMetrics {
    fn new(set: &ExecutionPlanMetricsSet) -> Self {
        Self {
            gather: MetricBuilder::new(set).subset_time("gather", 0),
            upload: MetricBuilder::new(set).subset_time("upload", 0),
            consumer_wait: MetricBuilder::new(set).subset_time("consumer_wait", 0),
            output_rows: MetricBuilder::new(set).output_rows(0),
            heap_chunks: MetricBuilder::new(set).counter("heap_chunks", 0),
        }
    }
}

impl HostToDeviceExec {
    /// Uploads `input` in batches of about `batch_bytes`; with `resident`, keeps the
    /// uploaded batches for later queries over the same data.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        device: Arc<GpuDevice>,
        batch_bytes: usize,
        resident: Option<Arc<ResidentTables>>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            input,
            device,
            batch_bytes: batch_bytes.max(1 << 20),
            resident,
            string_bytes: Vec::new(),
            host_filter: None,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// Sends string columns `columns` as offsets and bytes rather than codes: the
    /// segment reading them only tests them (see `placement/string_bytes.rs`).
    pub fn with_string_bytes(mut self, columns: Vec<usize>) -> Self {
        let mut columns = columns;
        columns.sort_unstable();
        columns.dedup();
        self.string_bytes = columns;
        self
    }

    /// Drops the rows `predicate` (over the input's columns) does not keep before
    /// gathering them, except when the input is kept resident.
    pub fn with_host_filter(mut self, predicate: Option<Arc<dyn PhysicalExpr>>) -> Self {
        self.host_filter = predicate;
        self
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    /// The in-memory table this upload reads itself: its input is the table's scan,
    /// or a filter right above the scan that the upload runs on the host as it reads
    /// the table (`placement/host_prefilter.rs`), neither holding a pushed-down LIMIT
    /// (which only their own streams apply).
    fn table_read(&self) -> Option<TableRead<'_>> {
        let unlimited = |memory: &&MemorySourceConfig| DataSource::fetch(*memory).is_none();
        let Some(filter) = self.input.downcast_ref::<FilterExec>() else {
            let memory = memory_source(self.input.as_ref()).filter(unlimited)?;
            return Some(TableRead {
                memory,
                scan_schema: self.input.schema(),
                filter: None,
            });
        };
        if self.input.fetch().is_some() {
            return None;
        }
        // A table of fewer partitions than cores is read through a round-robin
        // exchange, which the upload does without.
        let mut scan = filter.input();
        while scan.is::<RepartitionExec>() || scan.is::<CoalescePartitionsExec>() {
            let [child] = scan.children()[..] else {
                return None;
            };
            if scan.fetch().is_some() {
                return None;
            }
            scan = child;
        }
        let memory = memory_source(scan.as_ref()).filter(unlimited)?;
        Some(TableRead {
            memory,
            scan_schema: scan.schema(),
            filter: Some(ReadFilter {
                predicate: filter.predicate(),
                passed_on: filter.projection().as_deref(),
            }),
        })
    }

    /// The string columns this upload sends as codes, by output column.
    fn coded_columns(&self) -> Vec<usize> {
        let schema = self.input.schema();
        (0..schema.fields().len())
            .filter(|i| schema.field(*i).data_type().is_string() && !self.string_bytes.contains(i))
            .collect()
    }

    /// For each coded string column of the in-memory table this upload scans, the
    /// table's arrays of it (one per batch, in partition order): their codes are kept
    /// across queries ([`StringCodeCache`]). Empty for other inputs.
    fn table_string_columns(&self) -> Vec<(usize, Vec<ArrayRef>)> {
        let Some(read) = self.table_read() else {
            return Vec::new();
        };
        self.coded_columns()
            .into_iter()
            .filter_map(|i| Some((i, table_column_arrays(read.memory, read.scan_column(i))?)))
            .collect()
    }

    /// The batches of the in-memory table this upload scans itself, with the scan's
    /// projection applied and the kept codes of the columns in `coded`, in at least
    /// `parallelism` parts when it has the rows for them ([`spread_rows`]); `None`
    /// when the input is not such a scan.
    fn scanned_partitions(
        &self,
        read: Option<&TableRead<'_>>,
        parallelism: usize,
        coded: &[(usize, Arc<CodedColumn>)],
    ) -> Result<Option<Vec<Vec<ScanPiece>>>> {
        let Some(read) = read else {
            return Ok(None);
        };
        let memory = read.memory;
        let piece = |batch: &RecordBatch| {
            let batch = match memory.projection() {
                Some(columns) => batch.project(columns)?,
                None => batch.clone(),
            };
            let codes = coded
                .iter()
                .map(|(i, column)| {
                    let scanned = read.scan_column(*i);
                    let codes = column.codes_of(batch.column(scanned)).ok_or_else(|| {
                        DataFusionError::Internal(format!(
                            "no kept codes for a batch of column {i}"
                        ))
                    })?;
                    Ok((scanned, codes.clone()))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok::<_, DataFusionError>(ScanPiece { batch, codes })
        };
        let partitions = memory
            .partitions()
            .iter()
            .map(|batches| batches.iter().map(piece).collect::<Result<Vec<_>>>())
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(spread_rows(partitions, parallelism)))
    }

    /// One dictionary per coded string column: the kept one of a column in `coded`
    /// (its codes were made with it), a new one for the stream otherwise.
    fn dictionaries(
        &self,
        coded: &[(usize, Arc<CodedColumn>)],
    ) -> Vec<Option<Arc<GrowingDictionary>>> {
        let mut dictionaries: Vec<Option<Arc<GrowingDictionary>>> =
            vec![None; self.input.schema().fields().len()];
        for i in self.coded_columns() {
            dictionaries[i] = Some(Arc::new(GrowingDictionary::default()));
        }
        for (i, column) in coded {
            dictionaries[*i] = Some(Arc::clone(&column.dictionary));
        }
        dictionaries
    }

    /// The kept device batches of this input, or the normal upload with the batches
    /// kept as they pass (when the input is an in-memory table).
    fn execute_resident(
        &self,
        resident: Arc<ResidentTables>,
        context: Arc<TaskContext>,
    ) -> Result<DeviceStream> {
        let Some(fingerprint) = ResidentTables::fingerprint(&self.input) else {
            return self.execute_upload(context, Chunking::Slabs, self.host_filter.clone());
        };
        // The same columns kept as codes and as bytes are different device batches.
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            (fingerprint, &self.string_bytes).hash(&mut hasher);
            hasher.finish()
        };
        if let Some(kept) = resident.get(fingerprint) {
            return Ok(futures::stream::iter(kept.into_iter().map(Ok)).boxed());
        }
        let passed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&passed);
        let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let saw_error = Arc::clone(&failed);
        // Kept batches are read by every later query: one large chunk per partition
        // means fewer launches (and fewer synchronizations) per query.
        let uploads = self
            .execute_upload(context, Chunking::Growing(self.batch_bytes), None)?
            .map(move |item| {
                match &item {
                    Ok(batch) => {
                        if let Ok(mut kept) = seen.lock() {
                            kept.push(Arc::clone(batch));
                        }
                    }
                    Err(_) => saw_error.store(true, std::sync::atomic::Ordering::Relaxed),
                }
                item
            });
        let keep = futures::stream::once(async move {
            if !failed.load(std::sync::atomic::Ordering::Relaxed)
                && let Ok(mut kept) = passed.lock()
            {
                resident.insert(fingerprint, std::mem::take(&mut *kept));
            }
        })
        .filter_map(|()| async { None });
        Ok(uploads.chain(keep).boxed())
    }
}

/// An in-memory table an upload reads itself ([`HostToDeviceExec::table_read`]).
struct TableRead<'a> {
    memory: &'a MemorySourceConfig,
    /// The scan's columns (its projection applied).
    scan_schema: SchemaRef,
    /// The filter over the scan that the upload runs.
    filter: Option<ReadFilter<'a>>,
}

/// A filter an upload runs as it reads a table.
#[derive(Clone, Copy)]
struct ReadFilter<'a> {
    predicate: &'a Arc<dyn PhysicalExpr>,
    /// The scan's columns it passes on (`None`: all of them).
    passed_on: Option<&'a [usize]>,
}

impl TableRead<'_> {
    /// The scan's column behind the upload's column `output`.
    fn scan_column(&self, output: usize) -> usize {
        match self.filter.and_then(|filter| filter.passed_on) {
            Some(columns) => columns[output],
            None => output,
        }
    }
}

/// How a partition's rows are cut into chunks.
#[derive(Debug, Clone, Copy)]
enum Chunking {
    /// Slab-sized chunks gathered in pinned memory, uploaded as they fill.
    Slabs,
    /// Chunks of about this many bytes, growing in ordinary memory.
    Growing(usize),
}

/// One partition's rows on their way to the device.
struct PartitionGatherer {
    device: Arc<GpuDevice>,
    schema: SchemaRef,
    builder: ChunkBuilder,
    chunking: Chunking,
}

impl PartitionGatherer {
    fn new(
        device: &Arc<GpuDevice>,
        schema: &SchemaRef,
        dictionaries: &[Option<Arc<GrowingDictionary>>],
        chunking: Chunking,
    ) -> Result<Self, DeviceError> {
        let builder = match chunking {
            Chunking::Slabs => {
                ChunkBuilder::for_slabs(schema, dictionaries, device.slabs().slab_bytes())?
            }
            Chunking::Growing(_) => ChunkBuilder::new(schema, dictionaries)?,
        };
        Ok(Self {
            device: Arc::clone(device),
            schema: Arc::clone(schema),
            builder,
            chunking,
        })
    }

    /// Gathers `batch`, returning the chunks it filled.
    fn push(&mut self, batch: &RecordBatch) -> Result<Vec<GatheredChunk>, DeviceError> {
        let mut full = Vec::new();
        let rows = batch.num_rows();
        let mut offset = 0;
        while offset < rows {
            if self.builder.needs_begin() {
                self.builder.begin(self.device.slabs().acquire()?);
            }
            let take = self.builder.room().min(rows - offset);
            if take == rows {
                self.builder.append(batch)?;
            } else {
                self.builder.append(&batch.slice(offset, take))?;
            }
            offset += take;
            let done = self.builder.string_bytes() >= CHUNK_STRING_BYTES
                || match self.chunking {
                    Chunking::Slabs => self.builder.room() == 0,
                    Chunking::Growing(bytes) => self.builder.bytes() >= bytes,
                };
            if done {
                full.push(self.builder.take()?);
            }
        }
        Ok(full)
    }

    /// The last, partly filled chunk, if any rows are left.
    fn finish(&mut self) -> Result<Option<GatheredChunk>, DeviceError> {
        if self.builder.rows() == 0 {
            return Ok(None);
        }
        self.builder.take().map(Some)
    }

    async fn upload(&self, chunk: GatheredChunk) -> Result<DeviceBatch> {
        match chunk {
            GatheredChunk::Heap { rows, columns } => {
                upload_heap(&self.device, &self.schema, rows, columns).await
            }
            GatheredChunk::Pinned(chunk) => {
                upload_pinned(&self.device, &self.schema, chunk).map_err(device_error)
            }
        }
    }
}

/// Queues one asynchronous copy per buffer of a slab chunk and gives the slab back
/// with an event recorded after the copies, so it is refilled only once they are done.
fn upload_pinned(
    device: &Arc<GpuDevice>,
    schema: &SchemaRef,
    chunk: PinnedChunk,
) -> Result<DeviceBatch, DeviceError> {
    let start = std::time::Instant::now();
    let PinnedChunk {
        slab,
        rows,
        columns,
    } = chunk;
    let mut slab = slab;
    let bytes: &[u8] = slab.as_mut_slice();
    let copy = |range: std::ops::Range<usize>| {
        // SAFETY: `bytes` is the pinned slab, which goes back to the pool below only
        // with an event recorded after these copies (or after the stream is drained);
        // the pool lends it out again only once that event has completed, so it stays
        // alive and unwritten while the copies run.
        unsafe { DeviceBuffer::upload_async(device, OWNER, &bytes[range]) }
    };
    let uploaded = columns
        .into_iter()
        .map(|column| {
            // A bytes column: the slab holds its offsets; its bytes, gathered in
            // ordinary memory, go through the staging pool.
            let (values, offsets) = match &column.string_bytes {
                Some(bytes) => (
                    DeviceBuffer::upload(device, OWNER, bytes.as_slice())?,
                    Some(copy(column.values)?),
                ),
                None => (copy(column.values)?, None),
            };
            Ok(DeviceColumn {
                data_type: column.data_type,
                form: column.form,
                len: rows,
                null_count: column.null_count,
                values,
                validity: column.validity.map(copy).transpose()?,
                offsets,
            })
        })
        .collect::<Result<Vec<_>, DeviceError>>();
    match device.stream().record_event(None) {
        Ok(copied) => device.slabs().release(slab, Some(copied)),
        Err(e) => {
            // Without an event, wait for the copies before the slab can be reused; if
            // even that fails, the slab is never lent again (a copy may still read it).
            match device.stream().synchronize() {
                Ok(()) => device.slabs().release(slab, None),
                Err(_) => std::mem::forget(slab),
            }
            return Err(DeviceError::driver("recording an upload event")(e));
        }
    }
    crate::trace::phase("queue slab upload", start, || format!("{rows} rows"));
    Ok(DeviceBatch {
        schema: Arc::clone(schema),
        columns: uploaded?,
        num_rows: rows,
    })
}

/// Uploads a chunk gathered in ordinary memory, on a blocking thread so the runtime's
/// workers keep gathering other partitions meanwhile.
async fn upload_heap(
    device: &Arc<GpuDevice>,
    schema: &SchemaRef,
    rows: usize,
    host: Vec<HostColumn>,
) -> Result<DeviceBatch> {
    let device = Arc::clone(device);
    let schema = Arc::clone(schema);
    tokio::task::spawn_blocking(move || {
        let start = std::time::Instant::now();
        let bytes: usize = host.iter().map(HostColumn::transfer_bytes).sum();
        let columns = host
            .iter()
            .map(|column| DeviceColumn::upload_prepared(&device, OWNER, column))
            .collect::<Result<Vec<_>, DeviceError>>()
            .map_err(device_error)?;
        if crate::trace::enabled() {
            let _ = device.stream().synchronize();
        }
        crate::trace::phase("upload", start, || format!("{rows} rows, {bytes} bytes"));
        Ok(DeviceBatch {
            schema,
            columns,
            num_rows: rows,
        })
    })
    .await
    .map_err(|e| DataFusionError::Internal(format!("a GPU upload task failed: {e}")))?
}

impl DisplayAs for HostToDeviceExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let scan = match self.table_read() {
            Some(TableRead {
                filter: Some(_), ..
            }) => "scan of an in-memory table, its filter on the host, ",
            Some(_) => "scan of an in-memory table, ",
            None => "",
        };
        let schema = self.input.schema();
        let bytes: Vec<&str> = self
            .string_bytes
            .iter()
            .filter_map(|i| schema.fields().get(*i).map(|f| f.name().as_str()))
            .collect();
        write!(
            f,
            "HostToDeviceExec: {scan}batch_bytes={}, input_partitions={}{}{}{}",
            self.batch_bytes,
            self.input.output_partitioning().partition_count(),
            if self.resident.is_some() {
                ", resident"
            } else {
                ""
            },
            if bytes.is_empty() {
                String::new()
            } else {
                format!(", strings as bytes=[{}]", bytes.join(", "))
            },
            match &self.host_filter {
                Some(predicate) if self.resident.is_none() => {
                    format!(", host filter={predicate}")
                }
                _ => String::new(),
            }
        )
    }
}

impl ExecutionPlan for HostToDeviceExec {
    fn name(&self) -> &str {
        "HostToDeviceExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        visit: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        match &self.host_filter {
            Some(predicate) => visit(predicate),
            None => Ok(TreeNodeRecursion::Continue),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child("HostToDeviceExec", children)?;
        Ok(Arc::new(
            Self::new(
                input,
                Arc::clone(&self.device),
                self.batch_bytes,
                self.resident.clone(),
            )
            .with_string_bytes(self.string_bytes.clone())
            .with_host_filter(self.host_filter.clone()),
        ))
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "HostToDeviceExec feeds a GPU operator; it has no host output".into(),
        ))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// Uploads `chunk` and hands it to the operator above; false once that operator is
/// gone.
async fn send_chunk(
    gatherer: &PartitionGatherer,
    chunk: GatheredChunk,
    sender: &tokio::sync::mpsc::Sender<Result<Arc<DeviceBatch>>>,
    metrics: &UploadMetrics,
) -> Result<bool> {
    if matches!(chunk, GatheredChunk::Heap { .. }) {
        metrics.heap_chunks.add(1);
    }
    let start = std::time::Instant::now();
    let chunk = gatherer.upload(chunk).await?;
    metrics.upload.add_elapsed(start);
    metrics.output_rows.add(chunk.num_rows);
    let start = std::time::Instant::now();
    let sent = sender.send(Ok(Arc::new(chunk))).await.is_ok();
    metrics.consumer_wait.add_elapsed(start);
    Ok(sent)
}

impl DeviceExec for HostToDeviceExec {
    fn execute_device(&self, context: Arc<TaskContext>) -> Result<DeviceStream> {
        match &self.resident {
            Some(resident) => self.execute_resident(Arc::clone(resident), context),
            None => self.execute_upload(context, Chunking::Slabs, self.host_filter.clone()),
        }
    }
}

impl HostToDeviceExec {
    /// Uploads the input, with the kept codes of a scanned table's string columns;
    /// columns not coded yet are coded first, by every core, off the async threads.
    fn execute_upload(
        &self,
        context: Arc<TaskContext>,
        chunking: Chunking,
        filter: Option<Arc<dyn PhysicalExpr>>,
    ) -> Result<DeviceStream> {
        let cache = StringCodeCache::shared();
        let columns = self.table_string_columns();
        let kept: Option<Vec<(usize, Arc<CodedColumn>)>> = columns
            .iter()
            .map(|(i, arrays)| cache.get(arrays).map(|column| (*i, column)))
            .collect();
        if let Some(coded) = kept {
            return self.start_upload(context, chunking, filter, &coded);
        }
        let this = self.clone();
        let coding = async move {
            let coded = tokio::task::spawn_blocking(move || {
                columns
                    .iter()
                    .map(|(i, arrays)| Ok((*i, cache.get_or_code(arrays)?)))
                    .collect::<Result<Vec<_>, DeviceError>>()
            })
            .await
            .map_err(|e| DataFusionError::Execution(format!("coding string columns failed: {e}")))?
            .map_err(device_error)?;
            this.start_upload(context, chunking, filter, &coded)
        };
        Ok(futures::stream::once(coding).try_flatten().boxed())
    }

    /// Gathers every input partition concurrently and uploads its chunks as they fill.
    fn start_upload(
        &self,
        context: Arc<TaskContext>,
        chunking: Chunking,
        filter: Option<Arc<dyn PhysicalExpr>>,
        coded: &[(usize, Arc<CodedColumn>)],
    ) -> Result<DeviceStream> {
        let read = self.table_read();
        let scanned = self.scanned_partitions(
            read.as_ref(),
            context.session_config().target_partitions(),
            coded,
        )?;
        // A filter the upload runs as it reads the table (its input), or else the host
        // filter (which only drops rows early; the GPU segment runs that one again).
        let (filter, passed_on) = match read.as_ref().and_then(|read| read.filter) {
            Some(read_filter) => (
                Some(Arc::clone(read_filter.predicate)),
                read_filter.passed_on.map(Arc::<[usize]>::from),
            ),
            None => (filter, None),
        };
        // Its conjuncts ranked on the table's first rows (original values).
        let filter = filter.map(|predicate| {
            let sample = scanned
                .as_ref()
                .and_then(|partitions| partitions.iter().flatten().next())
                .map(|piece| &piece.batch);
            let schema = read
                .as_ref()
                .map_or_else(|| self.input.schema(), |read| Arc::clone(&read.scan_schema));
            // Kept codes ride along each batch in `coded`'s order.
            let dictionaries: Vec<(usize, Option<Arc<StringArray>>)> = match &read {
                Some(read) => coded
                    .iter()
                    .map(|(i, column)| {
                        let small = column.dictionary.len() <= MAX_LOOKUP_VALUES;
                        let values = small
                            .then(|| column.dictionary.view().values().ok())
                            .flatten();
                        (read.scan_column(*i), values)
                    })
                    .collect(),
                None => Vec::new(),
            };
            Arc::new(HostPredicate::new(
                &predicate,
                &schema,
                sample,
                &dictionaries,
            ))
        });
        let partitions = scanned.as_ref().map_or_else(
            || self.input.output_partitioning().partition_count(),
            Vec::len,
        );
        let dictionaries = self.dictionaries(coded);
        let schema = self.input.schema();
        let metrics = UploadMetrics::new(&self.metrics);
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Arc<DeviceBatch>>>(2);
        let mut tasks = tokio::task::JoinSet::new();
        for partition in 0..partitions {
            let mut input = match &scanned {
                Some(partitions) => futures::stream::iter(
                    partitions[partition]
                        .clone()
                        .into_iter()
                        .map(Ok::<_, DataFusionError>),
                )
                .boxed(),
                None => self
                    .input
                    .execute(partition, Arc::clone(&context))?
                    .map_ok(ScanPiece::plain)
                    .boxed(),
            };
            let (filter, passed_on) = (filter.clone(), passed_on.clone());
            let sender = sender.clone();
            let mut gatherer =
                PartitionGatherer::new(&self.device, &schema, &dictionaries, chunking)
                    .map_err(device_error)?;
            let metrics = metrics.clone();
            tasks.spawn(async move {
                let work = async {
                    let mut gathering = std::time::Duration::ZERO;
                    while let Some(piece) = input.next().await {
                        let start = std::time::Instant::now();
                        let batch = piece?.prepare(filter.as_deref(), passed_on.as_deref())?;
                        let full = gatherer.push(&batch).map_err(device_error)?;
                        gathering += start.elapsed();
                        metrics.gather.add_elapsed(start);
                        for chunk in full {
                            if !send_chunk(&gatherer, chunk, &sender, &metrics).await? {
                                return Ok(());
                            }
                        }
                    }
                    let start = std::time::Instant::now();
                    let last = gatherer.finish().map_err(device_error)?;
                    metrics.gather.add_elapsed(start);
                    if let Some(chunk) = last {
                        send_chunk(&gatherer, chunk, &sender, &metrics).await?;
                    }
                    if crate::trace::enabled() {
                        eprintln!(
                            "gpu-trace: gather partition {partition}: {:.3} ms",
                            gathering.as_secs_f64() * 1e3
                        );
                    }
                    Ok::<_, DataFusionError>(())
                };
                if let Err(e) = work.await {
                    let _ = sender.send(Err(e)).await;
                }
            });
        }
        drop(sender);
        Ok(
            futures::stream::unfold(Some((receiver, tasks)), |state| async move {
                let (mut receiver, mut tasks) = state?;
                if let Some(item) = receiver.recv().await {
                    return Some((item, Some((receiver, tasks))));
                }
                // Every sender is gone. A task that panicked dropped its sender without
                // sending an error, so the stream would end short: say so instead.
                while let Some(joined) = tasks.join_next().await {
                    if let Err(e) = joined
                        && e.is_panic()
                    {
                        let error =
                            DataFusionError::Execution(format!("a GPU upload task failed: {e}"));
                        return Some((Err(error), None));
                    }
                }
                None
            })
            .boxed(),
        )
    }
}
