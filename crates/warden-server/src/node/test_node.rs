//! A one-node cluster in this process, for server-level tests of the write
//! and read paths with an injected principal: the tests pass
//! `Some(principal)` where the TLS handshake would put it (and `None` for
//! an insecure node's anonymous caller). No network: the node is its own
//! quorum.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use warden_core::types::{
    AuthChange, AuthOp, Command, LeaderId, LogEntry, Permission, Principal, RequestHeader,
};

use super::submit::AuthChanged;
use super::{duties, renew, Node, NodeParts, SubmitError};
use crate::clock::{NodeClock, TokioClock};
use crate::config::{ServerConfig, Timing};
use crate::raft::log_format::LogFormats;
use crate::raft::network::{call_timeout_floor, Network, TcpConnector};
use crate::raft::Raft;
use crate::sim_hooks::{BugSwitches, Observer};
use crate::store::{Db, LogStore, MaxStamp, StateMachineStore};
use crate::types::MemberAddr;

/// Records every entry applied (as it was proposed: its stamp and
/// command), and every grant apply made: (resource, lease id), in order.
#[derive(Debug, Default)]
pub(crate) struct Applied(
    pub(crate) Mutex<Vec<LogEntry>>,
    pub(crate) Mutex<Vec<(String, u64)>>,
);

impl Observer for Applied {
    fn on_apply(
        &self,
        _node_id: u64,
        _index: u64,
        _log_leader: LeaderId,
        _entry: &LogEntry,
        logged: &LogEntry,
        applied: &warden_core::table::Applied,
        _table: &warden_core::table::LockTable,
    ) {
        if let Ok(mut entries) = self.0.lock() {
            entries.push(logged.clone());
        }
        if let Ok(mut grants) = self.1.lock() {
            grants.extend(applied.effects.iter().filter_map(|e| match e {
                warden_core::Effect::Granted {
                    resource, lease_id, ..
                } => Some((resource.clone(), *lease_id)),
                _ => None,
            }));
        }
    }
}

/// How the test node starts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Setup {
    /// `--allow-admin`.
    pub(crate) allow_admin: bool,
    /// The duty tick in ms; None: the default (50 ms).
    pub(crate) duty_interval_ms: Option<u64>,
}

/// A running one-node cluster.
pub(crate) struct TestNode {
    pub(crate) node: Arc<Node>,
    pub(crate) applied: Arc<Applied>,
    /// The next request id of [`TestNode::auth`] (client 1000).
    next_request_id: std::sync::atomic::AtomicU64,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for TestNode {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// A principal by name.
pub(crate) fn named(name: &str) -> super::Principal {
    Some(Principal::new(name).expect("principal"))
}

impl TestNode {
    /// Starts the node and waits until it leads and its `Promote` applied.
    pub(crate) async fn start(setup: Setup) -> TestNode {
        let dir = tempfile::tempdir().expect("tempdir");
        let timing = Timing {
            heartbeat_ms: 50,
            election_timeout_min_ms: 150,
            election_timeout_max_ms: 300,
            duty_interval_ms: setup
                .duty_interval_ms
                .unwrap_or(Timing::default().duty_interval_ms),
            ..Timing::default()
        };
        let addr = "127.0.0.1:1".to_string();
        let config = ServerConfig {
            node_id: 1,
            listen: "127.0.0.1:0".parse().expect("addr"),
            peers: BTreeMap::from([(1, addr.clone())]),
            data_dir: dir.path().to_path_buf(),
            initial_cluster_state_new: true,
            timing: timing.clone(),
            allow_admin: setup.allow_admin,
            max_request_bytes: crate::config::DEFAULT_MAX_REQUEST_BYTES,
            token_floor: 0,
            join: false,
            admin_listen: None,
            peer_listen: None,
            peer_addrs: BTreeMap::new(),
            certs_dir: None,
            metrics_groups: Vec::new(),
            conn_limits: Default::default(),
        };
        let db = Db::open(dir.path()).expect("db");
        let clock = NodeClock::new(Arc::new(TokioClock::new()));
        let max_stamp = MaxStamp::default();
        let applied = Arc::new(Applied::default());
        let sm = StateMachineStore::open_injected(
            db.clone(),
            clock.clone(),
            max_stamp.clone(),
            1,
            Some(applied.clone()),
            BugSwitches::default(),
            Arc::default(),
        )
        .expect("state machine");
        let shared = sm.shared.clone();
        let log_store = LogStore::new(db, max_stamp).expect("log store");
        let formats = Arc::new(LogFormats::new(1));
        let raft_config = openraft::Config {
            cluster_name: "warden-test".into(),
            heartbeat_interval: timing.heartbeat_ms,
            election_timeout_min: timing.election_timeout_min_ms,
            election_timeout_max: timing.election_timeout_max_ms,
            ..Default::default()
        }
        .validate()
        .expect("raft config");
        let network = Network::new(
            "test-cluster".into(),
            call_timeout_floor(timing.election_timeout_min_ms),
            formats.clone(),
            Arc::new(TcpConnector),
        );
        let raft = crate::types::Rt::scope(7, async {
            let raft = Raft::new(1, Arc::new(raft_config), network, log_store, sm)
                .await
                .expect("raft");
            raft.initialize(BTreeMap::from([(1, MemberAddr::client_only(addr))]))
                .await
                .expect("initialize");
            raft
        })
        .await;
        // The membership as the log-format gate sees it: this node alone.
        formats.set_members([1]);
        let (renew_tx, renew_rx) = mpsc::channel(1_024);
        let node = Node::new(NodeParts {
            id: 1,
            config,
            cluster_id: "test-cluster".into(),
            raft,
            shared,
            formats,
            connector: Arc::new(TcpConnector),
            renew_tx,
            tls: None,
            peer_access: None,
        });
        let tasks = vec![
            tokio::spawn(renew::run(
                Arc::downgrade(&node),
                renew_rx,
                Duration::from_millis(timing.renew_batch_window_ms),
            )),
            tokio::spawn(duties::run(Arc::downgrade(&node))),
        ];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while node.promoted_leader().is_none() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the one-node cluster did not elect itself and apply its promotion"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        TestNode {
            node,
            applied,
            next_request_id: std::sync::atomic::AtomicU64::new(1),
            tasks,
            _dir: dir,
        }
    }

    /// An anonymous caller's acquire of `resource` on a new lease (client
    /// 1, request 1): the holder a test then queues others behind.
    pub(crate) async fn hold(
        &self,
        resource: &str,
        ttl_ms: u64,
        lock_delay_ms: u64,
    ) -> warden_core::types::AcquireReply {
        self.node
            .submit(
                &None,
                Command::Acquire(warden_core::types::Acquire::mutex(
                    header(1, 1),
                    resource,
                    warden_core::types::LeaseSpec::New { ttl_ms },
                    0,
                    lock_delay_ms,
                )),
            )
            .await
            .expect("the holder's acquire")
    }

    /// The commands applied so far, in order.
    pub(crate) fn applied(&self) -> Vec<Command> {
        self.entries().into_iter().map(|e| e.command).collect()
    }

    /// The entries applied so far (stamp and command), in order.
    pub(crate) fn entries(&self) -> Vec<LogEntry> {
        self.applied.0.lock().expect("applied").clone()
    }

    /// The grants applied so far, in order: (resource, lease id).
    pub(crate) fn grants(&self) -> Vec<(String, u64)> {
        self.applied.1.lock().expect("grants").clone()
    }

    /// Reads the applied lock table.
    pub(crate) fn table<T>(&self, f: impl FnOnce(&warden_core::table::LockTable) -> T) -> T {
        let m = self.node.shared.machine.lock().expect("machine");
        f(&m.table)
    }

    /// Submits the auth change `op` as `principal` (client 1000, a new
    /// request id).
    pub(crate) async fn auth(
        &self,
        principal: &super::Principal,
        op: AuthOp,
    ) -> Result<AuthChanged, SubmitError> {
        let cmd = Command::AuthChange(AuthChange {
            header: header(1_000, self.next_id()),
            op,
            at_unix_ms: 0,
        });
        self.node.submit(principal, cmd).await
    }

    /// As root: gives `user` a role of its own name with `permission` on
    /// `prefix`.
    pub(crate) async fn grant(&self, user: &str, prefix: &str, permission: Permission) {
        let root = named("root");
        self.auth(
            &root,
            AuthOp::GrantPermission {
                role: user.into(),
                prefix: prefix.into(),
                permission,
            },
        )
        .await
        .expect("grant permission");
        self.auth(
            &root,
            AuthOp::GrantRole {
                user: Principal::new(user).expect("user"),
                role: user.into(),
            },
        )
        .await
        .expect("grant role");
    }

    /// As root: takes `user`'s own role's grant on `prefix` away.
    pub(crate) async fn revoke(&self, user: &str, prefix: &str) {
        self.auth(
            &named("root"),
            AuthOp::RevokePermission {
                role: user.into(),
                prefix: prefix.into(),
            },
        )
        .await
        .expect("revoke permission");
    }

    fn next_id(&self) -> u64 {
        self.next_request_id
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }
}

/// A request header of `client_id`, nothing acknowledged.
pub(crate) fn header(client_id: u64, request_id: u64) -> RequestHeader {
    RequestHeader {
        client_id,
        request_id,
        acked_request_id: 0,
    }
}
