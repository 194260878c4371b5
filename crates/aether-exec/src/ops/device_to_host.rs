//! `DeviceToHostExec`: the exit of a GPU segment, where device batches become Arrow
//! record batches again.
//!
//! It also keeps the CPU plan the segment replaced. If the GPU runs out of memory
//! before the segment has produced anything, the same work runs on the CPU instead,
//! with a warning naming the GPU: a query never fails for lack of device memory. A
//! kernel that met a row it cannot compute as the CPU would (a zero divisor) hands the
//! work to the CPU the same way, and the CPU's answer (or error) is the query's. The
//! CPU plan shares operators with the GPU segment's input, which has run by then, so
//! it runs after `reset_plan_states` (an exchange, for one, runs each partition once).

use std::fmt;
use std::sync::Arc;

use aether_gpu::DeviceError;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, reset_plan_states};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::StreamExt;

use super::{as_device_exec, device_error};

/// Downloads the device batches of the GPU operator below it.
#[derive(Debug)]
pub struct DeviceToHostExec {
    input: Arc<dyn ExecutionPlan>,
    device: Arc<aether_gpu::GpuDevice>,
    /// The CPU plan computing the same rows, run if the GPU runs out of memory.
    fallback: Arc<dyn ExecutionPlan>,
    /// Whether the segment is expected to return few rows (an aggregate whose sampled
    /// group keys take few values), which the final aggregate above merges in one
    /// partition rather than behind an exchange.
    few_rows: bool,
    /// Whether the rows come in the order the CPU plan promises (a GPU sort's).
    ordered: bool,
    properties: Arc<PlanProperties>,
    /// `download` (device to host, rebuilding Arrow arrays) and output rows.
    metrics: ExecutionPlanMetricsSet,
}

impl DeviceToHostExec {
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        device: Arc<aether_gpu::GpuDevice>,
        fallback: Arc<dyn ExecutionPlan>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        let fallback: Arc<dyn ExecutionPlan> =
            if fallback.output_partitioning().partition_count() > 1 {
                Arc::new(CoalescePartitionsExec::new(fallback))
            } else {
                fallback
            };
        Self {
            input,
            device,
            fallback,
            few_rows: false,
            ordered: false,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The same exit, expected to return few rows or not (see [`Self::few_rows`]).
    pub fn with_few_rows(mut self, few_rows: bool) -> Self {
        self.few_rows = few_rows;
        self
    }

    /// Declares the rows to come in the order the CPU plan replaced promises (a GPU
    /// sort's output), so operators above that need that order can read them.
    pub fn with_order_of_fallback(mut self) -> Self {
        let properties = self
            .properties
            .as_ref()
            .clone()
            .with_eq_properties(self.fallback.equivalence_properties().clone());
        self.properties = Arc::new(properties);
        self.ordered = true;
        self
    }

    /// Whether the segment is expected to return few rows.
    pub fn few_rows(&self) -> bool {
        self.few_rows
    }

    /// The GPU operator whose batches this downloads.
    /// The CPU plan run instead when the GPU cannot finish.
    pub fn fallback(&self) -> &Arc<dyn ExecutionPlan> {
        &self.fallback
    }

    pub fn device_input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

impl DisplayAs for DeviceToHostExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "DeviceToHostExec")
    }
}

/// The GPU error after which the CPU plan takes over, if `error` is one: the GPU ran
/// out of memory, a kernel met a row only the CPU computes exactly, or NVRTC rejected
/// a kernel (compiled before the segment's first batch; a GPU older than the kernel
/// needs, such as one without 128-bit compare-and-swap before sm_90, or a generator
/// bug, which the warning names), so the query still answers.
fn hand_over_reason(error: &DataFusionError) -> Option<&DeviceError> {
    match error {
        DataFusionError::External(inner) => inner.downcast_ref::<DeviceError>().filter(|e| {
            matches!(
                e,
                DeviceError::OutOfMemory { .. }
                    | DeviceError::RowFault(_)
                    | DeviceError::Compile { .. }
            )
        }),
        _ => None,
    }
}

impl ExecutionPlan for DeviceToHostExec {
    fn name(&self) -> &str {
        "DeviceToHostExec"
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
        let input = super::only_child("DeviceToHostExec", children)?;
        let exit = Self::new(input, Arc::clone(&self.device), Arc::clone(&self.fallback))
            .with_few_rows(self.few_rows);
        Ok(Arc::new(if self.ordered {
            exit.with_order_of_fallback()
        } else {
            exit
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "DeviceToHostExec has one partition, not {partition}"
            )));
        }
        let gpu = as_device_exec(&self.input).ok_or_else(|| {
            DataFusionError::Internal("DeviceToHostExec sits on a GPU operator".into())
        })?;
        let mut batches = gpu.execute_device(Arc::clone(&context))?;
        let device = Arc::clone(&self.device);
        let fallback = Arc::clone(&self.fallback);
        let schema = self.schema();
        let download_time = MetricBuilder::new(&self.metrics).subset_time("download", 0);
        let output_rows = MetricBuilder::new(&self.metrics).output_rows(0);
        let stream = async_stream_of(move |sender| async move {
            let start = std::time::Instant::now();
            let mut produced = false;
            while let Some(batch) = batches.next().await {
                let host = batch.and_then(|b| {
                    let start = std::time::Instant::now();
                    let host = b.download(&device).map_err(device_error);
                    download_time.add_elapsed(start);
                    host
                });
                if let Ok(host) = &host {
                    output_rows.add(host.num_rows());
                }
                match host {
                    Ok(host) => {
                        produced = true;
                        if sender.send(Ok(host)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) if !produced && hand_over_reason(&e).is_some() => {
                        if let Some(reason) = hand_over_reason(&e) {
                            eprintln!(
                                "warning: {reason}; running this part of the query on the CPU"
                            );
                        }
                        drop(batches);
                        // The GPU side has run operators the fallback shares (an
                        // exchange runs each partition once): fresh state first.
                        let fallback =
                            reset_plan_states(fallback).and_then(|plan| plan.execute(0, context));
                        match fallback {
                            Ok(mut cpu) => {
                                while let Some(batch) = cpu.next().await {
                                    if sender.send(batch).await.is_err() {
                                        return;
                                    }
                                }
                            }
                            Err(e) => {
                                let _ = sender.send(Err(e)).await;
                            }
                        }
                        return;
                    }
                    Err(e) => {
                        let _ = sender.send(Err(e)).await;
                        return;
                    }
                }
            }
            crate::trace::phase("GPU segment", start, String::new);
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// A stream fed by `produce` through a small channel. A task that panics ends the
/// stream with an error, never quietly (which would look like fewer rows).
fn async_stream_of<F, Fut>(
    produce: F,
) -> impl futures::Stream<Item = Result<datafusion::arrow::array::RecordBatch>> + Send
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<datafusion::arrow::array::RecordBatch>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (sender, receiver) = tokio::sync::mpsc::channel(2);
    let task = tokio::spawn(produce(sender));
    let guard = AbortOnDrop(Some(task));
    futures::stream::unfold((receiver, guard), |(mut receiver, mut guard)| async move {
        if let Some(item) = receiver.recv().await {
            return Some((item, (receiver, guard)));
        }
        // The sender is gone: the task ended. Report how, if it failed.
        let task = guard.0.take()?;
        match task.await {
            Err(e) if e.is_panic() => {
                let error =
                    DataFusionError::Execution(format!("the GPU segment's task panicked: {e}"));
                Some((Err(error), (receiver, guard)))
            }
            _ => None,
        }
    })
}

/// Aborts a spawned task when the stream reading it is dropped.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::async_stream_of;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("a test runtime: {e}"))
    }

    #[test]
    fn a_task_that_panics_ends_the_stream_with_an_error() {
        let items = runtime().block_on(async {
            let stream = async_stream_of(|_sender| async move {
                panic!("planted");
            });
            stream.collect::<Vec<_>>().await
        });
        assert_eq!(items.len(), 1);
        let error = items[0].as_ref().err().map(ToString::to_string);
        assert!(
            error.as_deref().is_some_and(|e| e.contains("panicked")),
            "{error:?}"
        );
    }

    #[test]
    fn memory_row_faults_and_rejected_kernels_hand_over_to_the_cpu() {
        use aether_gpu::DeviceError;
        use datafusion::error::DataFusionError;
        let external = |e: DeviceError| DataFusionError::External(Box::new(e));
        let compile = external(DeviceError::Compile {
            kernel: "aether_agg".into(),
            arch: "sm_80".into(),
            log: "atom.cas.b128 requires sm_90".into(),
        });
        assert!(super::hand_over_reason(&compile).is_some());
        let fault = external(DeviceError::RowFault("a zero divisor".into()));
        assert!(super::hand_over_reason(&fault).is_some());
        let internal = external(DeviceError::Internal("a bug".into()));
        assert!(super::hand_over_reason(&internal).is_none());
        let plain = DataFusionError::Execution("not the GPU's".into());
        assert!(super::hand_over_reason(&plain).is_none());
    }

    #[test]
    fn a_task_that_finishes_ends_the_stream_quietly() {
        let items = runtime().block_on(async {
            let stream = async_stream_of(|sender| async move {
                let _ = sender
                    .send(Err(datafusion::error::DataFusionError::Execution(
                        "one".into(),
                    )))
                    .await;
            });
            stream.collect::<Vec<_>>().await
        });
        assert_eq!(items.len(), 1);
    }
}
