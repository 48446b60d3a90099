//! The client library's sessions against real processes: S5 with a
//! proxy that cuts the client off and with a frozen (SIGSTOP) holder, S7 with a
//! dropped acquire reply, and L4 across a leader kill.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use warden_client::{validity, AcquireOptions, AcquireResult, Client, Lost, WatchTarget};

use crate::harness::proxy::{Mode, Proxy};
use crate::harness::Cluster;

fn endpoints(cluster: &Cluster) -> Vec<String> {
    cluster.endpoints().split(',').map(str::to_owned).collect()
}

async fn client(endpoints: Vec<String>) -> Client {
    crate::harness::client_of(endpoints).await
}

/// The (lease id, fencing token) holding `resource`, by a linearizable read;
/// fails the test if it is free.
async fn holder(c: &Client, resource: &str) -> (u64, u64) {
    let h = c
        .status(resource)
        .await
        .expect("status")
        .holder
        .unwrap_or_else(|| panic!("{resource} is free, expected it held"));
    (h.lease_id, h.fencing_token)
}

/// Polls `cond` every 10 ms until it holds, failing the test after `limit`.
async fn until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// conformance: C06-cut-off-client-sees-lost-first.
/// S5: a client cut off from every server (a proxy that stops forwarding)
/// reports `lost()` before the server could grant its lock to anyone else,
/// and never reports a valid lease after its `valid_until`, even once the
/// network is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_session_is_lost_before_anyone_else_is_granted() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    // The only way this client reaches the cluster: the proxy to the leader
    // (followers' leader hints would name real addresses).
    let proxy = Proxy::start(&cluster.addr(leader)).await;
    let holder = client(vec![proxy.addr.clone()]).await;
    let ttl = Duration::from_secs(2);
    let session = holder.session(ttl).await.expect("session");
    let guard = session.lock("s5-cut").await.expect("lock");
    let clock = session.clock().clone();
    // The keep-alive works: valid_until moves forward.
    let first = session.valid_until();
    until(Duration::from_secs(3), "a renew", || {
        session.valid_until() > first
    })
    .await;
    assert_eq!(guard.check(), Ok(()));

    proxy.set(Mode::Blackhole);
    // A competitor on the real addresses waits for the lock.
    let other = client(endpoints(&cluster)).await;
    let competitor = tokio::spawn({
        let clock = clock.clone();
        async move {
            let s = other
                .session(Duration::from_secs(10))
                .await
                .expect("session");
            let g = s.lock("s5-cut").await.expect("lock");
            (clock.now().expect("session clock"), g.fencing_token(), s, g)
        }
    });
    let lost = tokio::time::timeout(ttl * 2, guard.lost())
        .await
        .expect("lost() within 2 × TTL of the cut");
    let lost_at = clock.now().expect("session clock");
    let valid_until = session.valid_until();
    assert!(matches!(lost, Lost::Expired { .. }), "{lost:?}");
    // The server cannot expire the lease before (last acknowledged send) +
    // TTL × (1 − ρ); valid_until is that send + validity(TTL), so the server's
    // earliest grant to anyone else is at or after:
    let earliest_other_grant = valid_until + (ttl - validity(ttl)) - ttl / 100;
    assert!(
        lost_at < earliest_other_grant,
        "lost() at {lost_at:?}, but another grant was possible from {earliest_other_grant:?}"
    );
    assert!(guard.check().is_err());

    let (granted_at, token, _s, _g) = tokio::time::timeout(Duration::from_secs(10), competitor)
        .await
        .expect("the competitor is granted (L1)")
        .expect("task");
    assert!(
        granted_at > lost_at,
        "granted {granted_at:?}, lost {lost_at:?}"
    );
    assert!(
        token > guard.fencing_token(),
        "S2: {token} > {}",
        guard.fencing_token()
    );

    // The network heals: the lost session stays lost, valid_until never moves.
    proxy.set(Mode::Forward);
    let status = holder
        .status("s5-cut")
        .await
        .expect("status through the proxy");
    assert_eq!(status.holder.map(|h| h.fencing_token), Some(token));
    assert!(guard.check().is_err());
    assert!(session.check().is_err());
    assert_eq!(session.valid_until(), valid_until);
    assert_eq!(session.time_left(), Duration::ZERO);
}

/// S5: a holder frozen with SIGSTOP past its TTL (another client is granted
/// the lock meanwhile) and then resumed fails `check()` before any further
/// guarded write: no `ok` line follows the resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_client_fails_check_before_its_next_write() {
    let cluster = Cluster::start(3, &[]).await;
    let out = cluster.tmp.path().join("writes.log");
    let writer = std::path::Path::new(env!("CARGO_BIN_EXE_warden"))
        .parent()
        .expect("target dir")
        .join("examples/guarded_writer");
    let mut command = std::process::Command::new(&writer);
    for name in crate::harness::CLEARED_ENV {
        command.env_remove(name);
    }
    // The example takes --certs-dir and --user as the CLI does (without
    // them it speaks plaintext): the harness's flags fit.
    let tls: Vec<std::ffi::OsString> = cluster
        .cli_flags()
        .into_iter()
        .filter(|f| f != "--insecure")
        .collect();
    let mut child = command
        .args(tls)
        .args([
            "--endpoints",
            &cluster.endpoints(),
            "--resource",
            "s5-frozen",
            "--ttl",
            "1s",
            "--out",
            out.to_str().expect("utf-8 path"),
        ])
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (built by cargo test's examples)", writer.display()));
    let pid = Pid::from_raw(child.id() as i32);
    let lines = || std::fs::read_to_string(&out).unwrap_or_default();
    until(Duration::from_secs(10), "three guarded writes", || {
        lines().lines().filter(|l| l.starts_with("ok ")).count() >= 3
    })
    .await;

    kill(pid, Signal::SIGSTOP).expect("SIGSTOP");
    // Stopped for sure (state T) before the file is read.
    until(Duration::from_secs(5), "the writer to stop", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('T')
            })
            .unwrap_or(false)
    })
    .await;
    let before = lines();
    let token: u64 = before
        .lines()
        .last()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|t| t.parse().ok())
        .expect("a token in the last line");

    // Someone else is granted the lock: the frozen holder's lease expired.
    let other = client(endpoints(&cluster)).await;
    let granted = other
        .acquire(
            "s5-frozen",
            AcquireOptions {
                wait: Duration::from_secs(10),
                ..AcquireOptions::with_ttl(Duration::from_secs(10))
            },
        )
        .await
        .expect("acquire");
    let AcquireResult::Granted { fencing_token, .. } = granted else {
        panic!("expected a grant after the frozen holder's TTL, got {granted:?}");
    };
    assert!(fencing_token > token);

    kill(pid, Signal::SIGCONT).expect("SIGCONT");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the writer did not exit after resuming"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(status.code(), Some(3), "exit 3 = lost");
    let after = lines();
    let resumed: Vec<&str> = after[before.len()..].lines().collect();
    assert_eq!(resumed.len(), 1, "after resuming: {resumed:?}");
    assert!(
        resumed[0].starts_with("lost "),
        "after resuming: {resumed:?}"
    );
}

/// conformance: C07-dropped-acquire-reply-one-grant.
/// S7: the reply to an acquire is dropped (the proxy forwards the request and
/// swallows the answer); the client retries elsewhere with the same request
/// id and gets the same grant: one grant, not two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquire_reply_is_retried_into_one_grant() {
    let cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let proxy = Proxy::start(&cluster.addr(leader)).await;
    // The proxy first, then the real addresses.
    let mut eps = vec![proxy.addr.clone()];
    eps.extend(endpoints(&cluster));
    let c = client(eps).await;
    // Warm the connection through the proxy (the leader serves it).
    c.status("s7").await.expect("status");
    assert_eq!(c.cached_leader().as_deref(), Some(proxy.addr.as_str()));

    let mut watcher = c
        .watch(WatchTarget::Resource("s7".into()), 0)
        .await
        .expect("watch");
    proxy.set(Mode::DropReplies);
    let result = c
        .acquire("s7", AcquireOptions::with_ttl(Duration::from_secs(10)))
        .await
        .expect("acquire");
    let AcquireResult::Granted {
        lease_id,
        fencing_token,
        ..
    } = result
    else {
        panic!("expected a grant, got {result:?}");
    };
    assert!(proxy.dropped_reply_bytes() > 0, "a reply was dropped");
    assert_ne!(c.cached_leader().as_deref(), Some(proxy.addr.as_str()));

    // Exactly one grant: the first event is it, and the next grant anywhere
    // takes the very next token (the retry consumed none).
    let first = tokio::time::timeout(Duration::from_secs(5), watcher.next())
        .await
        .expect("an event")
        .expect("event");
    assert_eq!(
        (first.event.as_str(), first.lease_id, first.fencing_token),
        ("granted", lease_id, fencing_token)
    );
    let next = c
        .acquire("s7-next", AcquireOptions::with_ttl(Duration::from_secs(10)))
        .await
        .expect("acquire");
    let AcquireResult::Granted {
        fencing_token: next_token,
        ..
    } = next
    else {
        panic!("expected a grant, got {next:?}");
    };
    assert_eq!(next_token, fencing_token + 1, "one token per grant");
    assert_eq!(holder(&c, "s7").await, (lease_id, fencing_token));
}

/// conformance: C05-leader-kill-keeps-lock-and-session.
/// L4: the leader is killed while a session holds locks; the client follows
/// the new leader by itself and the session is never lost; the locks keep
/// their tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_survives_a_leader_kill() {
    let mut cluster = Cluster::start(3, &[]).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await;
    let c = client(endpoints(&cluster)).await;
    let session = c.session(Duration::from_secs(3)).await.expect("session");
    let a = session.lock("l4-a").await.expect("lock a");
    let b = session.lock("l4-b").await.expect("lock b");
    let clock = session.clock().clone();

    cluster.kill(leader);
    let killed_at = clock.now().expect("session clock");
    let new_leader = cluster.wait_leader(Duration::from_secs(10)).await;
    assert_ne!(new_leader, leader);
    // Until a renew sent after the kill is acknowledged, the session must
    // stay valid at every look.
    let deadline = Instant::now() + Duration::from_secs(10);
    while session.valid_until() <= killed_at + validity(Duration::from_secs(3)) {
        assert_eq!(
            session.check(),
            Ok(()),
            "S5/L4: lost across a leader change"
        );
        assert!(
            Instant::now() < deadline,
            "no renew acknowledged by the new leader"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(a.check(), Ok(()));
    for (resource, guard) in [("l4-a", &a), ("l4-b", &b)] {
        assert_eq!(
            holder(&c, resource).await,
            (session.lease_id(), guard.fencing_token())
        );
    }
    // A clean end: releasing one lock and closing the session frees both.
    b.release().await.expect("release");
    drop(a);
    session.close().await.expect("close");
    assert_eq!(c.status("l4-a").await.expect("status").holder, None);
    assert_eq!(c.status("l4-b").await.expect("status").holder, None);
}

/// S6: dropping a `LockGuard` releases its grant in the background, naming
/// its own fencing token: the resource is freed while the session lives on,
/// and the release event carries the dropped guard's lease and token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_guard_releases_its_own_grant() {
    let cluster = Cluster::start(3, &[]).await;
    cluster.wait_leader(Duration::from_secs(10)).await;
    let c = client(endpoints(&cluster)).await;
    let session = c.session(Duration::from_secs(10)).await.expect("session");
    let kept = session.lock("s6-kept").await.expect("lock kept");
    let dropped = session.lock("s6-dropped").await.expect("lock dropped");
    let token = dropped.fencing_token();
    let mut watcher = c
        .watch(WatchTarget::Resource("s6-dropped".into()), 0)
        .await
        .expect("watch");
    drop(dropped);

    let deadline = Instant::now() + Duration::from_secs(5);
    let released = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, watcher.next())
            .await
            .expect("a released event within 5 s")
            .expect("event");
        if ev.event == "released" {
            break ev;
        }
    };
    assert_eq!(
        (released.lease_id, released.fencing_token),
        (session.lease_id(), token)
    );
    assert_eq!(c.status("s6-dropped").await.expect("status").holder, None);
    // The session and its other lock are untouched.
    assert_eq!(session.check(), Ok(()));
    assert_eq!(
        holder(&c, "s6-kept").await,
        (session.lease_id(), kept.fencing_token())
    );
    // Taken again, the resource gets a larger token (S2).
    let again = session.lock("s6-dropped").await.expect("lock again");
    assert!(again.fencing_token() > token);
}

/// Lock-delay through a session (docs/semantics.md "Lock-delay"):
/// `Session::lock_with` asks for one, so a forced release leaves the
/// resource ungrantable for it (status shows the time left, a try-lock
/// from another session is refused) while a grant taken without one is
/// free again at once; a bounded wait that runs out is `Ok(None)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_lock_with_asks_for_a_lock_delay() {
    use warden_client::LockOptions;
    let cluster = Cluster::start(3, &[]).await;
    let c = client(endpoints(&cluster)).await;
    let session = c.session(Duration::from_secs(10)).await.expect("session");
    let delay = Duration::from_secs(20);
    let options = LockOptions {
        wait: Some(Duration::from_secs(5)),
        lock_delay: delay,
        max_hold: None,
    };
    let delayed = session
        .lock_with("ld/delayed", options)
        .await
        .expect("lock_with")
        .expect("granted");
    let plain = session.lock("ld/plain").await.expect("lock");
    let other = c.session(Duration::from_secs(10)).await.expect("other");
    let busy = other
        .lock_with(
            "ld/delayed",
            LockOptions {
                wait: Some(Duration::from_millis(200)),
                lock_delay: Duration::ZERO,
                max_hold: None,
            },
        )
        .await
        .expect("bounded wait");
    assert!(busy.is_none(), "held: the bounded wait runs out");
    for resource in ["ld/delayed", "ld/plain"] {
        let (code, _, err) = cluster.cli(&["release", "--force", resource]);
        assert_eq!(code, 0, "{err}");
    }
    let st = c.status("ld/delayed").await.expect("status");
    assert_eq!(st.holder, None);
    let left = st.lock_delay_remaining_ms.unwrap_or(0);
    assert!(
        left > 0 && left <= delay.as_millis() as u64,
        "lock-delay left: {left} ms"
    );
    assert!(
        other.try_lock("ld/delayed").await.expect("try").is_none(),
        "in lock-delay"
    );
    let again = other.try_lock("ld/plain").await.expect("try");
    assert!(again.is_some(), "no lock-delay asked: free at once");
    drop((delayed, plain));
}
