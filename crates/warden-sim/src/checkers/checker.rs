//! The interface every checker implements ([`Checker`]) and the view of one
//! applied entry it is given ([`Entry`]).

use std::fmt::Debug;
use std::time::Duration;

use warden_core::table::LockTable;
use warden_core::types::{Acquire, AcquireReply, Command, LeaderId, Response, Stamp};
use warden_core::Effect;

use crate::world::History;

/// One applied entry on one node, as every inline checker sees it.
pub struct Entry<'a> {
    /// The node that applied it.
    pub node_id: u64,
    /// Its log index.
    pub index: u64,
    /// The leader id in the entry's own log id (who proposed it).
    pub log_leader: LeaderId,
    /// The entry's stamp: its proposer's cluster time (docs/semantics.md
    /// "Time"; apply ignores a stamp of another leader).
    pub stamp: Stamp,
    /// The command as applied (an injected bug may have rewritten it).
    pub cmd: &'a Command,
    /// Its commands with their responses ([`parts`]).
    pub parts: Vec<(&'a Command, &'a Response)>,
    /// The command as the log holds it: what the clients asked for (the
    /// same as `cmd` unless a bug switch rewrote it).
    pub logged: &'a Command,
    /// The logged commands with the responses of the applied ones, one by
    /// one ([`parts`]).
    pub logged_parts: Vec<(&'a Command, &'a Response)>,
    /// The node's table after it (its `now_ms()` is the entry's cluster
    /// time: apply moves `now` first).
    pub table: &'a LockTable,
    /// The node's table after its previous normal entry, with that entry's
    /// index, when the history holds it (not at a node's first apply after
    /// a restart). Raft's blank and membership entries in between change no
    /// table; a snapshot installed in between does (rare: a lagging
    /// follower), so a checker that needs the exact previous state also
    /// asks for the index just before.
    pub before: Option<(u64, &'a LockTable)>,
    /// The apply time, global (real, simulated time).
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

/// An acquire of any kind with its reply: a mutex `Command::Acquire`
/// (answered `Response::Acquire`) or a read-write or semaphore
/// `Command::AcquireKind` (answered `Response::AcquireKind`), bare or inside
/// `Command::Authorized`.
pub fn acquire_reply<'a>(
    cmd: &'a Command,
    response: &'a Response,
) -> Option<(&'a Acquire, &'a AcquireReply)> {
    let acquire = cmd.acquire()?;
    match response {
        Response::Acquire(reply) | Response::AcquireKind { reply, .. } => Some((acquire, reply)),
        _ => None,
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

    /// Node `node_id` crashed: its volatile state is gone.
    fn on_crash(&mut self, _node_id: u64) {}

    /// Once at the end of the run, on the whole history.
    fn at_end(&mut self, _h: &mut History) {}
}

/// What the checkers' unit tests share: acquires of each kind and a run of
/// one checker over commands applied on one table, fed as the observer
/// feeds it.
#[cfg(test)]
pub(crate) mod harness {
    use warden_core::table::LockTable;
    use warden_core::types::{
        Acquire, Command, LeaderId, LeaseSpec, LockKind, Mode, Release, RequestHeader, Stamp,
    };
    use warden_core::Effect;

    // The module's items: `parts`, `Checker`, `Entry`, `Next`, `History`.
    use super::*;

    const LEADER: LeaderId = LeaderId {
        term: 1,
        node_id: 1,
    };

    /// An acquire of `resource` on a new lease (client `client`'s first
    /// request), of `kind` in `mode`, waiting up to `wait_ms`.
    pub fn acquire(
        client: u64,
        resource: &str,
        kind: LockKind,
        mode: Mode,
        wait_ms: u64,
    ) -> Command {
        let header = RequestHeader {
            client_id: client,
            request_id: 1,
            acked_request_id: 0,
        };
        let lease = LeaseSpec::New { ttl_ms: 10_000 };
        Command::Acquire(Acquire::mutex(header, resource, lease, wait_ms, 0).of_kind(kind, mode))
    }

    /// Client `client`'s second request: the release of lease `lease_id`'s
    /// grant of `resource`.
    pub fn release(client: u64, resource: &str, lease_id: u64) -> Command {
        Command::Release(Release {
            header: RequestHeader {
                client_id: client,
                request_id: 2,
                acked_request_id: 1,
            },
            resource: Some(resource.into()),
            lease_id,
            fencing_token: None,
        })
    }

    /// Applies each (applied, logged) pair in order on one table (indexes
    /// from 1, entry i stamped at cluster time i ms), feeding `checker` as
    /// the observer does (the entry, then each effect and `extra(index)`'s
    /// made-up effects, then the table kept as the node's last); returns the
    /// findings.
    pub fn findings(
        checker: &mut dyn Checker,
        cmds: &[(Command, Command)],
        extra: impl Fn(u64) -> Vec<Effect>,
    ) -> Vec<String> {
        let mut table = LockTable::new();
        let mut h = History::default();
        for (i, (cmd, logged)) in cmds.iter().enumerate() {
            let index = i as u64 + 1;
            let stamp = Stamp {
                leader: LEADER,
                at_ms: index,
            };
            let before = table.clone();
            let applied = table.apply(index, LEADER, stamp, cmd);
            let entry = Entry {
                node_id: 1,
                index,
                log_leader: LEADER,
                stamp,
                cmd,
                parts: parts(cmd, &applied.response),
                logged,
                logged_parts: parts(logged, &applied.response),
                table: &table,
                before: Some((index - 1, &before)),
                at: Duration::ZERO,
                digest: 0,
            };
            checker.on_entry(&entry, &mut h);
            for effect in applied.effects.iter().cloned().chain(extra(index)) {
                assert_eq!(checker.on_effect(&entry, &effect, &mut h), Next::Continue);
            }
            h.last_table.insert(1, (index, table.clone()));
        }
        checker.at_end(&mut h);
        h.violations.into_iter().map(|v| v.message).collect()
    }

    /// `cmds`, each logged as applied.
    pub fn unchanged(cmds: Vec<Command>) -> Vec<(Command, Command)> {
        cmds.into_iter().map(|c| (c.clone(), c)).collect()
    }
}
