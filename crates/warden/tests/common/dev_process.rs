//! A `warden dev` process started by a test (shared by `cases/dev.rs` in the
//! cluster binary and by `readme.rs`): started from a prepared command, read
//! until it prints `ready`, stopped with SIGINT.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a running `warden dev` printed before `ready`.
pub struct DevProcess {
    pub child: Child,
    /// Node id → PID, from its `  node N  ADDR  pid P  log FILE` lines.
    pub pids: Vec<(u64, i32)>,
    /// Every `export NAME=VALUE` line, in order.
    pub exports: Vec<(String, String)>,
    /// The URL of its `dashboard: URL` line.
    pub dashboard: Option<String>,
}

impl DevProcess {
    /// Spawns `cmd` (a `warden dev` command the caller set up: flags,
    /// directory, environment) with stdout read here, and returns once it
    /// printed `ready`, failing the test after `timeout`.
    pub fn start(mut cmd: Command, timeout: Duration) -> DevProcess {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn warden dev");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut dev = DevProcess {
            child,
            pids: Vec::new(),
            exports: Vec::new(),
            dashboard: None,
        };
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .expect("warden dev printed ready in time");
            if let Some(pid) = node_pid(&line) {
                dev.pids.push(pid);
            }
            if let Some((name, value)) = line
                .strip_prefix("export ")
                .and_then(|e| e.trim().split_once('='))
            {
                dev.exports.push((name.to_string(), value.to_string()));
            }
            if let Some(url) = line.strip_prefix("dashboard: ") {
                dev.dashboard = Some(url.trim().to_string());
            }
            if line.trim() == "ready" {
                return dev;
            }
        }
    }

    /// The value of its `export NAME=...` line.
    pub fn export(&self, name: &str) -> Option<&str> {
        self.exports
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// SIGINT, then waits up to `timeout` for it to exit; None if it did
    /// not.
    pub fn interrupt(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `(id, pid)` of a `  node N  ADDR  pid P  log FILE` line.
fn node_pid(line: &str) -> Option<(u64, i32)> {
    let words: Vec<&str> = line
        .trim_start()
        .strip_prefix("node ")?
        .split_whitespace()
        .collect();
    match words.as_slice() {
        [id, _addr, "pid", pid, ..] => Some((id.parse().ok()?, pid.parse().ok()?)),
        _ => None,
    }
}
