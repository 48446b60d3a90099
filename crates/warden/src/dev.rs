//! `warden dev`: a local cluster of `warden server` child processes on
//! 127.0.0.1.
//!
//! DIR/dev.toml records each node's id and address (ports picked by binding
//! port 0 on the first run), so a second run on the same DIR reuses them and
//! the nodes come back with their data (DIR/node-N). Node N logs to
//! DIR/node-N.log. Children run in their own process group: Ctrl-C reaches
//! only this process, which then stops them in order (SIGTERM, leader last,
//! SIGKILL after a bounded wait).
//!
//! Secure by default: the first run mints a CA, a certificate per node and
//! `root`'s client certificate under DIR (`dev_certs.rs`), the nodes run
//! with `--certs-dir`, and the endpoints line is followed by `export
//! WARDEN_CERTS_DIR=DIR/certs`. `--insecure` starts them with `--insecure`
//! and prints `export WARDEN_INSECURE=true` instead. Once the nodes run it
//! writes the client profile (`profile.rs`) with the same two settings, so
//! client commands in another shell need neither line.

use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;
use warden_client::{Client, ClientOptions, ClusterStatus, TlsOptions};

use crate::cli::DevArgs;
use crate::dev_certs::{self, shell_word, DevCerts};

/// Default number of nodes.
const DEFAULT_NODES: u64 = 3;
/// How long to wait for a fresh or restarted cluster to elect a leader.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a node may take to exit after SIGTERM (a leader first hands
/// leadership over, within its 2 s leader-transfer timeout) before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the children are checked for unexpected exits.
const WATCH_INTERVAL: Duration = Duration::from_millis(200);

/// DIR/dev.toml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevState {
    /// PID of the `warden dev` process that last started the cluster (for
    /// the "port in use" hint: stopping it stops its nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_pid: Option<u32>,
    /// The nodes, by id.
    pub nodes: Vec<DevNode>,
}

/// One node of the dev cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevNode {
    /// Node id, 1..=N.
    pub id: u64,
    /// `127.0.0.1:PORT`, fixed at the first run.
    pub addr: String,
    /// `127.0.0.1:PORT` of its admin listener (`--admin-listen`: health
    /// probes and the dashboard at `/ui`), fixed at the first run that
    /// had none (a dev.toml from before it gets one then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_addr: Option<String>,
    /// PID of the last process started for it (for the "port in use" hint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_pid: Option<u32>,
}

impl DevState {
    /// The `--peers` value: `1=127.0.0.1:p1,2=...`.
    pub fn peers_flag(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("{}={}", n.id, n.addr))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The endpoints line: `127.0.0.1:p1,127.0.0.1:p2,...`.
    pub fn endpoints(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.addr.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Parses dev.toml, refusing a malformed or inconsistent file.
    pub fn parse(text: &str) -> Result<DevState, String> {
        let state: DevState =
            toml::from_str(text).map_err(|e| crate::output::one_line(&e.to_string()))?;
        if state.nodes.is_empty() {
            return Err("no nodes".into());
        }
        for (i, node) in state.nodes.iter().enumerate() {
            if node.id != i as u64 + 1 {
                return Err(format!(
                    "node ids must be 1..={} in order",
                    state.nodes.len()
                ));
            }
            warden_client::parse_endpoint(&node.addr)
                .map_err(|e| format!("node {}: address {:?}: {e}", node.id, node.addr))?;
            if let Some(admin) = &node.admin_addr {
                admin
                    .parse::<std::net::SocketAddr>()
                    .map_err(|e| format!("node {}: admin address {admin:?}: {e}", node.id))?;
            }
        }
        Ok(state)
    }
}

/// Picks `count` free loopback ports by binding port 0 (all at once, so they
/// differ).
fn pick_addresses(count: u64) -> anyhow::Result<Vec<String>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .context("cannot bind a loopback port")?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.to_string()))
        .collect()
}

fn load_or_create_state(dir: &Path, nodes: Option<u64>) -> anyhow::Result<DevState> {
    let path = dir.join("dev.toml");
    if path.exists() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut state =
            DevState::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if let Some(n) = nodes {
            if n != state.nodes.len() as u64 {
                bail!(
                    "--nodes {n}: {} holds a cluster of {} nodes; run without --nodes, or use another --data-dir",
                    dir.display(),
                    state.nodes.len()
                );
            }
        }
        let missing = state
            .nodes
            .iter()
            .filter(|n| n.admin_addr.is_none())
            .count();
        if missing > 0 {
            let mut picked = pick_addresses(missing as u64)?.into_iter();
            for node in state.nodes.iter_mut().filter(|n| n.admin_addr.is_none()) {
                node.admin_addr = picked.next();
            }
            save_state(dir, &state)?;
        }
        return Ok(state);
    }
    let count = nodes.unwrap_or(DEFAULT_NODES);
    // Client and admin ports picked at once, so all of them differ.
    let mut picked = pick_addresses(count * 2)?;
    let admin = picked.split_off(count as usize);
    let state = DevState {
        dev_pid: None,
        nodes: picked
            .into_iter()
            .zip(admin)
            .zip(1..)
            .map(|((addr, admin_addr), id)| DevNode {
                id,
                addr,
                admin_addr: Some(admin_addr),
                last_pid: None,
            })
            .collect(),
    };
    save_state(dir, &state)?;
    Ok(state)
}

fn save_state(dir: &Path, state: &DevState) -> anyhow::Result<()> {
    let path = dir.join("dev.toml");
    let text = format!(
        "# Written by `warden dev`: the ids and addresses of this dev cluster.\n\
         # Running `warden dev --data-dir {}` again reuses them.\n{}",
        dir.display(),
        toml::to_string(state).context("cannot encode dev.toml")?
    );
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// A running child.
struct NodeProcess {
    id: u64,
    addr: String,
    admin_addr: Option<String>,
    pid: u32,
    log: PathBuf,
    child: Child,
    /// False once it has exited (and been reported).
    running: bool,
}

/// The children; any still running when this is dropped (an error path) are
/// killed.
struct Nodes(Vec<NodeProcess>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in self.0.iter_mut().filter(|n| n.running) {
            let _ = node.child.start_kill();
        }
    }
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n    ")
}

/// `--certs-dir` of node `id`, or `--insecure` without certificates.
pub fn tls_flags(certs: Option<&DevCerts>, id: u64) -> Vec<std::ffi::OsString> {
    match certs.and_then(|c| c.node_dirs.get(&id)) {
        Some(dir) => vec!["--certs-dir".into(), dir.into()],
        None => vec!["--insecure".into()],
    }
}

/// The client options of a local cluster's own calls: `root`'s
/// certificate, or plaintext for an insecure one.
pub fn client_options(certs: Option<&DevCerts>) -> ClientOptions {
    ClientOptions {
        tls: certs.map(|c| TlsOptions::new(&c.client_dir, dev_certs::ROOT)),
        ..ClientOptions::default()
    }
}

/// The line that tells the CLI how to reach the cluster, next to the
/// endpoints line.
pub fn export_line(certs: Option<&DevCerts>) -> String {
    match certs {
        Some(c) => format!(
            "export WARDEN_CERTS_DIR={}",
            shell_word(&c.client_dir.display().to_string())
        ),
        None => "export WARDEN_INSECURE=true".to_string(),
    }
}

fn spawn_node(
    exe: &Path,
    dir: &Path,
    state: &DevState,
    node: &DevNode,
    certs: Option<&DevCerts>,
) -> anyhow::Result<NodeProcess> {
    let data_dir = dir.join(format!("node-{}", node.id));
    let log = dir.join(format!("node-{}.log", node.id));
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .with_context(|| format!("cannot open {}", log.display()))?;
    let err: File = out.try_clone()?;
    let mut command = Command::new(exe);
    command
        .arg("server")
        .arg("--id")
        .arg(node.id.to_string())
        .arg("--listen")
        .arg(&node.addr)
        .arg("--peers")
        .arg(state.peers_flag())
        .arg("--data-dir")
        .arg(&data_dir)
        .args(tls_flags(certs, node.id))
        .args(
            node.admin_addr
                .iter()
                .flat_map(|a| [std::ffi::OsString::from("--admin-listen"), a.into()]),
        )
        // The flags alone say how the node serves: never the caller's
        // environment.
        .env_remove("WARDEN_CERTS_DIR")
        .env_remove("WARDEN_INSECURE")
        // If `warden dev` dies without stopping them (SIGKILL, a closed
        // terminal), the nodes notice and stop by themselves.
        .arg("--exit-with-parent")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Own process group: Ctrl-C in the terminal reaches only `warden
        // dev`, which stops the nodes in order.
        .process_group(0);
    let child = command
        .spawn()
        .with_context(|| format!("cannot start node {} ({})", node.id, exe.display()))?;
    let pid = child.id().context("the child exited before it got a pid")?;
    Ok(NodeProcess {
        id: node.id,
        addr: node.addr.clone(),
        admin_addr: node.admin_addr.clone(),
        pid,
        log,
        child,
        running: true,
    })
}

/// Runs the dev cluster until Ctrl-C or SIGTERM. Returns the exit code.
pub async fn run(args: DevArgs) -> anyhow::Result<u8> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create --data-dir {}", args.data_dir.display()))?;
    let dir = args
        .data_dir
        .canonicalize()
        .with_context(|| format!("cannot resolve --data-dir {}", args.data_dir.display()))?;
    let mut state = load_or_create_state(&dir, args.nodes)?;
    let ids: Vec<u64> = state.nodes.iter().map(|n| n.id).collect();
    let certs = if args.insecure {
        None
    } else {
        Some(dev_certs::ensure(&dir, &ids)?)
    };

    for node in &state.nodes {
        if let Some(admin) = &node.admin_addr {
            if let Err(e) = TcpListener::bind(admin) {
                let hint = busy_port_hint(&state, node);
                bail!(
                    "{admin} (node {}'s admin listener) is not free ({e}): is an earlier `warden dev --data-dir {}` still running?{hint}",
                    node.id,
                    dir.display()
                );
            }
        }
        if let Err(e) = TcpListener::bind(&node.addr) {
            let hint = busy_port_hint(&state, node);
            bail!(
                "{} (node {}) is not free ({e}): is an earlier `warden dev --data-dir {}` still running?{hint}",
                node.addr,
                node.id,
                dir.display()
            );
        }
    }

    let mut sigint = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut sighup = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;

    let exe = std::env::current_exe().context("cannot find the warden executable")?;
    let mut nodes = Nodes(Vec::new());
    for node in state.nodes.clone() {
        let process = spawn_node(&exe, &dir, &state, &node, certs.as_ref())?;
        state.nodes[(node.id - 1) as usize].last_pid = Some(process.pid);
        nodes.0.push(process);
    }
    state.dev_pid = Some(std::process::id());
    save_state(&dir, &state)?;

    // A closed stdout (`warden dev | head -1`) does not stop the cluster:
    // these lines are for a reader, the nodes run until a signal.
    let _ = crate::output::line(&format!(
        "warden dev: {} nodes, data in {}",
        nodes.0.len(),
        dir.display()
    ));
    for node in &nodes.0 {
        let _ = crate::output::line(&format!(
            "  node {}  {}  pid {}  log {}",
            node.id,
            node.addr,
            node.pid,
            node.log.display()
        ));
    }
    let _ = crate::output::line(&format!("export WARDEN_ENDPOINTS={}", state.endpoints()));
    let _ = crate::output::line(&export_line(certs.as_ref()));
    let profile_written = match crate::profile::write_dev(
        args.profile.as_deref(),
        state.nodes.iter().map(|n| n.addr.clone()).collect(),
        certs.as_ref().map(|c| c.client_dir.as_path()),
    ) {
        Ok(crate::profile::Written::Wrote(path)) => {
            let _ = crate::output::line(&format!(
                "client profile: {} (client commands in any shell read it)",
                path.display()
            ));
            true
        }
        Ok(crate::profile::Written::KeptOther(path)) => {
            eprintln!(
                "not writing the client profile {}: it was not written by `warden dev` (use the export lines above, or --profile FILE)",
                path.display()
            );
            false
        }
        Ok(crate::profile::Written::NoPath) => {
            eprintln!("no client profile written: neither WARDEN_PROFILE, XDG_CONFIG_HOME nor HOME is set (use the export lines above)");
            false
        }
        Err(e) => {
            eprintln!("{e} (use the export lines above)");
            false
        }
    };
    if certs.is_none() {
        eprintln!(
            "warning: insecure cluster: plaintext, no identities; anyone who reaches its ports owns it"
        );
    }

    let client = Client::connect(
        state.nodes.iter().map(|n| n.addr.clone()).collect(),
        client_options(certs.as_ref()),
    )
    .await?;

    let ready = tokio::select! {
        ready = wait_for_leader(&client, &mut nodes) => ready?,
        _ = sigint.recv() => None,
        _ = sigterm.recv() => None,
        _ = sighup.recv() => None,
    };
    let Some(status) = ready else {
        eprintln!("interrupted before the cluster was ready; stopping the nodes");
        stop_all(&client, &mut nodes).await;
        return Ok(0);
    };
    let leader_addr = status
        .members
        .iter()
        .find(|m| m.id == status.leader_id)
        .map(|m| m.addr.as_str())
        .unwrap_or("?");
    let _ = crate::output::line(&format!(
        "leader: node {} ({leader_addr}), term {}",
        status.leader_id, status.term
    ));
    if let Some(url) = nodes
        .0
        .iter()
        .find(|n| n.id == status.leader_id)
        .and_then(|n| n.admin_addr.as_deref())
        .map(|a| dashboard_url(a, certs.is_some()))
    {
        let _ = crate::output::line(&format!("dashboard: {url}"));
        if let Some(c) = &certs {
            let file = |name: &str| shell_word(&c.client_dir.join(name).display().to_string());
            eprintln!(
                "the dashboard needs a client certificate in the browser: make one with \
                 `openssl pkcs12 -export -in {} -inkey {} -certfile {} -out root.p12`, import \
                 root.p12 and trust {} (docs/operations.md \"Dashboard\")",
                file("client.root.crt"),
                file("client.root.key"),
                file("ca.crt"),
                file("ca.crt"),
            );
        }
    }
    let _ = crate::output::line("ready");
    eprintln!(
        "try: warden acquire demo --ttl 30s   ({}); Ctrl-C stops the cluster",
        if profile_written {
            "in any shell: it reads the client profile"
        } else {
            "after the two export lines above"
        }
    );

    let mut watch = tokio::time::interval(WATCH_INTERVAL);
    let code = loop {
        tokio::select! {
            _ = sigint.recv() => break 0,
            _ = sigterm.recv() => break 0,
            _ = sighup.recv() => break 0,
            _ = watch.tick() => {
                report_exits(&mut nodes, &dir);
                if nodes.0.iter().all(|n| !n.running) {
                    eprintln!("every node has exited; stopping");
                    break 1;
                }
            }
        }
    };
    stop_all(&client, &mut nodes).await;
    Ok(code)
}

/// The dashboard's address on admin listener `admin`: https on a secure
/// cluster (the admin listener serves TLS with the node's certificate).
pub fn dashboard_url(admin: &str, secure: bool) -> String {
    let scheme = if secure { "https" } else { "http" };
    format!("{scheme}://{admin}/ui")
}

/// Prints each child that exited since the last check.
fn report_exits(nodes: &mut Nodes, dir: &Path) {
    let total = nodes.0.len();
    for i in 0..total {
        let node = &mut nodes.0[i];
        if !node.running {
            continue;
        }
        match node.child.try_wait() {
            Ok(Some(status)) => {
                node.running = false;
                let running = nodes.0.iter().filter(|n| n.running).count();
                let node = &nodes.0[i];
                let serving = if running > total / 2 {
                    format!("{running} of {total} nodes still run and keep serving")
                } else {
                    format!("only {running} of {total} nodes still run: no quorum, nothing can be served")
                };
                eprintln!(
                    "node {} ({}, pid {}) exited unexpectedly: {status}; {serving}. \
                     It is not restarted automatically: to bring it back with its data, stop this cluster (Ctrl-C) \
                     and run `warden dev --data-dir {}` again. Log: {}",
                    node.id,
                    node.addr,
                    node.pid,
                    dir.display(),
                    node.log.display()
                );
            }
            Ok(None) => {}
            Err(e) => eprintln!("cannot check node {}: {e}", node.id),
        }
    }
}

/// Polls `cluster status` until a leader is known. Fails if a node exits or
/// no leader appears within [`READY_TIMEOUT`].
async fn wait_for_leader(
    client: &Client,
    nodes: &mut Nodes,
) -> anyhow::Result<Option<ClusterStatus>> {
    let started = Instant::now();
    loop {
        for node in nodes.0.iter_mut().filter(|n| n.running) {
            if let Some(status) = node.child.try_wait()? {
                node.running = false;
                bail!(
                    "node {} exited during startup ({status}); last lines of {}:\n    {}",
                    node.id,
                    node.log.display(),
                    log_tail(&node.log, 8)
                );
            }
        }
        let last = match client.cluster_status_within(Duration::from_secs(1)).await {
            Ok(status) if status.leader_id != 0 => return Ok(Some(status)),
            Ok(_) => "no leader yet".to_string(),
            Err(e) => e.to_string(),
        };
        let waited = started.elapsed();
        if waited >= READY_TIMEOUT {
            bail!(
                "no leader after {}s (last: {last}); see the node logs",
                READY_TIMEOUT.as_secs()
            );
        }
        eprintln!("waiting for a leader ({:.1}s)", waited.as_secs_f64());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// SIGTERM to every running node (followers first, the leader last), then
/// SIGKILL to any that has not exited within [`STOP_TIMEOUT`].
async fn stop_all(client: &Client, nodes: &mut Nodes) {
    let leader_id = client
        .cluster_status_within(Duration::from_secs(1))
        .await
        .map(|s| s.leader_id)
        .unwrap_or(0);
    let (followers, leaders): (Vec<usize>, Vec<usize>) =
        (0..nodes.0.len()).partition(|&i| nodes.0[i].id != leader_id);
    for group in [followers, leaders] {
        for &i in &group {
            let node = &nodes.0[i];
            if !node.running {
                continue;
            }
            eprintln!("stopping node {} (pid {})", node.id, node.pid);
            if let Ok(pid) = i32::try_from(node.pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
        for &i in &group {
            let node = &mut nodes.0[i];
            if !node.running {
                continue;
            }
            match tokio::time::timeout(STOP_TIMEOUT, node.child.wait()).await {
                Ok(Ok(status)) => eprintln!("node {} stopped ({status})", node.id),
                Ok(Err(e)) => eprintln!("node {}: cannot wait for it: {e}", node.id),
                Err(_) => {
                    eprintln!(
                        "node {} did not stop within {}s; killing it",
                        node.id,
                        STOP_TIMEOUT.as_secs()
                    );
                    let _ = node.child.kill().await;
                }
            }
            node.running = false;
        }
    }
}

/// What to stop when a node's port is taken: the `warden dev` that last
/// started the cluster (it stops its nodes on SIGTERM), else the node's own
/// last process; nothing when neither is known.
fn busy_port_hint(state: &DevState, node: &DevNode) -> String {
    match (state.dev_pid, node.last_pid) {
        (Some(pid), _) => format!(
            " (`warden dev` last ran as pid {pid}: stop it with Ctrl-C in its terminal or `kill {pid}`, which stops its nodes)"
        ),
        (None, Some(pid)) => format!(
            " (node {} last ran as pid {pid}; stop it with `kill {pid}`)",
            node.id
        ),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A second `warden dev` on a busy dir names the process to stop: the
    // earlier `warden dev` (whose SIGTERM stops its nodes), not one node.
    #[test]
    fn busy_port_hint_names_the_dev_process() {
        let node = DevNode {
            id: 2,
            addr: "127.0.0.1:41002".into(),
            admin_addr: None,
            last_pid: Some(4242),
        };
        let mut state = DevState {
            dev_pid: Some(4000),
            nodes: vec![node.clone()],
        };
        let hint = busy_port_hint(&state, &node);
        assert!(
            hint.contains("pid 4000") && hint.contains("kill 4000"),
            "{hint}"
        );
        assert!(!hint.contains("4242"), "{hint}");
        state.dev_pid = None;
        assert!(busy_port_hint(&state, &node).contains("kill 4242"));
    }

    // `warden dev` reuses ids and ports across runs: dev.toml round-trips.
    #[test]
    fn dev_state_round_trips() {
        let state = DevState {
            dev_pid: Some(77),
            nodes: (1..=3)
                .map(|id| DevNode {
                    id,
                    addr: format!("127.0.0.1:4100{id}"),
                    admin_addr: Some(format!("127.0.0.1:4200{id}")),
                    last_pid: Some(100 + id as u32),
                })
                .collect(),
        };
        let text = toml::to_string(&state).unwrap();
        assert_eq!(DevState::parse(&text).unwrap(), state);
        assert_eq!(
            state.peers_flag(),
            "1=127.0.0.1:41001,2=127.0.0.1:41002,3=127.0.0.1:41003"
        );
        assert_eq!(
            state.endpoints(),
            "127.0.0.1:41001,127.0.0.1:41002,127.0.0.1:41003"
        );
    }

    // A dev.toml from before admin listeners gets admin ports on its next
    // run, and keeps its client ports; the dashboard's scheme follows TLS.
    #[test]
    fn an_old_dev_state_gets_admin_ports() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("dev.toml"),
            "[[nodes]]\nid = 1\naddr = \"127.0.0.1:41001\"\n",
        )
        .unwrap();
        let state = load_or_create_state(dir.path(), None).unwrap();
        assert_eq!(state.nodes[0].addr, "127.0.0.1:41001");
        let admin = state.nodes[0]
            .admin_addr
            .clone()
            .expect("admin port picked");
        assert!(admin.starts_with("127.0.0.1:"), "{admin}");
        assert_eq!(load_or_create_state(dir.path(), None).unwrap(), state);
        assert_eq!(dashboard_url(&admin, true), format!("https://{admin}/ui"));
        assert_eq!(dashboard_url(&admin, false), format!("http://{admin}/ui"));
        assert!(DevState::parse(
            "[[nodes]]\nid = 1\naddr = \"127.0.0.1:1\"\nadmin_addr = \"nope\""
        )
        .unwrap_err()
        .contains("admin address"));
    }

    // A hand-edited or corrupt dev.toml is refused with a reason, never a panic.
    #[test]
    fn bad_dev_state_is_refused() {
        assert!(DevState::parse("nodes = []")
            .unwrap_err()
            .contains("no nodes"));
        assert!(DevState::parse("[[nodes]]\nid = 2\naddr = \"127.0.0.1:1\"")
            .unwrap_err()
            .contains("1..=1"));
        assert!(DevState::parse("[[nodes]]\nid = 1\naddr = \"nope\"")
            .unwrap_err()
            .contains("node 1"));
        assert!(DevState::parse("garbage").is_err());
    }

    // A second run on the same dir keeps the ids and ports; a different --nodes is refused.
    #[test]
    fn second_run_reuses_the_saved_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_state(dir.path(), None).unwrap();
        assert_eq!(first.nodes.len(), 3);
        let second = load_or_create_state(dir.path(), Some(3)).unwrap();
        assert_eq!(first.endpoints(), second.endpoints());
        assert_eq!(first, second, "admin addresses are kept too");
        let mut ports: Vec<&str> = first.nodes.iter().map(|n| n.addr.as_str()).collect();
        ports.extend(first.nodes.iter().filter_map(|n| n.admin_addr.as_deref()));
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(
            ports.len(),
            6,
            "every node has its own client and admin port"
        );
        let err = load_or_create_state(dir.path(), Some(5))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--nodes 5") && err.contains("3 nodes"),
            "{err}"
        );
    }
}
