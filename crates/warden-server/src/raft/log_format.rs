//! The log-format gate: which log format each member reads, and so whether
//! this node may propose an entry of a given format.
//!
//! # Shapes
//!
//! * A *log format* is a number. [`LOG_FORMAT`] is the newest one this
//!   binary reads and writes; [`OLDEST_LOG_FORMAT`] (1) is the oldest there
//!   is, the one every binary that can follow this log reads. A binary that
//!   adds a `Command` variant appends it (postcard numbers variants in
//!   order, so an older binary fails to decode the new one), raises
//!   [`LOG_FORMAT`], and makes [`crate::types::entry_log_format`] return the
//!   new format for that variant and for a batch or wrapper holding it.
//! * Every node advertises [`LOG_FORMAT`] in the
//!   [`warden_proto::LOG_FORMAT_METADATA`] header of every answer of the
//!   peer service's Raft calls (AppendEntries, the AppendStream's opening,
//!   votes, snapshots, transfer-leader; [`advertise`]); an answer without
//!   it reads as 0 ([`reported_format`]). The calling side
//!   ([`crate::raft::network`]) records the latest format each peer answered
//!   with ([`LogFormats::record`]); a restarted or replaced node's first
//!   answer replaces it (openraft holds several connections to a peer, so
//!   one of them timing out forgets nothing).
//! * A leader passes on what it knows: its Raft requests carry, in
//!   [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`] (`1=1,2=1,3=1`), the
//!   format each member reported to it or it heard of
//!   ([`LogFormats::members_header`]); a receiver keeps the newest format it
//!   was told per member ([`LogFormats::heard`]), capped at its own
//!   [`LOG_FORMAT`] ([`parse_members_header`]).
//!
//! # The rule
//!
//! A node proposes an entry of format F only when
//! [`LogFormats::may_propose`]`(F)` is `Ok`: every member of the current
//! membership other than this node (voters and learners, from openraft's
//! metrics, [`LogFormats::set_members`]) counts as reading F. A member
//! counts as its own latest report to this node if it made one; else as the
//! largest of:
//!
//! * the *floor*, [`OLDEST_LOG_FORMAT`]: a member that cannot read format 1
//!   cannot follow this log at all;
//! * the *applied floor*: the newest format of an entry this node has
//!   applied ([`LogFormats::applied`], fed from the state machine by
//!   [`follow_applied_format`]). Such an entry committed only while every
//!   member read its format, and once it is in the log no older binary can
//!   follow the log anyway, so waiting for a member that is down would
//!   protect nothing;
//! * what a leader said of it (second hand, above), so the node that takes
//!   over while a member is down does not wait for that member either.
//!
//! A member's own report always wins, even when it is older (a member rolled
//! back or replaced by an older binary closes the gate again; rolling back
//! below a format every member has shown is not supported). A member added
//! later was told of by nobody, and counts as the floor until it reports.
//! Format [`OLDEST_LOG_FORMAT`] never waits; anything newer waits while no
//! membership is known. This node itself is not asked: it proposes only
//! what it can build, so what it can read. A refusal is a [`Behind`] naming
//! the members that lag; the write path ([`crate::node::Node::submit`])
//! answers it with `FailedPrecondition`.
//!
//! Everything here is node-local and starts empty on each start (a
//! restarted node learns it again from reports, requests and the entries it
//! applies past its snapshot). The oldest format the other members read is
//! kept in an atomic, recomputed when a report, the membership or a floor
//! changes, so [`LogFormats::may_propose`] is one atomic load while it
//! passes; its changes are logged at info.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The log format this binary reads, writes and advertises (defined beside
/// the command shapes, whose [`crate::types::entry_log_format`] the state
/// machine's applied floor reads).
pub use crate::types::LOG_FORMAT;

/// The oldest log format there is: an unreported member counts as it, and
/// an entry of it is proposed without waiting for any report.
pub const OLDEST_LOG_FORMAT: u32 = 1;

/// What [`advertise`] sends: [`LOG_FORMAT`] in decimal ASCII.
pub const LOG_FORMAT_HEADER_VALUE: &str = "1";

/// The format a peer's answer reports: its
/// [`warden_proto::LOG_FORMAT_METADATA`] value as a decimal `u32`; 0 when
/// it has none or it does not parse.
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

/// Why an entry of some format may not be proposed yet: members of the
/// current membership that do not count as reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    /// The format asked for.
    pub format: u32,
    /// The other members that do not count as reading it, by id; empty
    /// when no membership is known yet.
    pub lagging: Vec<u64>,
}

impl std::fmt::Display for Behind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.lagging.is_empty() {
            write!(
                f,
                "log format {} needs every member to read it, and the membership is not known \
                 yet",
                self.format
            )
        } else {
            write!(
                f,
                "log format {} needs every member to read it; members {:?} have not reported \
                 it (upgrade them)",
                self.format, self.lagging
            )
        }
    }
}

impl std::error::Error for Behind {}

#[derive(Debug, Default)]
struct Known {
    /// The latest format each peer answered with, by node id.
    reported: BTreeMap<u64, u32>,
    /// Every member (voters and learners) of the current membership; None
    /// until the first membership is known.
    members: Option<BTreeSet<u64>>,
    /// The newest format of an entry this node has applied (0: none yet).
    applied: u32,
    /// Second-hand reports: the newest format a leader's request said each
    /// member reads.
    heard: BTreeMap<u64, u32>,
}

impl Known {
    /// The format member `id` counts as (see the module docs, "The rule").
    fn counts_as(&self, id: u64) -> u32 {
        self.reported.get(&id).copied().unwrap_or_else(|| {
            OLDEST_LOG_FORMAT
                .max(self.applied)
                .max(self.heard.get(&id).copied().unwrap_or(0))
        })
    }
}

/// The formats the members of one node's cluster read, as that node knows
/// them (see the module docs). One per node, shared by its network (which
/// records reports), its peer service (which takes second-hand reports) and
/// its write path (which asks [`Self::may_propose`]).
#[derive(Debug)]
pub struct LogFormats {
    me: u64,
    known: Mutex<Known>,
    /// The oldest format the other members count as: 0 while no membership
    /// is known, `u32::MAX` when this node is the only member.
    others_read: AtomicU32,
    /// The oldest format among the members (this node's own included), each
    /// as reported or heard; 0 while one is unknown.
    members_read_now: AtomicU32,
    /// What this node's Raft requests carry in
    /// [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`]; None while nothing is
    /// known.
    members_header: Mutex<Option<tonic::metadata::AsciiMetadataValue>>,
}

impl LogFormats {
    /// Node `me`: nothing reported and no membership known yet.
    pub fn new(me: u64) -> Self {
        LogFormats {
            me,
            known: Mutex::new(Known::default()),
            others_read: AtomicU32::new(0),
            members_read_now: AtomicU32::new(0),
            members_header: Mutex::new(None),
        }
    }

    /// The same as [`Self::new`]: a secure node's members count as the
    /// same floor as an insecure node's.
    pub fn secure(me: u64) -> Self {
        Self::new(me)
    }

    /// This node's id.
    pub fn me(&self) -> u64 {
        self.me
    }

    /// Whether this node may propose an entry of log format `format`
    /// ([`crate::types::entry_log_format`]): `Ok` when it is
    /// [`OLDEST_LOG_FORMAT`] or older, or every other member counts as
    /// reading it; else the members that lag. One atomic load while it
    /// passes.
    ///
    /// # Errors
    /// [`Behind`] naming the members that do not count as reading `format`
    /// (none while no membership is known).
    pub fn may_propose(&self, format: u32) -> Result<(), Behind> {
        if format <= OLDEST_LOG_FORMAT || format <= self.others_read.load(Ordering::Acquire) {
            return Ok(());
        }
        // Read again under the lock: a report may have come in since.
        let known = self.lock();
        if known.members.is_none() {
            return Err(Behind {
                format,
                lagging: Vec::new(),
            });
        }
        let lagging = self.lagging(&known, format);
        if lagging.is_empty() {
            return Ok(());
        }
        Err(Behind { format, lagging })
    }

    /// The members of `known` other than this node that do not count as
    /// reading `format`.
    fn lagging(&self, known: &Known, format: u32) -> Vec<u64> {
        let Some(members) = &known.members else {
            return Vec::new();
        };
        members
            .iter()
            .copied()
            .filter(|id| *id != self.me && known.counts_as(*id) < format)
            .collect()
    }

    /// This node applied an entry of log format `format`: a member that has
    /// not reported counts as at least that from now on (the applied
    /// floor). A report still wins; the floor never falls.
    pub fn applied(&self, format: u32) {
        self.update(|k| {
            let raised = format > k.applied;
            k.applied = k.applied.max(format);
            raised
        });
    }

    /// A leader's request told this node which format each member reads
    /// (its [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`], parsed by
    /// [`parse_members_header`]): a member that has not reported to this
    /// node counts as at least that from now on. A report still wins; what
    /// was heard never falls.
    pub fn heard(&self, formats: &BTreeMap<u64, u32>) {
        if formats.is_empty() {
            return;
        }
        self.update(|k| {
            let mut raised = false;
            for (&id, &format) in formats {
                let entry = k.heard.entry(id).or_insert(0);
                if format > *entry {
                    *entry = format;
                    raised = true;
                }
            }
            raised
        });
    }

    /// The oldest log format among the members, this node's own included,
    /// each as it reported it or as this node heard (0 while one of them is
    /// unknown, or no membership is known). One atomic load.
    pub fn members_read_format(&self) -> u32 {
        self.members_read_now.load(Ordering::Acquire)
    }

    /// The [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`] value this node's
    /// Raft requests carry; None while it knows no member's format.
    pub fn members_header(&self) -> Option<tonic::metadata::AsciiMetadataValue> {
        self.members_header
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Peer `node` answered with `format` (0: no header).
    pub fn record(&self, node: u64, format: u32) {
        self.update(|k| k.reported.insert(node, format) != Some(format));
    }

    /// The current membership's node ids, voters and learners (this node
    /// may be among them). Empty: not known (an uninitialized node).
    pub fn set_members(&self, members: impl IntoIterator<Item = u64>) {
        let members: BTreeSet<u64> = members.into_iter().collect();
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
        // Small maps; a panic elsewhere leaves them usable.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Rebuilds [`Self::members_read_format`] and [`Self::members_header`]
    /// from `known`: each member's own report, else what was heard of it.
    fn publish_members(&self, known: &Known) {
        let Some(members) = &known.members else {
            self.members_read_now.store(0, Ordering::Release);
            return;
        };
        let best = |id: &u64| -> Option<u32> {
            if *id == self.me {
                return Some(LOG_FORMAT);
            }
            known
                .reported
                .get(id)
                .or_else(|| known.heard.get(id))
                .copied()
        };
        let each: Vec<(u64, Option<u32>)> = members.iter().map(|id| (*id, best(id))).collect();
        let oldest = each.iter().map(|(_, f)| f.unwrap_or(0)).min().unwrap_or(0);
        self.members_read_now.store(oldest, Ordering::Release);
        let text: Vec<String> = each
            .iter()
            .filter_map(|(id, f)| f.map(|f| format!("{id}={f}")))
            .collect();
        let header = (!text.is_empty())
            .then(|| text.join(",").parse().ok())
            .flatten();
        *self
            .members_header
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = header;
    }

    /// Applies `change` (true when it changed anything), then recomputes
    /// what is published, logging when the oldest format the other members
    /// read changes.
    fn update(&self, change: impl FnOnce(&mut Known) -> bool) {
        let known = &mut *self.lock();
        if !change(known) {
            return;
        }
        self.publish_members(known);
        let others = match &known.members {
            None => 0,
            Some(members) => members
                .iter()
                .filter(|id| **id != self.me)
                .map(|id| known.counts_as(*id))
                .min()
                .unwrap_or(u32::MAX),
        };
        let before = self.others_read.swap(others, Ordering::AcqRel);
        if before == others || known.members.is_none() {
            return;
        }
        if others == u32::MAX {
            tracing::info!("no other member: every log format may be proposed");
        } else {
            tracing::info!(
                log_format = others,
                oldest = ?self.lagging(known, others.saturating_add(1)),
                "the other members read log format {others} or newer"
            );
        }
    }
}

/// Most members a [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`] value may
/// name; the rest of a longer one is ignored.
pub const MAX_MEMBERS_IN_HEADER: usize = 256;

/// Parses a [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`] value
/// (`ID=FORMAT,...`); malformed items are skipped, formats above this
/// binary's [`LOG_FORMAT`] are read as it (this node cannot vouch for more),
/// and at most [`MAX_MEMBERS_IN_HEADER`] items are read.
pub fn parse_members_header(value: &str) -> BTreeMap<u64, u32> {
    value
        .split(',')
        .take(MAX_MEMBERS_IN_HEADER)
        .filter_map(|item| {
            let (id, format) = item.split_once('=')?;
            let id = id.trim().parse::<u64>().ok()?;
            let format = format.trim().parse::<u32>().ok()?;
            Some((id, format.min(LOG_FORMAT)))
        })
        .collect()
}

/// Feeds the state machine's applied log format (its
/// `applied_log_format` watch) to `formats` as the applied floor, until the
/// state machine is dropped.
pub async fn follow_applied_format(
    mut applied: tokio::sync::watch::Receiver<u32>,
    formats: Arc<LogFormats>,
) {
    loop {
        let format = *applied.borrow_and_update();
        formats.applied(format);
        if applied.changed().await.is_err() {
            return;
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
    use warden_core::types::Command;

    /// A format after this binary's: the mechanism must gate it although no
    /// command of it exists yet.
    const NEXT: u32 = 2;

    // The gate (rolling upgrade to a later format): a leader whose peers
    // reported format 1 may not propose format-2 content and names who lags;
    // it may once every other member, learners too, reported 2; an older
    // report (a member rolled back or replaced) closes it again. Format 1
    // never waits, and a one-node cluster needs no report.
    #[test]
    fn a_new_format_waits_for_every_other_member_to_report_it() {
        let f = LogFormats::new(1);
        assert_eq!(
            f.may_propose(OLDEST_LOG_FORMAT),
            Ok(()),
            "format 1 never waits"
        );
        assert_eq!(
            f.may_propose(NEXT),
            Err(Behind {
                format: NEXT,
                lagging: vec![]
            }),
            "no membership known yet"
        );
        f.set_members([1, 2, 3]);
        f.record(2, 1);
        f.record(3, 1);
        let behind = f.may_propose(NEXT).expect_err("2 and 3 read format 1");
        assert_eq!(behind.lagging, vec![2, 3]);
        assert!(behind.to_string().contains("members [2, 3]"), "{behind}");
        f.record(2, NEXT);
        assert_eq!(f.may_propose(NEXT).expect_err("3 lags").lagging, vec![3]);
        f.record(3, NEXT);
        assert_eq!(f.may_propose(NEXT), Ok(()));
        assert_eq!(f.may_propose(OLDEST_LOG_FORMAT), Ok(()));
        f.set_members([1, 2, 3, 4]);
        assert_eq!(
            f.may_propose(NEXT)
                .expect_err("learner 4 has not reported")
                .lagging,
            vec![4]
        );
        f.record(4, NEXT + 1);
        assert_eq!(f.may_propose(NEXT), Ok(()), "a newer format reads it too");
        f.record(2, 0);
        assert_eq!(
            f.may_propose(NEXT)
                .expect_err("2 answered without the header")
                .lagging,
            vec![2]
        );
        let single = LogFormats::new(7);
        single.set_members([7]);
        assert_eq!(single.may_propose(NEXT), Ok(()), "no other member");
    }

    // Availability with one member down (L3: a majority serves): an
    // unreported member counts as its floor (format 1: every command of
    // today passes, format 2 waits); once this node applied a format-2 entry,
    // or a leader said the member reads 2, it counts as 2; its own older
    // report still wins, and neither floor falls.
    #[test]
    fn an_unreported_member_counts_as_its_floor() {
        let f = LogFormats::new(1);
        f.set_members([1, 2, 3]);
        for cmd in [Command::Tick, Command::Batch(vec![Command::Tick])] {
            let format = crate::types::entry_log_format(&cmd);
            assert_eq!(format, OLDEST_LOG_FORMAT);
            assert_eq!(f.may_propose(format), Ok(()), "nobody reported: {cmd:?}");
        }
        f.record(2, NEXT);
        assert_eq!(
            f.may_propose(NEXT).expect_err("3 counts as 1").lagging,
            vec![3]
        );
        f.applied(NEXT);
        assert_eq!(f.may_propose(NEXT), Ok(()), "3 counts as 2 now");
        f.applied(OLDEST_LOG_FORMAT);
        assert_eq!(f.may_propose(NEXT), Ok(()), "the applied floor never falls");
        f.record(3, OLDEST_LOG_FORMAT);
        assert_eq!(
            f.may_propose(NEXT).expect_err("3's report wins").lagging,
            vec![3]
        );

        let next = LogFormats::new(2);
        next.set_members([1, 2, 3]);
        next.record(3, NEXT);
        assert_eq!(
            next.may_propose(NEXT)
                .expect_err("1 never answered")
                .lagging,
            vec![1]
        );
        next.heard(&BTreeMap::from([(1, NEXT)]));
        assert_eq!(next.may_propose(NEXT), Ok(()), "a leader saw 1 report 2");
        next.heard(&BTreeMap::from([(1, OLDEST_LOG_FORMAT)]));
        assert_eq!(next.may_propose(NEXT), Ok(()), "what was heard never falls");
    }

    // Second-hand reports: a leader's requests carry what each member
    // reported to it (this node as its own format); the oldest of them is
    // the members' format; a receiver reads no format above its own, and
    // skips malformed items.
    #[test]
    fn a_leader_passes_on_the_formats_its_members_reported() {
        let leader = LogFormats::new(1);
        assert_eq!(leader.members_header(), None);
        leader.set_members([1, 2, 3]);
        leader.record(2, LOG_FORMAT);
        assert_eq!(leader.members_read_format(), 0, "3 has not reported");
        leader.record(3, LOG_FORMAT);
        assert_eq!(leader.members_read_format(), LOG_FORMAT);
        let header = leader.members_header().expect("a header");
        assert_eq!(
            header.to_str().expect("ascii"),
            format!("1={LOG_FORMAT},2={LOG_FORMAT},3={LOG_FORMAT}")
        );
        assert_eq!(
            parse_members_header("1=1,x=4,2=99,3=,4"),
            BTreeMap::from([(1, 1), (2, LOG_FORMAT)])
        );
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
