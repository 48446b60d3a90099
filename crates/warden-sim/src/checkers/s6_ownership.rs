//! S6 ownership (docs/semantics.md S6): a release frees only the exact
//! grant it names; a late or retried release carrying an old token never
//! frees a newer grant. Checked at every apply that frees a resource by a
//! release (in a packed entry: the grant one of its releases names).

use warden_core::types::{Command, Release};
use warden_core::{Effect, FreeReason};

use super::checker::{Checker, Entry, Next};
use crate::world::History;

const PROPERTY: &str = "S6";

/// See the module docs.
#[derive(Debug)]
pub struct Ownership;

impl Checker for Ownership {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_effect(&mut self, e: &Entry<'_>, effect: &Effect, h: &mut History) -> Next {
        let Effect::Freed {
            resource,
            lease_id,
            fencing_token,
            reason: FreeReason::Released,
            ..
        } = effect
        else {
            return Next::Continue;
        };
        let releases: Vec<&Release> = e
            .parts
            .iter()
            .filter_map(|(part, _)| match part {
                Command::Release(r) => Some(r),
                _ => None,
            })
            .collect();
        if let Some(r) = releases.first() {
            let names = |r: &Release| {
                r.lease_id == *lease_id
                    && r.fencing_token.is_none_or(|t| t == *fencing_token)
                    && r.resource.as_ref().is_none_or(|x| x == resource)
            };
            if !releases.iter().any(|r| names(r)) {
                h.violation(
                    PROPERTY,
                    format!(
                        "node {} index {}: release of lease {} token {:?} freed {resource} lease {lease_id} token {fencing_token}",
                        e.node_id, e.index, r.lease_id, r.fencing_token
                    ),
                );
            }
        }
        Next::Continue
    }
}
