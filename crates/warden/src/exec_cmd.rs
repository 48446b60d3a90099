//! `warden exec RESOURCE -- CMD ARGS...`: run CMD while holding a lock, and
//! make sure CMD is gone by the lease's `valid_until` (docs/semantics.md S5).
//!
//! A [`Session`] (TTL `--ttl`, renewed every TTL/3 in the background) takes
//! the lock; CMD runs in its own process group with `WARDEN_RESOURCE`,
//! `WARDEN_LEASE_ID` and `WARDEN_FENCING_TOKEN` in its environment (and
//! `WARDEN_SLOT` for a semaphore permit, `--limit N`: the fence checks a
//! permit's token per slot), and its stdin, stdout and stderr inherited.
//! `--limit N`, `--shared` and `--exclusive` take a semaphore permit or a
//! read-write lock's grant instead of a mutex, as `warden acquire` does;
//! several resources are held together as one multi-lock, with the first in
//! `WARDEN_RESOURCE` and `WARDEN_FENCING_TOKEN` and every one in
//! `WARDEN_FENCING_TOKENS` (`a=8,b=9`). The timing rule, re-evaluated at
//! least every [`TICK`] against the moving `session.valid_until()` on the
//! session's clock (CLOCK_BOOTTIME):
//!
//! - SIGTERM to CMD's group at `valid_until − kill_grace`, unless a renew was
//!   acknowledged meanwhile (which moves `valid_until` on);
//! - SIGKILL to CMD's group at `valid_until` ([`KILL_EARLY`] before it, so
//!   that CMD is gone by then), or at once when the session reports the lease
//!   lost (`lost()` / `check()`).
//!
//! When CMD exits, anything it left in its process group is killed, the lock
//! is released (waiting for the commit) and the session closed; `warden exec`
//! exits with CMD's status (128 + N if a signal N ended it). If warden exec
//! stopped CMD because of the lease, it exits with `--exit-code-on-loss`
//! (3) and one line on stderr. It never writes to stdout.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::signal::unix::{signal, Signal as SignalStream, SignalKind};
use warden_client::{ClientError, LockGuard, LockOptions, Lost, MultiLockGuard, Session};
use warden_core::limits;

use crate::cli::{parse_duration, ClientArgs, GrantKindArgs, OutputFormat, TlsArgs};
use crate::commands::{check_resource, connect_long_lived, describe_error};
use crate::output::{EXIT_ERROR, EXIT_LEASE_LOST, EXIT_NOT_GRANTED};

/// The supervision loop re-reads the session clock at least this often.
pub const TICK: Duration = Duration::from_millis(50);

/// SIGKILL goes out this long before `valid_until`: a timer may fire a
/// little late, and the kernel needs a moment to tear the group down.
pub const KILL_EARLY: Duration = Duration::from_millis(20);

/// Exit code when CMD could not be started because it is not executable.
pub const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit code when CMD was not found.
pub const EXIT_NOT_FOUND: u8 = 127;
/// Exit code when warden exec was interrupted while waiting for the lock.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The longest default kill-grace.
const MAX_DEFAULT_KILL_GRACE: Duration = Duration::from_secs(1);

/// How long leftovers of CMD's process group get to disappear after the
/// SIGKILL that follows CMD's exit.
const LEFTOVERS_WITHIN: Duration = Duration::from_secs(1);

/// How long a lost session's close (a revoke) may take: the cluster may be
/// unreachable, which is often why the session was lost.
const CLOSE_LOST_WITHIN: Duration = Duration::from_secs(1);

/// `warden exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The lock's name (1..=512 bytes of UTF-8, no control characters);
    /// several names hold them all together as one multi-lock (mutexes
    /// only; CMD gets every token in `WARDEN_FENCING_TOKENS`).
    #[arg(required = true, value_name = "RESOURCE")]
    pub resources: Vec<String>,
    /// TTL of the session's lease (1s ..= 1h); renewed every TTL/3.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub ttl: Duration,
    /// Wait at most this long for the lock (<= 1h; 0s = try once; exit 2 if
    /// not granted) [default: as long as it takes].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub wait: Option<Duration>,
    /// SIGTERM goes to CMD this long before the lease's valid_until if no
    /// renew was acknowledged by then; SIGKILL at valid_until (<= TTL/2)
    /// [default: min(1s, TTL/5)].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub kill_grace: Option<Duration>,
    /// Exit code when warden exec stopped CMD because the lease was lost (or
    /// no renew was acknowledged in time).
    #[arg(long, value_name = "N", default_value_t = EXIT_LEASE_LOST)]
    pub exit_code_on_loss: u8,
    /// Cluster members to contact (any of them; the leader is followed).
    #[arg(
        long,
        env = "WARDEN_ENDPOINTS",
        value_name = "HOST:PORT,...",
        value_delimiter = ','
    )]
    pub endpoints: Vec<String>,
    #[command(flatten)]
    pub kind: GrantKindArgs,
    /// End the grant no later than this after it is granted, however often
    /// the session renews (1s ..= 24h; --wait must be shorter; one RESOURCE
    /// only): CMD is stopped by then as when the lease is lost (SIGTERM
    /// --kill-grace before, SIGKILL at it; exit --exit-code-on-loss).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_hold: Option<Duration>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// The command to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

impl ExecArgs {
    /// The resources as messages name them: `"a"`, or `"a", "b"`.
    fn names(&self) -> String {
        self.resources
            .iter()
            .map(|r| format!("{r:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What `warden exec` holds: one lock (of any kind) or a multi-lock.
enum Held {
    One(LockGuard),
    All(MultiLockGuard),
}

impl Held {
    /// Until when the grant is certainly held, on the session clock.
    fn valid_until(&self) -> Duration {
        match self {
            Held::One(g) => g.valid_until(),
            Held::All(g) => g.session().valid_until(),
        }
    }

    fn check(&self) -> Result<(), Lost> {
        match self {
            Held::One(g) => g.check(),
            Held::All(g) => g.check(),
        }
    }

    /// CMD's environment: the (first) resource, the lease, the (first)
    /// token, a permit's slot, and a multi-lock's every token.
    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Held::One(g) => {
                let mut env = vec![
                    ("WARDEN_RESOURCE", g.resource().to_owned()),
                    ("WARDEN_LEASE_ID", g.lease_id().to_string()),
                    ("WARDEN_FENCING_TOKEN", g.fencing_token().to_string()),
                ];
                env.extend(g.slot().map(|slot| ("WARDEN_SLOT", slot.to_string())));
                env
            }
            Held::All(g) => {
                let first = g.grants().first();
                vec![
                    (
                        "WARDEN_RESOURCE",
                        first.map(|f| f.resource.clone()).unwrap_or_default(),
                    ),
                    ("WARDEN_LEASE_ID", g.lease_id().to_string()),
                    (
                        "WARDEN_FENCING_TOKEN",
                        first
                            .map(|f| f.fencing_token.to_string())
                            .unwrap_or_default(),
                    ),
                    (
                        "WARDEN_FENCING_TOKENS",
                        g.grants()
                            .iter()
                            .map(|t| format!("{}={}", t.resource, t.fencing_token))
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                ]
            }
        }
    }

    async fn release(self) -> Result<warden_client::ReleaseResult, ClientError> {
        match self {
            Held::One(g) => g.release().await,
            Held::All(g) => g.release().await,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn fmt_ms(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

/// min(1 s, TTL/5).
pub fn default_kill_grace(ttl: Duration) -> Duration {
    (ttl / 5).min(MAX_DEFAULT_KILL_GRACE)
}

/// Checks the flags against the documented bounds; returns the kill-grace.
pub fn check_args(args: &ExecArgs) -> Result<Duration, String> {
    for resource in &args.resources {
        check_resource(resource)?;
    }
    let kind = args.kind.kind()?;
    crate::cli::check_max_hold(args.max_hold, args.wait)?;
    if args.resources.len() > 1 && args.max_hold.is_some() {
        return Err("--max-hold takes one RESOURCE: a multi-lock has no max-hold".into());
    }
    if args.resources.len() > 1 && kind != warden_client::GrantKind::Mutex {
        return Err(
            "--limit, --shared and --exclusive take one RESOURCE: a multi-lock takes mutexes only"
                .into(),
        );
    }
    let ttl_ms = millis(args.ttl);
    if !(limits::MIN_TTL_MS..=limits::MAX_TTL_MS).contains(&ttl_ms) {
        return Err(format!(
            "--ttl: {} is outside {} ..= {}",
            fmt_ms(ttl_ms),
            fmt_ms(limits::MIN_TTL_MS),
            fmt_ms(limits::MAX_TTL_MS)
        ));
    }
    if let Some(wait) = args.wait {
        if millis(wait) > limits::MAX_WAIT_TIMEOUT_MS {
            return Err(format!(
                "--wait: {} is above the maximum wait of {}",
                fmt_ms(millis(wait)),
                fmt_ms(limits::MAX_WAIT_TIMEOUT_MS)
            ));
        }
    }
    let kill_grace = args
        .kill_grace
        .unwrap_or_else(|| default_kill_grace(args.ttl));
    if kill_grace > args.ttl / 2 {
        return Err(format!(
            "--kill-grace: {} is above half the TTL ({}): CMD would be stopped while the lease is healthy",
            fmt_ms(millis(kill_grace)),
            fmt_ms(millis(args.ttl / 2))
        ));
    }
    if args.command.first().is_none_or(|c| c.is_empty()) {
        return Err("CMD: give the command to run after `--`".into());
    }
    Ok(kill_grace)
}

/// What the supervisor does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing; look again within this long.
    Wait(Duration),
    /// SIGTERM to CMD's group (no renew acknowledged in time).
    Term,
    /// SIGKILL to CMD's group (valid_until reached, or the session is lost).
    Kill,
}

/// The timing rule (pure): `now` and `valid_until` on the session clock;
/// `lost` when the session reported its loss; `termed` once SIGTERM was sent.
/// Never waits longer than [`TICK`].
pub fn decide(
    now: Duration,
    valid_until: Duration,
    lost: bool,
    kill_grace: Duration,
    termed: bool,
) -> Action {
    let kill_at = valid_until.saturating_sub(KILL_EARLY);
    if lost || now >= kill_at {
        return Action::Kill;
    }
    let term_at = valid_until.saturating_sub(kill_grace);
    if !termed && now >= term_at {
        return Action::Term;
    }
    let next = if termed {
        kill_at
    } else {
        term_at.min(kill_at)
    };
    Action::Wait(next.saturating_sub(now).min(TICK))
}

/// CMD's status as a shell reports it: its exit code, or 128 + N if signal
/// N ended it.
pub fn exit_code(status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        return u8::try_from(code & 0xff).unwrap_or(EXIT_ERROR);
    }
    if let Some(signal) = status.signal() {
        return u8::try_from((128 + signal) & 0xff).unwrap_or(EXIT_ERROR);
    }
    EXIT_ERROR
}

fn say(message: &str) {
    eprintln!("warden exec: {}", crate::output::one_line(message));
}

/// The signals warden exec forwards to CMD's group.
struct Forwarded {
    int: SignalStream,
    term: SignalStream,
    hup: SignalStream,
}

impl Forwarded {
    fn install() -> Result<Forwarded, String> {
        let install = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| format!("cannot handle {name}: {e}"))
        };
        Ok(Forwarded {
            int: install(SignalKind::interrupt(), "SIGINT")?,
            term: install(SignalKind::terminate(), "SIGTERM")?,
            hup: install(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    /// The next signal received.
    async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.hup.recv() => Signal::SIGHUP,
        }
    }
}

/// Runs `warden exec`; returns the exit code.
pub async fn run(args: ExecArgs) -> u8 {
    let kill_grace = match check_args(&args) {
        Ok(g) => g,
        Err(e) => return fail(&e),
    };
    // Installed first: a signal during the wait cancels it rather than
    // killing warden exec with the wait still queued.
    let mut signals = match Forwarded::install() {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let client_args = ClientArgs {
        endpoints: args.endpoints.clone(),
        tls: args.tls.clone(),
        output: OutputFormat::Text,
    };
    let client = match connect_long_lived(&client_args).await {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let session = tokio::select! {
        s = client.session(args.ttl) => match s {
            Ok(s) => s,
            Err(e) => return fail(&describe_error(&e)),
        },
        sig = signals.recv() => {
            say(&format!("{sig} before the lock was requested; nothing ran"));
            return EXIT_INTERRUPTED;
        }
    };
    let guard = match take_lock(&session, &args, &mut signals).await {
        Ok(g) => g,
        Err(code) => return code,
    };
    supervise(session, guard, &args, kill_grace, &mut signals).await
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {}", crate::output::one_line(message));
    EXIT_ERROR
}

/// Takes the lock (waiting as `--wait` says); on failure closes the session
/// and returns the exit code.
async fn take_lock(
    session: &Session,
    args: &ExecArgs,
    signals: &mut Forwarded,
) -> Result<Held, u8> {
    let resource = args.resources[0].clone();
    // Checked with the other arguments before the session was made.
    let kind = match args.kind.kind() {
        Ok(kind) => kind,
        Err(e) => {
            let _ = session.clone().close().await;
            return Err(fail(&e));
        }
    };
    let options = LockOptions {
        wait: args.wait,
        lock_delay: Duration::ZERO,
        max_hold: args.max_hold,
    };
    let lock = async {
        match (args.resources.len(), args.wait) {
            (1, _) => session
                .lock_kind_with(resource, kind, options)
                .await
                .map(|g| g.map(Held::One)),
            (_, None) => session
                .lock_all(&args.resources)
                .await
                .map(|g| Some(Held::All(g))),
            (_, Some(wait)) => session
                .lock_all_with_timeout(&args.resources, wait)
                .await
                .map(|g| g.map(Held::All)),
        }
    };
    let outcome = tokio::select! {
        r = lock => r,
        sig = signals.recv() => {
            // Revoking the session's lease removes its wait from the queue (S8).
            let cancelled = session.clone().close().await;
            say(&match cancelled {
                Ok(()) => format!("{sig} while waiting for {}; cancelled the wait", args.names()),
                Err(e) => format!(
                    "{sig} while waiting for {}; could not revoke lease {} ({}); its wait ends when it expires",
                    args.names(), session.lease_id(), describe_error(&e)
                ),
            });
            return Err(EXIT_INTERRUPTED);
        }
    };
    match outcome {
        Ok(Some(guard)) => Ok(guard),
        Ok(None) => {
            let holder = match session.client().status(args.resources[0].clone()).await {
                Ok(s) => match (&s.holder, s.holders.len()) {
                    (Some(h), _) => format!("held by lease {}", h.lease_id),
                    // Readers or permits: as many as the kind admits.
                    (None, n) if n > 0 => {
                        let leases: Vec<String> =
                            s.holders.iter().map(|h| h.lease_id.to_string()).collect();
                        format!("held by leases {}", leases.join(", "))
                    }
                    (None, _) => "no holder".to_string(),
                },
                Err(_) => "holder unknown".to_string(),
            };
            let _ = session.clone().close().await;
            eprintln!(
                "not granted: {} {holder} (reason: {})",
                args.names(),
                match args.wait {
                    Some(w) if !w.is_zero() => "wait_timeout",
                    _ => "held",
                }
            );
            Err(EXIT_NOT_GRANTED)
        }
        Err(e) => {
            let _ = tokio::time::timeout(CLOSE_LOST_WITHIN, session.clone().close()).await;
            Err(fail(&describe_error(&e)))
        }
    }
}

/// What happened to CMD because of the lease.
#[derive(Debug, Default)]
struct Stopped {
    /// valid_until − now when SIGTERM went out.
    term_before: Option<Duration>,
    /// valid_until − now when SIGKILL went out.
    kill_before: Option<Duration>,
    /// The session's loss, if it reported one.
    lost: Option<Lost>,
}

impl Stopped {
    fn any(&self) -> bool {
        self.term_before.is_some() || self.kill_before.is_some()
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.term_before {
            parts.push(format!("SIGTERM {} ms before valid_until", millis(t)));
        }
        if let Some(k) = self.kill_before {
            parts.push(format!("SIGKILL {} ms before valid_until", millis(k)));
        }
        parts.join(", ")
    }
}

fn signal_group(pgid: Pid, sig: Signal) {
    // ESRCH: the group is gone already, which is what we want.
    let _ = killpg(pgid, sig);
}

/// Spawns CMD, enforces the timing rule until it exits, then cleans up.
async fn supervise(
    session: Session,
    guard: Held,
    args: &ExecArgs,
    kill_grace: Duration,
    signals: &mut Forwarded,
) -> u8 {
    let loss_code = args.exit_code_on_loss;
    // The grant may have raced a loss: nothing runs on a lock not held.
    if let Err(lost) = guard.check() {
        say(&format!("{lost}; CMD was not started"));
        let _ = tokio::time::timeout(CLOSE_LOST_WITHIN, session.close()).await;
        return loss_code;
    }
    let mut command = tokio::process::Command::new(&args.command[0]);
    command
        .args(&args.command[1..])
        .envs(guard.env())
        // Its own group: a signal reaches CMD and everything it started.
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_EXECUTE
            };
            eprintln!(
                "error: cannot run {:?}: {e}",
                args.command[0].to_string_lossy()
            );
            release(&session, guard, &args.names()).await;
            return code;
        }
    };
    let Some(pid) = child.id() else {
        // Reaped already: it cannot have run long enough to need signals.
        let status = child.wait().await;
        release(&session, guard, &args.names()).await;
        return status.map(exit_code).unwrap_or(EXIT_ERROR);
    };
    let pgid = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    let clock = session.clock().clone();
    let mut stopped = Stopped::default();
    let status = loop {
        // The grant's: the session's, or an earlier max-hold bound.
        let valid_until = guard.valid_until();
        let lost = guard.check().err();
        // A clock that cannot be read loses the session (S5; check() reports
        // it): the unknown now counts as valid_until, so CMD is killed.
        let now = clock.now().unwrap_or(valid_until);
        let wait = if stopped.kill_before.is_some() {
            // Killed: only the exit is left to see.
            TICK
        } else {
            match decide(
                now,
                valid_until,
                lost.is_some(),
                kill_grace,
                stopped.term_before.is_some(),
            ) {
                Action::Kill => {
                    signal_group(pgid, Signal::SIGKILL);
                    stopped.kill_before = Some(valid_until.saturating_sub(now));
                    stopped.lost = lost;
                    continue;
                }
                Action::Term => {
                    signal_group(pgid, Signal::SIGTERM);
                    stopped.term_before = Some(valid_until.saturating_sub(now));
                    continue;
                }
                Action::Wait(d) => d,
            }
        };
        tokio::select! {
            status = child.wait() => break status,
            _ = session.lost(), if stopped.kill_before.is_none() => {}
            sig = signals.recv() => signal_group(pgid, sig),
            () = tokio::time::sleep(wait) => {}
        }
    };
    // Whatever CMD left running in its group must not outlive the lock.
    signal_group(pgid, Signal::SIGKILL);
    wait_group_gone(pgid).await;
    let status = match status {
        Ok(s) => exit_code(s),
        Err(e) => {
            say(&format!("lost track of CMD: {e}"));
            EXIT_ERROR
        }
    };
    if stopped.lost.is_none() {
        stopped.lost = guard.check().err();
    }
    if let Some(lost) = stopped.lost {
        say(&format!(
            "stopped CMD: {lost} (lease {} on {}); {}",
            session.lease_id(),
            args.names(),
            stopped.describe()
        ));
        let _ = tokio::time::timeout(CLOSE_LOST_WITHIN, session.close()).await;
        return loss_code;
    }
    let lease_id = session.lease_id();
    let released = release(&session, guard, &args.names()).await;
    if stopped.any() {
        say(&format!(
            "stopped CMD: no renew of lease {lease_id} on {} was acknowledged in time; {} (the lease held on; {released})",
            args.names(),
            stopped.describe()
        ));
        return loss_code;
    }
    status
}

/// Waits (bounded) until no process of the group is left.
async fn wait_group_gone(pgid: Pid) {
    let deadline = tokio::time::Instant::now() + LEFTOVERS_WITHIN;
    // Signal "0" only checks whether the group still has a member.
    while killpg(pgid, None).is_ok() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Releases the grant and waits for the commit, then closes the session.
/// Returns what happened to the lock, for a final line: `released`, or how
/// it ends when the release failed.
async fn release(session: &Session, guard: Held, resources: &str) -> &'static str {
    let released = match guard.release().await {
        Ok(_) | Err(ClientError::NotFound { .. }) => true,
        Err(e) => {
            say(&format!(
                "could not release {resources} ({}); closing the session frees it",
                describe_error(&e)
            ));
            false
        }
    };
    let revoked = match session.clone().close().await {
        Ok(()) => true,
        Err(e) => {
            say(&format!(
                "could not revoke lease {} ({}); it expires after its TTL",
                session.lease_id(),
                describe_error(&e)
            ));
            false
        }
    };
    release_outcome(released, revoked)
}

/// The lock's fate after [`release`]: `released` is the release's success,
/// `revoked` the session close's.
fn release_outcome(released: bool, revoked: bool) -> &'static str {
    match (released, revoked) {
        (true, _) => "released",
        (false, true) => "not released, but its lease was revoked, which freed it",
        (false, false) => "NOT released: it stays held until the lease expires after its TTL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn exec_args(extra: &[&str]) -> Result<ExecArgs, clap::Error> {
        let args = ["warden", "exec"].iter().chain(extra.iter()).copied();
        match Cli::try_parse_from(args)?.command {
            Command::Exec(a) => Ok(a),
            other => panic!("{other:?}"),
        }
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    // Public bug: after a failed release (no quorum) the final line still
    // said "released"; it now says what became of the lock.
    #[test]
    fn the_final_line_tells_whether_the_lock_was_released() {
        assert_eq!(release_outcome(true, true), "released");
        assert_eq!(release_outcome(true, false), "released");
        assert!(release_outcome(false, true).starts_with("not released"));
        assert!(release_outcome(false, false).starts_with("NOT released"));
    }

    // CLI contract (README): kill-grace defaults to min(1 s, TTL/5); CMD comes after `--`.
    #[test]
    fn defaults_and_command_after_double_dash() {
        let a = exec_args(&["job", "--", "sh", "-c", "exit 7"]).unwrap();
        assert_eq!(a.ttl, Duration::from_secs(10));
        assert_eq!(a.wait, None);
        assert_eq!(a.exit_code_on_loss, 3);
        assert_eq!(a.command, ["sh", "-c", "exit 7"]);
        assert_eq!(check_args(&a).unwrap(), Duration::from_secs(1));
        let a = exec_args(&["job", "--ttl", "2s", "--", "true"]).unwrap();
        assert_eq!(check_args(&a).unwrap(), MS(400));
        // Flags after `--` belong to CMD.
        let a = exec_args(&["job", "--", "ls", "--ttl", "1s"]).unwrap();
        assert_eq!(a.command, ["ls", "--ttl", "1s"]);
        assert!(exec_args(&["job"]).is_err(), "CMD is required");
    }

    // "What bad input gets": TTL, wait and kill-grace outside their bounds name the flag and limit.
    #[test]
    fn bounds_name_flag_and_limit() {
        for (flags, expected) in [
            (
                &["j", "--ttl", "500ms", "--", "true"][..],
                "--ttl: 500ms is outside 1s ..= 1h",
            ),
            (
                &["j", "--wait", "2h", "--", "true"][..],
                "--wait: 2h is above the maximum wait of 1h",
            ),
            (
                &["j", "--ttl", "2s", "--kill-grace", "1500ms", "--", "true"][..],
                "--kill-grace: 1s 500ms is above half the TTL (1s): CMD would be stopped while the lease is healthy",
            ),
            (&["", "--", "true"][..], "RESOURCE: must not be empty (1..=512 bytes)"),
            (&["j", "--", ""][..], "CMD: give the command to run after `--`"),
        ] {
            let a = exec_args(flags).unwrap();
            assert_eq!(check_args(&a).unwrap_err(), expected);
        }
    }

    // S5, the exec timing rule (README): SIGTERM at valid_until − kill_grace, SIGKILL at valid_until
    // (KILL_EARLY before it), at once on loss; a renew moving valid_until on cancels the SIGTERM.
    #[test]
    fn timing_rule() {
        let grace = MS(400);
        let until = MS(10_000);
        assert_eq!(
            decide(MS(5_000), until, false, grace, false),
            Action::Wait(TICK)
        );
        assert_eq!(
            decide(MS(9_580), until, false, grace, false),
            Action::Wait(MS(20))
        );
        assert_eq!(decide(MS(9_600), until, false, grace, false), Action::Term);
        assert_eq!(
            decide(MS(9_600), until, false, grace, true),
            Action::Wait(TICK)
        );
        assert_eq!(
            decide(MS(9_970), until, false, grace, true),
            Action::Wait(MS(10))
        );
        assert_eq!(decide(MS(9_980), until, false, grace, true), Action::Kill);
        // Straight to SIGKILL when the SIGTERM moment was missed entirely.
        assert_eq!(decide(MS(9_990), until, false, grace, false), Action::Kill);
        // A renew was acknowledged: valid_until moved on, no signal.
        assert_eq!(
            decide(MS(9_600), MS(13_000), false, grace, false),
            Action::Wait(TICK)
        );
        // The session reported the loss early (lease gone): SIGKILL now.
        assert_eq!(decide(MS(1_000), until, true, grace, false), Action::Kill);
        // kill-grace 0: no SIGTERM before the SIGKILL.
        assert_eq!(
            decide(MS(9_970), until, false, MS(0), false),
            Action::Wait(MS(10))
        );
        assert_eq!(decide(MS(9_980), until, false, MS(0), false), Action::Kill);
    }

    // Exit status passes through like a shell's: code, or 128 + signal.
    #[test]
    fn exit_status_like_a_shell() {
        assert_eq!(exit_code(ExitStatus::from_raw(7 << 8)), 7);
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
    }
}
