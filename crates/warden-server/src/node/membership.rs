//! Membership changes: add a node, remove a node, replace a dead
//! node, and what `cluster status` shows per member.
//!
//! Rules (docs/operations.md "Changing membership"):
//! - Only the leader changes membership, one change at a time (a joint config
//!   in progress, or another change running on this leader, is refused with
//!   `FailedPrecondition`). A leader whose latest membership entry is not
//!   committed yet (a new leader commits the entries of the term before only
//!   with its first entry) waits for it, up to two election timeouts, before
//!   it checks: a removal right after the hand-over of an add was refused by
//!   openraft ("already undergoing a configuration change") with the add
//!   long committed.
//! - A new member has a client address and, when it runs with
//!   `--peer-listen`, a peer address of its own ([`MemberAddr`]).
//! - A new member is first given the cluster id (bootstrap prepare + commit
//!   on the node at its peer address, else its address, which must answer
//!   with the expected node id and run with `--join`), then added as an
//!   openraft learner; openraft
//!   blocks until the learner has caught up (log or snapshot); only then does
//!   it become a voter.
//! - A change is refused when the NEW voter set would not have a reachable
//!   majority: reachable = the leader, plus every voter that acknowledged the
//!   leader within two election timeouts, plus the learner just caught up.
//! - A change that removes the leader first hands leadership to the most
//!   up-to-date other voter and answers `Unavailable` naming the new leader;
//!   the CLI retries there.
//! - A node id that is not in the membership is refused on Vote and PreVote
//!   (a removed member that comes back cannot campaign).

use std::collections::BTreeSet;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use openraft::{ChangeMembers, Instant as _};
use tokio::sync::Mutex;
use warden_core::types::ErrorCode;

use super::error::command_error;
use super::{LeaderHint, Node, SubmitError};
use crate::types::MemberAddr;

/// Longest a learner may take to catch up before `AddNode`/`ReplaceNode`
/// gives up (the learner stays; retrying the same command resumes).
pub const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a membership change may take to commit.
pub const CHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// One membership change at a time on this leader.
static CHANGE: Mutex<()> = Mutex::const_new(());

/// Refuses a change whose new voter set has no reachable majority.
///
/// # Errors
/// A message naming the voters, the reachable ones and the majority needed.
pub fn check_quorum(new_voters: &BTreeSet<u64>, reachable: &BTreeSet<u64>) -> Result<(), String> {
    if new_voters.is_empty() {
        return Err("the change would leave no voter".into());
    }
    let up = new_voters.intersection(reachable).count();
    let need = new_voters.len() / 2 + 1;
    if up < need {
        return Err(format!(
            "the new voter set {new_voters:?} would have {up} reachable member(s) ({:?}); a majority needs {need}",
            new_voters.intersection(reachable).collect::<Vec<_>>()
        ));
    }
    Ok(())
}

/// The membership after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// Voter ids.
    pub voters: Vec<u64>,
    /// Learner ids.
    pub learners: Vec<u64>,
    /// The log index of the membership entry.
    pub log_index: u64,
}

/// Why a membership change was not made.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MembershipError {
    /// Bad input or the wrong state (names the field or the rule).
    #[error("refused: {0}")]
    Refused(warden_core::types::CommandError),
    /// This leader handed leadership over before a change that removes it;
    /// retry on the new leader.
    #[error("node {former} was the leader; leadership moved before the change")]
    LeadershipMoved {
        /// This node.
        former: u64,
        /// The new leader, when known.
        leader: LeaderHint,
    },
    /// The new member did not catch up in time; it stays a learner.
    #[error("node {node_id} did not catch up within {secs} s")]
    CatchUpTimeout {
        /// The new member.
        node_id: u64,
        /// The limit.
        secs: u64,
    },
    /// The change did not commit in time.
    #[error("the membership change did not commit within {secs} s")]
    NotCommitted {
        /// The limit.
        secs: u64,
    },
    /// Not the leader, or Raft refused or failed the change.
    #[error(transparent)]
    Raft(#[from] SubmitError),
}

fn refused(code: ErrorCode, message: impl Into<String>) -> MembershipError {
    MembershipError::Refused(command_error(code, None, message))
}

fn invalid(field: &str, message: impl Into<String>) -> MembershipError {
    MembershipError::Refused(command_error(
        ErrorCode::InvalidArgument,
        Some(field),
        message,
    ))
}

struct View {
    voters: BTreeSet<u64>,
    learners: BTreeSet<u64>,
    reachable: BTreeSet<u64>,
    joint: bool,
    leader: u64,
}

fn view(node: &Node) -> View {
    let rx = node.raft.metrics();
    let m = rx.borrow_watched();
    let mem = m.membership_config.membership();
    let window_ms = 2 * node.config.timing.election_timeout_max_ms;
    let mut reachable: BTreeSet<u64> = m
        .heartbeat
        .as_ref()
        .map(|h| {
            h.iter()
                .filter(|(_, t)| {
                    t.as_ref()
                        .is_some_and(|t| t.elapsed().as_millis() <= u128::from(window_ms))
                })
                .map(|(id, _)| *id)
                .collect()
        })
        .unwrap_or_default();
    reachable.insert(node.id);
    View {
        voters: mem.voter_ids().collect(),
        learners: mem.learner_ids().collect(),
        reachable,
        joint: mem.get_joint_config().len() > 1,
        leader: node.id,
    }
}

/// [`check_quorum`] on the current view, re-evaluated for up to two election
/// timeouts while it fails: a leader elected a moment ago has not heard from
/// its followers yet and would count them unreachable.
async fn check_quorum_settled(
    node: &Node,
    change: impl Fn(&View) -> (BTreeSet<u64>, BTreeSet<u64>),
) -> Result<View, MembershipError> {
    let window = Duration::from_millis(2 * node.config.timing.election_timeout_max_ms);
    let deadline = tokio::time::Instant::now() + window;
    loop {
        let v = view(node);
        let (new_voters, reachable) = change(&v);
        match check_quorum(&new_voters, &reachable) {
            Ok(()) => return Ok(v),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(refused(ErrorCode::FailedPrecondition, e))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
        node.require_leader()?;
    }
}

fn response(node: &Node) -> Membership {
    let rx = node.raft.metrics();
    let m = rx.borrow_watched();
    let mem = m.membership_config.membership();
    Membership {
        voters: mem.voter_ids().collect(),
        learners: mem.learner_ids().collect(),
        log_index: m
            .membership_config
            .log_id()
            .as_ref()
            .map(|l| l.index())
            .unwrap_or(0),
    }
}

fn check_id(field: &str, id: u64) -> Result<(), MembershipError> {
    if id == 0 || id > warden_core::limits::MAX_ID {
        return Err(invalid(
            field,
            format!("node ids are 1..={}; got {id}", warden_core::limits::MAX_ID),
        ));
    }
    Ok(())
}

fn check_addr(field: &str, addr: &str) -> Result<(), MembershipError> {
    let ok = !addr.is_empty()
        && addr.len() <= 255
        && !addr.contains("://")
        && !addr.chars().any(char::is_whitespace)
        && addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
    if !ok {
        return Err(invalid(
            field,
            format!(
                "expected HOST:PORT (at most 255 bytes, no whitespace, port 1..=65535); got {addr:?}"
            ),
        ));
    }
    Ok(())
}

/// The new member's addresses: `addr` (clients, and peers without
/// `peer_addr`) and `peer_addr` (its `--peer-listen` port), each checked,
/// and different.
fn member_addr(addr: &str, peer_addr: Option<&str>) -> Result<MemberAddr, MembershipError> {
    check_addr("addr", addr)?;
    if let Some(p) = peer_addr {
        check_addr("peer_addr", p)?;
    }
    MemberAddr::new(addr, peer_addr.map(str::to_string))
        .map_err(|e| invalid("peer_addr", e.to_string()))
}

/// The leader's state for a change. Who may ask (the `admin` permission,
/// or `--allow-admin` on an insecure node) is checked by the caller, the
/// admin service.
async fn precondition(node: &Node) -> Result<View, MembershipError> {
    node.require_leader()?;
    latest_membership_committed(node).await?;
    let v = view(node);
    if v.joint {
        return Err(refused(
            ErrorCode::FailedPrecondition,
            "a membership change is in progress (joint configuration); retry when it has finished",
        ));
    }
    Ok(v)
}

/// Waits (up to two election timeouts) until this leader's latest
/// membership entry is committed (module docs).
///
/// # Errors
/// `FailedPrecondition` when it is still not committed then.
async fn latest_membership_committed(node: &Node) -> Result<(), MembershipError> {
    let mut rx = node.raft.metrics();
    let wait = async {
        loop {
            {
                let m = rx.borrow_watched();
                if m.membership_config.log_id() == m.committed_membership_config.log_id() {
                    return;
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    };
    let limit = Duration::from_millis(2 * node.config.timing.election_timeout_max_ms.max(500));
    tokio::time::timeout(limit, wait).await.map_err(|_| {
        refused(
            ErrorCode::FailedPrecondition,
            "the latest membership change is not committed yet; retry when it is",
        )
    })
}

/// Hands leadership to the most up-to-date voter other than this leader and
/// waits (bounded) for it; then answers Unavailable naming the new leader.
async fn step_down(node: &Node, exclude: u64) -> MembershipError {
    let target = {
        let rx = node.raft.metrics();
        let m = rx.borrow_watched();
        let voters: BTreeSet<u64> = m.membership_config.membership().voter_ids().collect();
        m.replication.as_ref().and_then(|r| {
            r.iter()
                .filter(|(id, _)| **id != node.id && **id != exclude && voters.contains(id))
                .max_by_key(|(_, l)| l.as_ref().map(|l| l.index()))
                .map(|(id, _)| *id)
        })
    };
    let Some(target) = target else {
        return refused(
            ErrorCode::FailedPrecondition,
            "this node is the leader and no other voter can take over",
        );
    };
    tracing::info!(
        target,
        "membership: handing leadership over before changing it"
    );
    if node.raft.trigger().transfer_leader(target).await.is_ok() {
        let mut rx = node.raft.metrics();
        let me = node.id;
        let wait = async {
            loop {
                let l = rx.borrow_watched().current_leader;
                if l.is_some() && l != Some(me) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(
            Duration::from_millis(node.config.timing.leader_transfer_timeout_ms.max(1_000)),
            wait,
        )
        .await;
    }
    MembershipError::LeadershipMoved {
        former: node.id,
        leader: node.leader().filter(|(id, _)| *id != node.id),
    }
}

/// Gives the node at `member` the cluster id and adds it as a learner,
/// waiting until it has caught up. A learner already at `member` (both
/// addresses) is resumed.
async fn add_learner(
    node: &Node,
    v: &View,
    id: u64,
    member: &MemberAddr,
) -> Result<(), MembershipError> {
    if v.voters.contains(&id) {
        return Err(refused(
            ErrorCode::FailedPrecondition,
            format!("node {id} is already a voter"),
        ));
    }
    if v.learners.contains(&id) {
        let rx = node.raft.metrics();
        let same = rx
            .borrow_watched()
            .membership_config
            .membership()
            .get_node(&id)
            .is_some_and(|n| n == member);
        if !same {
            return Err(refused(
                ErrorCode::FailedPrecondition,
                format!("node {id} is already a learner at another address; remove it first"),
            ));
        }
    }
    crate::raft::bootstrap::hand_over_cluster_id(
        node.connector.as_ref(),
        member.dial_addr(),
        node.id,
        id,
        &node.cluster_id,
    )
    .await
    .map_err(|e| {
        refused(
            ErrorCode::FailedPrecondition,
            format!("node {id} at {}: {e}", member.dial_addr()),
        )
    })?;
    let fut = node.raft.add_learner(id, member.clone(), true);
    match tokio::time::timeout(CATCH_UP_TIMEOUT, fut).await {
        Err(_) => Err(MembershipError::CatchUpTimeout {
            node_id: id,
            secs: CATCH_UP_TIMEOUT.as_secs(),
        }),
        Ok(Err(e)) => Err(node.write_error(e).into()),
        Ok(Ok(_)) => Ok(()),
    }
}

/// Proposes the change and waits for it; the membership it made, from
/// the committed change itself (this node's metrics may not show it yet),
/// else from the metrics.
async fn change(
    node: &Node,
    members: ChangeMembers<u64, MemberAddr>,
) -> Result<Membership, MembershipError> {
    match tokio::time::timeout(CHANGE_TIMEOUT, node.raft.change_membership(members, false)).await {
        Err(_) => Err(MembershipError::NotCommitted {
            secs: CHANGE_TIMEOUT.as_secs(),
        }),
        Ok(Err(e)) => Err(node.write_error(e).into()),
        Ok(Ok(r)) => Ok(match r.membership {
            Some(m) => Membership {
                voters: m.voter_ids().collect(),
                learners: m.learner_ids().collect(),
                log_index: r.log_id.index(),
            },
            None => response(node),
        }),
    }
}

/// Adds node `id` at `addr` (and `peer_addr`) as a voter (`Admin/AddNode`).
async fn add_node(
    node: &Node,
    id: u64,
    addr: &str,
    peer_addr: Option<&str>,
) -> Result<Membership, MembershipError> {
    check_id("node_id", id)?;
    let member = member_addr(addr, peer_addr)?;
    let _one = CHANGE.try_lock().map_err(|_| {
        refused(
            ErrorCode::FailedPrecondition,
            "another membership change is running on this leader",
        )
    })?;
    precondition(node).await?;
    let v = check_quorum_settled(node, |v| {
        let mut new_voters = v.voters.clone();
        new_voters.insert(id);
        let mut reachable = v.reachable.clone();
        reachable.insert(id);
        (new_voters, reachable)
    })
    .await?;
    add_learner(node, &v, id, &member).await?;
    let m = change(node, ChangeMembers::AddVoterIds(BTreeSet::from([id]))).await?;
    tracing::info!(node_id = id, addr, ?peer_addr, "membership: added a voter");
    Ok(m)
}

/// Removes member `id` (`Admin/RemoveNode`).
async fn remove_node(node: &Node, id: u64) -> Result<Membership, MembershipError> {
    check_id("node_id", id)?;
    let _one = CHANGE.try_lock().map_err(|_| {
        refused(
            ErrorCode::FailedPrecondition,
            "another membership change is running on this leader",
        )
    })?;
    let v = precondition(node).await?;
    if v.learners.contains(&id) {
        return change(node, ChangeMembers::RemoveNodes(BTreeSet::from([id]))).await;
    }
    if !v.voters.contains(&id) {
        return Err(refused(
            ErrorCode::NotFound,
            format!(
                "node {id} is not a member (voters {:?}, learners {:?})",
                v.voters, v.learners
            ),
        ));
    }
    let v = check_quorum_settled(node, |v| {
        let mut new_voters = v.voters.clone();
        new_voters.remove(&id);
        (new_voters, v.reachable.clone())
    })
    .await?;
    if id == v.leader {
        return Err(step_down(node, id).await);
    }
    let m = change(node, ChangeMembers::RemoveVoters(BTreeSet::from([id]))).await?;
    tracing::info!(node_id = id, "membership: removed a voter");
    Ok(m)
}

/// Replaces voter `old` by a new node `new` at `addr` (and `peer_addr`)
/// (`Admin/ReplaceNode`).
async fn replace_node(
    node: &Node,
    old: u64,
    new: u64,
    addr: &str,
    peer_addr: Option<&str>,
) -> Result<Membership, MembershipError> {
    check_id("old_node_id", old)?;
    check_id("new_node_id", new)?;
    let member = member_addr(addr, peer_addr)?;
    if old == new {
        return Err(invalid(
            "new_node_id",
            "must differ from old_node_id (a replacement gets a new id; a reused id could vote twice)",
        ));
    }
    let _one = CHANGE.try_lock().map_err(|_| {
        refused(
            ErrorCode::FailedPrecondition,
            "another membership change is running on this leader",
        )
    })?;
    let v = precondition(node).await?;
    if !v.voters.contains(&old) {
        return Err(MembershipError::Refused(command_error(
            ErrorCode::NotFound,
            Some("old_node_id"),
            format!("node {old} is not a voter (voters {:?})", v.voters),
        )));
    }
    let new_voters_of = |v: &View| {
        let mut new_voters = v.voters.clone();
        new_voters.remove(&old);
        new_voters.insert(new);
        new_voters
    };
    let v = check_quorum_settled(node, |v| {
        let mut reachable = v.reachable.clone();
        reachable.insert(new);
        (new_voters_of(v), reachable)
    })
    .await?;
    if old == v.leader {
        return Err(step_down(node, old).await);
    }
    add_learner(node, &v, new, &member).await?;
    let m = change(node, ChangeMembers::ReplaceAllVoters(new_voters_of(&v))).await?;
    tracing::info!(old, new, addr, ?peer_addr, "membership: replaced a voter");
    Ok(m)
}

impl Node {
    /// Adds node `id` at client address `addr` (and its own `peer_addr`,
    /// when it runs with `--peer-listen`): hands it the cluster id, adds it
    /// as a learner, waits until it caught up, then makes it a voter.
    pub async fn add_node(
        &self,
        id: u64,
        addr: &str,
        peer_addr: Option<&str>,
    ) -> Result<Membership, MembershipError> {
        add_node(self, id, addr, peer_addr).await
    }

    /// Removes member `id` (a leader hands leadership over first).
    pub async fn remove_node(&self, id: u64) -> Result<Membership, MembershipError> {
        remove_node(self, id).await
    }

    /// Replaces voter `old` by the new node `new` at `addr` (and
    /// `peer_addr`, as [`Node::add_node`]).
    pub async fn replace_node(
        &self,
        old: u64,
        new: u64,
        addr: &str,
        peer_addr: Option<&str>,
    ) -> Result<Membership, MembershipError> {
        replace_node(self, old, new, addr, peer_addr).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u64]) -> BTreeSet<u64> {
        ids.iter().copied().collect()
    }

    // docs/operations.md "Changing membership": a change that would lose quorum is refused, naming the voters.
    #[test]
    fn quorum_check() {
        // 3 → 2 with one of the remaining two down: refused.
        let e = check_quorum(&set(&[1, 2]), &set(&[1, 3])).expect_err("no majority");
        assert!(e.contains("a majority needs 2"), "{e}");
        // Replace dead 3 by 4: {1,2,4}, all reachable.
        check_quorum(&set(&[1, 2, 4]), &set(&[1, 2, 4])).expect("ok");
        // 3 → 4 voters with one down: 3 of 4 reachable is a majority.
        check_quorum(&set(&[1, 2, 3, 4]), &set(&[1, 2, 4])).expect("ok");
        // 5 → 4 with two down: 2 of 4 is not.
        assert!(check_quorum(&set(&[1, 2, 3, 4]), &set(&[1, 2, 5])).is_err());
        assert!(check_quorum(&set(&[]), &set(&[1])).is_err());
    }

    // Bad input names the field and the limit.
    #[test]
    fn bad_ids_and_addresses_are_refused() {
        let field = |e: MembershipError| match e {
            MembershipError::Refused(e) => (e.code, e.field),
            other => panic!("not a refusal: {other}"),
        };
        assert_eq!(
            field(check_id("node_id", 0).unwrap_err()),
            (ErrorCode::InvalidArgument, Some("node_id".to_string()))
        );
        assert!(check_id("node_id", 1 << 53).is_err());
        check_addr("addr", "127.0.0.1:7001").expect("ok");
        check_addr("addr", "[::1]:7001").expect("ok");
        for bad in [
            "",
            "host",
            "host:0",
            "host:70000",
            ":7001",
            "http://a:1",
            "a peer=b:1",
        ] {
            let e = check_addr("addr", bad).expect_err(bad);
            assert_eq!(
                field(e),
                (ErrorCode::InvalidArgument, Some("addr".to_string())),
                "{bad}"
            );
        }
        // A peer address is checked the same way and must differ from the
        // client address (`--peer-listen`).
        let m = member_addr("a:7001", Some("a:7101")).expect("ok");
        assert_eq!((m.client_addr(), m.peer_addr()), ("a:7001", Some("a:7101")));
        assert_eq!(member_addr("a:7001", None).expect("ok").peer_addr(), None);
        for bad in ["a:7001", "a:0", "a b:1"] {
            let e = member_addr("a:7001", Some(bad)).expect_err(bad);
            assert_eq!(
                field(e),
                (ErrorCode::InvalidArgument, Some("peer_addr".to_string())),
                "{bad}"
            );
        }
    }
}
