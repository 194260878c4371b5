//! `GpuPlacement`: the physical optimizer rule that moves what pays onto the GPU.
//!
//! It walks a DataFusion physical plan from the root. A partial hash aggregate with
//! only filters and projections between it and its input is a GPU segment candidate:
//! the expressions, keys and aggregate functions are generated into one kernel
//! ([`crate::codegen::aggregate`]); if that works, the input's types upload, and (with
//! `--engine auto`) the cost model predicts a gain, the chain becomes
//! `DeviceToHostExec <- GpuSegmentExec <- HostToDeviceExec <- input`, the segment
//! running the filters and projections fused into the aggregate's kernels. A chain of
//! filters and projections that no aggregate consumes becomes a row segment the same
//! way, its kept rows compacted on the GPU ([`rows`]). Every node that stays on the
//! CPU gets all its reasons.
//!
//! The final aggregate above such a partial aggregate joins the segment when its values
//! can be generated too: the GPU table holds complete groups, so the exchange and the
//! CPU merge go ([`final_aggregate`]). A final aggregate left on the CPU above a GPU
//! segment merges its partial groups in one partition rather than behind a hash
//! exchange ([`single_partition`]).
//!
//! Hash joins ([`joins`]) and sorts ([`sorts`]) run on the GPU too, reading their
//! inputs on the device; the scan of an in-memory table under a GPU operator is a GPU
//! scan (the upload reads the table itself), and exchanges between a GPU operator and
//! its input collapse ([`scans`]).
//!
//! Without a device (no GPU, or `aether.sql.mode=explainOnly`) the same decisions are
//! made and reported, and the plan is returned unchanged.

mod cost;
mod final_aggregate;
mod host_filter;
mod host_prefilter;
mod joins;
mod report;
mod rows;
mod scans;
mod shape;
mod single_partition;
mod sorts;
mod string_bytes;
mod subtree_cost;

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use aether_gpu::GpuDevice;
use aether_gpu::layout::{LayoutOptions, device_form_of};
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning, displayable};

use self::rows::RowChain;

pub use cost::{CostModel, Prediction};
pub use report::{ExplainFilter, Mark, PlacementReport, ReportLine};
pub use subtree_cost::SubtreePrediction;

use crate::codegen::CudaType;
use crate::codegen::aggregate::{
    AggFunction, AggregateCall, AggregateKernels, AggregateOutput, AggregateSpec,
    aggregate_kernels, aggregate_kernels_with_bytes,
};
use crate::codegen::expr::ExprCompiler;
use crate::codegen::rows::RowKernels;
use crate::engine::Engine;
use crate::ops::{
    DeviceToHostExec, GpuHashJoinExec, GpuSegmentExec, GpuSortExec, HostToDeviceExec,
    ResidentTables, SegmentOutput,
};
use crate::reason::{PlacementReason, ReasonCode};

/// What placement is asked to do for one plan.
#[derive(Debug, Clone)]
pub struct PlacementSettings {
    /// `cpu` places nothing; `gpu` places everything supported; `auto` asks the cost
    /// model.
    pub engine: Engine,
    /// Why nothing may move (GPU disabled, no GPU found), if so.
    pub off_reason: Option<String>,
    /// The device to run on; `None` plans and reports without rewriting the plan
    /// (explain-only mode, or no GPU).
    pub device: Option<Arc<GpuDevice>>,
    pub batch_bytes: usize,
    /// Keep uploaded inputs on the device across queries.
    pub resident: Option<Arc<ResidentTables>>,
    pub cost: CostModel,
}

impl Default for PlacementSettings {
    fn default() -> Self {
        Self {
            engine: Engine::Auto,
            off_reason: None,
            device: None,
            batch_bytes: 1 << 30,
            resident: None,
            cost: CostModel::default(),
        }
    }
}

/// A placed plan and its report.
#[derive(Debug, Clone)]
pub struct Placement {
    pub plan: Arc<dyn ExecutionPlan>,
    pub report: PlacementReport,
}

/// Places `plan` according to `settings`.
pub fn place(plan: Arc<dyn ExecutionPlan>, settings: &PlacementSettings) -> Result<Placement> {
    let mut report = PlacementReport::default();
    if settings.engine == Engine::Cpu {
        report.whole_plan = Some("the CPU engine was chosen (--engine cpu)".into());
        return Ok(Placement { plan, report });
    }
    if let Some(why) = &settings.off_reason {
        report.whole_plan = Some(why.clone());
        return Ok(Placement { plan, report });
    }
    let mut placer = Placer {
        settings,
        lines: Vec::new(),
        spine: true,
        last_segment_few_rows: false,
        parent_takes_device: false,
        gpu_region: false,
        predictions: Default::default(),
        coding_started: false,
    };
    // `auto` decides by the predictions; GPU joins choose their build side by the row
    // estimates under either engine.
    placer.predictions =
        subtree_cost::predict_all(&plan, &settings.cost, &|leaf| is_resident(settings, leaf));
    let placed = placer.visit(&plan, 0)?;
    report.lines = placer.lines;
    let plan = if settings.device.is_some() {
        single_partition::merge_gpu_partials_in_one_partition(placed)?
    } else {
        plan
    };
    Ok(Placement { plan, report })
}

struct Placer<'a> {
    settings: &'a PlacementSettings,
    lines: Vec<ReportLine>,
    /// Whether every node above the one visited has one input, where an exchange
    /// below a final aggregate over a GPU segment goes ([`single_partition`]).
    spine: bool,
    /// Whether the GPU segment placed last is expected to return few rows.
    last_segment_few_rows: bool,
    /// Whether the node about to be visited feeds a GPU operator, which reads a GPU
    /// operator's batches on the device: no partitioning is restored above it.
    parent_takes_device: bool,
    /// Whether the node visited lies in a subtree `auto` moved as a whole because the
    /// cost model predicted it pays ([`subtree_cost`]): everything supported moves.
    gpu_region: bool,
    /// `auto`'s predictions for every subtree of the plan, made once.
    predictions: subtree_cost::Predictions,
    /// Whether this placement started coding string columns in the background.
    coding_started: bool,
}

/// Whether the scan `leaf` is kept on the GPU across queries.
fn is_resident(settings: &PlacementSettings, leaf: &Arc<dyn ExecutionPlan>) -> bool {
    settings.resident.is_some() && ResidentTables::fingerprint(leaf).is_some()
}

/// The final aggregate a GPU segment computes as well (see [`final_aggregate`]).
struct FinalPart {
    plan: Arc<dyn ExecutionPlan>,
    spec: AggregateSpec,
    kernels: AggregateKernels,
    /// The partitioning to restore above the segment, if the operators above need it.
    restore: Option<Partitioning>,
}

/// A partial aggregate's chain down to its input.
struct Candidate {
    aggregate: Arc<dyn ExecutionPlan>,
    /// Filters and projections, top first.
    chain: Vec<Arc<dyn ExecutionPlan>>,
    source: Arc<dyn ExecutionPlan>,
}

fn class_of(plan: &Arc<dyn ExecutionPlan>) -> String {
    plan.name().to_string()
}

fn operator_reason(plan: &Arc<dyn ExecutionPlan>) -> PlacementReason {
    let name = plan.name();
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>()
        && matches!(
            aggregate.mode(),
            AggregateMode::Final | AggregateMode::FinalPartitioned
        )
    {
        return final_aggregate::partial_on_cpu();
    }
    PlacementReason::new(
        ReasonCode::UnsupportedOperator,
        format!("GPU does not currently support the operator {name}"),
    )
}

impl Placer<'_> {
    fn line(
        &mut self,
        depth: usize,
        mark: Mark,
        plan: &Arc<dyn ExecutionPlan>,
        reasons: Vec<PlacementReason>,
    ) {
        self.lines.push(ReportLine {
            depth,
            mark,
            kind: "Exec",
            class: class_of(plan),
            text: None,
            reasons,
        });
    }

    fn expression_line(
        &mut self,
        depth: usize,
        class: &str,
        text: String,
        reasons: Vec<PlacementReason>,
    ) {
        self.lines.push(ReportLine {
            depth,
            mark: Mark::NotOnGpu,
            kind: "Expression",
            class: class.to_string(),
            text: Some(text),
            reasons,
        });
    }

    fn visit(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        depth: usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.auto() && subtree_cost::has_join_or_sort(plan) {
            let prediction = self.predict_subtree(plan);
            if prediction.gpu_pays() {
                return self.visit_gpu_region(plan, depth, prediction);
            }
            if prediction.pays_once_coded() && self.start_coding(plan) {
                let first = self.lines.len();
                let placed = self.visit_placed(plan, depth);
                if let Some(line) = self.lines.get_mut(first) {
                    line.reasons.push(PlacementReason::new(
                        ReasonCode::CostModel,
                        format!(
                            "{}; {:.1} ms of it codes string columns, which are being \
                             coded now and kept for the next run",
                            prediction.describe(),
                            prediction.kept_coding_ms
                        ),
                    ));
                }
                return placed;
            }
        }
        self.visit_placed(plan, depth)
    }

    /// Codes in the background the string columns the GPU plan of `plan`'s subtree
    /// would code, once per placement and only with a GPU; whether it did.
    fn start_coding(&mut self, plan: &Arc<dyn ExecutionPlan>) -> bool {
        if self.settings.device.is_none() || self.coding_started {
            return false;
        }
        self.coding_started = true;
        let settings = self.settings;
        let columns = subtree_cost::columns_to_code(plan, &settings.cost, &|leaf| {
            is_resident(settings, leaf)
        });
        crate::ops::StringCodeCache::shared().code_in_background(columns);
        true
    }

    /// [`Self::visit`] once `auto` has not moved `plan`'s subtree as a whole.
    fn visit_placed(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        depth: usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let takes_device = std::mem::take(&mut self.parent_takes_device);
        if takes_device && scans::is_exchange(plan) {
            // Collapsed: the upload or GPU operator below reads every partition.
            self.line(depth, Mark::OnGpu, plan, Vec::new());
            self.parent_takes_device = true;
            return self.visit_children(plan, depth + 1);
        }
        if let Some(placed) = scans::scan_placement(plan, takes_device) {
            match placed {
                Ok(()) => self.line(depth, Mark::OnGpu, plan, Vec::new()),
                Err(reason) => self.line(depth, Mark::NotOnGpu, plan, vec![reason]),
            }
            return Ok(Arc::clone(plan));
        }
        if let Some(group) = sorts::sort_group(plan) {
            return self.visit_sort(group, depth);
        }
        if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
            return self.visit_join(plan, join, depth, takes_device);
        }
        // Read by a GPU operator. Read by CPU operators, it is a row chain as any: with
        // `--engine gpu` its strings may go to the GPU as bytes.
        if takes_device && let Some(tested) = self.host_side(plan) {
            return self.visit_host_filter(plan, &tested, depth);
        }
        let host_side = |node: &Arc<dyn ExecutionPlan>| self.host_side(node).is_some();
        if let Some(candidate) = candidate(plan, &host_side) {
            let decision = self.decide(&candidate.aggregate, &candidate.chain, &candidate.source);
            return self.visit_aggregate(candidate, decision, depth, takes_device);
        }
        let mut reasons = vec![operator_reason(plan)];
        if let Some(pair) = final_aggregate::final_over_partial(plan, &host_side) {
            let partial = &pair.partial;
            let decision = self.decide(&partial.aggregate, &partial.chain, &partial.source);
            match &decision {
                Decision::Gpu(spec, _) => match final_aggregate::final_kernels(spec, plan) {
                    Ok((spec, kernels)) => {
                        return self.visit_gpu_final(
                            pair,
                            decision,
                            spec,
                            kernels,
                            depth,
                            takes_device,
                        );
                    }
                    Err(why) => reasons = why,
                },
                Decision::Cpu(..) => reasons = vec![final_aggregate::partial_on_cpu()],
            }
        }
        if let Some(chain) = rows::row_chain(plan, &host_side) {
            return self.visit_row_chain(chain, depth, takes_device);
        }
        self.line(depth, Mark::NotOnGpu, plan, reasons);
        self.expression_lines(plan, depth + 1);
        if self.spine
            && let Some(exchange) = single_partition::exchange_below_final(plan)
        {
            return self.visit_exchange(plan, exchange, depth + 1);
        }
        self.visit_children(plan, depth + 1)
    }

    /// The many-valued string columns `plan` tests and passes on to nobody, when it is
    /// a filter the upload above runs on the host as it reads the table
    /// ([`host_prefilter`]); never over a table kept resident on the GPU.
    fn host_side(&self, plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<String>> {
        let [input] = plan.children()[..] else {
            return None;
        };
        if is_resident(self.settings, &scans::below_exchanges(Arc::clone(input))) {
            return None;
        }
        host_prefilter::tested_only(plan)
    }

    /// A filter the upload above it runs on the host as it reads the table
    /// ([`host_prefilter`]): it stays in the plan as the upload's input.
    fn visit_host_filter(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        tested: &[String],
        depth: usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.line(
            depth,
            Mark::NotOnGpu,
            plan,
            vec![PlacementReason::new(
                ReasonCode::CostModel,
                host_prefilter::reason_text(tested),
            )],
        );
        // The upload reads the table itself: the scan (and any exchange over it) is its.
        self.parent_takes_device = true;
        self.visit_children(plan, depth + 1)
    }

    /// The exchange under a final aggregate on the spine: when what it reads becomes a
    /// GPU segment expected to return few rows, the exchange goes (the report leaves
    /// it out); otherwise it stays.
    fn visit_exchange(
        &mut self,
        aggregate: &Arc<dyn ExecutionPlan>,
        exchange: &Arc<dyn ExecutionPlan>,
        depth: usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let first = self.lines.len();
        let [input] = exchange.children()[..] else {
            return self.visit_children(aggregate, depth);
        };
        self.last_segment_few_rows = false;
        let input = self.visit(input, depth)?;
        let goes = self.last_segment_few_rows
            && self
                .lines
                .get(first)
                .is_some_and(|line| line.mark == Mark::OnGpu);
        if !goes {
            for line in &mut self.lines[first..] {
                line.depth += 1;
            }
            let below = self.lines.split_off(first);
            self.line(
                depth,
                Mark::NotOnGpu,
                exchange,
                vec![operator_reason(exchange)],
            );
            self.lines.extend(below);
        }
        let exchange = datafusion::physical_plan::replace_children_if_necessary(
            Arc::clone(exchange),
            vec![input],
        )?;
        datafusion::physical_plan::replace_children_if_necessary(
            Arc::clone(aggregate),
            vec![exchange],
        )
    }

    fn visit_children(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        depth: usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let spine = self.spine;
        self.spine &= plan.children().len() <= 1;
        let children = plan
            .children()
            .into_iter()
            .map(|child| self.visit(child, depth))
            .collect::<Result<Vec<_>>>();
        self.spine = spine;
        let children = children?;
        if children.is_empty() {
            return Ok(Arc::clone(plan));
        }
        datafusion::physical_plan::replace_children_if_necessary(Arc::clone(plan), children)
    }

    /// Lines for the expressions of a CPU filter or projection the GPU could not run.
    fn expression_lines(&mut self, plan: &Arc<dyn ExecutionPlan>, depth: usize) {
        let exprs: Vec<_> = if let Some(filter) = plan.downcast_ref::<FilterExec>() {
            vec![(Arc::clone(filter.predicate()), filter.input().schema())]
        } else if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
            projection
                .expr()
                .iter()
                .map(|e| (Arc::clone(&e.expr), projection.input().schema()))
                .collect()
        } else {
            return;
        };
        for (expr, schema) in exprs {
            // Columns passed through say nothing about what the GPU could compute.
            let any: &dyn datafusion::physical_expr::PhysicalExpr = expr.as_ref();
            if any
                .downcast_ref::<datafusion::physical_expr::expressions::Column>()
                .is_some()
            {
                continue;
            }
            if let Some(reasons) = expression_reasons(&expr, &schema) {
                let any: &dyn datafusion::physical_expr::PhysicalExpr = expr.as_ref();
                let class = expression_class(any);
                self.expression_line(depth, &class, expr.to_string(), reasons);
            }
        }
    }

    /// A final aggregate whose partial aggregate goes to the GPU, computed there too.
    fn visit_gpu_final(
        &mut self,
        pair: final_aggregate::FinalOverPartial,
        decision: Decision,
        spec: AggregateSpec,
        kernels: AggregateKernels,
        mut depth: usize,
        takes_device: bool,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let restore = final_aggregate::partitioning_to_restore(&pair.final_plan, self.spine)
            .filter(|_| !takes_device);
        if restore.is_some() {
            self.restore_line(depth, "the final aggregate's hash partitioning");
            depth += 1;
        }
        self.line(depth, Mark::OnGpu, &pair.final_plan, Vec::new());
        let final_part = FinalPart {
            plan: pair.final_plan,
            spec,
            kernels,
            restore,
        };
        self.visit_candidate(pair.partial, decision, depth + 1, Some(final_part))
    }

    /// A partial or complete aggregate candidate; a complete one placed on the GPU off
    /// the plan's spine gets its hash partitioning back above the segment, as a final
    /// aggregate does ([`final_aggregate::partitioning_to_restore`]).
    fn visit_aggregate(
        &mut self,
        candidate: Candidate,
        decision: Decision,
        mut depth: usize,
        takes_device: bool,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let complete = candidate
            .aggregate
            .downcast_ref::<AggregateExec>()
            .is_some_and(is_complete);
        let restore = match &decision {
            Decision::Gpu(..) if complete => {
                final_aggregate::partitioning_to_restore(&candidate.aggregate, self.spine)
                    .filter(|_| !takes_device)
            }
            _ => None,
        };
        if restore.is_some() {
            self.restore_line(depth, "the aggregate's hash partitioning");
            depth += 1;
        }
        let placed = self.visit_candidate(candidate, decision, depth, None)?;
        Ok(match restore {
            Some(partitioning) if self.settings.device.is_some() => {
                Arc::new(RepartitionExec::try_new(placed, partitioning)?)
            }
            _ => placed,
        })
    }

    fn visit_candidate(
        &mut self,
        candidate: Candidate,
        decision: Decision,
        depth: usize,
        final_part: Option<FinalPart>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Candidate {
            aggregate,
            chain,
            source,
        } = candidate;
        match decision {
            Decision::Gpu(spec, kernels) => {
                self.line(depth, Mark::OnGpu, &aggregate, Vec::new());
                for (i, node) in chain.iter().enumerate() {
                    self.line(depth + 1 + i, Mark::OnGpu, node, Vec::new());
                }
                let source_depth = depth + 1 + chain.len();
                let few_rows = shape::few_groups(&spec, &source);
                self.parent_takes_device = true;
                let new_source = self.visit(&source, source_depth)?;
                self.last_segment_few_rows = few_rows;
                let Some(device) = &self.settings.device else {
                    return Ok(final_part.map_or(aggregate, |part| part.plan));
                };
                let mut stages: Vec<String> = chain.iter().rev().map(one_line).collect();
                let description = one_line(&aggregate);
                // The CPU plan the segment replaces, run if the GPU cannot finish.
                let (spec, kernels, description, fallback, restore) = match final_part {
                    Some(part) => (
                        part.spec,
                        part.kernels,
                        final_aggregate::single_description(&description),
                        part.plan,
                        part.restore,
                    ),
                    None => (spec, kernels, description, aggregate, None),
                };
                // An upload may send many-valued strings the segment only tests as bytes.
                let chosen = self.uploads(&new_source).then(|| {
                    string_bytes::choose(&string_bytes::candidates(&new_source), |columns| {
                        aggregate_kernels_with_bytes(&spec, columns)
                    })
                });
                let (kernels, bytes) = chosen.flatten().unwrap_or((kernels, Vec::new()));
                let output = spec.output;
                let filter = host_filter::of_chain(&chain).map(|(predicate, _)| predicate);
                let upload = self.device_input_with_bytes(new_source, device, bytes, filter);
                stages.push(description);
                let gpu: Arc<dyn ExecutionPlan> = Arc::new(GpuSegmentExec::new(
                    upload,
                    Arc::clone(device),
                    SegmentOutput::Aggregate(kernels),
                    output,
                    stages,
                ));
                let exit: Arc<dyn ExecutionPlan> = Arc::new(
                    DeviceToHostExec::new(gpu, Arc::clone(device), fallback)
                        .with_few_rows(few_rows),
                );
                Ok(match restore {
                    Some(partitioning) => Arc::new(RepartitionExec::try_new(exit, partitioning)?),
                    None => exit,
                })
            }
            Decision::Cpu(mark, reasons) => {
                self.line(depth, mark, &aggregate, reasons);
                // The chain stays on the CPU too; its nodes say why on their own lines.
                let mut node_depth = depth;
                let mut rebuilt_children = Vec::new();
                for child in &chain {
                    node_depth += 1;
                    self.line(
                        node_depth,
                        mark,
                        child,
                        vec![PlacementReason::new(
                            ReasonCode::NeedsGpuAggregate,
                            "it runs on the GPU only with the aggregate above it",
                        )],
                    );
                    self.expression_lines(child, node_depth + 1);
                    rebuilt_children.push(Arc::clone(child));
                }
                let new_source = self.visit(&source, node_depth + 1)?;
                // Rebuild the chain over the (possibly placed) source, bottom up.
                let mut rebuilt = new_source;
                for child in rebuilt_children.iter().rev() {
                    rebuilt = datafusion::physical_plan::replace_children_if_necessary(
                        Arc::clone(child),
                        vec![rebuilt],
                    )?;
                }
                datafusion::physical_plan::replace_children_if_necessary(aggregate, vec![rebuilt])
            }
        }
    }

    /// The line of a `RepartitionExec` placed above a GPU segment to give the
    /// operators above the partitioning they had (`what`).
    fn restore_line(&mut self, depth: usize, what: &str) {
        self.lines.push(ReportLine {
            depth,
            mark: Mark::NotOnGpu,
            kind: "Exec",
            class: "RepartitionExec".into(),
            text: None,
            reasons: vec![PlacementReason::new(
                ReasonCode::UnsupportedOperator,
                format!(
                    "GPU does not currently support the operator RepartitionExec (it restores {what} for the operator above)"
                ),
            )],
        });
    }

    /// A chain of filters and projections no GPU aggregate consumes: a row segment on
    /// the GPU, or CPU operators with their reasons ([`rows`]).
    fn visit_row_chain(
        &mut self,
        chain: RowChain,
        mut depth: usize,
        takes_device: bool,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let top = Arc::clone(&chain.nodes[0]);
        let kernels = match self.decide_rows(&chain, takes_device) {
            Ok(kernels) => kernels,
            Err((mark, reasons)) => {
                // Cut at the first exchange: the part above is placed on its own, and
                // what is below the exchange is visited as any input is.
                if let Some(cut) = chain.nodes.iter().position(scans::is_exchange) {
                    let upper = RowChain {
                        source: Arc::clone(&chain.nodes[cut]),
                        nodes: chain.nodes[..cut].to_vec(),
                    };
                    return self.visit_row_chain(upper, depth, takes_device);
                }
                for (i, node) in chain.nodes.iter().enumerate() {
                    let why = if i == 0 {
                        reasons.clone()
                    } else {
                        vec![PlacementReason::new(
                            ReasonCode::UnsupportedOperator,
                            "it runs on the GPU only with the segment above it",
                        )]
                    };
                    self.line(depth + i, mark, node, why);
                    self.expression_lines(node, depth + i + 1);
                }
                let source = self.visit(&chain.source, depth + chain.nodes.len())?;
                return rebuild_chain(&chain.nodes, source);
            }
        };
        let restore = rows::partitioning_to_restore(&top).filter(|_| !takes_device);
        if restore.is_some() {
            self.restore_line(
                depth,
                "the partitioning of the rows the GPU segment returns",
            );
            depth += 1;
        }
        for (i, node) in chain.nodes.iter().enumerate() {
            self.line(depth + i, Mark::OnGpu, node, Vec::new());
        }
        self.parent_takes_device = true;
        let source = self.visit(&chain.source, depth + chain.nodes.len())?;
        let Some(device) = &self.settings.device else {
            return Ok(top);
        };
        // An upload may send many-valued strings the segment only tests as bytes.
        let chosen = self.uploads(&source).then(|| {
            string_bytes::choose(&string_bytes::candidates(&source), |columns| {
                rows::row_segment_kernels(&chain, columns, takes_device)
            })
        });
        let (kernels, bytes) = chosen.flatten().unwrap_or((kernels, Vec::new()));
        let filter = host_filter::of_chain(&chain.nodes).map(|(predicate, _)| predicate);
        let upload = self.device_input_with_bytes(Arc::clone(&source), device, bytes, filter);
        let segment: Arc<dyn ExecutionPlan> = Arc::new(GpuSegmentExec::new(
            upload,
            Arc::clone(device),
            SegmentOutput::Rows(kernels),
            top.schema(),
            chain
                .nodes
                .iter()
                .rev()
                .filter(|node| rows::is_row_stage(node))
                .map(one_line)
                .collect(),
        ));
        // The CPU plan the segment replaces, run if the GPU cannot finish.
        let fallback = rebuild_chain(&chain.nodes, source)?;
        let exit: Arc<dyn ExecutionPlan> =
            Arc::new(DeviceToHostExec::new(segment, Arc::clone(device), fallback));
        Ok(match restore {
            Some(partitioning) => Arc::new(RepartitionExec::try_new(exit, partitioning)?),
            None => exit,
        })
    }

    /// What a GPU operator reads `source` through: the batches of the GPU operator
    /// below it on the device, or an upload.
    fn device_input(
        &self,
        source: Arc<dyn ExecutionPlan>,
        device: &Arc<GpuDevice>,
    ) -> Arc<dyn ExecutionPlan> {
        self.device_input_with_bytes(source, device, Vec::new(), None)
    }

    /// Whether a GPU operator reading `source` reads it through an upload.
    fn uploads(&self, source: &Arc<dyn ExecutionPlan>) -> bool {
        !scans::below_exchanges(Arc::clone(source)).is::<DeviceToHostExec>()
    }

    /// [`Self::device_input`], an upload sending string columns `string_bytes` as
    /// offsets and bytes ([`string_bytes`]) and dropping the rows `host_filter` does
    /// not keep before gathering them ([`host_filter`]).
    fn device_input_with_bytes(
        &self,
        source: Arc<dyn ExecutionPlan>,
        device: &Arc<GpuDevice>,
        string_bytes: Vec<usize>,
        host_filter: Option<Arc<dyn PhysicalExpr>>,
    ) -> Arc<dyn ExecutionPlan> {
        let source = scans::below_exchanges(source);
        if let Some(exit) = source.downcast_ref::<DeviceToHostExec>() {
            return Arc::clone(exit.device_input());
        }
        Arc::new(
            HostToDeviceExec::new(
                source,
                Arc::clone(device),
                self.settings.batch_bytes,
                self.settings.resident.clone(),
            )
            .with_string_bytes(string_bytes)
            .with_host_filter(host_filter),
        )
    }

    /// A hash join: a [`GpuHashJoinExec`] over both inputs on the device, the
    /// exchanges right below it collapsed ([`joins`]), or the CPU join with its reasons.
    fn visit_join(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        join: &HashJoinExec,
        mut depth: usize,
        takes_device: bool,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let build_right = self.right_is_smaller(join);
        let spec = match self.unpredicted(joins::join_spec(join, build_right), plan) {
            Ok(spec) => spec,
            Err(reasons) => return self.visit_on_cpu(plan, depth, reasons),
        };
        let restore = rows::partitioning_to_restore(plan).filter(|_| !takes_device);
        if restore.is_some() {
            self.restore_line(depth, "the partitioning of the rows the GPU join returns");
            depth += 1;
        }
        self.line(depth, Mark::OnGpu, plan, Vec::new());
        let spine = std::mem::replace(&mut self.spine, false);
        let mut inputs = Vec::new();
        let mut cpu_children = Vec::new();
        for child in [join.left(), join.right()] {
            let (exchanges, below) = joins::exchanges_below(child);
            for (i, exchange) in exchanges.iter().enumerate() {
                self.line(depth + 1 + i, Mark::OnGpu, exchange, Vec::new());
            }
            self.parent_takes_device = true;
            let visited = self.visit(&below, depth + 1 + exchanges.len());
            let visited = match visited {
                Ok(visited) => visited,
                Err(e) => {
                    self.spine = spine;
                    return Err(e);
                }
            };
            cpu_children.push(rebuild_chain(&exchanges, Arc::clone(&visited))?);
            inputs.push(visited);
        }
        self.spine = spine;
        let Some(device) = &self.settings.device else {
            return Ok(Arc::clone(plan));
        };
        let [left, right]: [Arc<dyn ExecutionPlan>; 2] = inputs.try_into().map_err(|_| {
            datafusion::error::DataFusionError::Internal("a join has two inputs".into())
        })?;
        let (build, probe) = if build_right {
            (right, left)
        } else {
            (left, right)
        };
        let gpu: Arc<dyn ExecutionPlan> = Arc::new(GpuHashJoinExec::new(
            self.device_input(build, device),
            self.device_input(probe, device),
            Arc::clone(device),
            spec,
            plan.schema(),
            one_line(plan),
        ));
        // The CPU join the GPU join replaces, run if the GPU cannot finish.
        let fallback = datafusion::physical_plan::replace_children_if_necessary(
            Arc::clone(plan),
            cpu_children,
        )?;
        let exit: Arc<dyn ExecutionPlan> =
            Arc::new(DeviceToHostExec::new(gpu, Arc::clone(device), fallback));
        Ok(match restore {
            Some(partitioning) => Arc::new(RepartitionExec::try_new(exit, partitioning)?),
            None => exit,
        })
    }

    /// Whether the GPU join should build its table from the right input: estimated
    /// at less than half the left one's rows.
    fn right_is_smaller(&self, join: &HashJoinExec) -> bool {
        let rows = |plan: &Arc<dyn ExecutionPlan>| {
            self.predictions
                .get(&subtree_cost::node_key(plan))
                .map(|p| p.rows)
        };
        match (rows(join.left()), rows(join.right())) {
            (Some(left), Some(right)) => right * 2.0 < left,
            _ => false,
        }
    }

    /// Whether `auto` decides here: the engine is `auto` and no subtree above was
    /// moved as a whole.
    fn auto(&self) -> bool {
        self.settings.engine == Engine::Auto && !self.gpu_region
    }

    /// The cost model's prediction for `plan`'s whole subtree.
    fn predict_subtree(&self, plan: &Arc<dyn ExecutionPlan>) -> SubtreePrediction {
        if let Some(prediction) = self.predictions.get(&subtree_cost::node_key(plan)) {
            return *prediction;
        }
        let settings = self.settings;
        let all =
            subtree_cost::predict_all(plan, &settings.cost, &|leaf| is_resident(settings, leaf));
        all[&subtree_cost::node_key(plan)]
    }

    /// `plan`'s subtree, which the cost model predicts faster on the GPU: every
    /// supported operator in it moves; the first line says why.
    fn visit_gpu_region(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        depth: usize,
        prediction: SubtreePrediction,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let first = self.lines.len();
        self.gpu_region = true;
        let placed = self.visit(plan, depth);
        self.gpu_region = false;
        if let Some(line) = self.lines.get_mut(first) {
            line.reasons.push(PlacementReason::new(
                ReasonCode::CostModel,
                prediction.describe(),
            ));
        }
        placed
    }

    /// `spec`, unless `auto` decides here: the subtree from `plan` down was predicted
    /// faster on the CPU (else it would have moved as a whole), so `plan` stays.
    fn unpredicted<T>(
        &self,
        spec: std::result::Result<T, Vec<PlacementReason>>,
        plan: &Arc<dyn ExecutionPlan>,
    ) -> std::result::Result<T, Vec<PlacementReason>> {
        let spec = spec?;
        if self.auto() {
            return Err(vec![PlacementReason::new(
                ReasonCode::CostModel,
                self.predict_subtree(plan).describe(),
            )]);
        }
        Ok(spec)
    }

    /// `plan` kept on the CPU for `reasons` (marked as the cost model's when all are),
    /// its children placed on their own.
    fn visit_on_cpu(
        &mut self,
        plan: &Arc<dyn ExecutionPlan>,
        depth: usize,
        reasons: Vec<PlacementReason>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mark = if reasons.iter().all(|r| r.code == ReasonCode::CostModel) {
            Mark::KeptByCost
        } else {
            Mark::NotOnGpu
        };
        self.line(depth, mark, plan, reasons);
        self.visit_children(plan, depth + 1)
    }

    /// A sort group: a [`GpuSortExec`] over its input on the device, the merge and
    /// projections above the sort going with it ([`sorts`]), or the CPU operators with
    /// their reasons.
    fn visit_sort(
        &mut self,
        group: sorts::SortGroup,
        depth: usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let top = Arc::clone(&group.nodes[0]);
        let spec = match self.unpredicted(sorts::sort_spec(&group), &top) {
            Ok(spec) => spec,
            Err(reasons) => return self.visit_on_cpu(&top, depth, reasons),
        };
        for (i, node) in group.nodes.iter().enumerate() {
            self.line(depth + i, Mark::OnGpu, node, Vec::new());
        }
        self.parent_takes_device = true;
        let source = self.visit(&group.source, depth + group.nodes.len())?;
        let Some(device) = &self.settings.device else {
            return Ok(top);
        };
        let gpu: Arc<dyn ExecutionPlan> = Arc::new(GpuSortExec::new(
            self.device_input(Arc::clone(&source), device),
            Arc::clone(device),
            spec,
            top.schema(),
            group.nodes.iter().rev().map(one_line).collect(),
        ));
        // The CPU operators the sort replaces, run if the GPU cannot finish.
        let fallback = rebuild_chain(&group.nodes, source)?;
        Ok(Arc::new(
            DeviceToHostExec::new(gpu, Arc::clone(device), fallback).with_order_of_fallback(),
        ))
    }

    /// The kernels of a row segment, or why it stays on the CPU. A chain whose rows a
    /// GPU operator reads (`feeds_gpu`) is not weighed on its own: they go to the device
    /// either way.
    fn decide_rows(
        &self,
        chain: &RowChain,
        feeds_gpu: bool,
    ) -> std::result::Result<RowKernels, (Mark, Vec<PlacementReason>)> {
        let kernels = rows::row_segment_kernels(chain, &[], feeds_gpu)?;
        if !self.auto() || feeds_gpu {
            return Ok(kernels);
        }
        let kept = |text: String| {
            (
                Mark::KeptByCost,
                vec![PlacementReason::new(ReasonCode::CostModel, text)],
            )
        };
        let Some(rows) = input_rows(&chain.source) else {
            return Err(kept("its input has no row estimate".into()));
        };
        let resident = is_resident(
            self.settings,
            &scans::below_exchanges(Arc::clone(&chain.source)),
        );
        let prediction = self.settings.cost.predict_rows(
            &chain.source.schema(),
            &chain.nodes[0].schema(),
            rows,
            resident,
        );
        if !resident {
            return Err(kept(format!(
                "its input is not resident on the GPU, and its rows go back to CPU operators ({})",
                prediction.describe()
            )));
        }
        if !prediction.gpu_pays() {
            return Err(kept(prediction.describe()));
        }
        Ok(kernels)
    }

    fn decide(
        &self,
        aggregate: &Arc<dyn ExecutionPlan>,
        chain: &[Arc<dyn ExecutionPlan>],
        source: &Arc<dyn ExecutionPlan>,
    ) -> Decision {
        let spec = match aggregate_spec(aggregate, chain, source) {
            Ok(spec) => spec,
            Err(reasons) => return Decision::Cpu(Mark::NotOnGpu, reasons),
        };
        let mut reasons = input_type_reasons(&source.schema());
        let kernels = match aggregate_kernels(&spec) {
            Ok(kernels) if reasons.is_empty() => kernels,
            Ok(_) => return Decision::Cpu(Mark::NotOnGpu, reasons),
            Err(more) => {
                reasons.extend(more);
                return Decision::Cpu(Mark::NotOnGpu, reasons);
            }
        };
        if self.auto() {
            let rows = input_rows(source);
            let Some(rows) = rows else {
                return Decision::Cpu(
                    Mark::KeptByCost,
                    vec![PlacementReason::new(
                        ReasonCode::CostModel,
                        "its input has no row estimate",
                    )],
                );
            };
            // Residency helps only inputs that can be kept (in-memory table scans).
            let resident = is_resident(self.settings, &scans::below_exchanges(Arc::clone(source)));
            if let Some(why) = shape::kept_for_shape(&spec, source, resident) {
                return Decision::Cpu(
                    Mark::KeptByCost,
                    vec![PlacementReason::new(ReasonCode::CostModel, why)],
                );
            }
            let cost = &self.settings.cost;
            let host_side =
                host_side_read(&scans::below_exchanges(Arc::clone(source))).filter(|_| !resident);
            let host_filter = host_filter::of_chain(chain).filter(|_| !resident);
            let schema = source.schema();
            let prediction = match (host_side, host_filter) {
                // The upload runs the filter under the chain (its rows are the table's).
                (Some((rows, kept, tested)), _) => {
                    cost.predict_host_filtered(&schema, rows, kept, tested)
                }
                (None, Some((predicate, kept))) => {
                    let tested = cost::tested_width(&predicate, &schema);
                    cost.predict_host_filtered(&schema, rows, kept, tested)
                }
                (None, None) => cost.predict(&schema, rows, resident),
            };
            if !prediction.gpu_pays() {
                return Decision::Cpu(
                    Mark::KeptByCost,
                    vec![PlacementReason::new(
                        ReasonCode::CostModel,
                        prediction.describe(),
                    )],
                );
            }
        }
        Decision::Gpu(spec, kernels)
    }
}

/// The rows `source` produces, as exactly and cheaply as known: an in-memory table
/// counts its batches (DataFusion's statistics would also size every column);
/// anything else asks DataFusion's statistics.
fn input_rows(source: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
    if let Some(memory) = crate::memory_table::memory_source(source.as_ref()) {
        return Some(
            memory
                .partitions()
                .iter()
                .flatten()
                .map(|batch| batch.num_rows())
                .sum(),
        );
    }
    // A filter the upload runs on the host: its table's rows, as many as a sample keeps.
    if let Some((rows, kept, _)) = host_side_read(&scans::below_exchanges(Arc::clone(source))) {
        return Some((rows as f64 * kept).ceil() as usize);
    }
    let statistics = StatisticsContext::new().compute(source.as_ref(), &StatisticsArgs::new());
    match statistics.map(|s| s.num_rows) {
        Ok(Precision::Exact(rows) | Precision::Inexact(rows)) => Some(rows),
        _ => None,
    }
}

/// For a filter the upload runs on the host as it reads its table
/// ([`host_prefilter`]): the table's rows, the share a sample keeps and the bytes a
/// row its predicate reads.
fn host_side_read(source: &Arc<dyn ExecutionPlan>) -> Option<(usize, f64, f64)> {
    host_prefilter::tested_only(source)?;
    let filter = source.downcast_ref::<FilterExec>()?;
    let scan = scans::below_exchanges(Arc::clone(filter.input()));
    let rows = input_rows(&scan)?;
    let kept = subtree_cost::sampled_selectivity(filter)?;
    let tested = cost::tested_width(filter.predicate(), &filter.input().schema());
    Some((rows, kept, tested))
}

enum Decision {
    Gpu(AggregateSpec, crate::codegen::aggregate::AggregateKernels),
    Cpu(Mark, Vec<PlacementReason>),
}

/// Why columns of `schema`, a segment's input, cannot be uploaded (none when all can).
fn input_type_reasons(schema: &datafusion::arrow::datatypes::Schema) -> Vec<PlacementReason> {
    if schema.fields().is_empty() {
        // DataFusion's one-row placeholder (a SELECT without FROM, an aggregate over an
        // empty table folded to a literal) carries a column its schema does not name.
        return vec![PlacementReason::new(
            ReasonCode::UnsupportedOperator,
            "its input has no columns, so there is nothing for the GPU to read",
        )];
    }
    schema
        .fields()
        .iter()
        .filter_map(|field| {
            let error = device_form_of(field.data_type(), &LayoutOptions::default()).err()?;
            Some(PlacementReason::new(
                ReasonCode::UnsupportedType,
                format!(
                    "unsupported data types in input: {} ({error})",
                    field.data_type()
                ),
            ))
        })
        .collect()
}

/// DataFusion's one-line display of `plan`.
fn one_line(plan: &Arc<dyn ExecutionPlan>) -> String {
    displayable(plan.as_ref())
        .one_line()
        .to_string()
        .trim_end()
        .to_string()
}

/// `nodes` (a chain, top first, of operators with one input each) rebuilt over `source`.
fn rebuild_chain(
    nodes: &[Arc<dyn ExecutionPlan>],
    source: Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let mut rebuilt = source;
    for node in nodes.iter().rev() {
        rebuilt = datafusion::physical_plan::replace_children_if_necessary(
            Arc::clone(node),
            vec![rebuilt],
        )?;
    }
    Ok(rebuilt)
}

/// Why `expr` over `schema` cannot be computed in a GPU segment, if it cannot.
fn expression_reasons(
    expr: &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
    schema: &datafusion::arrow::datatypes::SchemaRef,
) -> Option<Vec<PlacementReason>> {
    let mut compiler = ExprCompiler::new(Arc::clone(schema));
    match compiler.compile(expr) {
        Some(value) if value.ty == CudaType::StrCode => Some(vec![PlacementReason::new(
            ReasonCode::UnsupportedType,
            format!("a string result ({expr}) is not produced on the GPU yet"),
        )]),
        Some(_) => None,
        None => Some(compiler.reasons().to_vec()),
    }
}

/// The DataFusion class name of an expression, for report lines.
fn expression_class(expr: &dyn datafusion::physical_expr::PhysicalExpr) -> String {
    let full = format!("{expr:?}");
    full.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("Expression")
        .to_string()
}

/// A partial aggregate over filters and projections, if `plan` is one, or a complete
/// one (DataFusion's `Single` and `SinglePartitioned`, which need no merge: one input
/// partition, or input already partitioned by the group keys).
/// The chain stops above a filter `host_side` says the upload runs on the host.
fn candidate(
    plan: &Arc<dyn ExecutionPlan>,
    host_side: &dyn Fn(&Arc<dyn ExecutionPlan>) -> bool,
) -> Option<Candidate> {
    let aggregate = plan.downcast_ref::<AggregateExec>()?;
    if *aggregate.mode() != AggregateMode::Partial && !is_complete(aggregate) {
        return None;
    }
    let mut chain = Vec::new();
    let mut node = Arc::clone(aggregate.input());
    while (node.is::<FilterExec>() || node.is::<ProjectionExec>()) && !host_side(&node) {
        let child = Arc::clone(node.children()[0]);
        chain.push(node);
        node = child;
    }
    Some(Candidate {
        aggregate: Arc::clone(plan),
        chain,
        source: node,
    })
}

/// Whether `aggregate` computes final values from its input in one step.
fn is_complete(aggregate: &AggregateExec) -> bool {
    matches!(
        aggregate.mode(),
        AggregateMode::Single | AggregateMode::SinglePartitioned
    )
}

/// What the kernels of a candidate compute, or why the aggregate cannot be one.
fn aggregate_spec(
    plan: &Arc<dyn ExecutionPlan>,
    chain: &[Arc<dyn ExecutionPlan>],
    source: &Arc<dyn ExecutionPlan>,
) -> std::result::Result<AggregateSpec, Vec<PlacementReason>> {
    let Some(aggregate) = plan.downcast_ref::<AggregateExec>() else {
        return Err(vec![PlacementReason::new(
            ReasonCode::UnsupportedOperator,
            "not an aggregate",
        )]);
    };
    let mut reasons = Vec::new();
    let refuse = |reasons: &mut Vec<PlacementReason>, text: String| {
        reasons.push(PlacementReason::new(
            ReasonCode::UnsupportedExpression,
            text,
        ));
    };
    if aggregate.group_expr().has_grouping_set() {
        refuse(
            &mut reasons,
            "grouping sets are not computed on the GPU yet".into(),
        );
    }
    if is_complete(aggregate) && aggregate.properties().output_ordering().is_some() {
        refuse(
            &mut reasons,
            "the aggregate keeps its input's order, which a GPU aggregate does not".into(),
        );
    }
    if aggregate.filter_expr().iter().any(Option::is_some) {
        refuse(
            &mut reasons,
            "aggregate FILTER clauses are not computed on the GPU yet".into(),
        );
    }
    let mut calls = Vec::new();
    for function in aggregate.aggr_expr() {
        let name = function.fun().name().to_string();
        let args = function.expressions();
        let Some(kind) = AggFunction::from_name(&name) else {
            refuse(
                &mut reasons,
                format!("aggregate function {name} is not computed on the GPU yet"),
            );
            continue;
        };
        if function.is_distinct() {
            refuse(
                &mut reasons,
                format!("{name}(DISTINCT ...) is not computed on the GPU yet"),
            );
            continue;
        }
        if !function.order_bys().is_empty() {
            refuse(
                &mut reasons,
                format!("{name} with ORDER BY is not computed on the GPU yet"),
            );
            continue;
        }
        if args.len() != 1 {
            refuse(
                &mut reasons,
                format!(
                    "{name} with {} arguments is not computed on the GPU yet",
                    args.len()
                ),
            );
            continue;
        }
        let state_fields = match function.state_fields() {
            Ok(fields) => fields,
            Err(e) => {
                refuse(&mut reasons, format!("{name}: {e}"));
                continue;
            }
        };
        calls.push(AggregateCall {
            function: kind,
            arg: Arc::clone(&args[0]),
            state_fields,
        });
    }
    if !reasons.is_empty() {
        return Err(reasons);
    }
    let stages = rows::stages_of(chain);
    Ok(AggregateSpec {
        input: source.schema(),
        stages,
        aggregate_input: aggregate.input().schema(),
        keys: aggregate
            .group_expr()
            .expr()
            .iter()
            .map(|(e, _)| Arc::clone(e))
            .collect(),
        calls,
        output: aggregate.schema(),
        mode: if is_complete(aggregate) {
            AggregateOutput::Values
        } else {
            AggregateOutput::States
        },
    })
}

/// Where the settings of one plan come from: the session's configuration.
pub type SettingsSource = dyn Fn(&ConfigOptions) -> PlacementSettings + Send + Sync;

/// A placed plan (weakly, so finished queries free it) and its report.
type KeptReport = (Weak<dyn ExecutionPlan>, Arc<PlacementReport>);

/// The physical optimizer rule. It keeps the report of each plan it placed, so the
/// caller that asked for the plan can print where its parts run.
pub struct GpuPlacement {
    settings: Arc<SettingsSource>,
    reports: Mutex<Vec<KeptReport>>,
}

impl fmt::Debug for GpuPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuPlacement").finish_non_exhaustive()
    }
}

impl GpuPlacement {
    pub fn new(settings: Arc<SettingsSource>) -> Self {
        Self {
            settings,
            reports: Mutex::new(Vec::new()),
        }
    }

    /// The report of `plan`, if this rule produced it.
    pub fn report_for(&self, plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<PlacementReport>> {
        let reports = self.reports.lock().ok()?;
        reports.iter().find_map(|(weak, report)| {
            weak.upgrade()
                .filter(|kept| Arc::ptr_eq(kept, plan))
                .map(|_| Arc::clone(report))
        })
    }
}

impl PhysicalOptimizerRule for GpuPlacement {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let start = std::time::Instant::now();
        let settings = (self.settings)(config);
        let placement = place(plan, &settings)?;
        crate::trace::phase("GPU placement", start, String::new);
        if let Ok(mut reports) = self.reports.lock() {
            reports.retain(|(weak, _)| weak.strong_count() > 0);
            reports.push((Arc::downgrade(&placement.plan), Arc::new(placement.report)));
        }
        Ok(placement.plan)
    }

    fn name(&self) -> &str {
        "GpuPlacement"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
