//! The device memory budget: how many bytes Aether may hold on the GPU, and who holds
//! them.
//!
//! Every device allocation first takes a [`Reservation`] from the one [`MemoryBudget`]
//! of its device, naming its owner (an operator, a cached table). A request the budget
//! cannot hold fails with [`DeviceError::OutOfMemory`] before CUDA is asked, so the caller
//! can spill or fall back to the CPU instead of meeting a CUDA out-of-memory error in the
//! middle of a query. Reservations release on drop.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::error::DeviceError;

#[derive(Debug, Default)]
struct Usage {
    used: u64,
    peak: u64,
    by_owner: BTreeMap<String, u64>,
}

/// A byte budget for one device.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: u64,
    usage: Mutex<Usage>,
}

impl MemoryBudget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            usage: Mutex::new(Usage::default()),
        })
    }

    /// The budget for a device with `free` bytes: `alloc_fraction` of what is free after
    /// leaving `reserve` bytes for contexts and kernels
    /// (`aether.gpu.memory.allocFraction`, `aether.gpu.memory.reserveBytes`).
    pub fn for_device(free: u64, alloc_fraction: f64, reserve: u64) -> Arc<Self> {
        let fraction = alloc_fraction.clamp(0.0, 1.0);
        Self::new((free.saturating_sub(reserve) as f64 * fraction) as u64)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.usage.lock().map_or(0, |u| u.used)
    }

    /// The most bytes held at once since the budget was made.
    pub fn peak(&self) -> u64 {
        self.usage.lock().map_or(0, |u| u.peak)
    }

    /// Bytes held now, per owner.
    pub fn by_owner(&self) -> Vec<(String, u64)> {
        self.usage.lock().map_or_else(
            |_| Vec::new(),
            |u| u.by_owner.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        )
    }

    /// Takes `bytes` from the budget for `owner`.
    pub fn reserve(self: &Arc<Self>, owner: &str, bytes: u64) -> Result<Reservation, DeviceError> {
        let mut usage = self
            .usage
            .lock()
            .map_err(|_| DeviceError::Internal("the GPU memory budget is poisoned".into()))?;
        let available = self.limit.saturating_sub(usage.used);
        if bytes > available {
            return Err(DeviceError::OutOfMemory {
                requested: bytes,
                available,
                budget: self.limit,
            });
        }
        usage.used += bytes;
        usage.peak = usage.peak.max(usage.used);
        *usage.by_owner.entry(owner.to_string()).or_default() += bytes;
        Ok(Reservation {
            budget: Arc::clone(self),
            owner: owner.to_string(),
            bytes,
        })
    }

    fn release(&self, owner: &str, bytes: u64) {
        if let Ok(mut usage) = self.usage.lock() {
            usage.used = usage.used.saturating_sub(bytes);
            if let Some(held) = usage.by_owner.get_mut(owner) {
                *held = held.saturating_sub(bytes);
                if *held == 0 {
                    usage.by_owner.remove(owner);
                }
            }
        }
    }
}

/// Bytes held from a [`MemoryBudget`] until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    owner: String,
    bytes: u64,
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(&self.owner, self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_accounted_per_owner_and_released_on_drop() {
        let budget = MemoryBudget::new(1000);
        let a = budget.reserve("scan", 600).unwrap();
        let b = budget.reserve("aggregate", 300).unwrap();
        assert_eq!(budget.used(), 900);
        assert_eq!(
            budget.by_owner(),
            vec![("aggregate".to_string(), 300), ("scan".to_string(), 600)]
        );
        let err = budget.reserve("join", 200).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "GPU out of memory: 200 bytes requested, 100 of the 1000-byte GPU budget free"
            ),
            "{err}"
        );
        drop(a);
        assert_eq!(budget.used(), 300);
        assert_eq!(budget.peak(), 900);
        drop(b);
        assert_eq!(budget.used(), 0);
        assert!(budget.by_owner().is_empty());
    }

    #[test]
    fn the_device_budget_leaves_the_reserve_and_applies_the_fraction() {
        assert_eq!(MemoryBudget::for_device(10_000, 0.5, 2_000).limit(), 4_000);
        assert_eq!(MemoryBudget::for_device(1_000, 1.0, 2_000).limit(), 0);
    }
}
