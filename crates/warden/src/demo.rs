//! `warden demo split-brain` and its hidden helper `warden demo-holder`: the
//! fencing story of docs/semantics.md ("The fencing story") with real processes.
//!
//! A holder (client 1) acquires a lock with a 1 s TTL and keeps its lease
//! alive, then is stopped with SIGSTOP just before its write (a GC pause, a
//! VM stall). Its lease expires; client 2 acquires a newer token and writes.
//! Client 1 is resumed with SIGCONT, writes with its old token, and the
//! fenced store rejects it (409). The final value is client 2's.
//!
//! Secure by default, as `warden dev`: the story's data dir gets a CA, the
//! nodes' certificates and `root`'s (`dev_certs.rs`), every node runs with
//! `--certs-dir` and every client as `root`; `--insecure` runs them all
//! with `--insecure`. The fenced store serves loopback only.
//!
//! `demo-holder` prints JSON lines on stdout: `{"event":"granted",...}` once
//! it holds the lock, then waits for a line on stdin before it writes, then
//! `{"event":"write","status":S,...}`; it exits 0 when the write was
//! accepted, 2 when the store refused it, 1 on any other failure. The line on
//! stdin lets the demo put the holder's "go" in place while it is stopped, so
//! it writes the moment it resumes.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;
use warden_client::{AcquireOptions, AcquireResult, Client};
use warden_fence::http::client as http;

use crate::cli::{DemoHolderArgs, SplitBrainArgs};

/// Exit code of a holder whose write the store refused.
const EXIT_REFUSED: u8 = 2;

/// `warden demo-holder`.
pub async fn holder(args: DemoHolderArgs) -> anyhow::Result<u8> {
    let client = crate::commands::connect(&args.client)
        .await
        .map_err(anyhow::Error::msg)?;
    let options = AcquireOptions {
        ttl: args.ttl,
        lease_id: None,
        wait: args.wait,
        lock_delay: Duration::ZERO,
        kind: warden_client::GrantKind::Mutex,
        max_hold: None,
    };
    let (lease_id, token) = match client
        .acquire(args.resource.clone(), options)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
    {
        AcquireResult::Granted {
            lease_id,
            fencing_token,
            ..
        } => (lease_id, fencing_token),
        AcquireResult::NotGranted { reason, .. } => bail!("not granted: {reason:?}"),
    };
    // The parent reads these lines; if it is gone, nobody is left to tell.
    let _ = crate::output::line(
        &serde_json::json!({"event":"granted","lease_id":lease_id,"fencing_token":token})
            .to_string(),
    );
    // Keep the lease alive (every TTL/3) until the write: a stopped process
    // stops renewing, which is how its lease expires.
    let keepalive = {
        let client = client.clone();
        let period = args.ttl / 3;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                if client.renew(lease_id).await.is_err() {
                    return;
                }
            }
        })
    };
    let mut line = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .context("reading the go line")?;
    keepalive.abort();
    let reply = http::put(
        &args.store,
        &args.key,
        &args.resource,
        token,
        args.value.as_bytes(),
    )
    .await
    .context("writing to the fenced store")?;
    let _ = crate::output::line(
        &serde_json::json!({"event":"write","status":reply.status,"fencing_token":token,"body":reply.json()})
            .to_string(),
    );
    Ok(match reply.status {
        200 => 0,
        409 => EXIT_REFUSED,
        _ => 1,
    })
}

/// One child with piped stdin/stdout.
struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Proc {
    fn pid(&self) -> anyhow::Result<Pid> {
        let id = self.child.id().context("process already exited")?;
        Ok(Pid::from_raw(i32::try_from(id).context("pid")?))
    }

    async fn line(&mut self, within: Duration) -> anyhow::Result<String> {
        let mut line = String::new();
        let n = tokio::time::timeout(within, self.stdout.read_line(&mut line))
            .await
            .with_context(|| format!("{}: no output within {within:?}", self.name))??;
        if n == 0 {
            bail!("{}: exited without output", self.name);
        }
        Ok(line.trim().to_string())
    }

    async fn json(&mut self, within: Duration) -> anyhow::Result<serde_json::Value> {
        let line = self.line(within).await?;
        serde_json::from_str(&line).with_context(|| format!("{}: not JSON: {line:?}", self.name))
    }

    async fn go(&mut self) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        stdin.write_all(b"go\n").await?;
        stdin.flush().await?;
        Ok(())
    }
}

fn spawn(exe: &Path, name: &str, args: &[String], log: &Path) -> anyhow::Result<Proc> {
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open {}", log.display()))?;
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(err)
        // Each child is told how to connect by its flags alone: the
        // caller's WARDEN_CERTS_DIR or WARDEN_INSECURE must not add to them.
        .env_remove("WARDEN_ENDPOINTS")
        .env_remove("WARDEN_CERTS_DIR")
        .env_remove("WARDEN_USER")
        .env_remove("WARDEN_INSECURE")
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {name}"))?;
    let stdin = child.stdin.take();
    let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    Ok(Proc {
        name: name.to_string(),
        child,
        stdin,
        stdout,
    })
}

struct Timeline {
    start: Instant,
}

impl Timeline {
    fn say(&self, text: impl AsRef<str>) {
        let ms = self.start.elapsed().as_millis();
        // A closed stdout only loses the narration; the demo still cleans up.
        let _ = crate::output::line(&format!("{:>6} ms  {}", ms, text.as_ref()));
    }
}

/// Picks a free loopback port by binding port 0.
fn free_addr() -> anyhow::Result<String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot bind a loopback port")?;
    Ok(l.local_addr()?.to_string())
}

/// `warden demo split-brain`: exit 0 only when the stale write was rejected
/// and the final value is client 2's.
pub async fn split_brain(args: SplitBrainArgs) -> anyhow::Result<u8> {
    let exe = std::env::current_exe().context("cannot find the warden executable")?;
    let dir: PathBuf = match &args.data_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("warden-split-brain-{}", std::process::id())),
    };
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let result = run_story(&exe, &dir, args.insecure).await;
    if args.data_dir.is_none() && result.is_ok() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("logs and data kept in {}", dir.display());
    }
    result
}

async fn run_story(exe: &Path, dir: &Path, insecure: bool) -> anyhow::Result<u8> {
    const RESOURCE: &str = "split-brain";
    const KEY: &str = "balance";
    let t = Timeline {
        start: Instant::now(),
    };
    // Three nodes.
    let addrs: Vec<String> = (0..3).map(|_| free_addr()).collect::<Result<_, _>>()?;
    let peers = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{}={a}", i + 1))
        .collect::<Vec<_>>()
        .join(",");
    let endpoints = addrs.join(",");
    let certs = if insecure {
        None
    } else {
        Some(crate::dev_certs::ensure(dir, &[1, 2, 3])?)
    };
    // How a client child connects: root's certificate, or --insecure.
    let client_flags: Vec<String> = match &certs {
        Some(c) => vec!["--certs-dir".into(), c.client_dir.display().to_string()],
        None => vec!["--insecure".into()],
    };
    let mut nodes = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let id = i as u64 + 1;
        let mut args: Vec<String> = vec![
            "server".into(),
            "--id".into(),
            id.to_string(),
            "--listen".into(),
            addr.clone(),
            "--peers".into(),
            peers.clone(),
            "--data-dir".into(),
            dir.join(format!("node-{id}")).display().to_string(),
            "--exit-with-parent".into(),
        ];
        args.extend(
            crate::dev::tls_flags(certs.as_ref(), id)
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        nodes.push(spawn(
            exe,
            &format!("node {id}"),
            &args,
            &dir.join(format!("node-{id}.log")),
        )?);
    }
    let client = Client::connect(addrs.clone(), crate::dev::client_options(certs.as_ref()))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let leader = loop {
        match client.cluster_status_within(Duration::from_secs(1)).await {
            Ok(s) if s.leader_id != 0 => break s.leader_id,
            _ if Instant::now() > deadline => bail!("no leader within 20s"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    t.say(format!(
        "cluster up: 3 nodes at {endpoints}, leader node {leader}, {}",
        match &certs {
            Some(c) => format!("mutual TLS (certificates in {})", c.client_dir.display()),
            None => "insecure (plaintext, no identities)".to_string(),
        }
    ));

    // The protected resource.
    let mut store = spawn(
        exe,
        "fenced store",
        &[
            "fenced-store".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--data-dir".into(),
            dir.join("store").display().to_string(),
        ],
        &dir.join("store.log"),
    )?;
    let first = store.line(Duration::from_secs(10)).await?;
    let store_addr = first
        .strip_prefix("fenced-store listening on ")
        .with_context(|| format!("fenced store said {first:?}"))?
        .to_string();
    t.say(format!("fenced store up at {store_addr}"));

    let holder_args = |name: &str, value: &str, wait: &str| -> Vec<String> {
        let mut args: Vec<String> = vec![
            "demo-holder".into(),
            "--resource".into(),
            RESOURCE.into(),
            "--ttl".into(),
            "1s".into(),
            "--wait".into(),
            wait.into(),
            "--store".into(),
            store_addr.clone(),
            "--key".into(),
            KEY.into(),
            "--value".into(),
            value.into(),
            "--endpoints".into(),
            endpoints.clone(),
            "--name".into(),
            name.into(),
        ];
        args.extend(client_flags.iter().cloned());
        args
    };

    // Client 1 acquires, then pauses just before its write.
    let mut c1 = spawn(
        exe,
        "client 1",
        &holder_args("client-1", "written by client 1", "0s"),
        &dir.join("client-1.log"),
    )?;
    let g1 = c1.json(Duration::from_secs(10)).await?;
    let t1 = g1["fencing_token"].as_u64().context("client 1: no token")?;
    t.say(format!(
        "client 1 (pid {}) acquired {RESOURCE:?}: fencing token {t1}, lease {}, TTL 1s; keeps it alive",
        c1.pid()?,
        g1["lease_id"]
    ));
    kill(c1.pid()?, Signal::SIGSTOP).context("SIGSTOP client 1")?;
    t.say("client 1 SIGSTOPped just before its write (a GC pause, a VM stall)");

    // Its lease expires.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.status(RESOURCE).await {
            Ok(s) if s.holder.is_none() => break,
            _ if Instant::now() > deadline => bail!("client 1's lease did not expire within 10s"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    t.say("client 1's lease expired: the lock is free (status shows no holder)");

    // Client 2 acquires a newer token and writes.
    let mut c2 = spawn(
        exe,
        "client 2",
        &holder_args("client-2", "written by client 2", "10s"),
        &dir.join("client-2.log"),
    )?;
    let g2 = c2.json(Duration::from_secs(15)).await?;
    let t2 = g2["fencing_token"].as_u64().context("client 2: no token")?;
    t.say(format!(
        "client 2 (pid {}) acquired {RESOURCE:?}: fencing token {t2} (> {t1})",
        c2.pid()?
    ));
    c2.go().await?;
    let w2 = c2.json(Duration::from_secs(10)).await?;
    t.say(format!(
        "client 2 wrote {KEY:?} with token {t2}: HTTP {}",
        w2["status"]
    ));
    let _ = c2.child.wait().await;

    // Client 1 wakes up and writes with its old token.
    c1.go().await?;
    kill(c1.pid()?, Signal::SIGCONT).context("SIGCONT client 1")?;
    t.say("client 1 SIGCONTinued: it still believes it holds the lock");
    let w1 = c1.json(Duration::from_secs(10)).await?;
    t.say(format!(
        "client 1 wrote {KEY:?} with token {t1}: HTTP {} {}",
        w1["status"], w1["body"]
    ));
    let _ = c1.child.wait().await;

    let final_value = http::get(&store_addr, KEY).await?;
    t.say(format!(
        "final value of {KEY:?}: {:?} (HTTP {})",
        final_value.body, final_value.status
    ));
    let ok = t2 > t1
        && w2["status"] == 200
        && w1["status"] == 409
        && final_value.status == 200
        && final_value.body == "written by client 2";
    if ok {
        t.say("fenced: the stale write was rejected and client 2's value stands");
    } else {
        t.say("NOT FENCED: the story did not end as it must");
    }
    let _ = store.child.start_kill();
    for n in nodes.iter_mut() {
        let _ = n.child.start_kill();
    }
    Ok(if ok { 0 } else { 1 })
}
