//! `warden exec` and `warden elect` as real processes: the child
//! sees its grant, its exit status passes through, it is gone by the lease's
//! `valid_until` when the cluster goes away (S5), and an election fails over
//! to the next campaigner with a larger token (S2, L1).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStdout;

use crate::harness::{warden_bin, Cluster};

/// How often the test looks again while polling.
const POLL: Duration = Duration::from_millis(5);

/// Polls `done` until it holds, failing with `what` after `within`.
async fn poll_until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {within:?}");
        tokio::time::sleep(POLL).await;
    }
}

/// `warden exec ARGS --endpoints E -- CMD...` with stdout and stderr piped,
/// as `root` through the variables (which CMD inherits, for its own CLI
/// calls).
pub(crate) fn exec(cluster: &Cluster, args: &[&str], cmd: &[&str]) -> Command {
    let mut c = Command::new(warden_bin());
    for name in crate::harness::CLEARED_ENV {
        c.env_remove(name);
    }
    c.envs(cluster.cli_env_as("root"));
    c.arg("exec")
        .args(args)
        .arg("--endpoints")
        .arg(cluster.endpoints())
        .arg("--")
        .args(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Spawns `warden exec` (as [`exec`]) and waits until CMD has written its
/// pid to `pid_file`, i.e. the lock is held and CMD runs.
async fn exec_started(cluster: &Cluster, args: &[&str], cmd: &[&str], pid_file: &Path) -> Child {
    let child = exec(cluster, args, cmd).spawn().expect("spawn exec");
    poll_until(Duration::from_secs(10), "CMD started", || {
        read_pid(pid_file).is_some()
    })
    .await;
    child
}

/// Waits (polling) for a child to exit; kills it after `within`.
async fn wait_exit(child: &mut Child, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("process did not exit within {within:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

fn read_all(pipe: Option<impl std::io::Read>) -> String {
    let mut text = String::new();
    if let Some(mut p) = pipe {
        p.read_to_string(&mut text).expect("read pipe");
    }
    text
}

/// True once `pid` has died (exited or a zombie not yet reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The `warden exec` contract (README): the child sees its grant (resource, lease,
/// fencing token) while the cluster reports the same holder; CMD's stdout
/// passes through untouched and its exit status is exec's; the lock is
/// released (committed) before exec exits; --wait that runs out exits 2; a
/// SIGTERM to exec reaches CMD (exit 143, like a shell) and the lock is freed;
/// a lease revoked under exec gets CMD killed at once (exit 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_passes_the_grant_and_the_exit_status() {
    let cluster = Cluster::start(3, &[]).await;
    let dir = cluster.tmp.path().join("exec");
    std::fs::create_dir_all(&dir).expect("dir");
    let bin = warden_bin();
    let endpoints = cluster.endpoints();
    let script = r#"echo "$WARDEN_RESOURCE $WARDEN_LEASE_ID $WARDEN_FENCING_TOKEN" > "$0/env"
"$1" status tok --endpoints "$2" --output json > "$0/status.json"
echo child-output
exit 7"#;
    let out = exec(
        &cluster,
        &["tok", "--ttl", "5s"],
        &[
            "sh",
            "-c",
            script,
            dir.to_str().expect("utf-8"),
            bin.to_str().expect("utf-8"),
            &endpoints,
        ],
    )
    .output()
    .expect("run warden exec");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "child-output\n");
    assert_eq!(stderr, "", "nothing of exec's own on a clean run");

    let env = std::fs::read_to_string(dir.join("env")).expect("env file");
    let fields: Vec<&str> = env.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{env:?}");
    assert_eq!(fields[0], "tok");
    let lease: u64 = fields[1].parse().expect("WARDEN_LEASE_ID");
    let token: u64 = fields[2].parse().expect("WARDEN_FENCING_TOKEN");
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("status.json")).expect("status"))
            .expect("status json");
    assert_eq!(seen["holder"]["lease_id"].as_u64(), Some(lease), "{seen}");
    assert_eq!(
        seen["holder"]["fencing_token"].as_u64(),
        Some(token),
        "{seen}"
    );
    // Released and committed before exec exited.
    let (_, now, _) = cluster.cli(&["status", "tok"]);
    assert!(now["holder"].is_null(), "{now}");

    // --wait that runs out: exit 2, CMD never runs, stdout stays empty.
    let (code, held, err) = cluster.cli(&["acquire", "tok", "--ttl", "30s"]);
    assert_eq!(code, 0, "{err}");
    let holder = held["lease_id"].as_u64().expect("lease");
    let out = exec(
        &cluster,
        &["tok", "--wait", "300ms"],
        &["sh", "-c", "echo ran"],
    )
    .output()
    .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(
        stderr.contains(&format!("held by lease {holder}")),
        "{stderr}"
    );
    let (code, _, err) = cluster.cli(&["release", &holder.to_string(), "tok"]);
    assert_eq!(code, 0, "{err}");

    // SIGTERM to exec is forwarded to CMD: exit 128 + 15, lock freed.
    let pid_file = dir.join("fwd.pid");
    let mut child = exec_started(
        &cluster,
        &["fwd"],
        &[
            "sh",
            "-c",
            r#"echo $$ > "$0"; exec sleep 30"#,
            pid_file.to_str().expect("utf-8"),
        ],
        &pid_file,
    )
    .await;
    let (_, st, _) = cluster.cli(&["status", "fwd"]);
    assert!(st["holder"]["lease_id"].as_u64().is_some(), "{st}");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    let code = wait_exit(&mut child, Duration::from_secs(10)).await;
    let stderr = read_all(child.stderr.take());
    assert_eq!(code, 143, "{stderr}");
    let (_, st, _) = cluster.cli(&["status", "fwd"]);
    assert!(st["holder"].is_null(), "{st}");

    // The lease revoked under it (`warden lease revoke`): the session learns
    // it at its next renew (TTL/3) and CMD is killed at once, exit 3 — or
    // the code given with `--exit-code-on-loss` (the CLI contract, README).
    for (extra, want) in [(None, 3), (Some("9"), 9)] {
        let resource = format!("revoked-{want}");
        let pid_file = dir.join(format!("{resource}.pid"));
        let mut args = vec![resource.as_str(), "--ttl", "3s"];
        if let Some(code) = extra {
            args.extend(["--exit-code-on-loss", code]);
        }
        let mut child = exec_started(
            &cluster,
            &args,
            &[
                "sh",
                "-c",
                r#"echo $$ > "$0"; exec sleep 30"#,
                pid_file.to_str().expect("utf-8"),
            ],
            &pid_file,
        )
        .await;
        let pid = read_pid(&pid_file).expect("pid");
        let (_, st, _) = cluster.cli(&["status", &resource]);
        let lease = st["holder"]["lease_id"].as_u64().expect("held");
        let (code, _, err) = cluster.cli(&["lease", "revoke", &lease.to_string()]);
        assert_eq!(code, 0, "{err}");
        poll_until(
            Duration::from_secs(5),
            "CMD killed after the revoke",
            || gone(pid),
        )
        .await;
        let code = wait_exit(&mut child, Duration::from_secs(10)).await;
        let stderr = read_all(child.stderr.take());
        assert_eq!(code, want, "{stderr}");
        assert!(
            stderr.contains(&format!("the cluster no longer has lease {lease}")),
            "{stderr}"
        );
    }
}

/// S5: when exec is cut off from every server (all nodes killed),
/// CMD gets SIGTERM at valid_until − kill_grace and is gone by valid_until,
/// which is less than TTL after the send of the last acknowledged renew (so
/// before the cut + TTL); exec exits 3 with one line saying why. A
/// `warden elect` leader cut off at the same time exits 3 too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_stops_the_child_by_valid_until_when_cut_off() {
    let mut cluster = Cluster::start(3, &[]).await;
    let dir = cluster.tmp.path().join("cut");
    std::fs::create_dir_all(&dir).expect("dir");
    let ttl = Duration::from_secs(3);
    // kill-grace: default min(1 s, TTL/5) = 600 ms. The trap keeps the child
    // running after SIGTERM, so only the SIGKILL ends it.
    let script = r#"trap 'echo term > "$0/term"' TERM
echo $$ > "$0/pid"
while :; do sleep 1 & wait $!; done"#;
    let pid_file = dir.join("pid");
    let mut child = exec_started(
        &cluster,
        &["cut", "--ttl", "3s"],
        &["sh", "-c", script, dir.to_str().expect("utf-8")],
        &pid_file,
    )
    .await;
    let pid = read_pid(&pid_file).expect("pid");
    let (_, st, _) = cluster.cli(&["status", "cut"]);
    assert!(st["holder"]["lease_id"].as_u64().is_some(), "{st}");
    // A leader cut off with it gives up its leadership (exit 3).
    let (mut leader_proc, mut elected) = elect(
        &cluster,
        "cut-leader",
        &["cut", "--value", "x", "--ttl", "3s"],
    );
    assert_eq!(elected.json(Duration::from_secs(10)).await["value"], "x");

    // Every renew from now on goes unanswered: the last acknowledged one was
    // sent before `cut`.
    let cut = Instant::now();
    for id in 1..=3 {
        cluster.kill(id);
    }
    let term_file = dir.join("term");
    let mut term_at = None;
    let deadline = cut + Duration::from_secs(10);
    let gone_at = loop {
        if term_at.is_none() && term_file.exists() {
            term_at = Some(cut.elapsed());
        }
        if gone(pid) {
            break cut.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "CMD still running 10 s after the cut"
        );
        tokio::time::sleep(POLL).await;
    };
    let term_at = term_at.or_else(|| term_file.exists().then(|| cut.elapsed()));
    let code = wait_exit(&mut child, Duration::from_secs(10)).await;
    let stderr = read_all(child.stderr.take());
    let stdout = read_all(child.stdout.take());
    eprintln!("cut-off: SIGTERM seen {term_at:?} and CMD gone {gone_at:?} after the cut; exec said: {stderr}");

    let term_at = term_at.expect("CMD got SIGTERM before SIGKILL");
    assert!(
        term_at < gone_at,
        "SIGTERM ({term_at:?}) before the end ({gone_at:?})"
    );
    // Gone by valid_until < last acknowledged send + TTL < cut + TTL.
    assert!(
        gone_at < ttl,
        "CMD outlived the lease: gone {gone_at:?} after the cut"
    );
    // Not stopped while the lease was certainly good: the last acknowledged
    // renew was sent about TTL/3 (1 s, + scheduling) before the cut at most,
    // so valid_until − kill_grace is ~1.3 s after it or later.
    assert!(
        term_at > Duration::from_millis(800),
        "SIGTERM only {term_at:?} after the cut: too early"
    );
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stdout, "");
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warden exec:"))
        .collect();
    assert_eq!(ours.len(), 1, "one line of reason: {stderr}");
    let line = ours[0];
    assert!(line.contains("stopped CMD: session lost"), "{line}");
    let before = |signal: &str| -> u64 {
        let (_, rest) = line
            .split_once(&format!("{signal} "))
            .unwrap_or_else(|| panic!("no {signal} in {line}"));
        rest.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no ms after {signal} in {line}"))
    };
    // SIGTERM about kill_grace (600 ms) before valid_until (a timer fires
    // late, never early); SIGKILL at most KILL_EARLY (20 ms) before it.
    let term_ms = before("SIGTERM");
    let kill_ms = before("SIGKILL");
    assert!((450..=600).contains(&term_ms), "{line}");
    assert!(kill_ms <= 20, "{line}");

    let status = tokio::time::timeout(Duration::from_secs(10), leader_proc.wait())
        .await
        .expect("the cut-off leader exits")
        .expect("wait");
    let stderr = std::fs::read_to_string(&elected.stderr).unwrap_or_default();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("error: no longer the leader of \"cut\""),
        "{stderr}"
    );
}

/// Reads lines of a child's stdout with a deadline per line; its stderr is
/// in a file, shown when a line does not come.
struct LineReader {
    lines: Lines<BufReader<ChildStdout>>,
    stderr: PathBuf,
}

impl LineReader {
    fn of(child: &mut tokio::process::Child, stderr: PathBuf) -> LineReader {
        LineReader {
            lines: BufReader::new(child.stdout.take().expect("stdout")).lines(),
            stderr,
        }
    }

    async fn json(&mut self, within: Duration) -> serde_json::Value {
        let line = tokio::time::timeout(within, self.lines.next_line()).await;
        let stderr = || std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let line = match line {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => panic!("EOF instead of a line; stderr: {}", stderr()),
            Ok(Err(e)) => panic!("read: {e}; stderr: {}", stderr()),
            Err(_) => panic!("no line within {within:?}; stderr: {}", stderr()),
        };
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

/// `warden elect ARGS` with JSON on a pipe and stderr in `dir/NAME.stderr`.
fn elect(cluster: &Cluster, name: &str, args: &[&str]) -> (tokio::process::Child, LineReader) {
    let stderr = cluster.tmp.path().join(format!("{name}.stderr"));
    let file = std::fs::File::create(&stderr).expect("stderr file");
    let mut command = tokio::process::Command::new(warden_bin());
    for name in crate::harness::CLEARED_ENV {
        command.env_remove(name);
    }
    let mut child = command
        .arg("elect")
        .args(args)
        .args(cluster.cli_flags())
        .arg("--endpoints")
        .arg(cluster.endpoints())
        .arg("--output")
        .arg("json")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(file))
        .kill_on_drop(true)
        .spawn()
        .expect("spawn warden elect");
    let reader = LineReader::of(&mut child, stderr);
    (child, reader)
}

fn leader(cluster: &Cluster, name: &str) -> serde_json::Value {
    let (code, v, err) = cluster.cli(&["elect", name, "--leader"]);
    assert_eq!(code, 0, "{err}");
    v
}

/// Elections, S2, L1: two campaigners, one leader; the leader's
/// process is killed (-9); the other is elected with a larger token within
/// TTL + E (elections have no lock-delay); an observer sees both leaders in
/// order; SIGINT on a leader with a campaigner waiting resigns (exit 0) and
/// the waiting one is elected at once with a larger token; SIGTERM
/// resigns (exit 0) and leaves no leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_fails_over_to_the_other_campaigner() {
    let cluster = Cluster::start(3, &[]).await;
    let api = cluster.api();
    let key = warden_client::election_key("sched");
    assert!(leader(&cluster, "sched").is_null());

    let (mut observer, mut seen) = elect(&cluster, "observer", &["sched", "--observe"]);
    let (mut a, mut a_out) = elect(&cluster, "a", &["sched", "--value", "a", "--ttl", "3s"]);
    let elected_a = a_out.json(Duration::from_secs(15)).await;
    assert_eq!(elected_a["name"], "sched");
    assert_eq!(elected_a["value"], "a");
    let token_a = elected_a["fencing_token"].as_u64().expect("token");

    let (mut b, mut b_out) = elect(&cluster, "b", &["sched", "--value", "b", "--ttl", "3s"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.status(&key).await.expect("status").waiters != 1 {
        assert!(
            Instant::now() < deadline,
            "b never queued; its stderr: {}",
            std::fs::read_to_string(&b_out.stderr).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Exactly one leader: a, with its token; b waits behind it.
    assert_eq!(
        leader(&cluster, "sched"),
        serde_json::json!({"name": "sched", "value": "a", "fencing_token": token_a})
    );
    assert_eq!(seen.json(Duration::from_secs(10)).await, elected_a);

    a.start_kill().expect("kill -9 a");
    let killed = Instant::now();
    a.wait().await.expect("reap a");
    let ttl = Duration::from_secs(3);
    let elected_b = b_out.json(ttl + crate::E + Duration::from_secs(5)).await;
    let took = killed.elapsed();
    eprintln!("failover: b elected {took:?} after a was killed");
    assert_eq!(elected_b["value"], "b");
    let token_b = elected_b["fencing_token"].as_u64().expect("token");
    assert!(token_b > token_a, "S2: {token_b} > {token_a}");
    assert!(
        took < ttl + crate::E + crate::OBSERVE,
        "L1: b elected {took:?} after the kill, over TTL + E"
    );
    assert_eq!(seen.json(Duration::from_secs(10)).await, elected_b);
    assert_eq!(leader(&cluster, "sched"), elected_b);

    // SIGINT on the leader b while c waits: b resigns (exit 0) and c is
    // elected by the same committed release, long before any TTL runs out.
    let (mut c, mut c_out) = elect(&cluster, "c", &["sched", "--value", "c", "--ttl", "30s"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.status(&key).await.expect("status").waiters != 1 {
        assert!(
            Instant::now() < deadline,
            "c never queued; its stderr: {}",
            std::fs::read_to_string(&c_out.stderr).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(
        Pid::from_raw(b.id().expect("running") as i32),
        Signal::SIGINT,
    )
    .expect("SIGINT b");
    // Within b's TTL (3 s): had b's lease to run out (b renews every TTL/3),
    // that would take at least 2 s + E = 3.6 s; c is elected by b's
    // resignation.
    let elected_c = c_out.json(ttl).await;
    assert_eq!(elected_c["value"], "c");
    let token_c = elected_c["fencing_token"].as_u64().expect("token");
    assert!(token_c > token_b, "S2: {token_c} > {token_b}");
    let status = tokio::time::timeout(Duration::from_secs(10), b.wait())
        .await
        .expect("b exits")
        .expect("wait b");
    assert_eq!(status.code(), Some(0), "SIGINT resigns with exit 0");
    assert_eq!(seen.json(Duration::from_secs(10)).await, elected_c);

    // SIGTERM resigns: exit 0, no leader left.
    kill(
        Pid::from_raw(c.id().expect("running") as i32),
        Signal::SIGTERM,
    )
    .expect("SIGTERM c");
    let status = tokio::time::timeout(Duration::from_secs(10), c.wait())
        .await
        .expect("c exits")
        .expect("wait c");
    assert_eq!(status.code(), Some(0));
    assert!(leader(&cluster, "sched").is_null());
    kill(
        Pid::from_raw(observer.id().expect("running") as i32),
        Signal::SIGINT,
    )
    .expect("SIGINT observer");
    let status = tokio::time::timeout(Duration::from_secs(10), observer.wait())
        .await
        .expect("observer exits")
        .expect("wait observer");
    assert_eq!(status.code(), Some(0));
}
