//! An in-memory [`FenceStore`]: for tests, and for resources whose own state
//! is in memory (it forgets everything on restart, as they do).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::fence::{decide_claim, Accepted, Claim, FenceError, FenceStore, Highs};

/// What one resource has accepted.
#[derive(Debug, Default)]
struct Entry {
    /// Highest exclusive token (a mutex's or a read-write lock's exclusive).
    exclusive: Option<u64>,
    /// Highest shared token or permit.
    shared: Option<u64>,
    /// Highest permit per slot.
    slots: HashMap<u32, u64>,
}

/// The highest accepted tokens per resource (and per slot), in a
/// mutex-guarded map.
#[derive(Debug, Default)]
pub struct MemoryStore {
    resources: Mutex<HashMap<String, Entry>>,
}

fn highs_of(entry: Option<&Entry>, slot: Option<u32>) -> Highs {
    entry.map_or_else(Highs::default, |e| Highs {
        exclusive: e.exclusive,
        shared: e.shared,
        slot: slot.and_then(|s| e.slots.get(&s).copied()),
    })
}

impl FenceStore for MemoryStore {
    fn check_claim_and_record(&self, resource: &str, claim: Claim) -> Result<Accepted, FenceError> {
        let mut map = self
            .resources
            .lock()
            .map_err(|_| FenceError::Store("memory store poisoned".into()))?;
        let slot = claim.slot();
        let (accepted, new) = decide_claim(resource, claim, highs_of(map.get(resource), slot))?;
        let entry = map.entry(resource.to_string()).or_default();
        entry.exclusive = new.exclusive;
        entry.shared = new.shared;
        if let (Some(s), Some(t)) = (slot, new.slot) {
            entry.slots.insert(s, t);
        }
        Ok(accepted)
    }

    fn highs(&self, resource: &str, slot: Option<u32>) -> Result<Highs, FenceError> {
        let map = self
            .resources
            .lock()
            .map_err(|_| FenceError::Store("memory store poisoned".into()))?;
        Ok(highs_of(map.get(resource), slot))
    }
}
