//! Which node ids may make Raft calls to this node (docs/security.md "The
//! peer service"): the ids its own log or snapshot names, and an id it
//! does not know only once a majority of the voters it knows confirms it.
//!
//! [`KnownMembers`] is the membership as this node's openraft holds it:
//! every voter and learner of the latest membership in its log or snapshot
//! (committed or not) and of the committed one (a leader that removed
//! itself still replicates the entry that removes it). It is fed from
//! openraft's server metrics by `peer_access::follow_members`.
//!
//! A node certificate whose id is in it is admitted. A node that knows no
//! membership yet (a node started with `--join`, or one waiting for the
//! first leader of a new cluster) admits any node certificate of its
//! cluster: it has no voter to ask, and its first leader gives it its
//! membership. Any other id goes to [`Confirmations::confirm`]: this node
//! asks every other voter it knows `ConfirmMember` over its peer
//! connection (which checks that the node answering holds that voter's
//! certificate) and admits the id only when
//!
//! - the voters that say yes, **this node counted** when it is a voter
//!   itself, are a majority of the voters it knows, and
//! - at least one of them is another node (a node never vouches for an id
//!   alone, even as the only voter it knows).
//!
//! A voter answers from its own membership only (never from what it was
//! told), and an id it saw removed is never a member. So a certificate for
//! an id that was never a member, or one minted for another cluster that
//! shares the CA and that passed the cluster-name check (certificates
//! naming no cluster), is refused by every node whose voters are honest;
//! and the follower that was down while a node was added and the old leader
//! removed still follows the new leader: its voters still running know it.
//!
//! One confirmation runs at a time per id, shared by every call waiting
//! for it (a call waits at most [`CONFIRM_WAIT`], then is refused
//! `Unavailable` and the confirmation goes on); a confirmed id stays
//! admitted while this node's latest membership is the one it was
//! confirmed under (a later one either names it or must confirm it
//! again); an id refused is not asked about again for
//! [`RECONFIRM_AFTER`]. At most [`MAX_TRACKED_IDS`] ids are tracked.
//!
//! The refusal is `PermissionDenied` naming the id and the count of
//! confirmations, logged (rate-limited, `peer call refused: node N is not
//! in this node's membership ...`) and counted (`unconfirmed()`, the
//! `warden_raft_peers_unconfirmed` gauge, for [`REFUSED_SHOWN_FOR`]).
//!
//! Residual risk: a voter's word is taken, so the key of a node that was
//! removed while this node was down, and is not denied, could still
//! confirm a forged id to this node (the removed node is still a voter in
//! this node's stale membership). The remedy is denying that key, or
//! rotating the CA.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::watch;
use tokio::time::Instant;
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::MemberQuery;

use crate::raft::network::{channel, PeerConnector};
use crate::types::LogId;

/// Longest a call from an unknown id waits for its confirmation before it
/// is refused `Unavailable` (the confirmation goes on; a later call finds
/// it done).
pub const CONFIRM_WAIT: Duration = Duration::from_secs(3);

/// Longest one `ConfirmMember` call may take.
pub const CONFIRM_CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// An id that was not confirmed is not asked about again for this long
/// (calls meanwhile are refused at once).
pub const RECONFIRM_AFTER: Duration = Duration::from_secs(1);

/// How long an id whose confirmation failed still counts as refused
/// ([`Confirmations::refused`], the metric) without another attempt.
pub const REFUSED_SHOWN_FOR: Duration = Duration::from_secs(60);

/// Most ids tracked at once (confirmed, refused or in progress); a new id
/// beyond it is refused without asking (only whoever holds the CA key can
/// mint many node ids).
pub const MAX_TRACKED_IDS: usize = 64;

/// The membership as this node's log or snapshot holds it (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownMembers {
    /// Set once openraft's metrics were read (before: nothing is admitted
    /// that needs a membership).
    pub observed: bool,
    /// Voters and learners of the latest and of the committed membership.
    pub members: BTreeSet<u64>,
    /// The voters of the latest membership, with the address their peer
    /// service is dialed at.
    pub voters: BTreeMap<u64, String>,
    /// The log id of the latest membership (confirmations hold under it).
    pub config: Option<LogId>,
}

/// What the gate does with a node certificate's id ([`KnownMembers::decide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// In the membership, or this node knows none yet.
    Admit,
    /// Not in it: confirm first.
    Confirm,
    /// openraft's membership was not read yet.
    NotStarted,
}

impl KnownMembers {
    /// Whether `node_id` is admitted as it stands.
    pub fn decide(&self, node_id: u64) -> Decision {
        if !self.observed {
            Decision::NotStarted
        } else if self.members.is_empty() || self.members.contains(&node_id) {
            Decision::Admit
        } else {
            Decision::Confirm
        }
    }
}

/// How a confirmation came out: who was asked and who said yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// The voters this node knows (itself included when it is one).
    pub voters: usize,
    /// Voters that said yes, this node counted when it is a voter.
    pub yes: usize,
    /// Other voters that said yes.
    pub others_yes: usize,
    /// Other voters that did not answer (unreachable, timed out, an older
    /// binary).
    pub unanswered: usize,
}

impl Tally {
    /// A majority of the voters, and at least one of them another node.
    pub fn confirmed(&self) -> bool {
        self.others_yes >= 1 && self.yes > self.voters / 2
    }

    fn impossible(&self, pending: usize) -> bool {
        self.yes + pending <= self.voters / 2 || (self.others_yes == 0 && pending == 0)
    }
}

/// Why an unknown id was not admitted (turned into a
/// [`crate::raft::peer_access::PeerRefusal`] by the gate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unconfirmed {
    /// A majority did not confirm it.
    Refused(Tally),
    /// The confirmation did not finish within [`CONFIRM_WAIT`].
    Pending,
    /// Too many ids tracked already.
    TooMany,
}

#[derive(Debug)]
enum Entry {
    /// Confirmed while the latest membership was `config`.
    Confirmed { config: Option<LogId> },
    /// Being asked; the tally comes on the channel.
    Pending(watch::Receiver<Option<Tally>>),
    /// Not confirmed at `at`.
    Refused { at: Instant, tally: Tally },
}

/// The confirmations of one node (module docs).
#[derive(Debug)]
pub struct Confirmations {
    node_id: u64,
    connector: Arc<dyn PeerConnector>,
    entries: Mutex<BTreeMap<u64, Entry>>,
}

/// How to ask one voter: its id and where its peer service is.
type Ask = (u64, String);

impl Confirmations {
    /// Confirmations of node `node_id`, asking its voters through
    /// `connector`.
    pub fn new(node_id: u64, connector: Arc<dyn PeerConnector>) -> Confirmations {
        Confirmations {
            node_id,
            connector,
            entries: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ids refused now: not confirmed at their last attempt, within
    /// [`REFUSED_SHOWN_FOR`].
    pub fn refused(&self) -> BTreeSet<u64> {
        let now = Instant::now();
        self.lock()
            .iter()
            .filter(|(_, e)| match e {
                Entry::Refused { at, .. } => now.saturating_duration_since(*at) < REFUSED_SHOWN_FOR,
                _ => false,
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Admits `node_id`, which `known` does not name, once a majority of
    /// `known`'s voters confirm it (module docs); `cluster_id` goes on each
    /// question. Waits at most [`CONFIRM_WAIT`].
    ///
    /// # Errors
    /// [`Unconfirmed`].
    pub async fn confirm(
        self: &Arc<Self>,
        node_id: u64,
        known: &KnownMembers,
        cluster_id: &str,
    ) -> Result<(), Unconfirmed> {
        let mut rx = {
            let mut entries = self.lock();
            let now = Instant::now();
            match entries.get(&node_id) {
                Some(Entry::Confirmed { config }) if *config == known.config => return Ok(()),
                Some(Entry::Refused { at, tally })
                    if now.saturating_duration_since(*at) < RECONFIRM_AFTER =>
                {
                    return Err(Unconfirmed::Refused(tally.clone()))
                }
                // (A closed channel: the asking task is gone; ask again.)
                Some(Entry::Pending(rx)) if rx.has_changed().is_ok() => rx.clone(),
                _ => {
                    if !entries.contains_key(&node_id) && entries.len() >= MAX_TRACKED_IDS {
                        // Room from the oldest refusal, if any.
                        let oldest = entries
                            .iter()
                            .filter_map(|(id, e)| match e {
                                Entry::Refused { at, .. } => Some((*at, *id)),
                                _ => None,
                            })
                            .min();
                        match oldest {
                            Some((_, id)) => {
                                entries.remove(&id);
                            }
                            None => return Err(Unconfirmed::TooMany),
                        }
                    }
                    let (tx, rx) = watch::channel(None);
                    entries.insert(node_id, Entry::Pending(rx.clone()));
                    let asks: Vec<Ask> = known
                        .voters
                        .iter()
                        .filter(|(id, _)| **id != self.node_id && **id != node_id)
                        .map(|(id, addr)| (*id, addr.clone()))
                        .collect();
                    let me_voter = known.voters.contains_key(&self.node_id);
                    let voters = known.voters.len();
                    let this = self.clone();
                    let config = known.config;
                    let cluster_id = cluster_id.to_string();
                    tokio::spawn(async move {
                        let tally = this.ask(node_id, asks, voters, me_voter, &cluster_id).await;
                        this.settle(node_id, config, &tally);
                        let _ = tx.send(Some(tally));
                    });
                    rx
                }
            }
        };
        let waited = tokio::time::timeout(CONFIRM_WAIT, rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(tally)) => match tally.as_ref() {
                Some(t) if t.confirmed() => Ok(()),
                Some(t) => Err(Unconfirmed::Refused(t.clone())),
                None => Err(Unconfirmed::Pending),
            },
            _ => Err(Unconfirmed::Pending),
        }
    }

    /// Records a finished confirmation, and logs it.
    fn settle(&self, node_id: u64, config: Option<LogId>, tally: &Tally) {
        let entry = if tally.confirmed() {
            tracing::info!(
                node_id,
                yes = tally.yes,
                voters = tally.voters,
                "a majority of the voters this node knows confirmed that node {node_id} is a \
                 member; its Raft calls are admitted"
            );
            Entry::Confirmed { config }
        } else {
            tracing::warn!(
                node_id,
                yes = tally.yes,
                voters = tally.voters,
                unanswered = tally.unanswered,
                "node {node_id} is not in this node's membership and a majority of the voters it \
                 knows did not confirm it: its Raft calls are refused (if it is a member, this \
                 node lags behind a change it cannot confirm: wipe its data dir and add it back)"
            );
            Entry::Refused {
                at: Instant::now(),
                tally: tally.clone(),
            }
        };
        self.lock().insert(node_id, entry);
    }

    /// Asks each voter of `asks` whether `node_id` is a member, until the
    /// answer is decided either way.
    async fn ask(
        &self,
        node_id: u64,
        asks: Vec<Ask>,
        voters: usize,
        me_voter: bool,
        cluster_id: &str,
    ) -> Tally {
        let mut tally = Tally {
            voters,
            yes: usize::from(me_voter),
            others_yes: 0,
            unanswered: 0,
        };
        let mut pending = asks.len();
        let mut calls: futures::stream::FuturesUnordered<_> = asks
            .into_iter()
            .map(|(voter, addr)| self.ask_one(voter, addr, node_id, cluster_id))
            .collect();
        while let Some(answer) = calls.next().await {
            pending -= 1;
            match answer {
                Some(true) => {
                    tally.yes += 1;
                    tally.others_yes += 1;
                }
                Some(false) => {}
                None => tally.unanswered += 1,
            }
            if tally.confirmed() || tally.impossible(pending) {
                break;
            }
        }
        tally.unanswered += pending;
        tally
    }

    /// One voter's answer: Some(member) or None (no answer).
    async fn ask_one(
        &self,
        voter: u64,
        addr: String,
        node_id: u64,
        cluster_id: &str,
    ) -> Option<bool> {
        let ch = channel(self.connector.as_ref(), voter, &addr).ok()?;
        let mut client = PeerClient::new(ch);
        let mut req = tonic::Request::new(MemberQuery {
            from_node_id: self.node_id,
            node_id,
        });
        req.set_timeout(CONFIRM_CALL_TIMEOUT);
        req.metadata_mut()
            .insert(warden_proto::CLUSTER_ID_METADATA, cluster_id.parse().ok()?);
        let answer = tokio::time::timeout(CONFIRM_CALL_TIMEOUT, client.confirm_member(req))
            .await
            .ok()?;
        match answer {
            Ok(a) => {
                let a = a.into_inner();
                // The connector checked the certificate is the voter's.
                (a.node_id == voter).then_some(a.member)
            }
            Err(e) => {
                tracing::debug!(voter, node_id, "ConfirmMember: {}", e.message());
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(voters: usize, yes: usize, others_yes: usize) -> Tally {
        Tally {
            voters,
            yes,
            others_yes,
            unanswered: 0,
        }
    }

    // docs/security.md "The peer service": a majority of the known voters,
    // this node counted, and never this node alone.
    #[test]
    fn a_majority_with_another_voter_confirms() {
        // Three voters, this node one of them: itself and one other.
        assert!(tally(3, 2, 1).confirmed());
        assert!(!tally(3, 1, 0).confirmed());
        // This node not a voter: two others of three.
        assert!(!tally(3, 1, 1).confirmed());
        assert!(tally(3, 2, 2).confirmed());
        // Five voters: three.
        assert!(!tally(5, 2, 1).confirmed());
        assert!(tally(5, 3, 2).confirmed());
        // A lone voter never confirms on its own word.
        assert!(!tally(1, 1, 0).confirmed());
        // Undecidable once too few are left to ask.
        assert!(tally(3, 1, 0).impossible(0));
        assert!(!tally(3, 1, 0).impossible(1));
        assert!(tally(5, 1, 0).impossible(1));
    }

    // The gate's decision: known ids and a node without a membership yet
    // admit; an unknown id confirms; before openraft was read, nothing.
    #[test]
    fn known_members_decide() {
        let mut known = KnownMembers::default();
        assert_eq!(known.decide(4), Decision::NotStarted);
        known.observed = true;
        assert_eq!(known.decide(4), Decision::Admit, "no membership yet");
        known.members = [1, 2, 3].into_iter().collect();
        assert_eq!(known.decide(2), Decision::Admit);
        assert_eq!(known.decide(4), Decision::Confirm);
    }
}
