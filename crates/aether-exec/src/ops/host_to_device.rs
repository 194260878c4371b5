//! `HostToDeviceExec`: the entry of a GPU segment.
//!
//! It reads every partition of its CPU input concurrently, gathers the small batches
//! DataFusion produces into large chunks already in device layout
//! ([`super::host_layout`]), uploads each chunk through the pinned staging pool and
//! hands the device batches to the GPU operator above as one stream: a GPU segment
//! consumes one stream of large batches, not DataFusion's many partitions. Chunks are
//! uploaded as soon as they fill, so transfers overlap the conversion of the rest.

use std::fmt;
use std::sync::Arc;

use aether_gpu::{DeviceBatch, DeviceColumn, DeviceError, GpuDevice, HostColumn};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::StreamExt;

use super::host_layout::{ChunkBuilder, StreamDictionary};
use super::resident::ResidentTables;
use super::{DeviceExec, DeviceStream, device_error};

const OWNER: &str = "HostToDeviceExec";

/// Uploads its CPU input to the GPU in large batches.
#[derive(Debug)]
pub struct HostToDeviceExec {
    input: Arc<dyn ExecutionPlan>,
    device: Arc<GpuDevice>,
    batch_bytes: usize,
    resident: Option<Arc<ResidentTables>>,
    properties: Arc<PlanProperties>,
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
            properties: Arc::new(properties),
        }
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    fn dictionaries(&self) -> Vec<Option<Arc<StreamDictionary>>> {
        self.input
            .schema()
            .fields()
            .iter()
            .map(|field| {
                field
                    .data_type()
                    .is_string()
                    .then(|| Arc::new(StreamDictionary::default()))
            })
            .collect()
    }

    /// The kept device batches of this input, or the normal upload with the batches
    /// kept as they pass (when the input is an in-memory table).
    fn execute_resident(
        &self,
        resident: Arc<ResidentTables>,
        context: Arc<TaskContext>,
    ) -> Result<DeviceStream> {
        let Some(fingerprint) = ResidentTables::fingerprint(&self.input) else {
            return self.execute_upload(context, self.chunk_bytes());
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
            .execute_upload(context, self.batch_bytes)?
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

/// Uploads what `builder` gathered as one device batch.
/// Uploads what `builder` gathered as one device batch, on a blocking thread so the
/// runtime's workers keep gathering other partitions meanwhile.
async fn upload(
    device: &Arc<GpuDevice>,
    schema: &datafusion::arrow::datatypes::SchemaRef,
    builder: &mut ChunkBuilder,
) -> Result<DeviceBatch> {
    let rows = builder.rows();
    let host: Vec<HostColumn> = builder.take().map_err(device_error)?;
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
        write!(
            f,
            "HostToDeviceExec: batch_bytes={}, input_partitions={}{}",
            self.batch_bytes,
            self.input.output_partitioning().partition_count(),
            if self.resident.is_some() {
                ", resident"
            } else {
                ""
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
        _: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child("HostToDeviceExec", children)?;
        Ok(Arc::new(Self::new(
            input,
            Arc::clone(&self.device),
            self.batch_bytes,
            self.resident.clone(),
        )))
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Err(DataFusionError::Internal(
            "HostToDeviceExec feeds a GPU operator; it has no host output".into(),
        ))
    }
}

impl DeviceExec for HostToDeviceExec {
    fn execute_device(&self, context: Arc<TaskContext>) -> Result<DeviceStream> {
        match &self.resident {
            Some(resident) => self.execute_resident(Arc::clone(resident), context),
            None => self.execute_upload(context, self.chunk_bytes()),
        }
    }
}

impl HostToDeviceExec {
    /// Chunk size when streaming: the batch size shared by the partitions gathering at
    /// once, so uploads start early and overlap the gathering.
    fn chunk_bytes(&self) -> usize {
        let partitions = self.input.output_partitioning().partition_count();
        (self.batch_bytes / partitions.max(1)).max(16 << 20)
    }

    /// Gathers every input partition concurrently and uploads chunks of about
    /// `chunk_bytes` as they fill.
    fn execute_upload(
        &self,
        context: Arc<TaskContext>,
        chunk_bytes: usize,
    ) -> Result<DeviceStream> {
        let partitions = self.input.output_partitioning().partition_count();
        let dictionaries = self.dictionaries();
        let schema = self.input.schema();
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Arc<DeviceBatch>>>(2);
        let mut tasks = tokio::task::JoinSet::new();
        for partition in 0..partitions {
            let mut input = self.input.execute(partition, Arc::clone(&context))?;
            let sender = sender.clone();
            let device = Arc::clone(&self.device);
            let schema = Arc::clone(&schema);
            let dictionaries = dictionaries.clone();
            tasks.spawn(async move {
                let work = async {
                    let mut builder =
                        ChunkBuilder::new(&schema, &dictionaries).map_err(device_error)?;
                    let mut gathering = std::time::Duration::ZERO;
                    while let Some(batch) = input.next().await {
                        let start = std::time::Instant::now();
                        builder.append(&batch?).map_err(device_error)?;
                        gathering += start.elapsed();
                        if builder.bytes() >= chunk_bytes {
                            let chunk = upload(&device, &schema, &mut builder).await?;
                            if sender.send(Ok(Arc::new(chunk))).await.is_err() {
                                return Ok(());
                            }
                        }
                    }
                    if builder.rows() > 0 {
                        let chunk = upload(&device, &schema, &mut builder).await?;
                        let _ = sender.send(Ok(Arc::new(chunk))).await;
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
            futures::stream::unfold((receiver, tasks), |(mut receiver, tasks)| async move {
                receiver.recv().await.map(|item| (item, (receiver, tasks)))
            })
            .boxed(),
        )
    }
}
