//! S5 client honesty (docs/semantics.md S5): no client believes it holds a
//! grant past the start of another lease's conflicting grant of the same
//! resource: of a mutex, any other grant; of a read-write lock, a writer's
//! against any other, a reader's against a writer's (readers share); of a
//! semaphore, a grant of the same slot (permits in other slots share). A
//! belief lasts from the acknowledgement to the client's `valid_until`
//! (counted from the send, on its own clock, converted to global time);
//! another grant starts at its first apply on any node. Checked at the end
//! of the run.

use warden_core::types::Mode;

use super::checker::Checker;
use crate::world::{Belief, Grant, History};

const PROPERTY: &str = "S5";

/// See the module docs.
#[derive(Debug)]
pub struct ClientHonesty;

/// Whether grant `g` cannot be held beside the grant belief `b` is about
/// (another lease's grant of the same resource).
fn conflicts(b: &Belief, g: &Grant) -> bool {
    if b.slot.is_some() || g.slot.is_some() {
        return b.slot == g.slot;
    }
    b.mode == Mode::Exclusive || g.mode == Mode::Exclusive
}

impl Checker for ClientHonesty {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn at_end(&mut self, h: &mut History) {
        let mut found = Vec::new();
        for b in &h.beliefs {
            for ((r, idx, _), g) in &h.grants {
                if *r != b.resource
                    || g.lease_id == b.lease_id
                    || g.token <= b.token
                    || !conflicts(b, g)
                {
                    continue;
                }
                if g.first_at < b.until && g.first_at > b.since {
                    found.push(format!(
                        "client {} believed it held {r} (lease {}, token {}) until {:?} but lease {} was granted it (token {}, index {idx}) at {:?}",
                        b.client, b.lease_id, b.token, b.until, g.lease_id, g.token, g.first_at
                    ));
                }
            }
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }
}
