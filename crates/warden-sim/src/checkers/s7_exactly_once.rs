//! S7 exactly-once effect (docs/semantics.md S7): a client request (client
//! id, request id) executes at most once on each node, across entries and
//! within one packed entry; a retry must replay the first outcome. Checked
//! at every apply.

use std::collections::BTreeMap;

use warden_core::types::{Command, Response};

use super::checker::{Checker, Entry};
use crate::world::History;

const PROPERTY: &str = "S7";

/// See the module docs.
#[derive(Debug, Default)]
pub struct ExactlyOnce {
    /// (node, client, request) → index that executed it.
    executed: BTreeMap<(u64, u64, u64), u64>,
}

/// The (client id, request id) of a command that executes once: an
/// acquire of any kind or a lease grant, bare or wrapped.
fn header_of(cmd: &Command) -> Option<(u64, u64)> {
    match cmd.unwrapped() {
        Command::Acquire(_) | Command::LeaseGrant(_) => {
            cmd.request_header().map(|h| (h.client_id, h.request_id))
        }
        _ => None,
    }
}

impl Checker for ExactlyOnce {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn on_entry(&mut self, e: &Entry<'_>, h: &mut History) {
        let (node_id, index) = (e.node_id, e.index);
        let mut executed_here = Vec::new();
        for (part, response) in &e.parts {
            let Some((client, request)) = header_of(part) else {
                continue;
            };
            let executed = match response {
                Response::Acquire(r) | Response::AcquireKind { reply: r, .. } => !r.retried,
                Response::LeaseGranted { .. } => true,
                _ => false,
            };
            if !executed {
                continue;
            }
            if executed_here.contains(&(client, request)) {
                h.violation(
                    PROPERTY,
                    format!(
                        "node {node_id}: request {request} of client {client} executed twice in entry {index}"
                    ),
                );
            }
            executed_here.push((client, request));
            if let Some(prev) = self.executed.get(&(node_id, client, request)).copied() {
                if prev != index {
                    h.violation(
                        PROPERTY,
                        format!(
                            "node {node_id}: request {request} of client {client} executed twice (index {prev} and {index})"
                        ),
                    );
                }
            } else {
                self.executed.insert((node_id, client, request), index);
            }
        }
    }
}
