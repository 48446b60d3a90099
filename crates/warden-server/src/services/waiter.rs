//! A queued acquire's stream: its position while it waits, and what it waits
//! behind (the holder, the lock-delay, or earlier waiters; the first report
//! at once, later changes at most every
//! [`QUEUE_POSITION_REPORT_INTERVAL`]), then the final `Granted` or
//! `NotGranted` as later entries apply (S8), or `PermissionDenied` when a
//! hand-off removed the waiter because its principal no longer had `lock`
//! on the resource (`warden_core::auth`: a revoked waiter never blocks the
//! queue), which a client must not take for a timed-out wait.

use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::Status;
use warden_proto::v1 as pb;

use super::call_ids::{superseded_status, CallIdClaim};
use super::convert::{granted, not_granted, queued, wire_mode, with_grants, GrantDetail};
use super::status::wait_permission_revoked;
use crate::node::read::{QueueBehind, WaiterStep};
use crate::node::Node;

/// Shortest time between two `Queued` position reports to one waiter after
/// the first: 100 ms. The first report (it names the waiter's lease) goes at
/// once, and a changed position waits at most this long; the final `granted`
/// or `not_granted` is never held back. Without it every hand-off sent one
/// report to each of the other waiters, so 16 clients queued on one
/// resource cost 15 stream messages per grant (docs/performance.md,
/// "Contended").
pub const QUEUE_POSITION_REPORT_INTERVAL: std::time::Duration =
    std::time::Duration::from_millis(100);

/// What a `Queued` report says, for the throttle: the position and what
/// the waiter waits behind, without the lock-delay's time left (which
/// changes every millisecond and alone is not news).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReportKey {
    position: u64,
    behind: QueueBehind,
}

fn report_key(position: u64, behind: QueueBehind) -> ReportKey {
    let behind = match behind {
        QueueBehind::LockDelay { .. } => QueueBehind::LockDelay { remaining_ms: 0 },
        other => other,
    };
    ReportKey { position, behind }
}

/// When a waiter's `Queued` position reports go out: the first at once,
/// a changed position (or what it waits behind: a holder that expired into
/// a lock-delay) at most every [`QUEUE_POSITION_REPORT_INTERVAL`].
#[derive(Debug, Default)]
struct ReportThrottle {
    /// What was last reported (None: nothing yet).
    reported: Option<ReportKey>,
    /// When the next report may go.
    next_at: Option<tokio::time::Instant>,
}

/// What to do with the current position.
#[derive(Debug, PartialEq, Eq)]
enum Report {
    /// Send it now (recorded as reported).
    Send,
    /// It changed, but not before this instant.
    HoldUntil(tokio::time::Instant),
    /// Already reported.
    Nothing,
}

impl ReportThrottle {
    fn offer(&mut self, key: ReportKey, now: tokio::time::Instant) -> Report {
        if Some(key) == self.reported {
            return Report::Nothing;
        }
        match self.next_at {
            Some(at) if now < at => Report::HoldUntil(at),
            _ => {
                self.reported = Some(key);
                self.next_at = Some(now + QUEUE_POSITION_REPORT_INTERVAL);
                Report::Send
            }
        }
    }
}

/// Where a queued acquire's messages go.
pub(super) enum WaiterOut {
    /// A unary `Acquire`'s response stream.
    Acquire(mpsc::Sender<Result<pb::AcquireResponse, Status>>),
    /// One call of a `Calls` stream: each message goes under its call id,
    /// which stays in flight on that stream (`claim`) until this is dropped,
    /// after the final answer (or when the stream is gone).
    Call {
        claim: CallIdClaim,
        out: mpsc::Sender<Result<pb::CallResponse, Status>>,
    },
}

impl WaiterOut {
    /// The call id that follows this waiter on the stream now, when a later
    /// call took it over (`call_ids`); never for a unary `Acquire`.
    fn superseded_by(&self) -> Option<u64> {
        match self {
            WaiterOut::Acquire(_) => None,
            WaiterOut::Call { claim, .. } => claim.superseded_by(),
        }
    }

    /// Resolves when a later call takes this waiter over (never for a unary
    /// `Acquire`).
    async fn superseded(&self) {
        match self {
            WaiterOut::Acquire(_) => std::future::pending().await,
            WaiterOut::Call { claim, .. } => claim.superseded().await,
        }
    }

    /// Sends `message`; false when the stream is gone.
    async fn send(&self, message: pb::AcquireResponse) -> bool {
        match self {
            WaiterOut::Acquire(tx) => tx.send(Ok(message)).await.is_ok(),
            WaiterOut::Call { claim, out } => out
                .send(Ok(pb::CallResponse {
                    call_id: claim.call_id(),
                    answer: Some(pb::call_response::Answer::Acquire(message)),
                }))
                .await
                .is_ok(),
        }
    }

    /// Sends the call's last answer, the final `message` or the `status` it
    /// ends with (false when the stream is gone). A `Calls` stream's call id
    /// is freed first, so the client may reuse it as soon as it has this.
    async fn end(self, last: Result<pb::AcquireResponse, Status>) -> bool {
        match self {
            WaiterOut::Acquire(tx) => tx.send(last).await.is_ok(),
            WaiterOut::Call { claim, out } => {
                let call_id = claim.call_id();
                drop(claim);
                let answer = match last {
                    Ok(message) => pb::call_response::Answer::Acquire(message),
                    Err(status) => {
                        pb::call_response::Answer::Error(warden_proto::call_error(&status))
                    }
                };
                out.send(Ok(pb::CallResponse {
                    call_id,
                    answer: Some(answer),
                }))
                .await
                .is_ok()
            }
        }
    }

    /// [`WaiterOut::end`] with the final `message`.
    async fn send_final(self, message: pb::AcquireResponse) -> bool {
        self.end(Ok(message)).await
    }

    /// [`WaiterOut::end`] with `status`.
    async fn fail(self, status: Status) -> bool {
        self.end(Err(status)).await
    }

    /// Resolves when the stream is gone (the client went away): the waiter
    /// stays queued (S8), its follower ends.
    async fn closed(&self) {
        match self {
            WaiterOut::Acquire(tx) => tx.closed().await,
            WaiterOut::Call { out, .. } => out.closed().await,
        }
    }
}

/// Follows a queued acquire until it is granted or removed (S8: a timeout is
/// reported only after the removal has committed; if a grant commits first,
/// the grant is reported).
pub(super) async fn follow_waiter(
    node: Arc<Node>,
    tx: WaiterOut,
    resource: String,
    lease_id: u64,
    enqueue_index: u64,
    started: tokio::time::Instant,
) {
    use crate::metrics::AcquireOutcome;
    // Woken only by entries that touch this resource: with every waiter
    // woken by every entry, 100,000 queued acquires cost the leader 100,000
    // table reads per entry (`crate::wakes`).
    let mut wake = node.follow_resource(&resource);
    let mut throttle = ReportThrottle::default();
    loop {
        // A later call of the stream follows this waiter now: end this one.
        if let Some(later) = tx.superseded_by() {
            tx.fail(superseded_status(later)).await;
            return;
        }
        // The final answer, or the waiter's current position.
        let Some(step) = node.waiter_step(&resource, lease_id, enqueue_index) else {
            return;
        };
        let mut held_until = None;
        match step {
            WaiterStep::Granted {
                fencing_token,
                ttl_ms,
                grant_index,
                slot,
                kind,
                mode,
                grants,
                max_hold_ms,
            } => {
                let detail = GrantDetail {
                    ttl_ms,
                    log_index: grant_index,
                    slot,
                    mode: wire_mode(kind, mode),
                    max_hold_ms,
                };
                let msg = with_grants(granted(resource, lease_id, fencing_token, detail), &grants);
                node.metrics()
                    .acquire(AcquireOutcome::Granted, started.elapsed());
                tx.send_final(msg).await;
                return;
            }
            WaiterStep::Gone { holder, reason } => {
                let msg = not_granted(resource, holder, reason, 0);
                node.metrics()
                    .acquire(AcquireOutcome::NotGranted, started.elapsed());
                tx.send_final(msg).await;
                return;
            }
            WaiterStep::PermissionRevoked => {
                node.metrics()
                    .acquire(AcquireOutcome::Error, started.elapsed());
                tx.fail(wait_permission_revoked(&resource, lease_id)).await;
                return;
            }
            WaiterStep::Queued { position, behind } => {
                match throttle.offer(report_key(position, behind), tokio::time::Instant::now()) {
                    Report::Send => {
                        if !tx.send(queued(position, lease_id, behind)).await {
                            // A dropped stream is not a cancel (S8): the waiter stays.
                            return;
                        }
                    }
                    Report::HoldUntil(at) => held_until = Some(at),
                    Report::Nothing => {}
                }
            }
        }
        let report_due = async {
            match held_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wake.changed() => {}
            _ = tx.closed() => return,
            _ = tx.superseded() => {}
            _ = report_due => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    // S8 (a dropped stream is not a cancel, but nothing outlives it): a
    // queued acquire's messages on a `Calls` stream go under its call id,
    // and the waiter's `closed()` (which `follow_waiter` selects on) resolves
    // as soon as the stream is gone, even while the waiter has nothing to
    // report. A relay task that noticed only at its next message kept a
    // waiter whose position did not change until its grant or timeout, on a
    // node that stopped applying for ever.
    #[tokio::test]
    async fn a_queued_calls_waiter_sends_under_its_call_id_and_ends_with_its_stream() {
        let (out, mut answers) = mpsc::channel(8);
        let ids = super::super::call_ids::InFlightIds::default();
        let claim = ids.claim(5).expect("free");
        let waiter = WaiterOut::Call { claim, out };
        let queued = pb::AcquireResponse {
            event: Some(pb::acquire_response::Event::Queued(pb::Queued {
                position: 2,
                lease_id: 9,
                behind: "waiters".into(),
                ..Default::default()
            })),
        };
        assert!(waiter.send(queued.clone()).await);
        let answer = answers.recv().await.unwrap().unwrap();
        assert_eq!(answer.call_id, 5);
        assert_eq!(
            answer.answer,
            Some(pb::call_response::Answer::Acquire(queued.clone()))
        );
        drop(answers);
        tokio::time::timeout(Duration::from_secs(10), waiter.closed())
            .await
            .expect("the waiter sees its stream gone");
        assert!(!waiter.send(queued).await, "nothing more is sent");
    }

    // A revoked waiter never blocks the queue, and its stream says why
    // (warden_core::auth, "Waiters carry their principal"): bob and carol
    // wait behind alice; bob's `lock` is revoked; when alice releases, the
    // hand-off removes bob and grants carol in the same entry, and bob's
    // stream ends with PermissionDenied naming the resource, not with a
    // timed-out `not_granted`.
    #[tokio::test]
    async fn a_waiter_whose_lock_was_revoked_is_told_permission_denied() {
        use crate::node::submit::Released;
        use crate::node::test_node::{header, named, Setup, TestNode};
        use warden_core::types::{
            Acquire, AcquireOutcome, AcquireReply, Command, LeaseSpec, Permission, Release,
        };

        let t = TestNode::start(Setup::default()).await;
        for who in ["alice", "bob", "carol"] {
            t.grant(who, "q/", Permission::Lock).await;
        }
        let acquire = |client_id, wait_timeout_ms| {
            Command::Acquire(Acquire::mutex(
                header(client_id, 1),
                "q/1",
                LeaseSpec::New { ttl_ms: 30_000 },
                wait_timeout_ms,
                0,
            ))
        };
        let holder: AcquireReply = t
            .node
            .submit(&named("alice"), acquire(1, 0))
            .await
            .expect("alice");
        let AcquireOutcome::Granted {
            lease_id: alice_lease,
            fencing_token,
            ..
        } = holder.outcome
        else {
            panic!("alice not granted: {holder:?}")
        };
        let mut waits = Vec::new();
        for (client, who) in [(2, "bob"), (3, "carol")] {
            let reply: AcquireReply = t
                .node
                .submit(&named(who), acquire(client, 60_000))
                .await
                .expect("wait");
            let AcquireOutcome::Queued {
                lease_id,
                enqueue_index,
                ..
            } = reply.outcome
            else {
                panic!("{who} not queued: {reply:?}")
            };
            waits.push((lease_id, enqueue_index));
        }
        let (bob_lease, bob_enqueued) = waits[0];
        let (tx, mut rx) = mpsc::channel(8);
        let follower = tokio::spawn(follow_waiter(
            t.node.clone(),
            WaiterOut::Acquire(tx),
            "q/1".into(),
            bob_lease,
            bob_enqueued,
            tokio::time::Instant::now(),
        ));
        let first = rx.recv().await.expect("a report").expect("queued");
        // Next in line, behind alice's grant (the report names her lease).
        assert_eq!(
            first,
            queued(
                1,
                bob_lease,
                QueueBehind::Holder {
                    lease_id: alice_lease
                }
            )
        );
        let Some(pb::acquire_response::Event::Queued(q)) = first.event else {
            panic!("not a queued report: {first:?}")
        };
        assert_eq!(
            (q.behind.as_str(), q.holder_lease_id),
            ("holder", alice_lease)
        );
        t.revoke("bob", "q/").await;
        let release = Command::Release(Release {
            header: header(1, 2),
            resource: Some("q/1".into()),
            lease_id: alice_lease,
            fencing_token: Some(fencing_token),
        });
        let _: Released = t
            .node
            .submit(&named("alice"), release)
            .await
            .expect("release");
        let status = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match rx.recv().await.expect("the stream ends with an answer") {
                    Ok(_) => continue,
                    Err(status) => break status,
                }
            }
        })
        .await
        .expect("an answer within 10 s");
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
        assert!(status.message().contains("\"q/1\""), "{}", status.message());
        follower.await.expect("follower ends");
        let carol_lease = waits[1].0;
        let holder = t.table(|m| m.holder("q/1")).expect("handed off");
        assert_eq!(holder.lease_id, carol_lease, "the next live waiter got it");
        assert!(holder.fencing_token > fencing_token, "S2");
    }

    // Lock-delay is visible (docs/semantics.md "Words", lock-delay): after a
    // forced release of a grant with a 5 s lock-delay the resource has no
    // holder, and `status`, a try-lock's refusal and a waiter's first
    // `Queued` report each carry the time left, in (0, 5 s], in cluster
    // time from the table's lock-delay end, as the TTL left of a holder is.
    #[tokio::test]
    async fn a_lock_delay_shows_its_time_left_in_status_refusal_and_queue() {
        use super::super::calls::start_acquire;
        use super::super::convert::AcquireStart;
        use crate::node::submit::Released;
        use crate::node::test_node::{header, Setup, TestNode};
        use warden_core::types::{AcquireOutcome, AcquireReply, Command, ForceRelease};

        let t = TestNode::start(Setup {
            allow_admin: true,
            ..Setup::default()
        })
        .await;
        let holder: AcquireReply = t.hold("d/1", 30_000, 5_000).await;
        assert!(
            matches!(holder.outcome, AcquireOutcome::Granted { .. }),
            "{holder:?}"
        );
        let fresh = t.node.resource_status(&None, "d/1").await.expect("status");
        assert_eq!(fresh.lock_delay_remaining_ms, 0, "held: no lock-delay");
        let _: Released = t
            .node
            .submit(
                &None,
                Command::ForceRelease(ForceRelease {
                    header: header(2, 1),
                    resource: "d/1".into(),
                    fencing_token: None,
                    requested_by: "test".into(),
                    at_unix_ms: 0,
                }),
            )
            .await
            .expect("force release");
        let in_delay = |ms: u64| ms > 0 && ms <= 5_000;

        let status = t.node.resource_status(&None, "d/1").await.expect("status");
        assert_eq!(status.holder(), None);
        assert!(in_delay(status.lock_delay_remaining_ms), "{status:?}");

        let try_lock = pb::AcquireRequest {
            header: Some(pb::RequestHeader {
                client_id: 3,
                request_id: 1,
                acked_request_id: 0,
            }),
            resource: "d/1".into(),
            ttl_ms: 10_000,
            ..Default::default()
        };
        let Ok(AcquireStart::Final(refusal)) = start_acquire(&t.node, &None, try_lock).await else {
            panic!("the try-lock is answered at once")
        };
        let Some(pb::acquire_response::Event::NotGranted(n)) = refusal.event else {
            panic!("not refused: {refusal:?}")
        };
        assert_eq!((n.reason.as_str(), n.holder_lease_id), ("lock_delay", 0));
        assert!(in_delay(n.lock_delay_remaining_ms), "{n:?}");

        let (lease_id, mut rx, follower) = queue_and_follow(&t, 4, "d/1").await;
        let first = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a report within 10 s")
            .expect("a report")
            .expect("queued");
        let Some(pb::acquire_response::Event::Queued(q)) = first.event else {
            panic!("not a queued report: {first:?}")
        };
        assert_eq!((q.position, q.lease_id), (1, lease_id));
        assert_eq!((q.behind.as_str(), q.holder_lease_id), ("lock_delay", 0));
        assert!(in_delay(q.lock_delay_remaining_ms), "{q:?}");
        follower.abort();
    }

    /// Queues a waiting acquire of `resource` (client `client_id`, request
    /// 1, a 60 s wait) as an anonymous caller and follows it as a unary
    /// `Acquire` would: (its lease, the follower's messages, the follower).
    async fn queue_and_follow(
        t: &crate::node::test_node::TestNode,
        client_id: u64,
        resource: &str,
    ) -> (
        u64,
        mpsc::Receiver<Result<pb::AcquireResponse, Status>>,
        tokio::task::JoinHandle<()>,
    ) {
        use super::super::calls::start_acquire;
        use super::super::convert::AcquireStart;
        let wait = pb::AcquireRequest {
            header: Some(pb::RequestHeader {
                client_id,
                request_id: 1,
                acked_request_id: 0,
            }),
            resource: resource.into(),
            ttl_ms: 10_000,
            wait_timeout_ms: 60_000,
            ..Default::default()
        };
        let Ok(AcquireStart::Queued {
            resource,
            lease_id,
            enqueue_index,
        }) = start_acquire(&t.node, &None, wait).await
        else {
            panic!("the wait is queued")
        };
        let (tx, rx) = mpsc::channel(8);
        let follower = tokio::spawn(follow_waiter(
            t.node.clone(),
            WaiterOut::Acquire(tx),
            resource,
            lease_id,
            enqueue_index,
            tokio::time::Instant::now(),
        ));
        (lease_id, rx, follower)
    }

    // S8 (a waiter taken back with CancelWait): the queued acquire's stream
    // ends with `not_granted` and reason `cancelled` (it said `wait_timeout`
    // before, found by an attack), and the resource stays with its holder.
    #[tokio::test]
    async fn a_cancelled_waiter_is_told_cancelled_not_timed_out() {
        use crate::node::submit::WaitCancelled;
        use crate::node::test_node::{header, Setup, TestNode};
        use warden_core::types::{AcquireOutcome, AcquireReply, CancelWait, Command};

        let t = TestNode::start(Setup::default()).await;
        let holder: AcquireReply = t.hold("c/1", 30_000, 0).await;
        let AcquireOutcome::Granted {
            lease_id: holder_lease,
            ..
        } = holder.outcome
        else {
            panic!("not granted: {holder:?}")
        };
        let (_, mut rx, follower) = queue_and_follow(&t, 4, "c/1").await;
        let _: WaitCancelled = t
            .node
            .submit(
                &None,
                Command::CancelWait(CancelWait {
                    header: header(4, 2),
                    acquire_request_id: 1,
                    resource: "c/1".into(),
                }),
            )
            .await
            .expect("cancel");
        let last = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let msg = rx
                    .recv()
                    .await
                    .expect("the stream ends with an answer")
                    .expect("not an error");
                if !matches!(msg.event, Some(pb::acquire_response::Event::Queued(_))) {
                    break msg;
                }
            }
        })
        .await
        .expect("an answer within 10 s");
        let Some(pb::acquire_response::Event::NotGranted(n)) = last.event else {
            panic!("not a refusal: {last:?}")
        };
        assert_eq!(
            (n.reason.as_str(), n.holder_lease_id),
            ("cancelled", holder_lease)
        );
        follower.await.expect("follower ends");
        assert_eq!(
            t.table(|m| m.holder("c/1").map(|h| h.lease_id)),
            Some(holder_lease)
        );
    }

    // The queue position a waiter sees (S8's `Queued` reports): the first
    // report goes at once, a changed position is held back at most
    // QUEUE_POSITION_REPORT_INTERVAL and then sent, an unchanged one never
    // again. (The cluster test cannot tell a lost hold-back timer from a
    // later entry waking the waiter; this can.)
    #[test]
    fn position_reports_are_held_back_at_most_the_interval() {
        let t0 = tokio::time::Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let at = |position: u64| {
            report_key(
                position,
                QueueBehind::Waiters {
                    count: position - 1,
                },
            )
        };
        let mut t = ReportThrottle::default();
        assert_eq!(t.offer(at(3), t0), Report::Send);
        assert_eq!(t.offer(at(3), ms(1)), Report::Nothing);
        assert_eq!(t.offer(at(2), ms(10)), Report::HoldUntil(ms(100)));
        assert_eq!(t.offer(at(1), ms(99)), Report::HoldUntil(ms(100)));
        assert_eq!(t.offer(at(1), ms(100)), Report::Send);
        assert_eq!(t.offer(at(1), ms(500)), Report::Nothing);
        // A move after a quiet spell goes at once.
        assert_eq!(t.offer(at(2), ms(500)), Report::Send);
    }

    // What a waiter waits behind is news at an unchanged position (the
    // holder expired into a lock-delay: the report says so), but the
    // lock-delay's time left running down is not (no report per
    // millisecond).
    #[test]
    fn a_holder_turning_into_a_lock_delay_is_reported_once() {
        let t0 = tokio::time::Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let holder = report_key(1, QueueBehind::Holder { lease_id: 7 });
        let delay = |remaining_ms| report_key(1, QueueBehind::LockDelay { remaining_ms });
        let mut t = ReportThrottle::default();
        assert_eq!(t.offer(holder, t0), Report::Send);
        assert_eq!(t.offer(delay(5_000), ms(200)), Report::Send);
        assert_eq!(t.offer(delay(4_800), ms(400)), Report::Nothing);
        assert_eq!(t.offer(delay(1), ms(4_999)), Report::Nothing);
    }
}
