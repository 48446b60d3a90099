//! The interface every checker implements ([`Checker`]) and the view of one
//! applied entry it is given ([`Entry`]).

use std::fmt::Debug;
use std::time::Duration;

use warden_core::table::LockTable;
use warden_core::types::{Command, LeaderId, Response};
use warden_core::{Deadlines, Effect};

use crate::world::History;

/// One applied entry on one node, as every inline checker sees it.
pub struct Entry<'a> {
    /// The node that applied it.
    pub node_id: u64,
    /// Its log index.
    pub index: u64,
    /// The leader id in the entry's own log id (who proposed it).
    pub log_leader: LeaderId,
    /// The command.
    pub cmd: &'a Command,
    /// Its commands with their responses ([`parts`]).
    pub parts: Vec<(&'a Command, &'a Response)>,
    /// The node's table after it.
    pub table: &'a LockTable,
    /// The node's deadline table after it.
    pub deadlines: &'a Deadlines,
    /// The entry's append stamp, on this node's clock.
    pub stamp: Duration,
    /// The apply time, on this node's clock.
    pub now: Duration,
    /// The apply time, global.
    pub at: Duration,
    /// A digest of the command (equal commands, equal digests).
    pub digest: u64,
}

/// The commands of an entry with their responses: a packed entry's
/// (`Command::Batch`) one by one, any other entry as itself.
pub fn parts<'a>(cmd: &'a Command, response: &'a Response) -> Vec<(&'a Command, &'a Response)> {
    match (cmd, response) {
        (Command::Batch(cmds), Response::Batch(rs)) if cmds.len() == rs.len() => {
            cmds.iter().zip(rs).collect()
        }
        _ => vec![(cmd, response)],
    }
}

/// What the observer does with an effect after a checker saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The next checker sees it too.
    Continue,
    /// The checker reported it as a broken grant: the later checkers do not
    /// see it and the history does not record it (it is reported once).
    Drop,
}

/// A checker of one property. Every hook has a default that does nothing.
pub trait Checker: Debug + Send {
    /// The property it reports ("S1", ..., "FENCE", "L2"); it reports no other.
    fn property(&self) -> &'static str;

    /// Once per applied entry, before its effects.
    fn on_entry(&mut self, _entry: &Entry<'_>, _h: &mut History) {}

    /// Once per effect of the entry, in the entry's order.
    fn on_effect(&mut self, _entry: &Entry<'_>, _effect: &Effect, _h: &mut History) -> Next {
        Next::Continue
    }

    /// Node `node_id` crashed: its volatile state (its deadline table) is gone.
    fn on_crash(&mut self, _node_id: u64) {}

    /// Once at the end of the run, on the whole history.
    fn at_end(&mut self, _h: &mut History) {}
}
