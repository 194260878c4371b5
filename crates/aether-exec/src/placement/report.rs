//! The placement report, in the RAPIDS Accelerator's explain format.
//!
//! One line per plan node (and per refused expression), indented two spaces per depth:
//! `<mark><Kind> <<Class>> <status>`, with `*` will run on GPU, `!` cannot run on GPU
//! because ..., `$` kept on CPU by the cost model because .... Spark users and RAPIDS's
//! own tools read this text; the same reasons are kept as structured codes.

use std::fmt::Write as _;

use crate::reason::PlacementReason;

/// How a line is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// `*`: will run on the GPU.
    OnGpu,
    /// `!`: cannot run on the GPU.
    NotOnGpu,
    /// `$`: could run on the GPU, kept on the CPU by the cost model.
    KeptByCost,
}

impl Mark {
    pub fn symbol(self) -> char {
        match self {
            Self::OnGpu => '*',
            Self::NotOnGpu => '!',
            Self::KeptByCost => '$',
        }
    }
}

/// `aether.sql.explain`: which lines the report prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplainFilter {
    All,
    NotOnGpu,
    None,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportLine {
    pub depth: usize,
    pub mark: Mark,
    /// `Exec` or `Expression`.
    pub kind: &'static str,
    /// The DataFusion class, such as `FilterExec` or `BinaryExpr`.
    pub class: String,
    /// For expressions, their text.
    pub text: Option<String>,
    pub reasons: Vec<PlacementReason>,
}

impl ReportLine {
    fn status(&self) -> String {
        let reasons = self
            .reasons
            .iter()
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        match self.mark {
            Mark::OnGpu if reasons.is_empty() => "will run on GPU".to_string(),
            Mark::OnGpu => format!("will run on GPU because {reasons}"),
            Mark::NotOnGpu => format!("cannot run on GPU because {reasons}"),
            Mark::KeptByCost => format!("kept on CPU by the cost model because {reasons}"),
        }
    }
}

/// Where every node of one plan runs, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementReport {
    pub lines: Vec<ReportLine>,
    /// Set when nothing could move at all (no GPU, GPU disabled): the one-line reason.
    pub whole_plan: Option<String>,
}

impl PlacementReport {
    /// The nodes that run on the GPU.
    pub fn gpu_nodes(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == "Exec" && l.mark == Mark::OnGpu)
            .count()
    }

    /// The plan nodes the report covers.
    pub fn exec_nodes(&self) -> usize {
        self.lines.iter().filter(|l| l.kind == "Exec").count()
    }

    /// The report as text, filtered by `filter`, ending with how many operators run on
    /// the GPU; empty when there is nothing to say.
    pub fn render(&self, filter: ExplainFilter) -> String {
        let mut out = String::new();
        if filter == ExplainFilter::None {
            return out;
        }
        if let Some(why) = &self.whole_plan {
            let _ = writeln!(out, "Can't replace any part of this plan due to: {why}");
            return out;
        }
        for line in &self.lines {
            if filter == ExplainFilter::NotOnGpu && line.mark == Mark::OnGpu {
                continue;
            }
            let text = line
                .text
                .as_ref()
                .map_or_else(String::new, |t| format!(" {t}"));
            let _ = writeln!(
                out,
                "{}{}{} <{}>{} {}",
                "  ".repeat(line.depth),
                line.mark.symbol(),
                line.kind,
                line.class,
                text,
                line.status()
            );
        }
        let _ = writeln!(
            out,
            "{} of {} operators will run on GPU",
            self.gpu_nodes(),
            self.exec_nodes()
        );
        out
    }
}
