//! MULTI (docs/semantics.md "Multi-locks"): a multi-lock is granted whole
//! or not at all. For every logged multi-lock `Acquire` the table accepted as a
//! grant, the answer is a multi-lock's (one token per resource, in the
//! order asked) and, right after that entry, the lease holds every one of
//! its resources with exactly those tokens, each granted by that entry (or
//! by the earlier entry a retry's answer names). Checked at every apply on
//! every node, from the command as the log holds it (a server that applied
//! it as something else is caught too).

use warden_core::types::{AcquireOutcome, Response};

use super::checker::{Checker, Entry};
use crate::world::History;

const PROPERTY: &str = "MULTI";

/// See the module docs.
#[derive(Debug, Default)]
pub struct Multi;

impl Checker for Multi {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        for (part, response) in &e.logged_parts {
            let Some(m) = part.acquire().filter(|a| a.is_multi()) else {
                continue;
            };
            let at = format!(
                "node {} index {}: multi-lock of {:?}",
                e.node_id, e.index, m.resources
            );
            let (reply, grants) = match response {
                Response::AcquireMulti { reply, grants } => (reply, grants),
                Response::Acquire(reply) | Response::AcquireKind { reply, .. } => {
                    if matches!(reply.outcome, AcquireOutcome::Granted { .. }) {
                        h.violation(
                            PROPERTY,
                            format!("{at} was granted as an acquire of one resource"),
                        );
                    }
                    continue;
                }
                _ => continue,
            };
            let AcquireOutcome::Granted { lease_id, .. } = reply.outcome else {
                continue;
            };
            // A retry answered after the grant ended names no tokens.
            if grants.is_empty() && reply.retried {
                continue;
            }
            let asked: Vec<&str> = m.resources.iter().map(String::as_str).collect();
            let answered: Vec<&str> = grants.iter().map(|g| g.resource.as_str()).collect();
            if asked != answered {
                h.violation(
                    PROPERTY,
                    format!("{at} answered tokens for {answered:?}, not one per resource asked"),
                );
                continue;
            }
            let mut grant_index = None;
            for g in grants {
                match e.table.holder(&g.resource) {
                    Some(v) if v.lease_id == lease_id && v.fencing_token == g.fencing_token => {
                        if grant_index.is_some_and(|i| i != v.grant_index) {
                            h.violation(
                                PROPERTY,
                                format!(
                                    "{at}: {} was granted by entry {}, the others by {:?}",
                                    g.resource, v.grant_index, grant_index
                                ),
                            );
                        }
                        grant_index = Some(v.grant_index);
                    }
                    // A retry answered from the outcome table while the grant
                    // still stands names the current holder; anything else is
                    // a partial grant.
                    other if !reply.retried => h.violation(
                        PROPERTY,
                        format!(
                            "{at}: lease {lease_id} was answered token {} for {} but the table holds {:?}",
                            g.fencing_token,
                            g.resource,
                            other.map(|v| (v.lease_id, v.fencing_token))
                        ),
                    ),
                    _ => {}
                }
            }
        }
    }
}
