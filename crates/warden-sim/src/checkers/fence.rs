//! The fence (docs/semantics.md S2 and "Lock kinds", docs/fencing.md): the
//! fenced resource accepts no token below the bound of the writer's rule,
//! and an equal token only from the same lease (else two holders shared a
//! token). The bounds, a model of warden_fence's rules kept here from the
//! accepted writes alone:
//!
//! | writer | refused below | raises |
//! |---|---|---|
//! | a mutex holder or a writer (a plain token) | the highest token of any kind | the highest, the highest exclusive |
//! | a reader | the highest exclusive token | the highest |
//! | a permit of slot *s* | the highest token of slot *s*, the highest exclusive | the highest of *s*, the highest |
//!
//! Checked at the end of the run on the writes the clients recorded.

use std::collections::BTreeMap;

use warden_fence::Kind;

use super::checker::Checker;
use crate::world::History;

const PROPERTY: &str = "FENCE";

/// See the module docs.
#[derive(Debug)]
pub struct Fence;

/// The highest (token, lease) of one bound.
type High = Option<(u64, u64)>;

/// One resource's bounds.
#[derive(Default)]
struct Bounds {
    any: High,
    exclusive: High,
    slots: BTreeMap<u32, High>,
}

/// The finding if `(token, lease)` is below `high` or equal to it from
/// another lease.
fn below(high: High, token: u64, lease: u64, bound: &str) -> Option<String> {
    let (t, l) = high?;
    (token < t || (token == t && lease != l)).then(|| format!("{bound} {t} (lease {l})"))
}

fn raise(high: &mut High, token: u64, lease: u64) {
    if high.is_none_or(|(t, _)| token > t) {
        *high = Some((token, lease));
    }
}

impl Checker for Fence {
    fn property(&self) -> &'static str {
        PROPERTY
    }

    fn at_end(&mut self, h: &mut History) {
        let mut found = Vec::new();
        let mut bounds: BTreeMap<&str, Bounds> = BTreeMap::new();
        for w in &h.fence_writes {
            if !w.accepted {
                continue;
            }
            let b = bounds.entry(&w.resource).or_default();
            let (t, l) = (w.token, w.lease_id);
            let broken = match w.kind {
                Kind::Exclusive => below(b.any, t, l, "after token"),
                Kind::Shared => below(b.exclusive, t, l, "after exclusive token"),
                Kind::Permit { slot } => {
                    let of_slot = b.slots.get(&slot).copied().flatten();
                    below(of_slot, t, l, &format!("after slot {slot}'s token"))
                        .or_else(|| below(b.exclusive, t, l, "after exclusive token"))
                }
            };
            if let Some(after) = broken {
                found.push(format!(
                    "{}: accepted {:?} token {t} (lease {l}) {after}",
                    w.resource, w.kind
                ));
            }
            raise(&mut b.any, t, l);
            match w.kind {
                Kind::Exclusive => raise(&mut b.exclusive, t, l),
                Kind::Shared => {}
                Kind::Permit { slot } => raise(b.slots.entry(slot).or_default(), t, l),
            }
        }
        for m in found {
            h.violation(PROPERTY, m);
        }
    }
}
