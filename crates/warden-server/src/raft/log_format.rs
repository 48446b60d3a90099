//! The cluster-version gates: which log format each member can read, and
//! so whether this node may pack queued commands into one `Command::Batch`
//! entry (format 2), wrap client commands in `Command::Authorized` with
//! their principal (format 3), put a member's own peer address into the
//! membership (format 4), propose acquires of the other lock kinds
//! (format 5: `Command::AcquireKind`, `Response::AcquireKind`), propose
//! multi-locks (format 6: `Command::AcquireMulti`, `Response::AcquireMulti`),
//! propose max-hold acquires and their leader duties (format 7:
//! `Command::AcquireBounded`, `Command::EndMaxHold`,
//! `Command::CheckpointMaxHold`), and advance the duty clock instead of
//! naming each lease, wait and lock-delay in checkpoints (format 8:
//! `Command::AdvanceClock`), and promote a new leader in bounded entries
//! (format 9: `Command::PromoteSlice`).
//!
//! A binary older than a format cannot decode its entries (postcard fails on
//! the unknown variant index), so a follower or learner that runs one would
//! stop taking the leader's log at the first such entry. Format 4 is
//! subtler: its membership entries decode in an older binary (a
//! [`crate::types::MemberAddr`] is one string, as `BasicNode` was), but there
//! a member with a peer address reads as one address that nothing serves,
//! so that binary, once leader, could not reach the member. Every node
//! therefore advertises [`LOG_FORMAT`], the newest log format it reads, in
//! the [`warden_proto::LOG_FORMAT_METADATA`] header of every answer of the
//! peer service's Raft calls (AppendEntries, the AppendStream's opening,
//! votes, snapshots, transfer-leader); an older node sends no header, which
//! counts as format 0. The calling side ([`crate::raft::network`]) records the
//! latest format each peer answered with in [`LogFormats`]; a restarted or
//! replaced node's first answer replaces it (openraft holds several
//! connections to a peer, so one of them timing out forgets nothing).
//!
//! A gate is open only while every member of the current membership other
//! than this node (voters and learners, as openraft's metrics show it; fed by
//! [`LogFormats::set_members`]) reads its format:
//!
//! * [`LogFormats::may_pack`]: every other member reads [`BATCH_LOG_FORMAT`]
//!   (2). Until then the [`crate::node::proposer`] sends every command alone
//!   as a plain entry, as before packing existed.
//! * [`LogFormats::may_wrap`]: every other member reads [`AUTH_LOG_FORMAT`]
//!   (3: `Command::Authorized`, `Command::AuthChange`). Until then
//!   [`crate::node::Node::submit`] proposes an insecure node's client
//!   commands unwrapped (as before identities existed) and refuses a secure
//!   node's with `Unavailable` (a secure node never proposes a client command
//!   without its principal).
//! * [`LogFormats::may_name_peer_addrs`]: every other member reads
//!   [`PEER_ADDR_LOG_FORMAT`] (4: a [`crate::types::MemberAddr`] with a peer
//!   address). Until then [`crate::node::Node::add_node`] and `replace_node`
//!   refuse a member with a peer address (`FailedPrecondition`, naming the
//!   members that have not reported format 4). The node being added needs no
//!   report: it runs with `--peer-listen`, which only a format-4 binary has.
//!   A new cluster's first membership (`--peers` with `--peer-addrs`) and a
//!   restore are written by the operator for binaries they start, and are
//!   not gated.
//! * [`LogFormats::may_use_kinds`]: every other member reads
//!   [`KINDS_LOG_FORMAT`] (5: semaphores and read-write locks,
//!   docs/semantics.md "Lock kinds"). Until then
//!   [`crate::node::Node::submit`] refuses such an acquire with
//!   `FailedPrecondition`, naming the members that have not reported format
//!   5; a mutex acquire is proposed as before.
//! * [`LogFormats::may_use_multi`]: every other member reads
//!   [`MULTI_LOG_FORMAT`] (6: multi-locks, docs/semantics.md
//!   "Multi-locks"). Until then [`crate::node::Node::submit`] refuses a
//!   multi-lock with `FailedPrecondition` (field `resources`), naming the
//!   members that have not reported format 6.
//! * [`LogFormats::may_use_max_hold`]: every other member reads
//!   [`MAX_HOLD_LOG_FORMAT`] (7: max-hold, docs/semantics.md "Max-hold").
//!   Until then [`crate::node::Node::submit`] refuses an acquire with
//!   `max_hold_ms` with `FailedPrecondition` (field `max_hold_ms`), naming
//!   the members that have not reported format 7. No max-hold grant exists
//!   before the gate opened, so the leader's max-hold duties propose
//!   nothing before it either.
//! * [`LogFormats::may_use_duty_clock`]: every other member reads
//!   [`DUTY_CLOCK_LOG_FORMAT`] (8: `Command::AdvanceClock`,
//!   docs/semantics.md "Checkpoints"). Until then the leader's duty loop
//!   names remaining times in `Command::Checkpoint` entries, as before.
//! * [`LogFormats::may_promote_in_slices`]: every other member reads
//!   [`PROMOTE_SLICE_LOG_FORMAT`] (9: `Command::PromoteSlice`,
//!   docs/semantics.md "A new leader"). Until then a new leader commits one
//!   `Command::Promote` over every lease, as before.
//!
//! A member that has reported nothing yet counts as its *unreported floor*:
//! 0 on an insecure node, [`AUTH_LOG_FORMAT`] on a secure one
//! ([`LogFormats::secure`]). Every peer of a secure node authenticates with a
//! node certificate over TLS, which only binaries that read format 3 can do,
//! so a member that is down while a new leader takes over (and so has never
//! answered it) cannot hold back that leader's writes. A member's own
//! report always wins over the floor. The floor is below
//! [`PEER_ADDR_LOG_FORMAT`] on purpose: a format-3 binary also holds node
//! certificates, so only a member's own report of format 4 opens that gate
//! (it gates a membership change, which waits without harm, not writes).
//!
//! The *applied floor* raises it further: once this node has applied an
//! entry of format F ([`crate::types::entry_log_format`], published by the
//! state machine and fed to [`LogFormats::applied`]), a member that has not
//! reported to this node counts as at least F. An F entry commits only
//! while every member reads F (the gate), and once one is in the log no
//! older binary can follow the log anyway, so the gate would protect
//! nothing by waiting for that member. Without it, one member down while a
//! leader change happens would stop semaphores and read-write locks (and
//! every later gated command) until it came back. The floor is node-local
//! and starts at 0 on each start: a restarted node learns it again from the
//! entries it applies past its snapshot, or from the members' reports.
//!
//! *Second-hand reports* are the other half: a leader puts the format each
//! member has reported to it (or, for a member it has not heard from, what
//! it was told) in the [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`] header
//! of its Raft requests (`1=5,2=5,3=5`), and each receiver
//! ([`LogFormats::heard`]) keeps the newest format it was told per member.
//! A member that has not reported to this node counts as what it was told
//! of it, so the node that takes over after a leader dies, with a member
//! still down, does not wait for that member even before any gated entry
//! was written. A member added later was told of by nobody, and must report
//! itself. As with CockroachDB's finalized cluster version, a format every
//! member has shown is the cluster's from then on: rolling a member back
//! below it is not supported (docs/operations.md). This too is node-local
//! and starts empty.
//!
//! Each flag is an atomic recomputed when a report, the membership or a
//! floor changes, so the proposer reads it without a lock. Its changes are logged
//! at info.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The log format this binary reads (and advertises): 9, which includes
/// promotion slices (`Command::PromoteSlice`), the duty clock (`Command::AdvanceClock`), max-hold (`Command::AcquireBounded`, `Command::EndMaxHold`,
/// `Command::CheckpointMaxHold`), multi-locks (`Command::AcquireMulti`), acquires of the other lock kinds (`Command::AcquireKind`), members with a
/// peer address of their own (`MemberAddr`'s two-address
/// form), everything of format 3 (authorized entries: `Command::Authorized`,
/// `Command::AuthChange`, `Response::AuthChanged`) and of format 2 (packed
/// entries, `Command::Batch`, `Response::Batch`). 1 is the log before
/// packing; an older node advertises nothing, recorded as 0.
pub const LOG_FORMAT: u32 = 9;

// The format each gate needs (a leader does what a format brings only when
// every other member reads it); defined beside the command shapes, which the
// state machine's applied floor reads too.
pub use crate::types::{
    AUTH_LOG_FORMAT, BATCH_LOG_FORMAT, DUTY_CLOCK_LOG_FORMAT, KINDS_LOG_FORMAT,
    MAX_HOLD_LOG_FORMAT, MULTI_LOG_FORMAT, PEER_ADDR_LOG_FORMAT, PROMOTE_SLICE_LOG_FORMAT,
};

/// What [`LOG_FORMAT_HEADER_VALUE`] is: [`LOG_FORMAT`] in decimal ASCII.
pub const LOG_FORMAT_HEADER_VALUE: &str = "9";

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
    /// The newest format of an entry this node has applied (0: none yet):
    /// the applied floor (see the module docs).
    applied: u32,
    /// Second-hand reports: the newest format a leader's request said each
    /// member reads (see the module docs).
    heard: BTreeMap<u64, u32>,
}

/// One gate: the format it needs, its flag, and what it logs.
#[derive(Debug)]
struct Gate {
    format: u32,
    open: AtomicBool,
    opened: &'static str,
    closed: &'static str,
}

impl Gate {
    fn new(format: u32, opened: &'static str, closed: &'static str) -> Self {
        Gate {
            format,
            open: AtomicBool::new(false),
            opened,
            closed,
        }
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Sets the flag from the members that do not read [`Self::format`]
    /// yet, logging when it flips.
    fn set(&self, lagging: Vec<u64>) {
        let open = lagging.is_empty();
        if self.open.swap(open, Ordering::AcqRel) == open {
            return;
        }
        if open {
            tracing::info!(log_format = self.format, "{}", self.opened);
        } else {
            tracing::info!(?lagging, log_format = self.format, "{}", self.closed);
        }
    }
}

/// The formats the peers of one node reported, and whether it may pack and
/// wrap (see the module docs). One per node, shared by its network (which
/// records reports), its proposer (which reads [`Self::may_pack`]) and its
/// write path (which reads [`Self::may_wrap`]).
#[derive(Debug)]
pub struct LogFormats {
    me: u64,
    /// The format a member that has not reported counts as.
    unreported_floor: u32,
    known: Mutex<Known>,
    /// The oldest format among the members (this node's own included), each
    /// as reported or heard; 0 while one is unknown. One atomic load.
    members_read_now: std::sync::atomic::AtomicU32,
    /// What this node's Raft requests carry in
    /// [`warden_proto::MEMBERS_LOG_FORMAT_METADATA`]; None while nothing is
    /// known. Rebuilt when a report, a second-hand report or the membership
    /// changes.
    members_header: Mutex<Option<tonic::metadata::AsciiMetadataValue>>,
    pack: Gate,
    wrap: Gate,
    peer_addrs: Gate,
    kinds: Gate,
    multi: Gate,
    max_hold: Gate,
    duty_clock: Gate,
    promote_slices: Gate,
}

impl LogFormats {
    /// An insecure node `me` (which needs no report from itself): nothing
    /// reported and no membership known yet; both gates closed. A member
    /// that has not reported counts as format 0.
    pub fn new(me: u64) -> Self {
        Self::with_floor(me, 0)
    }

    /// A secure node `me`: as [`Self::new`], but a member that has not
    /// reported counts as [`AUTH_LOG_FORMAT`] (its peers are TLS node
    /// certificates; see the module docs).
    pub fn secure(me: u64) -> Self {
        Self::with_floor(me, AUTH_LOG_FORMAT)
    }

    /// This node's id.
    pub fn me(&self) -> u64 {
        self.me
    }

    fn with_floor(me: u64, unreported_floor: u32) -> Self {
        LogFormats {
            me,
            unreported_floor,
            known: Mutex::new(Known::default()),
            members_read_now: Default::default(),
            members_header: Mutex::new(None),
            pack: Gate::new(
                BATCH_LOG_FORMAT,
                "every member reads packed entries: queued commands are packed into one entry \
                 while this node leads",
                "not packing queued commands: these members have not reported log format 2",
            ),
            wrap: Gate::new(
                AUTH_LOG_FORMAT,
                "every member reads log format 3: client commands carry their principal \
                 (authorized entries) while this node leads",
                "not proposing authorized entries: these members have not reported log format \
                 3 (an insecure node proposes client commands unwrapped, a secure node refuses \
                 them as unavailable)",
            ),
            peer_addrs: Gate::new(
                PEER_ADDR_LOG_FORMAT,
                "every member reads log format 4: a membership change may give a member its \
                 own peer address",
                "refusing peer addresses in membership changes: these members have not \
                 reported log format 4",
            ),
            kinds: Gate::new(
                KINDS_LOG_FORMAT,
                "every member reads log format 5: semaphores and read-write locks may be \
                 acquired",
                "refusing semaphore and read-write acquires: these members have not reported \
                 log format 5",
            ),
            multi: Gate::new(
                MULTI_LOG_FORMAT,
                "every member reads log format 6: multi-locks may be acquired",
                "refusing multi-locks: these members have not reported log format 6",
            ),
            max_hold: Gate::new(
                MAX_HOLD_LOG_FORMAT,
                "every member reads log format 7: acquires with a max-hold may be made",
                "refusing acquires with a max-hold: these members have not reported log \
                 format 7",
            ),
            duty_clock: Gate::new(
                DUTY_CLOCK_LOG_FORMAT,
                "every member reads log format 8: the leader advances the duty clock instead \
                 of naming each lease in checkpoints",
                "naming leases, waits and lock-delays in checkpoints: these members have not \
                 reported log format 8",
            ),
            promote_slices: Gate::new(
                PROMOTE_SLICE_LOG_FORMAT,
                "every member reads log format 9: a new leader promotes itself in bounded \
                 entries",
                "promoting a new leader in one entry over every lease: these members have not \
                 reported log format 9",
            ),
        }
    }

    /// Whether every other member has reported a format that reads packed
    /// entries (at least [`BATCH_LOG_FORMAT`]). One atomic load.
    pub fn may_pack(&self) -> bool {
        self.pack.is_open()
    }

    /// Whether every other member has reported a format that reads
    /// authorized entries (at least [`AUTH_LOG_FORMAT`]). One atomic load.
    pub fn may_wrap(&self) -> bool {
        self.wrap.is_open()
    }

    /// Whether every other member has reported a format that reads a
    /// member's own peer address (at least [`PEER_ADDR_LOG_FORMAT`]; the
    /// unreported floor never reaches it). One atomic load.
    pub fn may_name_peer_addrs(&self) -> bool {
        self.peer_addrs.is_open()
    }

    /// Whether every other member has reported a format that reads
    /// acquires of the other lock kinds (at least [`KINDS_LOG_FORMAT`]).
    /// One atomic load.
    pub fn may_use_kinds(&self) -> bool {
        self.kinds.is_open()
    }

    /// Whether every other member has reported a format that reads
    /// multi-locks (at least [`MULTI_LOG_FORMAT`]). One atomic load.
    pub fn may_use_multi(&self) -> bool {
        self.multi.is_open()
    }

    /// Whether every other member has reported a format that reads
    /// max-hold entries (at least [`MAX_HOLD_LOG_FORMAT`]). One atomic load.
    pub fn may_use_max_hold(&self) -> bool {
        self.max_hold.is_open()
    }

    /// Whether every other member has reported a format that reads
    /// duty-clock advances (at least [`DUTY_CLOCK_LOG_FORMAT`]). One atomic
    /// load.
    pub fn may_use_duty_clock(&self) -> bool {
        self.duty_clock.is_open()
    }

    /// Whether every other member has reported a format that reads
    /// promotion slices (at least [`PROMOTE_SLICE_LOG_FORMAT`]). One atomic
    /// load.
    pub fn may_promote_in_slices(&self) -> bool {
        self.promote_slices.is_open()
    }

    /// The other members that have not reported [`MAX_HOLD_LOG_FORMAT`]
    /// (what a refused max-hold acquire names).
    pub fn lagging_max_hold_readers(&self) -> Vec<u64> {
        let known = self.lock();
        self.lagging(&known, MAX_HOLD_LOG_FORMAT)
    }

    /// The other members that have not reported [`MULTI_LOG_FORMAT`] (what
    /// a refused multi-lock names).
    pub fn lagging_multi_readers(&self) -> Vec<u64> {
        let known = self.lock();
        self.lagging(&known, MULTI_LOG_FORMAT)
    }

    /// The other members that have not reported [`KINDS_LOG_FORMAT`] (what
    /// a refused acquire names).
    pub fn lagging_kind_readers(&self) -> Vec<u64> {
        let known = self.lock();
        self.lagging(&known, KINDS_LOG_FORMAT)
    }

    /// The other members that have not reported [`PEER_ADDR_LOG_FORMAT`]
    /// (what a refused membership change names); empty when the gate is
    /// open or no membership is known.
    pub fn lagging_peer_addr_readers(&self) -> Vec<u64> {
        let known = self.lock();
        self.lagging(&known, PEER_ADDR_LOG_FORMAT)
    }

    /// The members of `known` other than this node whose format (reported,
    /// else the unreported floor) is below `format`.
    fn lagging(&self, known: &Known, format: u32) -> Vec<u64> {
        let Some(members) = &known.members else {
            return Vec::new();
        };
        members
            .iter()
            .copied()
            .filter(|id| *id != self.me)
            .filter(|id| {
                let reported = known.reported.get(id).copied();
                let floor = self
                    .unreported_floor
                    .max(known.applied)
                    .max(known.heard.get(id).copied().unwrap_or(0));
                reported.unwrap_or(floor) < format
            })
            .collect()
    }

    /// This node applied an entry of log format `format`
    /// ([`crate::types::entry_log_format`]): a member that has not reported
    /// counts as at least that from now on (the applied floor). A report
    /// still wins.
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

    /// Applies `change` (true when it changed anything) and recomputes the
    /// flags, logging when one flips.
    fn update(&self, change: impl FnOnce(&mut Known) -> bool) {
        let known = &mut *self.lock();
        if !change(known) {
            return;
        }
        self.publish_members(known);
        if known.members.is_none() {
            return;
        }
        for gate in [
            &self.pack,
            &self.wrap,
            &self.peer_addrs,
            &self.kinds,
            &self.multi,
            &self.max_hold,
            &self.duty_clock,
            &self.promote_slices,
        ] {
            gate.set(self.lagging(known, gate.format));
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

    // Rolling upgrade (the authorized-entry gate; a format-2 binary cannot
    // decode `Command::Authorized`): client commands are wrapped only once
    // every other member, learners too, has reported format 3; a member
    // answering with an older format closes the gate again, and the packing
    // gate (format 2) opens independently of it.
    #[test]
    fn wrapping_waits_for_every_other_member_to_report_format_3() {
        let f = LogFormats::new(1);
        f.set_members([1, 2, 3]);
        assert!(!f.may_wrap() && !f.may_pack(), "nothing reported yet");
        f.record(2, 3);
        f.record(3, 2);
        assert!(f.may_pack(), "both read packed entries");
        assert!(!f.may_wrap(), "node 3 reads format 2 only");
        f.record(3, 3);
        assert!(f.may_wrap() && f.may_pack());
        f.set_members([1, 2, 3, 4]);
        assert!(!f.may_wrap(), "learner 4 has not reported");
        f.record(4, 3);
        assert!(f.may_wrap());
        f.record(2, 0);
        assert!(
            !f.may_wrap() && !f.may_pack(),
            "node 2 answered without the header"
        );
        // A one-node cluster needs no report at all.
        let single = LogFormats::new(7);
        single.set_members([7]);
        assert!(single.may_wrap() && single.may_pack());
    }

    // Availability with one member down (L3: a majority serves; found by
    // the real-process semaphore test that kills the leader): once this node
    // has applied a format-5 entry, a member that has not reported to it
    // (down while this node took over) counts as format 5, so semaphores and
    // read-write locks stay available; a member's own older report still
    // closes the gate, and the floor never falls.
    #[test]
    fn an_applied_entry_raises_the_floor_of_unreported_members() {
        use warden_core::types::{
            Acquire, AcquireKind, Command, LeaseSpec, LockKind, Mode, RequestHeader,
        };
        let kinds = Command::AcquireKind(AcquireKind {
            acquire: Acquire {
                header: RequestHeader {
                    client_id: 1,
                    request_id: 1,
                    acked_request_id: 0,
                },
                resource: "doc".into(),
                lease: LeaseSpec::New { ttl_ms: 5_000 },
                wait_timeout_ms: 0,
                lock_delay_ms: 0,
                due: None,
            },
            kind: LockKind::ReadWrite,
            mode: Mode::Shared,
        });
        assert_eq!(crate::types::entry_log_format(&kinds), KINDS_LOG_FORMAT);
        assert_eq!(
            crate::types::entry_log_format(&Command::Batch(vec![Command::Noop, kinds.clone()])),
            KINDS_LOG_FORMAT
        );
        assert_eq!(crate::types::entry_log_format(&Command::Noop), 1);
        let f = LogFormats::secure(1);
        f.set_members([1, 2, 3]);
        f.record(2, KINDS_LOG_FORMAT);
        assert!(
            !f.may_use_kinds(),
            "3 never answered: it counts as format 3"
        );
        assert_eq!(f.lagging_kind_readers(), [3]);
        f.applied(KINDS_LOG_FORMAT);
        assert!(
            f.may_use_kinds() && f.may_name_peer_addrs(),
            "3 counts as 5 now"
        );
        f.applied(1);
        assert!(f.may_use_kinds(), "the floor never falls");
        f.record(3, AUTH_LOG_FORMAT);
        assert!(!f.may_use_kinds(), "3's own report of format 3 wins");
        assert_eq!(f.lagging_kind_readers(), [3]);
    }

    // Availability with one member down before any gated entry exists (L3:
    // a majority serves; the README's session kills the leader, then takes a
    // semaphore): a leader passes on the formats its members reported, and
    // a node told so counts a member that never answered it as what it was
    // told; a member's own older report still wins, a member nobody told of
    // (added later) must report itself, and a malformed item is skipped.
    #[test]
    fn a_leader_passes_on_the_formats_its_members_reported() {
        let leader = LogFormats::secure(1);
        leader.set_members([1, 2, 3]);
        leader.record(2, KINDS_LOG_FORMAT);
        assert_eq!(leader.members_read_format(), 0, "3 has not reported");
        leader.record(3, PEER_ADDR_LOG_FORMAT);
        assert_eq!(
            leader.members_read_format(),
            PEER_ADDR_LOG_FORMAT,
            "the oldest"
        );
        leader.record(3, KINDS_LOG_FORMAT);
        assert_eq!(leader.members_read_format(), KINDS_LOG_FORMAT);
        let header = leader.members_header().expect("a header");
        assert_eq!(header.to_str().unwrap(), format!("1={LOG_FORMAT},2=5,3=5"));
        let next = LogFormats::secure(2);
        next.set_members([1, 2, 3]);
        next.record(3, KINDS_LOG_FORMAT);
        assert!(!next.may_use_kinds(), "1 never answered 2");
        next.heard(&parse_members_header(header.to_str().unwrap()));
        assert!(
            next.may_use_kinds(),
            "1 counts as 5: the leader saw it report 5"
        );
        assert_eq!(next.members_read_format(), KINDS_LOG_FORMAT);
        next.set_members([1, 2, 3, 4]);
        assert!(!next.may_use_kinds(), "nobody told 2 of the new member 4");
        next.record(4, KINDS_LOG_FORMAT);
        assert!(next.may_use_kinds());
        next.record(1, AUTH_LOG_FORMAT);
        assert!(!next.may_use_kinds(), "1's own report of 3 wins");
        assert_eq!(
            parse_members_header("1=5,x=4,2=99,3=,4"),
            BTreeMap::from([(1, 5), (2, LOG_FORMAT)])
        );
    }

    // Availability of a secure cluster (L3: a majority serves): a member that
    // has never answered this node (down while it took over as leader) counts
    // as format 3, because a secure node's peers are TLS node certificates
    // that only format-3 binaries hold; a member's own older report still
    // closes the gate. An insecure node waits for every report.
    #[test]
    fn a_secure_node_counts_an_unreported_member_as_format_3() {
        let secure = LogFormats::secure(1);
        assert!(!secure.may_wrap(), "no membership known yet");
        secure.set_members([1, 2, 3]);
        assert!(
            secure.may_wrap() && secure.may_pack(),
            "2 and 3 never answered"
        );
        secure.record(3, 2);
        assert!(!secure.may_wrap(), "a report wins over the floor");
        assert!(secure.may_pack());
        secure.record(3, 3);
        assert!(secure.may_wrap());
        let insecure = LogFormats::new(1);
        insecure.set_members([1, 2, 3]);
        insecure.record(2, 3);
        assert!(
            !insecure.may_wrap(),
            "node 3 never answered an insecure node"
        );
    }

    // Rolling upgrade (the peer-address gate; a format-3 binary reads a
    // two-address member as one address nothing serves): a membership change
    // may name a peer address only once every other member, learners too,
    // has itself reported format 4. The secure unreported floor (3) does not
    // open it, though it opens wrapping; the refusal names who lags.
    #[test]
    fn peer_addresses_wait_for_every_other_member_to_report_format_4() {
        let secure = LogFormats::secure(1);
        assert!(!secure.may_name_peer_addrs(), "no membership known yet");
        assert_eq!(secure.lagging_peer_addr_readers(), Vec::<u64>::new());
        secure.set_members([1, 2, 3]);
        assert!(secure.may_wrap(), "the floor opens wrapping");
        assert!(
            !secure.may_name_peer_addrs(),
            "but not peer addresses: 2 and 3 never answered"
        );
        assert_eq!(secure.lagging_peer_addr_readers(), vec![2, 3]);
        secure.record(2, 4);
        secure.record(3, 3);
        assert!(!secure.may_name_peer_addrs());
        assert_eq!(secure.lagging_peer_addr_readers(), vec![3]);
        assert!(secure.may_wrap() && secure.may_pack());
        secure.record(3, 4);
        assert!(secure.may_name_peer_addrs());
        assert_eq!(secure.lagging_peer_addr_readers(), Vec::<u64>::new());
        secure.set_members([1, 2, 3, 4]);
        assert!(!secure.may_name_peer_addrs(), "learner 4 has not reported");
        assert_eq!(secure.lagging_peer_addr_readers(), vec![4]);
        secure.record(4, 5);
        assert!(secure.may_name_peer_addrs(), "a newer format reads it too");
        secure.record(2, 0);
        assert!(!secure.may_name_peer_addrs() && !secure.may_wrap());
        let single = LogFormats::new(7);
        single.set_members([7]);
        assert!(
            single.may_name_peer_addrs(),
            "a one-node cluster needs no report"
        );
    }

    // The header round trip: what `advertise` puts in an answer is what
    // `reported_format` reads; no header or garbage reads as 0.
    // Rolling upgrade (the kinds gate): a semaphore or read-write acquire
    // (`Command::AcquireKind`, a variant a format-4 binary cannot decode) is
    // proposed only once every other member has reported format 5; a member
    // still on format 4 keeps it closed and is named.
    #[test]
    fn lock_kinds_wait_for_every_other_member_to_report_format_5() {
        let secure = LogFormats::secure(1);
        secure.set_members([1, 2, 3]);
        assert!(secure.may_wrap() && !secure.may_use_kinds());
        assert_eq!(secure.lagging_kind_readers(), vec![2, 3]);
        secure.record(2, 5);
        secure.record(3, 4);
        assert!(
            secure.may_name_peer_addrs(),
            "format 4 is enough for peer addresses"
        );
        assert!(!secure.may_use_kinds());
        assert_eq!(secure.lagging_kind_readers(), vec![3]);
        secure.record(3, LOG_FORMAT);
        assert!(secure.may_use_kinds());
        assert_eq!(LOG_FORMAT_HEADER_VALUE, LOG_FORMAT.to_string());
    }

    // Rolling upgrade (the multi-lock gate): a multi-lock
    // (`Command::AcquireMulti`, a variant a format-5 binary cannot decode) is
    // proposed only once every other member has reported format 6; a member
    // still on format 5 keeps it closed (and the kinds gate open) and is named.
    #[test]
    fn multi_locks_wait_for_every_other_member_to_report_format_6() {
        let secure = LogFormats::secure(1);
        secure.set_members([1, 2, 3]);
        assert!(!secure.may_use_multi());
        assert_eq!(secure.lagging_multi_readers(), vec![2, 3]);
        secure.record(2, 6);
        secure.record(3, 5);
        assert!(secure.may_use_kinds(), "format 5 is enough for kinds");
        assert!(!secure.may_use_multi());
        assert_eq!(secure.lagging_multi_readers(), vec![3]);
        secure.record(3, LOG_FORMAT);
        assert!(secure.may_use_multi());
    }

    // Rolling upgrade (the max-hold gate, docs/semantics.md "Max-hold"): an
    // acquire with a max-hold (`Command::AcquireBounded`, a variant a
    // format-6 binary cannot decode) is proposed only once every other
    // member has reported format 7; a member still on format 6 keeps it
    // closed (and the multi-lock gate open) and is named.
    #[test]
    fn max_hold_waits_for_every_other_member_to_report_format_7() {
        let secure = LogFormats::secure(1);
        secure.set_members([1, 2, 3]);
        assert!(!secure.may_use_max_hold());
        assert_eq!(secure.lagging_max_hold_readers(), vec![2, 3]);
        secure.record(2, 7);
        secure.record(3, 6);
        assert!(secure.may_use_multi(), "format 6 is enough for multi-locks");
        assert!(!secure.may_use_max_hold());
        assert_eq!(secure.lagging_max_hold_readers(), vec![3]);
        secure.record(3, LOG_FORMAT);
        assert!(secure.may_use_max_hold());
    }

    // Rolling upgrade (the duty clock, docs/semantics.md "Checkpoints"): the
    // leader advances the clock (`Command::AdvanceClock`, which a format-7
    // binary cannot decode) only once every other member has reported
    // format 8; until then it names remaining times in checkpoints.
    #[test]
    fn the_duty_clock_waits_for_every_other_member_to_report_format_8() {
        let secure = LogFormats::secure(1);
        secure.set_members([1, 2, 3]);
        secure.record(2, 8);
        secure.record(3, 7);
        assert!(secure.may_use_max_hold(), "format 7 is enough for max-hold");
        assert!(!secure.may_use_duty_clock());
        secure.record(3, LOG_FORMAT);
        assert!(secure.may_use_duty_clock());
    }

    // Rolling upgrade (promotion in slices, docs/semantics.md "A new
    // leader"): a new leader proposes `Command::PromoteSlice`, which a
    // format-8 binary cannot decode, only once every other member has
    // reported format 9; until then it commits one `Promote`.
    #[test]
    fn promotion_slices_wait_for_every_other_member_to_report_format_9() {
        let secure = LogFormats::secure(1);
        secure.set_members([1, 2, 3]);
        secure.record(2, 9);
        secure.record(3, 8);
        assert!(
            secure.may_use_duty_clock(),
            "format 8 is enough for the clock"
        );
        assert!(!secure.may_promote_in_slices());
        secure.record(3, LOG_FORMAT);
        assert!(secure.may_promote_in_slices());
        assert_eq!(LOG_FORMAT, PROMOTE_SLICE_LOG_FORMAT);
        assert_eq!(LOG_FORMAT_HEADER_VALUE, "9");
    }

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
