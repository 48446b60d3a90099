//! Starts and stops the systems under test: three-node Warden, etcd and
//! ZooKeeper clusters and one Redis node, all on 127.0.0.1 with ports picked
//! free, data under one temp dir on the real disk. Every spawned process id is
//! appended to `$BENCH_PIDFILE` (run.sh kills exactly those on exit); the
//! [`Cluster`] also kills its own processes when dropped.
//!
//! A Warden cluster with mutual TLS (the server's default) gets its own
//! certificates, minted by the `warden` binary under the cluster's temp dir:
//! `certs/ca.crt` and `root`'s client certificate in `certs/`, node N's in
//! `certs/nN/`, the CA key beside `certs/` (never inside it).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use warden_client::TlsOptions;

/// The systems, and the settings each cluster runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// Warden serving mutual TLS 1.3 (`tls`, its default: `--certs-dir`) or
    /// plaintext (`--insecure`).
    Warden {
        tls: bool,
    },
    /// etcd with heartbeat 50 ms / election timeout 500 ms (`tuned`) or at
    /// its defaults (100 ms / 1000 ms).
    Etcd {
        tuned: bool,
    },
    Zookeeper,
    Redis,
}

impl System {
    /// The `config` label in the results.
    pub fn config(self) -> &'static str {
        match self {
            System::Warden { tls: true } => "3 nodes, mutual TLS 1.3 (client root), heartbeat 50ms, election after 500-600ms without the leader (min 200ms, max 300ms)",
            System::Warden { tls: false } => "3 nodes, --insecure (plaintext), heartbeat 50ms, election after 500-600ms without the leader (min 200ms, max 300ms)",
            System::Etcd { tuned: true } => "3 nodes, heartbeat 50ms, election timeout 500ms",
            System::Etcd { tuned: false } => {
                "3 nodes, defaults (heartbeat 100ms, election timeout 1000ms)"
            }
            System::Zookeeper => "3 nodes, tickTime 100ms, syncLimit 5, forceSync yes",
            System::Redis => "1 node, no persistence (unsafe)",
        }
    }
}

/// How [`Cluster::start_with`] starts a cluster beyond [`Cluster::start`]'s
/// settings (the scale run's needs; the default changes nothing).
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Warden: extra `warden server` flags for every node (e.g. timing).
    /// A flag given here replaces the default one: the defaults' timing
    /// flags are left out when this names any of them.
    pub warden_args: Vec<String>,
    /// Warden: serve /metrics on an admin listener (`--admin-listen`, a
    /// free port) on every node.
    pub admin_listen: bool,
    /// Warden: node i serves peers on its own port `.0` (`--peer-listen`)
    /// and every node reaches it at `.1` (`--peer-addrs`): a proxy the
    /// caller runs from `.1` to `.0`.
    pub peer_ports: Option<Vec<(u16, u16)>>,
    /// ZooKeeper: the JVM's heap (`-Xmx`), default `1g`.
    pub zk_heap: Option<String>,
}

struct Node {
    admin_addr: Option<String>,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    client_addr: String,
    child: Option<Child>,
}

/// A running cluster of one system.
pub struct Cluster {
    pub system: System,
    nodes: Vec<Node>,
    /// Warden with mutual TLS: the certificate its clients present.
    warden_tls: Option<TlsOptions>,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        // BENCH_KEEP_LOGS=DIR: each node's out.log is copied there
        // (`<cluster dir name>-n<id>.log`) before the temp dir goes.
        if let Ok(keep) = std::env::var("BENCH_KEEP_LOGS") {
            let keep = Path::new(&keep);
            let name = self._dir.path().file_name().unwrap_or_default();
            if std::fs::create_dir_all(keep).is_ok() {
                for (i, n) in self.nodes.iter().enumerate() {
                    let to = keep.join(format!("{}-n{}.log", name.to_string_lossy(), i + 1));
                    let _ = std::fs::copy(n.dir.join("out.log"), to);
                }
            }
        }
    }
}

/// A free loopback port (bound to :0 and released) that this process has
/// not handed out before: a port released can be handed out again by the
/// next bind to :0, and two nodes given one port never form a cluster (a
/// mass_expiry row failed so: `--peers` named one address twice).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        if GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(port)
        {
            return port;
        }
    }
}

fn record_pid(pid: u32) {
    if let Ok(path) = std::env::var("BENCH_PIDFILE") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{pid}");
        }
    }
}

/// Runs `warden cert ARGS` to completion; its output names files, never keys.
fn warden_cert(warden_bin: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(warden_bin)
        .arg("cert")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("spawn {} cert", warden_bin.display()))?;
    if !out.status.success() {
        bail!(
            "warden cert {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Mints a CA, node `1..=nodes`'s certificates (valid for 127.0.0.1 and
/// localhost) and `root`'s client certificate under `dir` (see the module
/// docs); returns the client's certs dir.
fn mint_certs(warden_bin: &Path, dir: &Path, nodes: usize) -> Result<PathBuf> {
    let certs = dir.join("certs");
    let ca_key = dir.join("ca.key").display().to_string();
    let certs_s = certs.display().to_string();
    warden_cert(
        warden_bin,
        &["create-ca", "--certs-dir", &certs_s, "--ca-key", &ca_key],
    )?;
    for id in 1..=nodes {
        // create-node reads the CA certificate from the dir it writes to.
        let node_dir = certs.join(format!("n{id}"));
        std::fs::create_dir_all(&node_dir)?;
        std::fs::copy(certs.join("ca.crt"), node_dir.join("ca.crt"))?;
        warden_cert(
            warden_bin,
            &[
                "create-node",
                "--certs-dir",
                &node_dir.display().to_string(),
                "--ca-key",
                &ca_key,
                "--id",
                &id.to_string(),
                "127.0.0.1",
                "localhost",
            ],
        )?;
    }
    warden_cert(
        warden_bin,
        &[
            "create-client",
            "root",
            "--certs-dir",
            &certs_s,
            "--ca-key",
            &ca_key,
        ],
    )?;
    Ok(certs)
}

impl Node {
    fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("out.log"))?;
        let child = Command::new(&self.program)
            .args(&self.args)
            .current_dir(&self.dir)
            // Warden's start steps and leader duties, for the scale run's
            // restart breakdown (`scale::start_steps`); errors otherwise.
            // BENCH_NODE_LOG replaces the filter (e.g. to add openraft's
            // election lines).
            .env(
                "RUST_LOG",
                std::env::var("BENCH_NODE_LOG").unwrap_or_else(|_| {
                    "error,warden_server::start=info,warden_server::node::duties=info".into()
                }),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawn {}", self.program.display()))?;
        record_pid(child.id());
        self.child = Some(child);
        Ok(())
    }
}

impl Cluster {
    /// Starts `system` under `work_dir` and waits until it serves.
    pub async fn start(system: System, work_dir: &Path, warden_bin: &Path) -> Result<Cluster> {
        Cluster::start_with(system, work_dir, warden_bin, &StartOptions::default()).await
    }

    /// As [`Cluster::start`], with `opts`.
    pub async fn start_with(
        system: System,
        work_dir: &Path,
        warden_bin: &Path,
        opts: &StartOptions,
    ) -> Result<Cluster> {
        let dir = tempfile::Builder::new()
            .prefix("cluster-")
            .tempdir_in(work_dir)?;
        let n = if system == System::Redis { 1 } else { 3 };
        let client: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let peer: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let election: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let admin: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let certs = match system {
            System::Warden { tls: true } => Some(mint_certs(warden_bin, dir.path(), n)?),
            _ => None,
        };
        let mut nodes = Vec::new();
        for i in 0..n {
            let id = i + 1;
            let ndir = dir.path().join(format!("n{id}"));
            std::fs::create_dir_all(&ndir)?;
            let client_addr = format!("127.0.0.1:{}", client[i]);
            let (program, args): (PathBuf, Vec<String>) = match system {
                System::Warden { .. } => {
                    let peers = client
                        .iter()
                        .enumerate()
                        .map(|(j, p)| format!("{}=127.0.0.1:{p}", j + 1))
                        .collect::<Vec<_>>()
                        .join(",");
                    let security = match &certs {
                        Some(certs) => vec![
                            "--certs-dir".to_owned(),
                            certs.join(format!("n{id}")).display().to_string(),
                        ],
                        None => vec!["--insecure".to_owned()],
                    };
                    let timing_given = opts.warden_args.iter().any(|a| {
                        a == "--timing" || a == "--heartbeat" || a.starts_with("--election-timeout")
                    });
                    let timing: &[&str] = if timing_given {
                        &[]
                    } else {
                        &[
                            "--heartbeat",
                            "50ms",
                            // A follower of openraft campaigns once its leader
                            // lease (election-timeout-max after the last message
                            // from the leader) and then a timeout sampled in
                            // [min, max) have passed: 300 + [200, 300) ms. That
                            // is 500-600 ms without the leader, as etcd's
                            // `--election-timeout 500` waits 500-1000 ms
                            // (docs/benchmarks.md).
                            "--election-timeout-min",
                            "200ms",
                            "--election-timeout-max",
                            "300ms",
                        ]
                    };
                    let args = [
                        "server",
                        "--id",
                        &id.to_string(),
                        "--listen",
                        &client_addr,
                        "--peers",
                        &peers,
                        "--data-dir",
                        &ndir.join("data").display().to_string(),
                    ];
                    let mut extra: Vec<String> = opts.warden_args.clone();
                    if let Some(ports) = &opts.peer_ports {
                        extra.push("--peer-listen".into());
                        extra.push(format!("127.0.0.1:{}", ports[i].0));
                        extra.push("--peer-addrs".into());
                        extra.push(
                            ports
                                .iter()
                                .enumerate()
                                .map(|(j, p)| format!("{}=127.0.0.1:{}", j + 1, p.1))
                                .collect::<Vec<_>>()
                                .join(","),
                        );
                    }
                    if opts.admin_listen {
                        extra.push("--admin-listen".into());
                        extra.push(format!("127.0.0.1:{}", admin[i]));
                    }
                    (
                        warden_bin.to_path_buf(),
                        args.iter()
                            .chain(timing)
                            .map(|s| s.to_string())
                            .chain(security)
                            .chain(extra)
                            .collect(),
                    )
                }
                System::Etcd { tuned } => {
                    let cluster = peer
                        .iter()
                        .enumerate()
                        .map(|(j, p)| format!("n{}=http://127.0.0.1:{p}", j + 1))
                        .collect::<Vec<_>>()
                        .join(",");
                    let mut args: Vec<String> = [
                        "--name".to_string(),
                        format!("n{id}"),
                        "--data-dir".into(),
                        ndir.join("data").display().to_string(),
                        "--listen-client-urls".into(),
                        format!("http://{client_addr}"),
                        "--advertise-client-urls".into(),
                        format!("http://{client_addr}"),
                        "--listen-peer-urls".into(),
                        format!("http://127.0.0.1:{}", peer[i]),
                        "--initial-advertise-peer-urls".into(),
                        format!("http://127.0.0.1:{}", peer[i]),
                        "--initial-cluster".into(),
                        cluster,
                        "--initial-cluster-state".into(),
                        "new".into(),
                        "--initial-cluster-token".into(),
                        "warden-bench".into(),
                        "--log-level".into(),
                        "error".into(),
                        "--logger".into(),
                        "zap".into(),
                    ]
                    .into();
                    if tuned {
                        args.extend(
                            ["--heartbeat-interval", "50", "--election-timeout", "500"]
                                .map(String::from),
                        );
                    }
                    ("etcd".into(), args)
                }
                System::Zookeeper => {
                    let data = ndir.join("data");
                    std::fs::create_dir_all(&data)?;
                    std::fs::write(data.join("myid"), format!("{id}\n"))?;
                    let mut cfg = format!(
                        "tickTime=100\ninitLimit=50\nsyncLimit=5\ndataDir={}\n\
                         clientPort={}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n\
                         minSessionTimeout=200\nmaxSessionTimeout=60000\n\
                         admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n\
                         forceSync=yes\nautopurge.purgeInterval=0\n",
                        data.display(),
                        client[i],
                    );
                    for j in 0..n {
                        cfg.push_str(&format!(
                            "server.{}=127.0.0.1:{}:{}\n",
                            j + 1,
                            peer[j],
                            election[j]
                        ));
                    }
                    std::fs::write(ndir.join("zoo.cfg"), cfg)?;
                    std::fs::write(
                        ndir.join("log4j.properties"),
                        "log4j.rootLogger=WARN, CONSOLE\n\
                         log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n\
                         log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n\
                         log4j.appender.CONSOLE.layout.ConversionPattern=%d %p %m%n\n",
                    )?;
                    let args = vec![
                        format!("-Xmx{}", opts.zk_heap.as_deref().unwrap_or("1g")),
                        "-XX:+UseG1GC".into(),
                        "-Dzookeeper.log.dir=.".into(),
                        format!(
                            "-Dlog4j.configuration=file:{}/log4j.properties",
                            ndir.display()
                        ),
                        "-cp".into(),
                        format!("{}:/usr/share/java/zookeeper.jar", ndir.display()),
                        "org.apache.zookeeper.server.quorum.QuorumPeerMain".into(),
                        ndir.join("zoo.cfg").display().to_string(),
                    ];
                    ("java".into(), args)
                }
                System::Redis => {
                    let args = [
                        "--port",
                        &client[i].to_string(),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        &ndir.display().to_string(),
                    ];
                    (
                        "redis-server".into(),
                        args.iter().map(|s| s.to_string()).collect(),
                    )
                }
            };
            let mut node = Node {
                admin_addr: (matches!(system, System::Warden { .. }) && opts.admin_listen)
                    .then(|| format!("127.0.0.1:{}", admin[i])),
                program,
                args,
                dir: ndir,
                client_addr,
                child: None,
            };
            node.spawn()?;
            nodes.push(node);
        }
        let cluster = Cluster {
            system,
            nodes,
            warden_tls: certs.map(|c| TlsOptions::new(c, warden_client::DEFAULT_USER)),
            _dir: dir,
        };
        cluster.wait_leader(Duration::from_secs(60)).await?;
        Ok(cluster)
    }

    /// The cluster's temp dir (Warden with TLS: `certs/` and `ca.key`).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// Warden with `admin_listen`: each node's admin listener, node order.
    pub fn admin_addrs(&self) -> Vec<Option<String>> {
        self.nodes.iter().map(|n| n.admin_addr.clone()).collect()
    }

    /// Client endpoints, `127.0.0.1:port`, node order.
    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.client_addr.clone()).collect()
    }

    /// Warden with mutual TLS: the client certificate to present (`root`'s);
    /// None for a plaintext cluster and the other systems.
    pub fn warden_tls(&self) -> Option<&TlsOptions> {
        self.warden_tls.as_ref()
    }

    /// Process ids of the running nodes (None for a killed one).
    pub fn pids(&self) -> Vec<Option<u32>> {
        self.nodes
            .iter()
            .map(|n| n.child.as_ref().map(Child::id))
            .collect()
    }

    /// Waits until some node reports itself leader; returns its index.
    pub async fn wait_leader(&self, within: Duration) -> Result<usize> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(i) = self.leader().await {
                return Ok(i);
            }
            if Instant::now() > deadline {
                let logs: Vec<String> = self
                    .nodes
                    .iter()
                    .map(|n| {
                        std::fs::read_to_string(n.dir.join("out.log"))
                            .unwrap_or_default()
                            .lines()
                            .rev()
                            .take(5)
                            .collect::<Vec<_>>()
                            .join(" | ")
                    })
                    .collect();
                bail!(
                    "{:?}: no leader within {within:?}; logs: {logs:?}",
                    self.system
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The index of the node that says it leads, if one does. For Warden,
    /// the leader of the highest term any running node reports, and only
    /// if that node says so itself: a leader deposed by a partition or a
    /// stall still says it leads, at its old term, until it hears of the
    /// new one (killing it would time no failover).
    pub async fn leader(&self) -> Option<usize> {
        if matches!(self.system, System::Warden { .. }) {
            let mut views = Vec::new();
            for (i, n) in self.nodes.iter().enumerate() {
                if n.child.is_some() {
                    if let Some(s) = warden_status(&n.client_addr, &self.warden_tls).await {
                        views.push((i, s));
                    }
                }
            }
            let term = views
                .iter()
                .filter(|(_, s)| s.leader_id != 0)
                .map(|(_, s)| s.term)
                .max()?;
            return views
                .iter()
                .find(|(_, s)| s.term == term && s.leader_id == s.node_id)
                .map(|(i, _)| *i);
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_none() {
                continue;
            }
            let leads = match self.system {
                // chosen by term above
                System::Warden { .. } => continue,
                System::Etcd { .. } => etcd_leads(&n.client_addr).await,
                System::Zookeeper => zk_mode(&n.client_addr)
                    .await
                    .is_some_and(|m| m == "leader" || m == "standalone"),
                System::Redis => redis_ping(&n.client_addr).await,
            };
            if leads {
                return Some(i);
            }
        }
        None
    }

    /// `kill -9` node `i`.
    pub fn kill9(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.nodes[i].child.take() {
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }

    /// Starts node `i` again with the same flags and data dir.
    pub fn restart(&mut self, i: usize) -> Result<()> {
        self.nodes[i].spawn()
    }
}

/// One node's own ClusterStatus (None if it does not answer in 300 ms).
/// Asked over a channel to that node alone: `warden_client::Client` follows
/// the leader, so every node's "own" status through it was the leader's, and
/// the first running node looked like the leader (a failover that killed a
/// follower timed no election).
async fn warden_status(addr: &str, tls: &Option<TlsOptions>) -> Option<WardenStatus> {
    let channel = match tls {
        Some(tls) => warden_tls::ClientTls::load_client(&tls.certs_dir, &tls.user)
            .ok()?
            .channel_lazy(addr)
            .ok()?,
        None => tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .ok()?
            .connect_lazy(),
    };
    let s = status_over(channel, Duration::from_millis(300)).await?;
    Some(WardenStatus {
        node_id: s.node_id,
        leader_id: s.leader_id,
        term: s.term,
    })
}

/// The ClusterStatus of the node at the other end of `channel` (no leader
/// following), None if it does not answer within `within`.
pub async fn status_over(
    channel: tonic::transport::Channel,
    within: Duration,
) -> Option<warden_proto::v1::ClusterStatusResponse> {
    use warden_proto::v1 as pb;
    let mut c = pb::lock_client::LockClient::new(channel);
    let asked = c.cluster_status(pb::ClusterStatusRequest {});
    Some(
        tokio::time::timeout(within, asked)
            .await
            .ok()?
            .ok()?
            .into_inner(),
    )
}

/// What [`Cluster::leader`] reads of a Warden node's own status.
struct WardenStatus {
    node_id: u64,
    leader_id: u64,
    term: u64,
}

async fn etcd_leads(addr: &str) -> bool {
    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_millis(300))
        .with_timeout(Duration::from_millis(300));
    let Ok(mut c) = etcd_client::Client::connect([addr], Some(options)).await else {
        return false;
    };
    match c.status().await {
        Ok(s) => s.leader() != 0 && s.header().map(|h| h.member_id()) == Some(s.leader()),
        Err(_) => false,
    }
}

/// ZooKeeper's `srvr` four-letter word: the `Mode:` line.
pub async fn zk_mode(addr: &str) -> Option<String> {
    let addr = addr.to_owned();
    tokio::task::spawn_blocking(move || {
        let sock = addr.parse().ok()?;
        let mut s = std::net::TcpStream::connect_timeout(&sock, Duration::from_millis(300)).ok()?;
        s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
        s.write_all(b"srvr").ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        out.lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(|m| m.trim().to_owned())
    })
    .await
    .ok()
    .flatten()
}

async fn redis_ping(addr: &str) -> bool {
    let Ok(client) = redis::Client::open(format!("redis://{addr}/")) else {
        return false;
    };
    let Ok(Ok(mut conn)) = tokio::time::timeout(
        Duration::from_millis(300),
        client.get_multiplexed_async_connection(),
    )
    .await
    else {
        return false;
    };
    redis::cmd("PING")
        .query_async::<String>(&mut conn)
        .await
        .is_ok()
}

/// (utime + stime) in clock ticks (USER_HZ = 100), and VmRSS in KiB.
pub fn proc_usage(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (ticks, rss)
}
