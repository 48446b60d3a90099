//! The fence (docs/semantics.md S2, "The fencing story, end to end"): the
//! fenced resource never accepts a lower token after a higher one, and an
//! equal token only from the same lease (else two holders shared a token).
//! Checked at the end of the run on the writes the clients recorded.

use std::collections::BTreeMap;

use super::checker::Checker;
use crate::world::History;

const PROPERTY: &str = "FENCE";

/// See the module docs.
#[derive(Debug)]
pub struct Fence;

impl Checker for Fence {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn at_end(&mut self, h: &mut History) {
        let mut found = Vec::new();
        let mut highest: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for w in &h.fence_writes {
            if !w.accepted {
                continue;
            }
            if let Some((t, lease)) = highest.get(w.resource.as_str()).copied() {
                if w.token < t || (w.token == t && w.lease_id != lease) {
                    found.push(format!(
                        "{}: accepted token {} (lease {}) after token {t} (lease {lease})",
                        w.resource, w.token, w.lease_id
                    ));
                }
            }
            highest.insert(&w.resource, (w.token, w.lease_id));
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }
}
