//! The cluster-version gate for packed entries: which log format each member
//! can read, and whether this node may pack queued commands into one
//! `Command::Batch` entry.
//!
//! A binary older than packing cannot decode a `Batch` entry (postcard fails
//! on the unknown variant index), so a follower or learner that runs one
//! would stop taking the leader's log at the first packed entry. Every node
//! therefore advertises [`LOG_FORMAT`], the newest log format it reads, in
//! the [`warden_proto::LOG_FORMAT_METADATA`] header of every answer of the
//! peer service's Raft calls (AppendEntries, the AppendStream's opening,
//! votes, snapshots, transfer-leader); an older node sends no header, which
//! counts as format 0. The calling side ([`crate::raft::network`]) records the
//! latest format each peer answered with in [`LogFormats`]; a restarted or
//! replaced node's first answer replaces it (openraft holds several
//! connections to a peer, so one of them timing out forgets nothing).
//!
//! [`LogFormats::may_pack`] is true only while every member of the current
//! membership other than this node (voters and learners, as openraft's
//! metrics show it; fed by [`LogFormats::set_members`]) has reported at least
//! [`BATCH_LOG_FORMAT`]. Until then the [`crate::node::proposer`] sends every
//! command alone as a plain entry, as before packing existed. The flag is an
//! atomic recomputed when a report or the membership changes, so the
//! proposer reads it without a lock. Its changes are logged at info.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The log format this binary reads (and advertises): 2, which includes
/// packed entries (`Command::Batch`, `Response::Batch`). 1 is the log before
/// packing; an older node advertises nothing, recorded as 0.
pub const LOG_FORMAT: u32 = 2;

/// The first log format that can decode `Command::Batch`: a leader packs
/// only when every other member has reported at least this.
pub const BATCH_LOG_FORMAT: u32 = 2;

/// What [`LOG_FORMAT_HEADER_VALUE`] is: [`LOG_FORMAT`] in decimal ASCII.
pub const LOG_FORMAT_HEADER_VALUE: &str = "2";

/// The format a peer's answer reports: its
/// [`warden_proto::LOG_FORMAT_METADATA`] value as a decimal `u32`; 0 when
/// it has none (a binary from before packing) or it does not parse.
pub fn reported_format(metadata: &tonic::metadata::MetadataMap) -> u32 {
    metadata
        .get(warden_proto::LOG_FORMAT_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Puts this binary's [`LOG_FORMAT`] into an answer's metadata (the peer
/// service does this on every Raft answer).
pub fn advertise<T>(response: &mut tonic::Response<T>) {
    response.metadata_mut().insert(
        warden_proto::LOG_FORMAT_METADATA,
        tonic::metadata::MetadataValue::from_static(LOG_FORMAT_HEADER_VALUE),
    );
}

#[derive(Debug, Default)]
struct Known {
    /// The latest format each peer answered with, by node id.
    reported: BTreeMap<u64, u32>,
    /// Every member (voters and learners) of the current membership; None
    /// until the first membership is known.
    members: Option<BTreeSet<u64>>,
}

/// The formats the peers of one node reported, and whether it may pack
/// (see the module docs). One per node, shared by its network (which
/// records reports) and its proposer (which reads [`Self::may_pack`]).
#[derive(Debug)]
pub struct LogFormats {
    me: u64,
    known: Mutex<Known>,
    may_pack: AtomicBool,
}

impl LogFormats {
    /// Nothing reported and no membership known yet, for node `me` (which
    /// needs no report from itself): [`Self::may_pack`] is false.
    pub fn new(me: u64) -> Self {
        LogFormats {
            me,
            known: Mutex::new(Known::default()),
            may_pack: AtomicBool::new(false),
        }
    }

    /// Whether every other member has reported a format that reads packed
    /// entries (at least [`BATCH_LOG_FORMAT`]). One atomic load.
    pub fn may_pack(&self) -> bool {
        self.may_pack.load(Ordering::Acquire)
    }

    /// Peer `node` answered with `format` (0: no header).
    pub fn record(&self, node: u64, format: u32) {
        self.update(|k| k.reported.insert(node, format) != Some(format));
    }

    /// The current membership's node ids, voters and learners (this node
    /// may be among them). Empty: not known (an uninitialized node).
    pub fn set_members(&self, members: impl IntoIterator<Item = u64>) {
        let members: BTreeSet<u64> = members.into_iter().collect();
        // An empty membership is an uninitialized node's: nothing known yet.
        let members = (!members.is_empty()).then_some(members);
        self.update(|k| {
            let changed = k.members != members;
            k.members = members;
            changed
        });
    }

    /// The latest format `node` reported, if any (diagnostics and tests).
    pub fn reported(&self, node: u64) -> Option<u32> {
        self.lock().reported.get(&node).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        // Two small maps; a panic elsewhere leaves them usable.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `change` (true when it changed anything) and recomputes the
    /// flag, logging when it flips.
    fn update(&self, change: impl FnOnce(&mut Known) -> bool) {
        let known = &mut *self.lock();
        if !change(known) {
            return;
        }
        let Some(members) = &known.members else {
            return;
        };
        let lagging: Vec<u64> = members
            .iter()
            .copied()
            .filter(|id| *id != self.me)
            .filter(|id| known.reported.get(id).is_none_or(|f| *f < BATCH_LOG_FORMAT))
            .collect();
        let may = lagging.is_empty();
        if self.may_pack.swap(may, Ordering::AcqRel) != may {
            if may {
                tracing::info!(
                    log_format = BATCH_LOG_FORMAT,
                    "every member reads packed entries: queued commands are packed into one entry \
                     while this node leads"
                );
            } else {
                tracing::info!(
                    ?lagging,
                    log_format = BATCH_LOG_FORMAT,
                    "not packing queued commands: these members have not reported log format 2"
                );
            }
        }
    }
}

/// Keeps `formats`' membership equal to `raft`'s effective membership
/// (voters and learners of every configuration, joint ones included), from
/// openraft's metrics; runs until the Raft handle shuts down.
pub async fn follow_membership(raft: crate::raft::Raft, formats: Arc<LogFormats>) {
    use openraft::async_runtime::WatchReceiver as _;
    // The server metrics, not `metrics()`: openraft publishes these only when
    // the vote, state, leader or membership changed, not after every entry,
    // so this task wakes per membership change rather than per commit.
    let mut rx = raft.server_metrics();
    let mut seen = None;
    loop {
        // The borrow is a read lock on the watch: released before the await.
        let members = {
            let m = rx.borrow_watched();
            let config = &m.membership_config;
            let log_id = *config.log_id();
            let changed = seen != Some(log_id);
            seen = Some(log_id);
            changed.then(|| config.nodes().map(|(id, _)| *id).collect::<Vec<u64>>())
        };
        if let Some(members) = members {
            formats.set_members(members);
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Rolling upgrade (the packing gate): packing starts only once every other member,
    // learners too, has reported format 2; a member that reports an older format, or a
    // new member, stops it again.
    #[test]
    fn packing_waits_for_every_other_member_to_report_format_2() {
        let f = LogFormats::new(1);
        f.record(2, 2);
        f.record(3, 2);
        assert!(!f.may_pack(), "membership not known yet");
        f.set_members([1, 2, 3]);
        assert!(
            f.may_pack(),
            "both others report 2; no report needed from self"
        );
        f.record(3, 0);
        assert!(!f.may_pack(), "node 3 answered without the header");
        f.record(3, 2);
        assert!(f.may_pack());
        f.set_members([1, 2, 3, 4]);
        assert!(!f.may_pack(), "learner 4 has not reported");
        f.record(4, 1);
        assert!(!f.may_pack(), "learner 4 reads format 1 only");
        f.record(4, 3);
        assert!(f.may_pack(), "a newer format reads packed entries too");
        f.set_members([1, 2, 3]);
        assert!(f.may_pack());
    }

    // The header round trip: what `advertise` puts in an answer is what
    // `reported_format` reads; no header or garbage reads as 0.
    #[test]
    fn an_advertised_format_reads_back_and_a_missing_one_is_0() {
        let mut r = tonic::Response::new(());
        assert_eq!(reported_format(r.metadata()), 0);
        advertise(&mut r);
        assert_eq!(reported_format(r.metadata()), LOG_FORMAT);
        assert_eq!(LOG_FORMAT_HEADER_VALUE, LOG_FORMAT.to_string());
        r.metadata_mut().insert(
            warden_proto::LOG_FORMAT_METADATA,
            tonic::metadata::MetadataValue::from_static("x"),
        );
        assert_eq!(reported_format(r.metadata()), 0);
    }
}
