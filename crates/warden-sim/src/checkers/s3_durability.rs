//! S3 durability (docs/semantics.md S3): no acknowledged change is lost.
//! At every apply: every node that applies index *i* applies the same entry
//! (no committed entry is replaced). At the end of the run: every
//! acknowledged grant is in some node's applied log, and no acknowledged
//! release is undone in the final state of the nodes that applied the most.

use std::collections::{BTreeMap, BTreeSet};

use super::checker::{Checker, Entry};
use crate::world::History;

const PROPERTY: &str = "S3";

/// See the module docs.
#[derive(Debug, Default)]
pub struct Durability {
    /// index → (command digest, first node that applied it).
    per_index: BTreeMap<u64, (u64, u64)>,
}

impl Checker for Durability {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        match self.per_index.get(&e.index).copied() {
            Some((digest, first)) if digest != e.digest => {
                h.violation(
                    PROPERTY,
                    format!(
                        "index {}: node {} applied a different entry than node {first}",
                        e.index, e.node_id
                    ),
                );
            }
            Some(_) => {}
            None => {
                self.per_index.insert(e.index, (e.digest, e.node_id));
            }
        }
    }

    fn at_end(&mut self, h: &mut History) {
        let mut found = Vec::new();
        let granted: BTreeSet<(String, u64, u64)> = h
            .grants
            .iter()
            .map(|((r, _, _), g)| (r.clone(), g.lease_id, g.token))
            .collect();
        for g in &h.acked_grants {
            if !granted.contains(g) {
                found.push(format!(
                    "acknowledged grant of {} to lease {} token {} is in no node's applied log",
                    g.0, g.1, g.2
                ));
            }
        }
        let final_index = h.last_table.values().map(|(i, _)| *i).max().unwrap_or(0);
        for (node, (index, table)) in h.last_table.iter().filter(|(_, (i, _))| *i == final_index) {
            for (r, lease, token) in &h.acked_releases {
                for v in table.holders(r) {
                    if v.lease_id == *lease && v.fencing_token == *token {
                        found.push(format!("node {node} at index {index}: acknowledged release of {r} lease {lease} token {token} is undone"));
                    }
                }
            }
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }
}
