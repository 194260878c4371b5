//! The `aether.*` configuration namespace.
//!
//! [`AetherConfig`] is a DataFusion [`ConfigExtension`], so its keys live in the same
//! `ConfigOptions` as DataFusion's own: `SET aether.gpu.enabled = false` in SQL,
//! `--conf aether.gpu.enabled=false` on the command line, and (later) `spark.conf.set`
//! over Spark Connect all end in [`AetherConfig::set`].
//!
//! Every key is declared once in [`KEYS`], with its default, its description and the
//! RAPIDS Accelerator name that means the same thing (`spark.rapids.sql.enabled` for
//! `aether.gpu.enabled`), so a Spark user's existing settings carry over. A key that is
//! accepted but has no effect in this build says so through [`KeyEffect::NoEffectYet`];
//! callers print that notice rather than letting a setting silently do nothing.

use std::any::Any;
use std::fmt;

use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::error::{DataFusionError, Result};

/// What setting a key does in this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEffect {
    /// The key changes what Aether does.
    Active,
    /// The key is accepted and validated, but nothing reads it yet; the text says why.
    NoEffectYet(&'static str),
}

/// One declared configuration key.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// The key under the `aether.` prefix, e.g. `gpu.enabled`.
    pub name: &'static str,
    /// The RAPIDS Accelerator key with the same meaning, if there is one.
    pub rapids_alias: Option<&'static str>,
    /// The default value, as text.
    pub default: &'static str,
    pub description: &'static str,
    pub effect: KeyEffect,
}

impl KeySpec {
    /// The full key, `aether.` included.
    pub fn full_name(&self) -> String {
        format!("{}.{}", AetherConfig::PREFIX, self.name)
    }
}

const NO_SCHEDULER_YET: &str =
    "queries share the GPU through one stream; a GPU task scheduler is not implemented yet";

/// Every `aether.*` key. The order is the order `SHOW ALL` lists them in.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        name: "engine",
        rapids_alias: None,
        default: "auto",
        description: "Where queries run: auto (the cost model decides), gpu (everything supported) or cpu.",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "gpu.enabled",
        rapids_alias: Some("spark.rapids.sql.enabled"),
        default: "true",
        description: "Master switch: when false every query runs on the CPU.",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "sql.explain",
        rapids_alias: Some("spark.rapids.sql.explain"),
        default: "NOT_ON_GPU",
        description: "Placement report printed with plans: ALL, NOT_ON_GPU or NONE.",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "sql.mode",
        rapids_alias: Some("spark.rapids.sql.mode"),
        default: "executeOnGPU",
        description: "executeOnGPU, or explainOnly: plan as if a GPU were present, run on the CPU.",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "sql.planCache.enabled",
        rapids_alias: None,
        default: "true",
        description: "Reuse the physical plan of a query run again unchanged (same text, settings and table contents).",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "gpu.batchSizeBytes",
        rapids_alias: Some("spark.rapids.sql.batchSizeBytes"),
        default: "1073741824",
        description: "Target size in bytes of the batches a GPU segment consumes.",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "gpu.concurrentTasks",
        rapids_alias: Some("spark.rapids.sql.concurrentGpuTasks"),
        default: "1",
        description: "Queries allowed on the GPU at the same time.",
        effect: KeyEffect::NoEffectYet(NO_SCHEDULER_YET),
    },
    KeySpec {
        name: "gpu.memory.allocFraction",
        rapids_alias: Some("spark.rapids.memory.gpu.allocFraction"),
        default: "0.9",
        description: "Share of free GPU memory the device pool may use, in (0, 1].",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "gpu.memory.reserveBytes",
        rapids_alias: Some("spark.rapids.memory.gpu.reserve"),
        default: "671088640",
        description: "GPU memory in bytes left outside the pool for contexts and kernels.",
        effect: KeyEffect::Active,
    },
    KeySpec {
        name: "gpu.kernelCacheDir",
        rapids_alias: None,
        default: "",
        description: "Directory of compiled GPU kernels; empty means the user cache directory.",
        effect: KeyEffect::Active,
    },
];

/// Finds the declared key for `key`, which may be a full `aether.*` key or a RAPIDS alias.
///
/// Matching ignores case: SQL `SET` lowercases unquoted names, so
/// `SET aether.gpu.batchSizeBytes = ...` arrives as `aether.gpu.batchsizebytes`.
pub fn lookup(key: &str) -> Option<&'static KeySpec> {
    let inner = key
        .get(..AetherConfig::PREFIX.len() + 1)
        .filter(|prefix| prefix.eq_ignore_ascii_case("aether."))
        .map(|_| &key[AetherConfig::PREFIX.len() + 1..]);
    KEYS.iter().find(|spec| {
        inner.is_some_and(|inner| spec.name.eq_ignore_ascii_case(inner))
            || spec
                .rapids_alias
                .is_some_and(|alias| alias.eq_ignore_ascii_case(key))
    })
}

/// Rewrites a RAPIDS alias to its `aether.*` key; any other key is returned unchanged.
pub fn canonical_key(key: &str) -> String {
    match lookup(key) {
        Some(spec) => spec.full_name(),
        None => key.to_string(),
    }
}

/// `aether.sql.explain`: which nodes the placement report prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplainLevel {
    All,
    NotOnGpu,
    None,
}

impl ExplainLevel {
    fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_uppercase().as_str() {
            "ALL" => Some(Self::All),
            "NOT_ON_GPU" => Some(Self::NotOnGpu),
            "NONE" => Some(Self::None),
            _ => None,
        }
    }
}

impl fmt::Display for ExplainLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::All => "ALL",
            Self::NotOnGpu => "NOT_ON_GPU",
            Self::None => "NONE",
        })
    }
}

/// `aether.sql.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlMode {
    ExecuteOnGpu,
    ExplainOnly,
}

impl SqlMode {
    fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "executeongpu" => Some(Self::ExecuteOnGpu),
            "explainonly" => Some(Self::ExplainOnly),
            _ => None,
        }
    }
}

impl fmt::Display for SqlMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ExecuteOnGpu => "executeOnGPU",
            Self::ExplainOnly => "explainOnly",
        })
    }
}

/// The typed values of the `aether.*` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct AetherConfig {
    pub engine: aether_exec::Engine,
    pub gpu_enabled: bool,
    pub sql_explain: ExplainLevel,
    pub sql_mode: SqlMode,
    pub sql_plan_cache: bool,
    pub gpu_batch_size_bytes: u64,
    pub gpu_concurrent_tasks: u32,
    pub gpu_memory_alloc_fraction: f64,
    pub gpu_memory_reserve_bytes: u64,
    pub gpu_kernel_cache_dir: String,
}

impl Default for AetherConfig {
    fn default() -> Self {
        let mut config = Self {
            engine: aether_exec::Engine::Auto,
            gpu_enabled: true,
            sql_explain: ExplainLevel::NotOnGpu,
            sql_mode: SqlMode::ExecuteOnGpu,
            sql_plan_cache: true,
            gpu_batch_size_bytes: 0,
            gpu_concurrent_tasks: 0,
            gpu_memory_alloc_fraction: 0.0,
            gpu_memory_reserve_bytes: 0,
            gpu_kernel_cache_dir: String::new(),
        };
        // The defaults are declared once, as text, in KEYS; parse them from there so the
        // table `SHOW ALL` prints and the typed values cannot disagree.
        for spec in KEYS {
            if let Err(e) = config.set_declared(spec, spec.default) {
                unreachable!("default of aether.{} does not parse: {e}", spec.name);
            }
        }
        config
    }
}

impl AetherConfig {
    /// The value of a declared key, as text.
    fn value_of(&self, spec: &KeySpec) -> String {
        match spec.name {
            "engine" => self.engine.to_string(),
            "gpu.enabled" => self.gpu_enabled.to_string(),
            "sql.explain" => self.sql_explain.to_string(),
            "sql.mode" => self.sql_mode.to_string(),
            "sql.planCache.enabled" => self.sql_plan_cache.to_string(),
            "gpu.batchSizeBytes" => self.gpu_batch_size_bytes.to_string(),
            "gpu.concurrentTasks" => self.gpu_concurrent_tasks.to_string(),
            "gpu.memory.allocFraction" => self.gpu_memory_alloc_fraction.to_string(),
            "gpu.memory.reserveBytes" => self.gpu_memory_reserve_bytes.to_string(),
            "gpu.kernelCacheDir" => self.gpu_kernel_cache_dir.clone(),
            other => unreachable!("aether.{other} is declared but has no field"),
        }
    }

    fn set_declared(&mut self, spec: &KeySpec, value: &str) -> Result<()> {
        let value = value.trim();
        let invalid = |expected: &str| {
            DataFusionError::Configuration(format!(
                "invalid value '{value}' for aether.{}: expected {expected}",
                spec.name
            ))
        };
        match spec.name {
            "engine" => self.engine = value.parse().map_err(|_| invalid("auto, gpu or cpu"))?,
            "gpu.enabled" => {
                self.gpu_enabled = value.parse().map_err(|_| invalid("true or false"))?
            }
            "sql.explain" => {
                self.sql_explain =
                    ExplainLevel::parse(value).ok_or_else(|| invalid("ALL, NOT_ON_GPU or NONE"))?
            }
            "sql.mode" => {
                self.sql_mode =
                    SqlMode::parse(value).ok_or_else(|| invalid("executeOnGPU or explainOnly"))?
            }
            "sql.planCache.enabled" => {
                self.sql_plan_cache = value.parse().map_err(|_| invalid("true or false"))?
            }
            "gpu.batchSizeBytes" => {
                self.gpu_batch_size_bytes =
                    parse_positive(value).ok_or_else(|| invalid("a positive number of bytes"))?
            }
            "gpu.concurrentTasks" => {
                self.gpu_concurrent_tasks = parse_positive(value)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| invalid("a positive integer"))?
            }
            "gpu.memory.allocFraction" => {
                self.gpu_memory_alloc_fraction = value
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && *f <= 1.0)
                    .ok_or_else(|| invalid("a fraction in (0, 1]"))?
            }
            "gpu.memory.reserveBytes" => {
                self.gpu_memory_reserve_bytes =
                    value.parse().map_err(|_| invalid("a number of bytes"))?
            }
            "gpu.kernelCacheDir" => self.gpu_kernel_cache_dir = value.to_string(),
            other => unreachable!("aether.{other} is declared but has no field"),
        }
        Ok(())
    }
}

fn parse_positive(value: &str) -> Option<u64> {
    value.parse::<u64>().ok().filter(|n| *n > 0)
}

impl ConfigExtension for AetherConfig {
    const PREFIX: &'static str = "aether";
}

impl ExtensionOptions for AetherConfig {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let full = format!("{}.{key}", Self::PREFIX);
        let spec = lookup(&full).ok_or_else(|| {
            let known: Vec<String> = KEYS.iter().map(KeySpec::full_name).collect();
            DataFusionError::Configuration(format!(
                "unknown configuration key '{full}'; Aether's keys are: {}",
                known.join(", ")
            ))
        })?;
        self.set_declared(spec, value)
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        KEYS.iter()
            .map(|spec| ConfigEntry {
                key: spec.full_name(),
                value: Some(self.value_of(spec)),
                description: spec.description,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_declared_text() {
        let config = AetherConfig::default();
        for spec in KEYS {
            assert_eq!(config.value_of(spec), spec.default, "aether.{}", spec.name);
        }
    }

    #[test]
    fn aliases_resolve_to_aether_keys() {
        assert_eq!(
            canonical_key("spark.rapids.sql.enabled"),
            "aether.gpu.enabled"
        );
        assert_eq!(
            canonical_key("spark.rapids.sql.explain"),
            "aether.sql.explain"
        );
        assert_eq!(canonical_key("aether.sql.mode"), "aether.sql.mode");
        assert_eq!(
            canonical_key("spark.rapids.sql.batchsizebytes"),
            "aether.gpu.batchSizeBytes"
        );
        assert_eq!(
            canonical_key("aether.gpu.batchsizebytes"),
            "aether.gpu.batchSizeBytes"
        );
        assert_eq!(
            canonical_key("datafusion.execution.batch_size"),
            "datafusion.execution.batch_size"
        );
    }

    #[test]
    fn values_are_validated() {
        let mut config = AetherConfig::default();
        config.set("gpu.enabled", "false").unwrap();
        assert!(!config.gpu_enabled);
        config.set("sql.explain", "all").unwrap();
        assert_eq!(config.sql_explain, ExplainLevel::All);
        config.set("sql.mode", "explainOnly").unwrap();
        assert_eq!(config.sql_mode, SqlMode::ExplainOnly);

        let err = config.set("gpu.enabled", "maybe").unwrap_err().to_string();
        assert!(
            err.contains("invalid value 'maybe' for aether.gpu.enabled"),
            "{err}"
        );
        let err = config
            .set("gpu.memory.allocFraction", "1.5")
            .unwrap_err()
            .to_string();
        assert!(err.contains("a fraction in (0, 1]"), "{err}");
        let err = config.set("gpu.nonsense", "1").unwrap_err().to_string();
        assert!(
            err.contains("unknown configuration key 'aether.gpu.nonsense'"),
            "{err}"
        );
    }
}
