//! The README's session, run: every ```` ```console ```` block of README.md,
//! in order, against one fresh `warden dev` cluster started the way the
//! README says (in a temp dir, so its data is `./warden-dev`; ports picked
//! from :0 by `warden dev` itself, loopback only), each command with
//! `sh -c` in that dir, stderr merged into stdout in the order written,
//! `warden` on `PATH` being the binary under test. Each output is compared
//! with the lines the README shows under the command. This defends the
//! README's promise that its numbers follow from its own steps: the lease
//! ids, fencing tokens (S2: each grant's token above the last), exit codes
//! and every word must be what the commands print.
//!
//! Masked on both sides, because they differ from run to run: ports, the
//! cluster id, durations with milliseconds (`valid for 29s 332ms`,
//! `29s 893ms of TTL left`, `12ms ago`, `"valid_for_ms":19534`), and in
//! `warden cluster status` the leader's id, terms and log indexes (which
//! node wins an election is not determined, and the leader appends a
//! tick entry whenever a lease's instant falls due, so indexes depend on
//! how fast the commands ran). Its member rows are compared as a set with
//! their ids masked (they come sorted by id, and the ids of the roles vary).
//!
//! Substituted, because the test cannot run them as written:
//! - `export NAME=VALUE`: a `sh -c` does not outlive its command, so the
//!   test checks the README's value (expanded by `sh` in the same dir) is
//!   the line `warden dev` printed, ports masked, and then sets the value
//!   `warden dev` printed for every later command;
//! - `kill -9 PID`: the README's PID is an example; the test sends SIGKILL
//!   to the current leader's PID as `warden dev` printed it (the leader read
//!   from `warden cluster status --output json`);
//! - a command whose comment says `until Ctrl-C` (`warden elect --value`,
//!   `--observe`) runs in the background, in its own process group: the test
//!   waits (deadline) until it printed as many lines as the README shows,
//!   compares them, and sends it SIGINT at the end of its block (it must
//!   exit 0 having printed nothing more).
//!
//! Every wait polls with a deadline; no sleep synchronises anything.

#[path = "common/dev_process.rs"]
mod dev_process;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dev_process::DevProcess;
use regex::Regex;

/// How long `warden dev` may take to print `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one command may take (`--wait 1s`, a leader change, the CLI's
/// own 5 s deadline, on a shared 2-core machine).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a wait polls.
const POLL: Duration = Duration::from_millis(20);

/// One `$ ` line of a console block and the lines the README shows under it.
#[derive(Debug)]
struct Step {
    /// 1-based line number in README.md.
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The console blocks of `text`, each a list of steps.
fn console_blocks(text: &str) -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Step>> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_end() == "```console" => current = Some(Vec::new()),
            None => {}
            Some(steps) if line.trim_end() == "```" => {
                blocks.push(std::mem::take(steps));
                current = None;
            }
            Some(steps) => {
                if let Some(command) = line.strip_prefix("$ ") {
                    steps.push(Step {
                        line: i + 1,
                        command: command.to_string(),
                        expected: Vec::new(),
                    });
                } else {
                    let step = steps
                        .last_mut()
                        .unwrap_or_else(|| panic!("README.md:{}: output before a command", i + 1));
                    step.expected.push(line.to_string());
                }
            }
        }
    }
    assert!(
        current.is_none(),
        "README.md: a console block is not closed"
    );
    blocks
}

/// Lines read from a child's pipe by a thread, as they come.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn follow(&self, pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<()> {
        let lines = self.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().expect("lines").push(line);
            }
        })
    }

    fn get(&self) -> Vec<String> {
        self.0.lock().expect("lines").clone()
    }
}

/// Sends `signal` to `pid` (a process this test started; negative: its
/// process group).
fn signal(pid: i32, signal: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
}

/// Waits for `child` to exit, polling until `timeout`.
fn wait_exit(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// The running `warden dev`, stopped with SIGINT when dropped (also on a
/// failed assertion, so no node outlives the test).
struct Dev(DevProcess);

impl Drop for Dev {
    fn drop(&mut self) {
        let status = self.0.interrupt(Duration::from_secs(30));
        if !std::thread::panicking() {
            assert!(
                status.is_some_and(|s| s.success()),
                "warden dev did not stop cleanly on SIGINT: {status:?}"
            );
        }
    }
}

impl std::ops::Deref for Dev {
    type Target = DevProcess;
    fn deref(&self) -> &DevProcess {
        &self.0
    }
}

/// Starts `warden dev` in `dir` as the README does (no flags: data in
/// `./warden-dev`) and returns once it printed `ready`.
fn start_dev(dir: &Path) -> Dev {
    let mut cmd = warden_env(Command::new(env!("CARGO_BIN_EXE_warden")), dir);
    cmd.arg("dev").current_dir(dir);
    Dev(DevProcess::start(cmd, READY_TIMEOUT))
}

/// `cmd` with none of the caller's `WARDEN_*` variables, the built
/// `warden` first on `PATH`, and `XDG_CONFIG_HOME` in `dir` (the client
/// profile `warden dev` writes and the session's commands read: never the
/// real home's).
fn warden_env(mut cmd: Command, dir: &Path) -> Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("WARDEN_") {
            cmd.env_remove(name);
        }
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_warden"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let mut path = vec![bin_dir];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    cmd.env("PATH", std::env::join_paths(path).expect("PATH"));
    cmd.env("XDG_CONFIG_HOME", dir.join("config"));
    cmd
}

/// The shell a reader types into: `sh -c COMMAND` in `dir` with `env`,
/// stderr merged into stdout, in its own process group.
fn shell(dir: &Path, env: &[(String, String)], command: &str) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = warden_env(Command::new("sh"), dir);
    cmd.arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(dir)
        .envs(env.iter().map(|(n, v)| (n, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    cmd
}

/// Runs `command` to its end (deadline [`COMMAND_TIMEOUT`]): (exit code,
/// output lines).
fn run(dir: &Path, env: &[(String, String)], command: &str) -> (i32, Vec<String>) {
    let mut child = shell(dir, env, command).spawn().expect("spawn sh");
    let lines = Lines::default();
    let reader = lines.follow(child.stdout.take().expect("stdout"));
    let Some(status) = wait_exit(&mut child, COMMAND_TIMEOUT) else {
        signal(-(child.id() as i32), nix::sys::signal::Signal::SIGKILL);
        let _ = child.wait();
        panic!(
            "`{command}` did not finish within {COMMAND_TIMEOUT:?}; it printed {:?}",
            lines.get()
        );
    };
    reader.join().expect("reader");
    (status.code().unwrap_or(-1), lines.get())
}

/// The masks, applied to README and actual lines alike.
struct Masks {
    rules: Vec<(Regex, &'static str)>,
    member_row: Regex,
}

impl Masks {
    fn new() -> Masks {
        let dur = r"(?:\d+h ?)?(?:\d+m ?)?(?:\d+s ?)?(?:\d+ms)?";
        let rule = |re: &str, with| (Regex::new(re).expect("mask regex"), with);
        Masks {
            rules: vec![
                rule(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT"),
                rule(r"\bcluster [0-9a-f]{32}\b", "cluster ID"),
                rule(&format!(r"valid for {dur}$"), "valid for DURATION"),
                rule(&format!(r"\b{dur} of TTL left"), "DURATION of TTL left"),
                rule(r"\b\d+ms ago\b", "Nms ago"),
                rule(r#""valid_for_ms":\d+"#, r#""valid_for_ms":N"#),
                // `warden cluster status`'s first line.
                rule(
                    r"leader \d+ +term \d+ +commit index \d+ +last log index \d+",
                    "leader N  term N  commit index N  last log index N",
                ),
            ],
            // ID ADDRESS ROLE TERM APPLIED MATCHED LAG LAST-CONTACT
            member_row: Regex::new(
                r"^\d+ +(127\.0\.0\.1:PORT) +([a-z]+) +(\d+|\?) +\d+ +\d+ +\d+ +(.+)$",
            )
            .expect("row regex"),
        }
    }

    fn line(&self, line: &str) -> String {
        let mut line = line.trim_end().to_string();
        for (re, with) in &self.rules {
            line = re.replace_all(&line, *with).into_owned();
        }
        if let Some(c) = self.member_row.captures(&line) {
            let term = if &c[3] == "?" { "?" } else { "N" };
            line = format!("ID {} {} {term} N N N {}", &c[1], &c[2], &c[4]);
        }
        line
    }

    /// Masked lines; runs of member rows sorted (compared as a set).
    fn lines(&self, lines: &[String]) -> Vec<String> {
        let mut out: Vec<String> = lines.iter().map(|l| self.line(l)).collect();
        let mut i = 0;
        while i < out.len() {
            let start = i;
            while i < out.len() && out[i].starts_with("ID 127.0.0.1:PORT ") {
                i += 1;
            }
            out[start..i].sort();
            i = i.max(start + 1);
        }
        out
    }
}

fn compare(masks: &Masks, step: &Step, code: Option<i32>, actual: &[String]) {
    let want = masks.lines(&step.expected);
    let got = masks.lines(actual);
    assert!(
        want == got,
        "README.md:{}: `{}` printed something else.\n--- README shows:\n{}\n--- it printed:\n{}\n--- masked, README:\n{}\n--- masked, printed:\n{}",
        step.line,
        step.command,
        step.expected.join("\n"),
        actual.join("\n"),
        want.join("\n"),
        got.join("\n"),
    );
    if let Some(code) = code {
        assert_eq!(
            code, 0,
            "README.md:{}: `{}` exited {code} (a failing command echoes its exit code in the README)",
            step.line, step.command
        );
    }
}

/// A command left running (`# ... until Ctrl-C`) and what it printed.
struct Background {
    child: Child,
    lines: Lines,
    step_line: usize,
}

impl Drop for Background {
    fn drop(&mut self) {
        signal(-(self.child.id() as i32), nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The leader's PID: the leader from `warden cluster status --output json`,
/// its PID as `warden dev` printed it.
fn leader_pid(dir: &Path, env: &[(String, String)], dev: &Dev) -> i32 {
    let (code, out) = run(dir, env, "warden cluster status --output json");
    assert_eq!(code, 0, "cluster status: {out:?}");
    let status: serde_json::Value = serde_json::from_str(&out.join("\n")).expect("status JSON");
    let leader = status["leader_id"].as_u64().expect("leader_id");
    dev.pids
        .iter()
        .find(|(id, _)| *id == leader)
        .map(|(_, pid)| *pid)
        .unwrap_or_else(|| panic!("no PID for node {leader} in {:?}", dev.pids))
}

/// The README's walk-through is one session on a fresh cluster, and each
/// output is what its command prints there: lease ids, fencing tokens (S2),
/// exit codes (`docs/operations.md`) and words exactly; only what varies
/// between runs is masked (see the top of this file).
#[test]
fn readme_console_blocks_are_one_session() {
    let readme_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("README.md");
    let blocks = console_blocks(&readme);
    assert!(
        blocks.len() >= 3,
        "README.md has its console blocks: {blocks:?}"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().canonicalize().expect("tempdir path");
    let dev = start_dev(&dir);
    let masks = Masks::new();
    let mut env: Vec<(String, String)> = Vec::new();

    for block in &blocks {
        let mut background: Vec<Background> = Vec::new();
        for step in block {
            let command = step.command.as_str();
            if let Some(assignment) = command.strip_prefix("export ") {
                let (name, _) = assignment.split_once('=').expect("export NAME=VALUE");
                let (code, out) = run(&dir, &[], &format!("{command}; printf '%s\\n' \"${name}\""));
                assert_eq!(code, 0, "README.md:{}: {out:?}", step.line);
                let printed = dev.export(name).map(str::to_owned).unwrap_or_else(|| {
                    panic!(
                        "README.md:{}: warden dev printed no export of {name}",
                        step.line
                    )
                });
                assert_eq!(
                    masks.lines(&out),
                    masks.lines(std::slice::from_ref(&printed)),
                    "README.md:{}: `{command}` is not the line warden dev printed",
                    step.line
                );
                assert!(step.expected.is_empty(), "README.md:{}", step.line);
                env.retain(|(n, _)| n != name);
                env.push((name.to_string(), printed));
            } else if command.starts_with("kill -9 ") {
                let pid = leader_pid(&dir, &env, &dev);
                let (code, out) = run(&dir, &env, &format!("kill -9 {pid}"));
                assert_eq!(code, 0, "kill -9 {pid}: {out:?}");
                compare(&masks, step, None, &out);
            } else if command.contains("until Ctrl-C") {
                // `exec`: the command itself gets the Ctrl-C, as in a
                // terminal, where the shell is not in the foreground job.
                let mut child = shell(&dir, &env, &format!("exec {command}"))
                    .spawn()
                    .expect("spawn sh");
                let lines = Lines::default();
                lines.follow(child.stdout.take().expect("stdout"));
                let deadline = Instant::now() + COMMAND_TIMEOUT;
                while lines.get().len() < step.expected.len() {
                    if let Some(status) = child.try_wait().expect("try_wait") {
                        panic!(
                            "README.md:{}: `{command}` exited ({status}) instead of running; it printed {:?}",
                            step.line,
                            lines.get()
                        );
                    }
                    assert!(
                        Instant::now() < deadline,
                        "README.md:{}: `{command}` printed {:?} within {COMMAND_TIMEOUT:?}",
                        step.line,
                        lines.get()
                    );
                    std::thread::sleep(POLL);
                }
                compare(&masks, step, None, &lines.get());
                background.push(Background {
                    child,
                    lines,
                    step_line: step.line,
                });
            } else {
                let (code, out) = run(&dir, &env, command);
                compare(&masks, step, Some(code), &out);
            }
        }
        // Ctrl-C for what runs until Ctrl-C, newest first: each exits 0
        // and printed nothing beyond what the README shows.
        while let Some(mut job) = background.pop() {
            let before = job.lines.get();
            signal(-(job.child.id() as i32), nix::sys::signal::Signal::SIGINT);
            let status = wait_exit(&mut job.child, COMMAND_TIMEOUT);
            assert!(
                status.is_some_and(|s| s.success()),
                "README.md:{}: exit on Ctrl-C: {status:?}; printed {:?}",
                job.step_line,
                job.lines.get()
            );
            let expected_len = block
                .iter()
                .find(|s| s.line == job.step_line)
                .map(|s| s.expected.len())
                .unwrap_or(0);
            assert_eq!(
                before.len(),
                expected_len,
                "README.md:{}: printed more than the README shows before Ctrl-C: {before:?}",
                job.step_line
            );
        }
    }
    drop(dev);
}

/// The parser and the masks themselves: a console block yields its
/// commands and their output lines, and a masked line keeps its lease ids
/// and fencing tokens (so a drifted token fails the test above).
#[test]
fn masks_keep_lease_ids_and_tokens() {
    let blocks = console_blocks(
        "text\n```console\n$ warden acquire a --ttl 30s\nacquired \"a\": lease 1, fencing token 1, TTL 30s, valid for 29s 332ms\n$ true\n```\n",
    );
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].len(), 2);
    assert_eq!(blocks[0][0].line, 3);
    assert_eq!(blocks[0][0].expected.len(), 1);
    assert!(blocks[0][1].expected.is_empty());
    let masks = Masks::new();
    assert_eq!(
        masks.line(&blocks[0][0].expected[0]),
        "acquired \"a\": lease 1, fencing token 1, TTL 30s, valid for DURATION"
    );
    assert_ne!(
        masks.line("acquired \"a\": lease 1, fencing token 2, TTL 30s, valid for 29s 1ms"),
        masks.line(&blocks[0][0].expected[0])
    );
    assert_eq!(
        masks.line("2    127.0.0.1:35829  follower         1         6         6      0  12ms ago"),
        "ID 127.0.0.1:PORT follower N N N N Nms ago"
    );
    assert_eq!(
        masks.line(r#"{"fencing_token":3,"lease_id":3,"resource":"inventory","ttl_ms":20000,"valid_for_ms":19534}"#),
        r#"{"fencing_token":3,"lease_id":3,"resource":"inventory","ttl_ms":20000,"valid_for_ms":N}"#
    );
}
