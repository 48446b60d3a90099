//! An in-memory [`FenceStore`]: for tests, and for resources whose own state
//! is in memory (it forgets everything on restart, as they do).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::fence::{decide, Accepted, FenceError, FenceStore};

/// Highest accepted token per resource, in a mutex-guarded map.
#[derive(Debug, Default)]
pub struct MemoryStore {
    highest: Mutex<HashMap<String, u64>>,
}

impl FenceStore for MemoryStore {
    fn check_and_record(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        let mut map = self
            .highest
            .lock()
            .map_err(|_| FenceError::Store("memory store poisoned".into()))?;
        let accepted = decide(resource, map.get(resource).copied(), token)?;
        map.insert(resource.to_string(), token);
        Ok(accepted)
    }

    fn highest(&self, resource: &str) -> Result<Option<u64>, FenceError> {
        let map = self
            .highest
            .lock()
            .map_err(|_| FenceError::Store("memory store poisoned".into()))?;
        Ok(map.get(resource).copied())
    }
}
