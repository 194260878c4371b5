//! The engine a query is asked to run on.

use std::fmt;
use std::str::FromStr;

/// Where the user asks queries to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// DataFusion on the CPU, whatever the hardware.
    Cpu,
    /// Every part the GPU supports runs on the GPU.
    Gpu,
    /// The placement rule and cost model decide, part by part.
    #[default]
    Auto,
}

impl Engine {
    /// The engines a user can name.
    pub const NAMES: [&'static str; 3] = ["cpu", "gpu", "auto"];

    /// The label used in result tables for where a query ran.
    pub fn label(self) -> &'static str {
        match self {
            Self::Cpu => "CPU",
            Self::Gpu => "GPU",
            Self::Auto => "auto",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
            Self::Auto => "auto",
        })
    }
}

impl FromStr for Engine {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            "auto" => Ok(Self::Auto),
            _ => Err(format!(
                "unknown engine '{name}': expected one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_parse() {
        assert_eq!("CPU".parse::<Engine>(), Ok(Engine::Cpu));
        assert!(
            "tpu"
                .parse::<Engine>()
                .unwrap_err()
                .contains("expected one of cpu, gpu, auto")
        );
        assert_eq!("Auto".parse::<Engine>(), Ok(Engine::Auto));
    }
}
