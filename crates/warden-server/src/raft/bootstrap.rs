//! Forming a cluster once, with one cluster id (docs/semantics.md "Membership").
//!
//! The initiator is the member with the lowest id. It waits until every
//! member answers and none holds a committed cluster id, mints a random id,
//! writes it to every member as *prepared* (phase 1), then *commits* it on every
//! other member and finally on itself (phase 2), and only then initializes Raft
//! with the full membership. Two ids can never both be committed: only the
//! initiator mints, and a member commits only the id it has prepared.
//!
//! A member whose data dir is empty while a peer already holds a committed id
//! that it never prepared has lost its data: it refuses to start ("lost its
//! data") instead of rejoining with a forgotten vote. A member that prepared
//! that very id is inside an unfinished bootstrap and completes it.
//!
//! With `--initial-cluster-state new` the operator vouches that every member
//! is new: the initiator forms the cluster once a majority answers and keeps
//! pushing the id to the others, and an empty member that finds its peers
//! already formed waits for that push instead of refusing.
//!
//! With `--join` an empty node takes no part in forming a cluster:
//! it waits until a leader adding it (`warden cluster add-node` /
//! `replace-node`) hands it the committed id with the same prepare + commit
//! RPCs ([`hand_over_cluster_id`]). While it waits it asks the leader for the
//! membership; if its own id is already a member, it has lost its data and
//! refuses to start, exactly as without `--join`.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tonic::Request;
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::{BootstrapId, BootstrapStateRequest, BootstrapStateResponse};

use crate::config::ServerConfig;
use crate::raft::network::{channel, PeerConnector};
use crate::raft::peer_service::PeerState;
use crate::store::{KEY_CLUSTER_ID, KEY_PREPARED_CLUSTER_ID};
use crate::ServerError;

/// The result of bootstrap.
#[derive(Debug)]
pub struct Bootstrapped {
    /// The committed cluster id.
    pub cluster_id: String,
    /// True when this node must call `Raft::initialize` (the initiator, on a
    /// fresh cluster).
    pub initialize: bool,
    /// Members that did not receive the id (only with
    /// `--initial-cluster-state new`): the initiator keeps pushing it to them.
    pub pending: Vec<(u64, String)>,
}

const POLL: Duration = Duration::from_millis(200);
const RPC_TIMEOUT: Duration = Duration::from_millis(500);

async fn peer_state(
    connector: &dyn PeerConnector,
    peer_id: u64,
    addr: &str,
    me: u64,
) -> Option<BootstrapStateResponse> {
    let ch = channel(connector, peer_id, addr).ok()?;
    let mut c = PeerClient::new(ch);
    let mut req = Request::new(BootstrapStateRequest { from_node_id: me });
    req.set_timeout(RPC_TIMEOUT);
    tokio::time::timeout(RPC_TIMEOUT, c.bootstrap_state(req))
        .await
        .ok()?
        .ok()
        .map(|r| r.into_inner())
}

/// Every peer's bootstrap state, asked concurrently (a down peer costs one
/// RPC timeout in all, not one each).
async fn ask_peers(
    connector: &dyn PeerConnector,
    peers: &[(u64, String)],
    me: u64,
) -> Vec<(u64, Option<BootstrapStateResponse>)> {
    let asks = peers
        .iter()
        .map(|(id, addr)| async move { (*id, peer_state(connector, *id, addr, me).await) });
    futures::future::join_all(asks).await
}

async fn send_id(
    connector: &dyn PeerConnector,
    (peer_id, addr): (u64, &str),
    me: u64,
    id: &str,
    commit: bool,
) -> Result<(), String> {
    let ch = channel(connector, peer_id, addr).map_err(|e| e.to_string())?;
    let mut c = PeerClient::new(ch);
    let mut req = Request::new(BootstrapId {
        from_node_id: me,
        cluster_id: id.to_string(),
    });
    req.set_timeout(RPC_TIMEOUT);
    let fut = async {
        if commit {
            c.bootstrap_commit(req).await
        } else {
            c.bootstrap_prepare(req).await
        }
    };
    match tokio::time::timeout(RPC_TIMEOUT, fut).await {
        Err(_) => Err(format!("{addr}: timed out")),
        Ok(Err(s)) => Err(format!("{addr}: {}", s.message())),
        Ok(Ok(_)) => Ok(()),
    }
}

/// A new random cluster id (32 hex digits).
pub fn mint_cluster_id() -> String {
    let mut rng = rand::rng();
    let a: u64 = rng.random();
    let b: u64 = rng.random();
    format!("{a:016x}{b:016x}")
}

/// Runs the bootstrap protocol until this node knows its committed cluster id.
pub async fn bootstrap(
    config: &ServerConfig,
    state: Arc<PeerState>,
) -> Result<Bootstrapped, ServerError> {
    let connector = state.connector.as_ref();
    let storage = ServerError::of_data_dir;
    if let Some(id) = state.db.get_meta_string(KEY_CLUSTER_ID).map_err(storage)? {
        // A data dir of another cluster: every peer that answers names a
        // different committed cluster id. Refuse rather than sit there
        // holding elections the others refuse.
        let me = config.node_id;
        let peers = other_peers(config);
        let theirs: Vec<String> = ask_peers(connector, &peers, me)
            .await
            .into_iter()
            .filter_map(|(_, a)| a.map(|a| a.committed_cluster_id))
            .filter(|c| !c.is_empty())
            .collect();
        if let Some(other) = theirs.first() {
            if theirs.iter().all(|c| *c != id) {
                return Err(ServerError::ForeignData(format!(
                    "it belongs to cluster {id}, but the peers in --peers form cluster {other}; this is another cluster's data dir"
                )));
            }
        }
        return Ok(Bootstrapped::existing(id));
    }
    if config.join && state.empty_at_start {
        return join(config, state).await;
    }
    let me = config.node_id;
    let initiator = config.peers.keys().next().copied() == Some(me);
    let others = other_peers(config);
    let mut rx = state.cluster_id.subscribe();
    let mut rounds: u64 = 0;
    loop {
        rounds += 1;
        // Committed by the initiator's phase 2 while we waited?
        if let Some(id) = rx.borrow_and_update().clone() {
            return Ok(Bootstrapped::existing(id));
        }
        let answers = ask_peers(connector, &others, me).await;
        let prepared = state
            .db
            .get_meta_string(KEY_PREPARED_CLUSTER_ID)
            .map_err(storage)?;
        if let Some(committed) = answers
            .iter()
            .filter_map(|(_, a)| a.as_ref())
            .map(|a| a.committed_cluster_id.clone())
            .find(|c| !c.is_empty())
        {
            if prepared.as_deref() == Some(committed.as_str()) {
                // An unfinished bootstrap of ours: finish it.
                state
                    .db
                    .put_meta(KEY_CLUSTER_ID, committed.as_bytes())
                    .map_err(storage)?;
                state.cluster_id.send_replace(Some(committed.clone()));
                return Ok(Bootstrapped {
                    cluster_id: committed,
                    initialize: initiator && state.empty_at_start,
                    pending: Vec::new(),
                });
            }
            if !config.initial_cluster_state_new || !state.empty_at_start {
                return Err(ServerError::LostData {
                    node_id: me,
                    cluster_id: committed,
                });
            }
            // `--initial-cluster-state new`: the operator says this member is
            // part of the cluster being formed; wait for the initiator's push.
            if rounds % 10 == 1 {
                tracing::info!(cluster_id = %committed, "bootstrap: peers formed a cluster without this node; waiting for the initiator to send its id (--initial-cluster-state new)");
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = rx.changed() => {}
            }
            continue;
        }
        let answered = answers.iter().filter(|(_, a)| a.is_some()).count() + 1;
        let all_up = answered == config.peers.len();
        let majority_up = answered > config.peers.len() / 2;
        if initiator && (all_up || (config.initial_cluster_state_new && majority_up)) {
            let reachable: Vec<(u64, String)> = others
                .iter()
                .filter(|(id, _)| answers.iter().any(|(a, r)| a == id && r.is_some()))
                .cloned()
                .collect();
            let pending: Vec<(u64, String)> = others
                .iter()
                .filter(|o| !reachable.contains(o))
                .cloned()
                .collect();
            let id = prepared.unwrap_or_else(mint_cluster_id);
            state
                .db
                .put_meta(KEY_PREPARED_CLUSTER_ID, id.as_bytes())
                .map_err(storage)?;
            let mut ok = true;
            for (peer, addr) in &reachable {
                if let Err(e) = send_id(connector, (*peer, addr), me, &id, false).await {
                    tracing::info!("bootstrap prepare: {e}");
                    ok = false;
                }
            }
            if ok {
                for (peer, addr) in &reachable {
                    if let Err(e) = send_id(connector, (*peer, addr), me, &id, true).await {
                        tracing::info!("bootstrap commit: {e}");
                        ok = false;
                    }
                }
            }
            if ok {
                state
                    .db
                    .put_meta(KEY_CLUSTER_ID, id.as_bytes())
                    .map_err(storage)?;
                state.cluster_id.send_replace(Some(id.clone()));
                tracing::info!(cluster_id = %id, "bootstrapped a new cluster");
                return Ok(Bootstrapped {
                    cluster_id: id,
                    initialize: true,
                    pending,
                });
            }
        }
        if rounds % 10 == 1 {
            let missing: Vec<u64> = answers
                .iter()
                .filter(|(_, a)| a.is_none())
                .map(|(id, _)| *id)
                .collect();
            if initiator {
                tracing::info!(?missing, "bootstrap: waiting for every member to answer");
            } else {
                tracing::info!(
                    ?missing,
                    "bootstrap: waiting for the initiator (node {})",
                    config.peers.keys().next().copied().unwrap_or(0)
                );
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = rx.changed() => {}
        }
    }
}

/// With `--initial-cluster-state new`, pushes the committed cluster id to the
/// members that were unreachable when the cluster formed, until each has it.
pub async fn push_to_pending(
    connector: Arc<dyn PeerConnector>,
    me: u64,
    cluster_id: String,
    mut pending: Vec<(u64, String)>,
) {
    while !pending.is_empty() {
        let mut still = Vec::new();
        for (id, addr) in pending {
            let ok = send_id(connector.as_ref(), (id, &addr), me, &cluster_id, false)
                .await
                .is_ok()
                && send_id(connector.as_ref(), (id, &addr), me, &cluster_id, true)
                    .await
                    .is_ok();
            if ok {
                tracing::info!(node_id = id, "sent the cluster id to a late member");
            } else {
                still.push((id, addr));
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// The committed cluster id of the cluster whose leader answers at one of
/// `peers`, and whether node `me` is in its membership.
async fn leader_view(
    connector: &dyn PeerConnector,
    peers: &[(u64, String)],
    me: u64,
) -> Option<(String, bool)> {
    use warden_proto::v1::lock_client::LockClient;
    use warden_proto::v1::ClusterStatusRequest;
    let asks = peers.iter().map(|(peer_id, addr)| async move {
        let ch = channel(connector, *peer_id, addr).ok()?;
        let mut c = LockClient::new(ch);
        let mut req = Request::new(ClusterStatusRequest {});
        req.set_timeout(RPC_TIMEOUT);
        let r = tokio::time::timeout(RPC_TIMEOUT, c.cluster_status(req))
            .await
            .ok()?
            .ok()?
            .into_inner();
        Some((r.cluster_id, r.members.iter().any(|m| m.id == me)))
    });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .next()
}

/// Every peer but this node: (id, where its peer service is dialed: its
/// `--peer-addrs` entry, else its `--peers` address).
fn other_peers(config: &ServerConfig) -> Vec<(u64, String)> {
    config
        .peers
        .keys()
        .filter(|id| **id != config.node_id)
        .filter_map(|id| Some((*id, config.peer_dial_addr(*id)?.to_string())))
        .collect()
}

/// Every peer but this node: (id, client address).
fn other_clients(config: &ServerConfig) -> Vec<(u64, String)> {
    config
        .peers
        .iter()
        .filter(|(id, _)| **id != config.node_id)
        .map(|(id, a)| (*id, a.clone()))
        .collect()
}

impl Bootstrapped {
    /// A cluster id this node did not mint: nothing to initialize.
    fn existing(cluster_id: String) -> Bootstrapped {
        Bootstrapped {
            cluster_id,
            initialize: false,
            pending: Vec::new(),
        }
    }
}

/// `--join` on an empty data dir: wait for a leader to hand over the id.
async fn join(config: &ServerConfig, state: Arc<PeerState>) -> Result<Bootstrapped, ServerError> {
    let connector = state.connector.as_ref();
    let me = config.node_id;
    // The leader's view is a client call (`ClusterStatus`): client addresses.
    let others = other_clients(config);
    let mut rx = state.cluster_id.subscribe();
    let mut rounds: u64 = 0;
    loop {
        rounds += 1;
        if let Some(id) = rx.borrow_and_update().clone() {
            tracing::info!(cluster_id = %id, "joined: received the cluster id from the leader");
            return Ok(Bootstrapped::existing(id));
        }
        if let Some((cluster_id, member)) = leader_view(connector, &others, me).await {
            // The leader hands the id over before adding a member: if we are
            // a member and still have no id, our data dir lost it.
            if member && rx.borrow().is_none() {
                return Err(ServerError::LostData {
                    node_id: me,
                    cluster_id,
                });
            }
            if rounds % 25 == 1 {
                tracing::info!(%cluster_id, "join: waiting to be added: run `warden cluster add-node {me} --addr HOST:PORT [--peer-addr HOST:PORT]` (or replace-node) against the cluster");
            }
        } else if rounds % 25 == 1 {
            tracing::info!("join: no leader among --peers answers yet; waiting");
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = rx.changed() => {}
        }
    }
}

/// Gives the committed cluster id `cluster_id` to the node whose peer
/// service is at `addr` (its peer address, else its client address), which
/// must answer as node `expected` (bootstrap prepare, then commit). A node
/// that already has this id accepts it again; one of another cluster refuses.
///
/// # Errors
/// A one-line reason: unreachable, another node id, another cluster.
pub async fn hand_over_cluster_id(
    connector: &dyn PeerConnector,
    addr: &str,
    me: u64,
    expected: u64,
    cluster_id: &str,
) -> Result<(), String> {
    let st = peer_state(connector, expected, addr, me)
        .await
        .ok_or_else(|| {
            format!(
                "unreachable (start it with --join first): no answer within {} ms",
                RPC_TIMEOUT.as_millis()
            )
        })?;
    if st.node_id != expected {
        return Err(format!(
            "the node there is node {}, not node {expected}",
            st.node_id
        ));
    }
    if !st.committed_cluster_id.is_empty() && st.committed_cluster_id != cluster_id {
        return Err(format!(
            "it belongs to cluster {}, not {cluster_id}; give it an empty data dir",
            st.committed_cluster_id
        ));
    }
    send_id(connector, (expected, addr), me, cluster_id, false).await?;
    send_id(connector, (expected, addr), me, cluster_id, true).await
}
