//! S2 fencing (docs/semantics.md S2): every grant carries a token strictly
//! greater than every earlier token of its resource. At every apply: a
//! second grant of one resource by the same entry has a higher token than
//! the first (the bare log index is not enough, S2). At the end of the run:
//! per resource, tokens strictly grow with the grant's log index.

use std::collections::BTreeMap;

use warden_core::Effect;

use super::checker::{Checker, Entry, Next};
use crate::world::History;

const PROPERTY: &str = "S2";

/// See the module docs.
#[derive(Debug, Default)]
pub struct Fencing {
    /// (resource, token) of each grant the current entry made so far.
    granted_here: Vec<(String, u64)>,
}

impl Checker for Fencing {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, _e: &Entry<'_>, _h: &mut History) {
        self.granted_here.clear();
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        let Effect::Granted {
            resource,
            lease_id,
            fencing_token,
            ..
        } = effect
        else {
            return Next::Continue;
        };
        if self
            .granted_here
            .iter()
            .any(|(r, t)| r == resource && *t >= *fencing_token)
        {
            h.violation(
                PROPERTY,
                format!(
                    "node {} index {}: {resource} granted twice by one entry, the second time (lease {lease_id}) with token {fencing_token}, not above the first",
                    e.node_id, e.index
                ),
            );
            return Next::Drop;
        }
        self.granted_here.push((resource.clone(), *fencing_token));
        Next::Continue
    }

    fn at_end(&mut self, h: &mut History) {
        let mut by_res: BTreeMap<&str, Vec<(u64, u64, u64)>> = BTreeMap::new();
        for ((r, idx, _), g) in &h.grants {
            by_res
                .entry(r)
                .or_default()
                .push((*idx, g.token, g.lease_id));
        }
        let mut found = Vec::new();
        for (r, list) in &by_res {
            for w in list.windows(2) {
                if w[1].1 <= w[0].1 {
                    found.push(format!(
                        "{r}: grant at index {} has token {} after token {} at index {}",
                        w[1].0, w[1].1, w[0].1, w[0].0
                    ));
                }
            }
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }
}
