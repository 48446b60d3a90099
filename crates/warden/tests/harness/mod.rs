//! A real-process test cluster: `warden server` children on loopback ports
//! picked from :0, data in a temp dir, and [`Api`], raw gRPC requests with
//! hand-made request ids sent on warden-client's leader-following loop
//! ([`Client::call_raw`]). Calls meant for one specific node
//! ([`cluster_status_at`], the Peer-service snapshot read) go to that node
//! only. Everything waits with deadlines; nothing sleeps to synchronise.
//!
//! # Secure by default
//!
//! [`Cluster::start`] / [`Cluster::prepare`] run every node with
//! `--certs-dir` (certificates minted once per test binary: [`certs`]), and
//! every CLI call and API client of the harness presents a client
//! certificate: `root`'s unless a test names another principal
//! ([`Cluster::client_as`], [`Cluster::cli_as`], [`Cluster::api_as`];
//! certificates exist for [`PRINCIPALS`]: root, alice, bob, carol,
//! mallory, and any other name is minted on first use).
//! [`Cluster::start_insecure`] / [`Cluster::prepare_insecure`] run with
//! `--insecure` for the tests that need plaintext (reading HTTP/2 frames
//! on the wire, insecure-mode rules). A test that starts processes itself
//! takes the flags from [`Cluster::server_flags`] and
//! [`Cluster::cli_flags`] / [`Cluster::cli_flags_as`], and clears
//! [`CLEARED_ENV`] (or uses [`Cluster::cli_command`]).

#![allow(dead_code)]

pub mod certs;
pub mod delay;
pub mod proxy;
pub mod transport;

#[allow(unused_imports)]
pub use certs::{certs, TestCerts, PRINCIPALS};
pub use transport::{http_get, Security, CLEARED_ENV};

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::Status;
use warden_client::{Client, ClientError, ClientOptions};
use warden_proto::peer::peer_client::PeerClient;
use warden_proto::peer::TakeSnapshotRequest;
use warden_proto::v1 as pb;
use warden_proto::v1::lock_client::LockClient;

/// The resident memory of process `pid` (VmRSS), in bytes.
pub fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib * 1024
}

/// The `warden` binary under test.
pub fn warden_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_warden"))
}

/// A free loopback port (from a bind to :0) that this test process has not
/// handed out before. A port picked and released can be handed out again by
/// the next bind to :0: two nodes given one port made a leader replicate to
/// itself (node 3 could not bind; node 1 got node 3's calls and its Raft core
/// panicked; CI run here).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind :0");
        let port = l.local_addr().expect("addr").port();
        if GIVEN.lock().expect("ports").insert(port) {
            return port;
        }
    }
}

/// One server process.
pub struct NodeProc {
    pub id: u64,
    /// Its client address (`--listen`), which serves peers too unless it
    /// has a `peer_addr`.
    pub addr: String,
    /// Its peer port (`--peer-listen`), with [`Cluster::use_peer_ports`].
    pub peer_addr: Option<String>,
    /// Where the other members dial its peer port (its `--peer-addrs`
    /// entry), if not `peer_addr` itself: a proxy in front of it
    /// ([`Cluster::delay_peer_links`]).
    pub peer_dial_addr: Option<String>,
    /// Its HTTP port (`--admin-listen`), with [`Cluster::use_admin_ports`].
    pub admin_addr: Option<String>,
    pub dir: PathBuf,
    pub log: PathBuf,
    pub child: Option<Child>,
}

/// A test cluster.
pub struct Cluster {
    pub tmp: tempfile::TempDir,
    pub nodes: BTreeMap<u64, NodeProc>,
    pub extra: Vec<String>,
    /// How its nodes serve (and its clients connect).
    pub security: Security,
    /// Certificates of its own ([`Cluster::prepare_secure`], for tests of
    /// the CA itself: rotation, refusals); node N then runs with
    /// `--certs-dir` `node_dirs[N]`. None: the binary's ([`certs`]).
    pub certs: Option<warden_tls::mint::LoopbackSet>,
    /// Every node serves the peer service on a port of its own
    /// (`--peer-listen`, `--peer-addrs`): [`Cluster::use_peer_ports`].
    pub peer_ports: bool,
    /// Every node serves `/healthz`, `/readyz` and `/metrics` on a port of
    /// its own (`--admin-listen`): [`Cluster::use_admin_ports`].
    pub admin_ports: bool,
}

/// The final message of an acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Final {
    Granted {
        resource: String,
        lease_id: u64,
        fencing_token: u64,
        ttl_ms: u64,
    },
    NotGranted {
        holder_lease_id: u64,
        reason: String,
    },
}

impl Final {
    /// (lease id, fencing token) of a grant; panics (failing the test) otherwise.
    pub fn grant(&self) -> (u64, u64) {
        match self {
            Final::Granted {
                lease_id,
                fencing_token,
                ..
            } => (*lease_id, *fencing_token),
            other => panic!("expected a grant, got {other:?}"),
        }
    }
}

impl Cluster {
    /// Starts `n` nodes over mutual TLS and waits until they elect a leader.
    pub async fn start(n: u64, extra: &[&str]) -> Cluster {
        Cluster::start_with(Security::Tls, n, extra).await
    }

    /// Starts `n` nodes with `--insecure` (plaintext, no identities) and
    /// waits until they elect a leader.
    pub async fn start_insecure(n: u64, extra: &[&str]) -> Cluster {
        Cluster::start_with(Security::Insecure, n, extra).await
    }

    async fn start_with(security: Security, n: u64, extra: &[&str]) -> Cluster {
        let mut c = Cluster::prepare_with(security, n, extra);
        for id in 1..=n {
            c.spawn(id);
        }
        c.wait_leader(Duration::from_secs(20)).await;
        c
    }

    /// Lays out `n` nodes (addresses, dirs) over mutual TLS without
    /// starting any.
    pub fn prepare(n: u64, extra: &[&str]) -> Cluster {
        Cluster::prepare_with(Security::Tls, n, extra)
    }

    /// Lays out `n` insecure nodes without starting any.
    pub fn prepare_insecure(n: u64, extra: &[&str]) -> Cluster {
        Cluster::prepare_with(Security::Insecure, n, extra)
    }

    fn prepare_with(security: Security, n: u64, extra: &[&str]) -> Cluster {
        let mut c = Cluster {
            tmp: tempfile::tempdir().expect("tempdir"),
            nodes: BTreeMap::new(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            security,
            certs: None,
            peer_ports: false,
            admin_ports: false,
        };
        for id in 1..=n {
            c.lay_out(id);
        }
        c
    }

    /// Adds node `id` to the layout (a fresh address, registered with the
    /// cluster's security; data dir and log in the cluster's temp dir)
    /// without starting it; returns its address.
    pub fn lay_out(&mut self, id: u64) -> String {
        let addr = format!("127.0.0.1:{}", free_port());
        transport::register(&addr, self.security);
        let peer_addr = self.peer_ports.then(|| {
            let p = format!("127.0.0.1:{}", free_port());
            transport::register(&p, self.security);
            p
        });
        let admin_addr = self.admin_ports.then(|| {
            let p = format!("127.0.0.1:{}", free_port());
            transport::register(&p, self.security);
            p
        });
        self.nodes.insert(
            id,
            NodeProc {
                id,
                addr: addr.clone(),
                peer_addr,
                peer_dial_addr: None,
                admin_addr,
                dir: self.tmp.path().join(format!("node-{id}")),
                log: self.tmp.path().join(format!("node-{id}.log")),
                child: None,
            },
        );
        addr
    }

    /// From now on every node (those laid out already and those to come)
    /// serves the peer service on a port of its own: `--peer-listen` its
    /// `peer_addr`, and `--peer-addrs` naming every node's.
    pub fn use_peer_ports(&mut self) {
        self.peer_ports = true;
        for n in self.nodes.values_mut() {
            if n.peer_addr.is_none() {
                let p = format!("127.0.0.1:{}", free_port());
                transport::register(&p, self.security);
                n.peer_addr = Some(p);
            }
        }
    }

    /// From now on every node (those laid out already and those to come)
    /// serves HTTP on a port of its own: `--admin-listen` its `admin_addr`.
    pub fn use_admin_ports(&mut self) {
        self.admin_ports = true;
        for n in self.nodes.values_mut() {
            if n.admin_addr.is_none() {
                let p = format!("127.0.0.1:{}", free_port());
                transport::register(&p, self.security);
                n.admin_addr = Some(p);
            }
        }
    }

    /// Node `id`'s HTTP port (panics without [`Cluster::use_admin_ports`]).
    pub fn admin_addr(&self, id: u64) -> String {
        self.nodes[&id].admin_addr.clone().expect("an admin port")
    }

    /// `--peer-addrs`: `id=ADDR` of every node that has a peer port, ADDR
    /// where the others dial it (its proxy's, else the port itself).
    pub fn peer_addrs(&self) -> String {
        self.nodes
            .values()
            .filter_map(|n| {
                let dial = n.peer_dial_addr.as_ref().or(n.peer_addr.as_ref())?;
                Some(format!("{}={dial}", n.id))
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Puts a [`delay::DelayProxy`] of `one_way` each way in front of every
    /// laid-out node's peer port (switching peer ports on), and makes it
    /// the address the other members dial: every peer call then crosses
    /// two delays (one round trip of 2 × `one_way`), while clients reach
    /// the client ports directly. Call before starting the nodes; keep the
    /// proxies for as long as the cluster runs.
    pub async fn delay_peer_links(&mut self, one_way: Duration) -> Vec<delay::DelayProxy> {
        self.use_peer_ports();
        let mut proxies = Vec::new();
        for n in self.nodes.values_mut() {
            let target = n.peer_addr.clone().expect("a peer port");
            let proxy = delay::DelayProxy::start(&target, one_way).await;
            n.peer_dial_addr = Some(proxy.addr.clone());
            proxies.push(proxy);
        }
        proxies
    }

    /// Node `id`'s peer port (panics without [`Cluster::use_peer_ports`]).
    pub fn peer_addr(&self, id: u64) -> String {
        self.nodes[&id].peer_addr.clone().expect("a peer port")
    }

    /// `--peer-listen` and `--peer-addrs` of node `id`, if it has a peer
    /// port; `--admin-listen`, if it has an admin port.
    fn peer_flags(&self, id: u64) -> Vec<String> {
        let n = &self.nodes[&id];
        let mut flags = match &n.peer_addr {
            Some(p) => vec![
                "--peer-listen".into(),
                p.clone(),
                "--peer-addrs".into(),
                self.peer_addrs(),
            ],
            None => Vec::new(),
        };
        if let Some(a) = &n.admin_addr {
            flags.extend(["--admin-listen".into(), a.clone()]);
        }
        flags
    }

    /// The server flags of node `id`: `--certs-dir` of its certificate, or
    /// `--insecure`.
    pub fn server_flags(&self, id: u64) -> Vec<std::ffi::OsString> {
        match &self.certs {
            Some(set) => vec![
                "--certs-dir".into(),
                set.node_dirs[&id].clone().into_os_string(),
            ],
            None => transport::server_flags(self.security, id),
        }
    }

    /// The client flags of a CLI call as `root`: `--certs-dir DIR --user
    /// root`, or `--insecure`.
    pub fn cli_flags(&self) -> Vec<std::ffi::OsString> {
        self.cli_flags_as("root")
    }

    /// The client flags of a CLI call as `user`.
    pub fn cli_flags_as(&self, user: &str) -> Vec<std::ffi::OsString> {
        transport::cli_flags(self.security, user)
    }

    /// The variables that say what [`Cluster::cli_flags_as`] says:
    /// `WARDEN_CERTS_DIR` and `WARDEN_USER`, or `WARDEN_INSECURE=true` (for
    /// a process whose children run the CLI too, e.g. `warden exec`).
    pub fn cli_env_as(&self, user: &str) -> Vec<(&'static str, std::ffi::OsString)> {
        match self.security {
            Security::Tls => vec![
                ("WARDEN_CERTS_DIR", certs().client_dir_with(user).into()),
                ("WARDEN_USER", user.into()),
            ],
            Security::Insecure => vec![("WARDEN_INSECURE", "true".into())],
        }
    }

    /// A `warden` command for a client call as `user`: the environment
    /// cleared of [`CLEARED_ENV`], the client flags added after `args`
    /// (add `--endpoints` yourself; `exec` needs them before its `--`).
    pub fn cli_command(&self, user: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(warden_bin());
        for name in CLEARED_ENV {
            cmd.env_remove(name);
        }
        cmd.args(args).args(self.cli_flags_as(user));
        cmd
    }

    /// warden-client options of a client as `root`.
    pub fn client_options(&self) -> ClientOptions {
        self.client_options_as("root")
    }

    /// warden-client options of a client as `user` (TLS with its
    /// certificate, or plaintext on an insecure cluster).
    pub fn client_options_as(&self, user: &str) -> ClientOptions {
        transport::client_options(self.security, user)
    }

    /// A client of every node as `user`.
    pub async fn client_as(&self, user: &str) -> Client {
        Client::connect(
            self.nodes.values().map(|n| n.addr.clone()).collect(),
            self.client_options_as(user),
        )
        .await
        .expect("test endpoints and certificates")
    }

    /// [`Cluster::prepare`] with certificates minted in its temp dir: one
    /// CA (key `certs/ca.key`), node certificates for ids `1..=n` and
    /// `more_nodes` (SANs 127.0.0.1, localhost), and client certificates of
    /// `principals` in `certs/clients`.
    pub fn prepare_secure(
        n: u64,
        more_nodes: &[u64],
        principals: &[&str],
        extra: &[&str],
    ) -> Cluster {
        Cluster::prepare_secure_in(None, n, more_nodes, principals, extra)
    }

    /// [`Cluster::prepare_secure`] with certificates naming `cluster`
    /// (`warden://cluster/NAME`; its CA names it too).
    pub fn prepare_secure_in(
        cluster: Option<&str>,
        n: u64,
        more_nodes: &[u64],
        principals: &[&str],
        extra: &[&str],
    ) -> Cluster {
        let mut c = Cluster::prepare(n, extra);
        let ids: Vec<u64> = (1..=n).chain(more_nodes.iter().copied()).collect();
        let set = warden_tls::mint::loopback_set_in(
            &c.tmp.path().join("certs"),
            cluster,
            &ids,
            principals,
        )
        .expect("mint test certificates");
        c.certs = Some(set);
        c
    }

    pub fn peers(&self) -> String {
        self.nodes
            .values()
            .map(|n| format!("{}={}", n.id, n.addr))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn endpoints(&self) -> String {
        self.nodes
            .values()
            .map(|n| n.addr.clone())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn addr(&self, id: u64) -> String {
        self.nodes[&id].addr.clone()
    }

    fn command(&self, id: u64) -> Command {
        let n = &self.nodes[&id];
        let mut cmd = Command::new(warden_bin());
        cmd.arg("server")
            .arg("--id")
            .arg(id.to_string())
            .arg("--listen")
            .arg(&n.addr)
            .arg("--peers")
            .arg(self.peers())
            .arg("--data-dir")
            .arg(&n.dir)
            .args(self.server_flags(id))
            .args(self.peer_flags(id))
            .args(&self.extra)
            .env("RUST_LOG", "info,openraft=warn")
            .stdin(Stdio::null());
        for name in CLEARED_ENV {
            cmd.env_remove(name);
        }
        cmd
    }

    /// Starts node `id` (again), appending its output to its log file.
    pub fn spawn(&mut self, id: u64) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.nodes[&id].log)
            .expect("log file");
        let err = log.try_clone().expect("log clone");
        let child = self
            .command(id)
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("spawn warden server");
        self.nodes.get_mut(&id).expect("node").child = Some(child);
    }

    /// Lays out node `id` with a fresh address and data dir and starts it
    /// with `--join` (plus `extra`), then waits until it listens; returns
    /// its address.
    pub fn spawn_joiner(&mut self, id: u64, extra: &[String]) -> String {
        let addr = self.lay_out(id);
        let n = &self.nodes[&id];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&n.log)
            .expect("log");
        let err = log.try_clone().expect("log");
        let mut cmd = Command::new(warden_bin());
        for name in CLEARED_ENV {
            cmd.env_remove(name);
        }
        let child = cmd
            .arg("server")
            .args(["--id", &id.to_string(), "--listen", &addr])
            .args(["--peers", &self.peers()])
            .arg("--data-dir")
            .arg(&n.dir)
            .arg("--join")
            .args(self.server_flags(id))
            .args(self.peer_flags(id))
            .args(&self.extra)
            .args(extra)
            .env("RUST_LOG", "info,openraft=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("spawn joiner");
        self.nodes.get_mut(&id).expect("node").child = Some(child);
        wait_listening(&addr);
        addr
    }

    /// Whether node `id`'s log (every run of it so far) contains `text`.
    pub fn logged(&self, id: u64, text: &str) -> bool {
        std::fs::read_to_string(&self.nodes[&id].log)
            .expect("log")
            .contains(text)
    }

    /// Runs node `id` in the foreground until it exits (or `timeout`).
    pub fn run_to_exit(&mut self, id: u64, timeout: Duration) -> (Option<i32>, String) {
        let mut child = self
            .command(id)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break Some(s);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        (status.and_then(|s| s.code()), stderr)
    }

    /// SIGKILL node `id` and reap it.
    pub fn kill(&mut self, id: u64) {
        if let Some(mut c) = self.nodes.get_mut(&id).and_then(|n| n.child.take()) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM node `id`; returns how long it took to exit (SIGKILL after `limit`).
    pub fn terminate(&mut self, id: u64, limit: Duration) -> Duration {
        let start = Instant::now();
        if let Some(mut c) = self.nodes.get_mut(&id).and_then(|n| n.child.take()) {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            loop {
                if c.try_wait().expect("wait").is_some() {
                    break;
                }
                if start.elapsed() > limit {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        start.elapsed()
    }

    /// Deletes node `id`'s data dir (the node must be stopped).
    pub fn wipe(&mut self, id: u64) {
        let _ = std::fs::remove_dir_all(&self.nodes[&id].dir);
    }

    /// Runs the CLI as `root` with `--endpoints` of the whole cluster and
    /// `--output json`.
    pub fn cli(&self, args: &[&str]) -> (i32, serde_json::Value, String) {
        self.cli_at(&self.endpoints(), args)
    }

    /// Runs the CLI as `user` (its certificate) against the whole cluster.
    pub fn cli_as(&self, user: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
        self.cli_at_as(user, &self.endpoints(), args)
    }

    /// Runs the CLI as `root` against the given endpoints.
    pub fn cli_at(&self, endpoints: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
        self.cli_at_as("root", endpoints, args)
    }

    /// Runs the CLI as `user` against the given endpoints.
    pub fn cli_at_as(
        &self,
        user: &str,
        endpoints: &str,
        args: &[&str],
    ) -> (i32, serde_json::Value, String) {
        let out = self
            .cli_command(user, args)
            .arg("--endpoints")
            .arg(endpoints)
            .arg("--output")
            .arg("json")
            .stdin(Stdio::null())
            .output()
            .expect("run warden cli");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let json = if stdout.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}): {stdout:?}"))
        };
        (out.status.code().unwrap_or(-1), json, stderr)
    }

    /// Raw requests as `root` to every node.
    pub fn api(&self) -> Api {
        self.api_as("root")
    }

    /// Raw requests as `user` to every node.
    pub fn api_as(&self, user: &str) -> Api {
        Api::with(
            self.nodes.values().map(|n| n.addr.clone()).collect(),
            self.client_options_as(user),
        )
    }

    /// Waits until a running node reports a leader that is running; returns it.
    pub async fn wait_leader(&self, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        loop {
            for n in self.nodes.values().filter(|n| n.child.is_some()) {
                if let Ok(s) = cluster_status_at(&n.addr).await {
                    let alive = self
                        .nodes
                        .get(&s.leader_id)
                        .map(|l| l.child.is_some())
                        .unwrap_or(false);
                    // A node restarted a moment ago may still believe in its
                    // old term of office: only a read-index (a quorum's
                    // confirmation) proves leadership.
                    if s.leader_id == s.node_id && alive && confirmed_leader(&n.addr).await {
                        return s.leader_id;
                    }
                }
            }
            assert!(Instant::now() < deadline, "no leader within {timeout:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// True when node `id` answers a call: with its view of the cluster, or
    /// (a follower) with a hint naming the leader.
    async fn serves(&self, id: u64) -> bool {
        match cluster_status_at(&self.addr(id)).await {
            Ok(_) => true,
            Err(s) => warden_client::leader_hint(s.metadata()).is_some(),
        }
    }

    /// Waits until node `id` has applied everything the leader has committed
    /// (as the leader sees it) and answers calls itself.
    pub async fn wait_applied(&self, id: u64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let leader = self.wait_leader(timeout).await;
            // Right after a restart the leader still reports what the old
            // process had matched, while the new one may not be serving yet:
            // the node itself must answer too (a follower answers with a
            // leader hint).
            if let Ok(s) = cluster_status_at(&self.addr(leader)).await {
                if let Some(m) = s.members.iter().find(|m| m.id == id) {
                    if m.applied_index >= s.commit_index
                        && s.commit_index > 0
                        && self.serves(id).await
                    {
                        return;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "node {id} did not catch up within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Takes a snapshot on every running node until all of them cover the
    /// same index; returns (index, bytes) per node.
    pub async fn snapshots_at_same_index(&self, timeout: Duration) -> Vec<(u64, Vec<u8>)> {
        let deadline = Instant::now() + timeout;
        loop {
            let leader = self.wait_leader(timeout).await;
            let cluster_id = cluster_status_at(&self.addr(leader))
                .await
                .map(|s| s.cluster_id)
                .unwrap_or_default();
            let mut out = Vec::new();
            for n in self.nodes.values().filter(|n| n.child.is_some()) {
                if let Ok(s) = take_snapshot(&n.addr, n.id, &cluster_id).await {
                    out.push(s);
                }
            }
            if out.len() == self.nodes.values().filter(|n| n.child.is_some()).count()
                && out.windows(2).all(|w| w[0].0 == w[1].0)
            {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "snapshots never agreed on an index: {:?}",
                out.iter().map(|s| s.0).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            self.kill(id);
        }
        if std::thread::panicking() {
            if let Ok(dir) = std::env::var("WARDEN_TEST_KEEP_LOGS") {
                let _ = std::fs::create_dir_all(&dir);
                for n in self.nodes.values() {
                    let _ = std::fs::copy(
                        &n.log,
                        std::path::Path::new(&dir).join(format!("node-{}.log", n.id)),
                    );
                }
            }
            for n in self.nodes.values() {
                if let Ok(log) = std::fs::read_to_string(&n.log) {
                    let tail: Vec<&str> = log.lines().rev().take(40).collect();
                    eprintln!("---- node {} log (last lines) ----", n.id);
                    for l in tail.iter().rev() {
                        eprintln!("{l}");
                    }
                }
            }
        }
    }
}

/// Polls until `addr` accepts TCP connections (deadline 10 s).
pub fn wait_listening(addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "{addr} never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `warden` command for a client call as `user` on `endpoints`
/// (`HOST:PORT,...`): the environment cleared of [`CLEARED_ENV`], then
/// `args`, the client flags of what the endpoints serve, and `--endpoints`.
pub fn cli_command_at(user: &str, endpoints: &str, args: &[&str]) -> Command {
    let first: Vec<String> = endpoints.split(',').map(str::to_owned).collect();
    let mut cmd = Command::new(warden_bin());
    for name in CLEARED_ENV {
        cmd.env_remove(name);
    }
    cmd.args(args)
        .args(transport::cli_flags(
            transport::security_of_all(&first),
            user,
        ))
        .args(["--endpoints", endpoints]);
    cmd
}

/// Acquires `resource` on a new lease of `ttl` through `client` (no wait);
/// fails the test unless it is granted. Returns (lease id, fencing token).
pub async fn take(client: &Client, resource: &str, ttl: Duration) -> (u64, u64) {
    match client
        .acquire(resource, warden_client::AcquireOptions::with_ttl(ttl))
        .await
    {
        Ok(warden_client::AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        }) => (lease_id, fencing_token),
        other => panic!("acquire {resource:?}: expected a grant, got {other:?}"),
    }
}

/// A warden-client client of `endpoints` as `root`, over what they serve.
pub async fn client_of(endpoints: Vec<String>) -> Client {
    let security = transport::security_of_all(&endpoints);
    Client::connect(endpoints, transport::client_options(security, "root"))
        .await
        .expect("test endpoints and certificates")
}

/// A channel to `addr` as `root`, over what `addr` serves (connect timeout
/// 300 ms; `request_timeout` per call, none for waiting acquires that may
/// outlast any fixed bound).
pub async fn channel(addr: &str, request_timeout: Option<Duration>) -> Result<Channel, Status> {
    transport::channel(addr, request_timeout).await
}

async fn connect(addr: &str) -> Result<LockClient<Channel>, Status> {
    Ok(LockClient::new(
        channel(addr, Some(Duration::from_secs(5))).await?,
    ))
}

/// Runs `f` on the leader with warden-client's loop ([`Client::call_raw`]:
/// hints, rotation, backoff), with the test's client of `endpoints`
/// ([`shared_client`]), until `within` has passed. `f` bounds its own wait (none is added:
/// a waiting acquire may wait long) and must be safe to repeat: a read, a
/// renew, or a request with a hand-made request id (S7).
pub async fn call_leader<T, F, Fut>(
    endpoints: &[String],
    within: Duration,
    f: F,
) -> Result<T, ClientError>
where
    F: FnMut(Channel) -> Fut,
    Fut: std::future::Future<Output = Result<T, Status>>,
{
    shared_client(endpoints)
        .await?
        .call_raw("test call", within, f)
        .await
}

/// One warden-client client (as `root`) per endpoint list and runtime,
/// shared by every [`call_leader`] of a test: its connections (one TLS
/// handshake per node, not per call) and its leader cache. Per runtime,
/// because a client's connections run on the runtime that opened them.
async fn shared_client(endpoints: &[String]) -> Result<Client, ClientError> {
    type Key = (tokio::runtime::Id, Vec<String>);
    static CLIENTS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<Key, Client>>> =
        std::sync::OnceLock::new();
    let clients = CLIENTS.get_or_init(Default::default);
    let key = (tokio::runtime::Handle::current().id(), endpoints.to_vec());
    if let Some(client) = clients.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(client.clone());
    }
    let security = transport::security_of_all(endpoints);
    let client = Client::connect(
        endpoints.to_vec(),
        transport::client_options(security, "root"),
    )
    .await?;
    Ok(clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_insert(client)
        .clone())
}

pub async fn cluster_status_at(addr: &str) -> Result<pb::ClusterStatusResponse, Status> {
    let mut c = connect(addr).await?;
    match c.cluster_status(pb::ClusterStatusRequest {}).await {
        Ok(r) => Ok(r.into_inner()),
        Err(s) => Err(s),
    }
}

/// True when `addr` serves a linearizable read (it is a leader confirmed by
/// a quorum).
async fn confirmed_leader(addr: &str) -> bool {
    match connect(addr).await {
        Ok(mut c) => c
            .status(pb::StatusRequest {
                resource: "warden-test-probe".into(),
            })
            .await
            .is_ok(),
        Err(_) => false,
    }
}

/// The Peer service's snapshot read on node `id` at `addr`, with node
/// `id`'s own certificate (the Peer service serves node certificates only),
/// over `TakeSnapshotStream`: parts of at most 1 MiB, concatenated.
async fn take_snapshot(addr: &str, id: u64, cluster_id: &str) -> Result<(u64, Vec<u8>), Status> {
    let ch = transport::peer_channel(addr, id).await?;
    let mut c = PeerClient::new(ch);
    let mut req = tonic::Request::new(TakeSnapshotRequest {});
    req.metadata_mut().insert(
        warden_proto::CLUSTER_ID_METADATA,
        cluster_id.parse().map_err(|_| Status::internal("bad id"))?,
    );
    let mut parts = c.take_snapshot_stream(req).await?.into_inner();
    let (mut index, mut data) = (0, Vec::new());
    while let Some(part) = parts.message().await? {
        assert!(
            part.data.len() <= 1024 * 1024,
            "a snapshot part of {} bytes",
            part.data.len()
        );
        index = part.index;
        data.extend_from_slice(&part.data);
    }
    Ok((index, data))
}

/// Raw `Lock` requests with hand-made client and request ids (S7 tests need
/// them), on warden-client's leader-following loop: retried, with the same
/// ids, until [`API_DEADLINE`]; each attempt bounded by [`API_ATTEMPT`].
#[derive(Clone, Debug)]
pub struct Api {
    pub endpoints: Vec<String>,
    /// How its client connects (and as whom).
    options: ClientOptions,
    /// Made on first use, then shared by every clone (one leader cache).
    client: Arc<tokio::sync::OnceCell<Client>>,
}

const API_DEADLINE: Duration = Duration::from_secs(10);
const API_ATTEMPT: Duration = Duration::from_secs(5);

impl Api {
    /// Requests as `root` to `endpoints`, over what they serve.
    pub fn new(endpoints: Vec<String>) -> Api {
        let security = transport::security_of_all(&endpoints);
        Api::with(endpoints, transport::client_options(security, "root"))
    }

    /// Requests to `endpoints` by a client with `options`.
    pub fn with(endpoints: Vec<String>, options: ClientOptions) -> Api {
        Api {
            endpoints,
            options,
            client: Arc::default(),
        }
    }

    /// The warden-client client of these endpoints.
    pub async fn client(&self) -> Client {
        self.client
            .get_or_init(|| async {
                Client::connect(self.endpoints.clone(), self.options.clone())
                    .await
                    .expect("test endpoints")
            })
            .await
            .clone()
    }

    /// `f` with a `Lock` client of the node tried, on the client's loop.
    async fn call<T, F, Fut>(&self, f: F) -> Result<T, ClientError>
    where
        F: Fn(LockClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        let f = &f;
        self.client()
            .await
            .call_raw("test api", API_DEADLINE, move |ch| async move {
                tokio::time::timeout(API_ATTEMPT, f(LockClient::new(ch)))
                    .await
                    .unwrap_or_else(|_| Err(Status::deadline_exceeded("no answer within 5 s")))
            })
            .await
    }

    async fn acquire_req(&self, req: pb::AcquireRequest) -> Result<Final, ClientError> {
        self.call(|mut c| {
            let req = req.clone();
            async move {
                let mut s = c.acquire(req).await?.into_inner();
                loop {
                    match s.message().await? {
                        None => return Err(Status::unavailable("stream ended")),
                        Some(m) => match m.event {
                            Some(pb::acquire_response::Event::Granted(g)) => {
                                return Ok(Final::Granted {
                                    resource: g.resource,
                                    lease_id: g.lease_id,
                                    fencing_token: g.fencing_token,
                                    ttl_ms: g.ttl_ms,
                                })
                            }
                            Some(pb::acquire_response::Event::NotGranted(n)) => {
                                return Ok(Final::NotGranted {
                                    holder_lease_id: n.holder_lease_id,
                                    reason: n.reason,
                                })
                            }
                            _ => continue,
                        },
                    }
                }
            }
        })
        .await
    }

    fn header(client_id: u64, request_id: u64) -> Option<pb::RequestHeader> {
        Some(pb::RequestHeader {
            client_id,
            request_id,
            acked_request_id: 0,
        })
    }

    /// Try-acquire with a new lease of `ttl_ms`.
    pub async fn acquire(
        &self,
        client_id: u64,
        request_id: u64,
        resource: &str,
        ttl_ms: u64,
    ) -> Result<Final, ClientError> {
        self.acquire_req(pb::AcquireRequest {
            header: Self::header(client_id, request_id),
            resource: resource.into(),
            ttl_ms,
            ..Default::default()
        })
        .await
    }

    /// Acquire with a new lease of `ttl_ms`, waiting in the queue up to
    /// `wait_ms` (the final answer; a `PermissionDenied` end of the stream,
    /// as a revoked waiter gets, is the call's error).
    pub async fn acquire_waiting(
        &self,
        client_id: u64,
        request_id: u64,
        resource: &str,
        ttl_ms: u64,
        wait_ms: u64,
    ) -> Result<Final, ClientError> {
        self.acquire_req(pb::AcquireRequest {
            header: Self::header(client_id, request_id),
            resource: resource.into(),
            ttl_ms,
            wait_timeout_ms: wait_ms,
            ..Default::default()
        })
        .await
    }

    /// Try-acquire on an existing lease.
    pub async fn acquire_on_lease(
        &self,
        client_id: u64,
        request_id: u64,
        resource: &str,
        lease_id: u64,
    ) -> Result<Final, ClientError> {
        self.acquire_req(pb::AcquireRequest {
            header: Self::header(client_id, request_id),
            resource: resource.into(),
            lease_id,
            ..Default::default()
        })
        .await
    }

    pub async fn renew(&self, lease_id: u64) -> Result<u64, ClientError> {
        self.call(|mut c| async move {
            Ok(c.renew(pb::RenewRequest {
                lease_id,
                client_id: 1,
                sequence: 1,
            })
            .await?
            .into_inner()
            .ttl_ms)
        })
        .await
    }

    pub async fn release(
        &self,
        client_id: u64,
        request_id: u64,
        resource: &str,
        lease_id: u64,
        fencing_token: u64,
    ) -> Result<(), ClientError> {
        self.call(|mut c| {
            let resource = resource.to_string();
            async move {
                c.release(pb::ReleaseRequest {
                    header: Self::header(client_id, request_id),
                    resource,
                    lease_id,
                    fencing_token,
                })
                .await?;
                Ok(())
            }
        })
        .await
    }

    pub async fn status(&self, resource: &str) -> Result<pb::StatusResponse, ClientError> {
        self.call(|mut c| {
            let resource = resource.to_string();
            async move { Ok(c.status(pb::StatusRequest { resource }).await?.into_inner()) }
        })
        .await
    }
}
