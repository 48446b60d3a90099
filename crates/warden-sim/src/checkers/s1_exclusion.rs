//! S1 exclusion (docs/semantics.md S1): in every committed state a resource
//! has at most one holder (of a mutex; a read-write lock's and a
//! semaphore's holders have checkers of their own, `kinds_exclusion.rs`).
//! Checked at every apply on every node: the table's own invariants hold
//! (one exclusive holder per resource, leases and grants consistent); every
//! node that applies index *i* reaches the same holders of every kind
//! (readers and permits with their slots);
//! and every node that makes a grant (resource, index, token) gives it to
//! the same lease.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use warden_core::types::Mode;
use warden_core::Effect;

use super::checker::{Checker, Entry, Next};
use crate::world::History;

const PROPERTY: &str = "S1";

/// See the module docs.
#[derive(Debug, Default)]
pub struct Exclusion {
    /// index → (command digest, holders digest, first node that applied it).
    per_index: BTreeMap<u64, (u64, u64, u64)>,
}

fn hash_of<T: Hash>(v: &T) -> u64 {
    let mut s = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut s);
    s.finish()
}

impl Checker for Exclusion {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        let (node_id, index) = (e.node_id, e.index);
        if let Err(err) = e.table.check_invariants() {
            h.violation(PROPERTY, format!("node {node_id} index {index}: {err}"));
        }
        // Every holder of every kind: the exclusive one, readers, permits
        // with their slots.
        let holders: Vec<Vec<_>> = h
            .resources
            .iter()
            .map(|r| {
                e.table
                    .holders(r)
                    .iter()
                    .map(|v| (v.lease_id, v.fencing_token, v.mode == Mode::Shared, v.slot))
                    .collect()
            })
            .collect();
        let holders = hash_of(&holders);
        match self.per_index.get(&index).copied() {
            // A different entry at this index is S3's finding, not S1's.
            Some((digest, first_holders, first))
                if digest == e.digest && first_holders != holders =>
            {
                h.violation(
                    PROPERTY,
                    format!(
                        "index {index}: node {node_id} applied a different holders than node {first}"
                    ),
                );
            }
            Some(_) => {}
            None => {
                self.per_index.insert(index, (e.digest, holders, node_id));
            }
        }
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        if let Effect::Granted {
            resource,
            lease_id,
            fencing_token,
            grant_index,
            ..
        } = effect
        {
            let key = (resource.clone(), *grant_index, *fencing_token);
            if let Some(seen) = h.grants.get(&key) {
                if seen.token != *fencing_token || seen.lease_id != *lease_id {
                    let msg = format!(
                        "{resource} at index {grant_index}: node {} granted lease {lease_id} token {fencing_token}, another node lease {} token {}",
                        e.node_id, seen.lease_id, seen.token
                    );
                    h.violation(PROPERTY, msg);
                }
            }
        }
        Next::Continue
    }
}
