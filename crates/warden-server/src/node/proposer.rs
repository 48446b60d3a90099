//! The proposer: packs client commands that queue at the same moment into one
//! Raft entry (`Command::Batch`), so that 64 clients cost one entry per
//! commit round instead of 64 (docs/performance.md, "Packing queued
//! commands").
//!
//! * A packable command ([`packable`]: `Acquire`, `Release`) that arrives
//!   while fewer than `max_in_flight` of the proposer's entries are
//!   uncommitted is proposed at once, alone, as a plain entry: the
//!   uncontended path takes no extra hop and no wait.
//! * A release also goes at once, alone, while just `max_in_flight` entries
//!   are uncommitted and nothing is queued: in a hand-off the next waiter's
//!   grant rides in the release's entry (S8), so a release must not wait a
//!   commit round behind the previous holder's re-queued acquire. When
//!   commands are queued already (many clients), it packs with them.
//! * Otherwise it joins the queue. When one of the proposer's entries has
//!   committed and applied (or failed, or its caller gave up), everything
//!   queued (at most [`MAX_BATCH_COMMANDS`] per entry, in arrival order) goes
//!   out as one entry: a `Batch` when there are several, the command itself
//!   when there is one.
//! * Each caller gets its own response (`Response::Batch` is split in order)
//!   and the batch's log id, only after that entry has committed on a quorum
//!   and applied (S3), exactly as an unpacked proposal would.
//! * Every other command (leader duties, renew batches, admin, lease grants,
//!   revokes, proclaims) goes straight to the sink and is neither counted nor
//!   queued.
//!
//! A caller that has given up (its timeout fired, its stream was dropped)
//! before its command went out is left out of the next entry; one that gives
//! up while its own entry is uncommitted frees that slot at once (the entry
//! may still commit; S7 answers a retry).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use warden_core::limits::MAX_BATCH_COMMANDS;
use warden_core::types::{Command, Response};

use super::submit::no_quorum;
use super::SubmitError;
use crate::types::LogId;

/// What a proposal returns: the command's response and its entry's log id.
pub type Proposed = Result<(Response, LogId), SubmitError>;

/// Entries of packed commands allowed uncommitted at once. 1: a command that
/// arrives while one is uncommitted waits for it and goes out with whatever
/// else queued meanwhile (measured against 2 in docs/performance.md).
pub const MAX_IN_FLIGHT: usize = 1;

/// Whether `cmd` may be packed with others into one entry: the per-client
/// lock commands that arrive in numbers, bare or inside
/// `Command::Authorized`. Everything else goes alone.
pub fn packable(cmd: &Command) -> bool {
    matches!(cmd.unwrapped(), Command::Acquire(_) | Command::Release(_))
}

/// Where entries go: the local Raft handle in production, a fake in tests.
pub trait Sink: Send + Sync + 'static {
    /// Proposes one entry holding `cmd` and waits until it has committed and
    /// applied here (or failed).
    fn write(&self, cmd: Command) -> impl Future<Output = Proposed> + Send;
}

/// Where a packable command goes.
enum Route {
    /// Alone, at once (a slot was free and nothing queued).
    Now(Command),
    /// With the next entry; its answer comes here.
    Queued(oneshot::Receiver<Proposed>),
}

/// A queued command and where its answer goes.
struct Job {
    cmd: Command,
    reply: oneshot::Sender<Proposed>,
}

#[derive(Default)]
struct State {
    /// The proposer's entries proposed and not yet answered.
    in_flight: usize,
    /// Commands waiting for the next entry, in arrival order.
    queue: Vec<Job>,
}

struct Inner<S> {
    sink: S,
    max_in_flight: usize,
    queued_timeout: Duration,
    state: Mutex<State>,
}

/// Packs queued client commands into one entry (see the module docs).
pub struct Proposer<S: Sink> {
    inner: Arc<Inner<S>>,
}

impl<S: Sink> std::fmt::Debug for Proposer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.inner.lock();
        f.debug_struct("Proposer")
            .field("max_in_flight", &self.inner.max_in_flight)
            .field("in_flight", &s.in_flight)
            .field("queued", &s.queue.len())
            .finish()
    }
}

/// Holds one in-flight slot; giving it back sends what queued meanwhile.
struct Slot<S: Sink>(Arc<Inner<S>>);

impl<S: Sink> Drop for Slot<S> {
    fn drop(&mut self) {
        Inner::finish(&self.0);
    }
}

impl<S: Sink> Inner<S> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state holds counts and a queue; a panic elsewhere leaves both usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One slot is free again: send what is queued, up to `max_in_flight` entries.
    fn finish(this: &Arc<Self>) {
        let batches = {
            let mut s = this.lock();
            s.in_flight = s.in_flight.saturating_sub(1);
            let mut out = Vec::new();
            // Callers that gave up take no room in the next entry.
            s.queue.retain(|j| !j.reply.is_closed());
            while s.in_flight < this.max_in_flight && !s.queue.is_empty() {
                let n = s.queue.len().min(MAX_BATCH_COMMANDS);
                out.push(s.queue.drain(..n).collect::<Vec<Job>>());
                s.in_flight += 1;
            }
            out
        };
        for jobs in batches {
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    rt.spawn(Self::send_batch(this.clone(), jobs));
                }
                Err(_) => {
                    // No runtime (the node is shutting down): nothing can commit.
                    this.lock().in_flight -= 1;
                    for j in jobs {
                        let _ = j.reply.send(Err(SubmitError::NotProposed {
                            reason: "node stopping".into(),
                        }));
                    }
                }
            }
        }
    }

    /// Proposes `jobs` as one entry and answers each (holds a slot throughout).
    async fn send_batch(this: Arc<Self>, jobs: Vec<Job>) {
        let _slot = Slot(this.clone());
        let (mut cmds, replies): (Vec<Command>, Vec<oneshot::Sender<Proposed>>) = jobs
            .into_iter()
            .filter(|j| !j.reply.is_closed())
            .map(|j| (j.cmd, j.reply))
            .unzip();
        if cmds.len() <= 1 {
            if let (Some(cmd), Some(reply)) = (cmds.pop(), replies.into_iter().next()) {
                let _ = reply.send(this.sink.write(cmd).await);
            }
            return;
        }
        let n = cmds.len();
        match this.sink.write(Command::Batch(cmds)).await {
            Ok((Response::Batch(responses), log_id)) if responses.len() == n => {
                for (reply, response) in replies.into_iter().zip(responses) {
                    let _ = reply.send(Ok((response, log_id)));
                }
            }
            Ok((other, _)) => {
                let e = SubmitError::fatal(format!("unexpected reply {other:?}"));
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}

impl<S: Sink> Proposer<S> {
    /// A proposer over `sink` allowing `max_in_flight` (at least 1) entries
    /// of packed commands uncommitted at once; a queued command's caller
    /// waits at most `queued_timeout` in all (a direct write is bounded by
    /// the sink itself).
    pub fn new(sink: S, max_in_flight: usize, queued_timeout: Duration) -> Self {
        Proposer {
            inner: Arc::new(Inner {
                sink,
                queued_timeout,
                max_in_flight: max_in_flight.max(1),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Proposes `cmd`: packable commands alone at once when a slot is free,
    /// else with what queues meanwhile; other commands straight to the sink.
    /// Returns after the entry holding `cmd` has committed and applied.
    pub async fn propose(&self, cmd: Command) -> Proposed {
        if !packable(&cmd) {
            return self.inner.sink.write(cmd).await;
        }
        // A release may go while one more entry is uncommitted when nothing
        // is queued: in a hand-off it is what the next waiter waits for (S8
        // grants in the release's own entry), so it must not sit behind the
        // previous holder's re-queued acquire for a commit round. When
        // commands are already queued (many clients), it packs with them.
        let limit = match cmd.unwrapped() {
            Command::Release(_) => self.inner.max_in_flight + 1,
            _ => self.inner.max_in_flight,
        };
        let queued = {
            let mut s = self.inner.lock();
            let goes_now = s.in_flight < limit && s.queue.is_empty();
            if goes_now {
                s.in_flight += 1;
                Route::Now(cmd)
            } else {
                let (reply, rx) = oneshot::channel();
                s.queue.push(Job { cmd, reply });
                Route::Queued(rx)
            }
        };
        match queued {
            Route::Now(cmd) => {
                // Given back when this returns or the caller gives up.
                let _slot = Slot(self.inner.clone());
                self.inner.sink.write(cmd).await
            }
            // The whole wait, queue and entry, is bounded like a direct write
            // (L3: fail clearly within the caller's deadline).
            Route::Queued(rx) => match tokio::time::timeout(self.inner.queued_timeout, rx).await {
                Err(_) => Err(no_quorum()),
                Ok(r) => r.unwrap_or_else(|_| {
                    Err(SubmitError::Unknown {
                        reason: "node stopping".into(),
                    })
                }),
            },
        }
    }

    /// Commands waiting for the next entry (tests and diagnostics).
    pub fn queued(&self) -> usize {
        self.inner.lock().queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
    use tokio::sync::mpsc;
    use warden_core::types::{Acquire, LeaseSpec, RenewBatch, RequestHeader};

    /// Never reached in these tests (they release every entry themselves).
    const LONG: Duration = Duration::from_secs(600);

    /// A sink that reports each entry to the test and answers it only when
    /// the test releases it, always with log index 7.
    struct Gate {
        seen: mpsc::UnboundedSender<(Command, oneshot::Sender<()>)>,
    }

    impl Sink for Gate {
        fn write(&self, cmd: Command) -> impl Future<Output = Proposed> + Send {
            let (go, wait) = oneshot::channel();
            let sent = self.seen.send((cmd.clone(), go));
            async move {
                sent.map_err(|_| SubmitError::fatal("test gone"))?;
                wait.await.map_err(|_| SubmitError::Unknown {
                    reason: "dropped".into(),
                })?;
                let response = match &cmd {
                    Command::Batch(cmds) => Response::Batch(cmds.iter().map(answer).collect()),
                    c => answer(c),
                };
                Ok((
                    response,
                    LogId::new(
                        RaftLeaderId {
                            term: 1,
                            node_id: 1,
                        },
                        7,
                    ),
                ))
            }
        }
    }

    /// A response that names the command (its request id) so each caller's
    /// answer can be checked to be its own.
    fn answer(cmd: &Command) -> Response {
        match cmd {
            Command::Acquire(a) => Response::Revoked {
                lease_id: a.header.request_id,
            },
            _ => Response::Done,
        }
    }

    fn acquire(request_id: u64) -> Command {
        Command::Acquire(Acquire::mutex(
            RequestHeader {
                client_id: 1,
                request_id,
                acked_request_id: 0,
            },
            format!("r{request_id}"),
            LeaseSpec::New { ttl_ms: 5_000 },
            0,
            0,
        ))
    }

    fn request_ids(cmd: &Command) -> Vec<u64> {
        match cmd {
            Command::Batch(cmds) => cmds.iter().flat_map(request_ids).collect(),
            Command::Acquire(a) => vec![a.header.request_id],
            _ => vec![],
        }
    }

    type Seen = mpsc::UnboundedReceiver<(Command, oneshot::Sender<()>)>;

    /// A proposer over a [`Gate`] with `max_in_flight` slots; the receiver
    /// sees each entry as it is written.
    fn gated(max_in_flight: usize) -> (Arc<Proposer<Gate>>, Seen) {
        let (tx, seen) = mpsc::unbounded_channel();
        let p = Proposer::new(Gate { seen: tx }, max_in_flight, LONG);
        (Arc::new(p), seen)
    }

    /// Proposes `cmd` on a task of its own.
    fn propose_on_task(p: &Arc<Proposer<Gate>>, cmd: Command) -> tokio::task::JoinHandle<Proposed> {
        let p = p.clone();
        tokio::spawn(async move { p.propose(cmd).await })
    }

    async fn wait_queued(p: &Proposer<Gate>, n: usize) {
        while p.queued() != n {
            tokio::task::yield_now().await;
        }
    }

    // Packing (docs/performance.md): an uncontended command goes out alone and at once; commands
    // that arrive while it is uncommitted wait and then go out together as
    // ONE Batch entry, in arrival order, each caller getting its own response (S3: only
    // after that entry answered).
    #[tokio::test]
    async fn queued_commands_share_one_entry_and_the_first_goes_alone() {
        let (p, mut seen) = gated(1);
        let first = propose_on_task(&p, acquire(1));
        let (cmd, go1) = seen.recv().await.expect("first entry");
        assert_eq!(
            cmd,
            acquire(1),
            "the uncontended command goes out unbatched"
        );
        let mut later = Vec::new();
        for id in 2..=4 {
            later.push(propose_on_task(&p, acquire(id)));
            wait_queued(&p, (id - 1) as usize).await;
        }
        assert!(
            seen.try_recv().is_err(),
            "nothing else goes out while one is in flight"
        );
        // A non-packable command is not held back by the queue.
        let renew = propose_on_task(&p, Command::RenewBatch(RenewBatch { lease_ids: vec![9] }));
        let (cmd, go_renew) = seen.recv().await.expect("renew entry");
        assert!(matches!(cmd, Command::RenewBatch(_)), "{cmd:?}");
        go_renew.send(()).expect("renew waiting");
        assert!(matches!(
            renew.await.expect("join"),
            Ok((Response::Done, _))
        ));
        assert_eq!(p.queued(), 3);
        // The first commits: the three queued go out as one Batch entry.
        go1.send(()).expect("first waiting");
        assert!(matches!(
            first.await.expect("join"),
            Ok((Response::Revoked { lease_id: 1 }, _))
        ));
        let (batch, go2) = seen.recv().await.expect("batch entry");
        assert!(matches!(batch, Command::Batch(_)), "{batch:?}");
        assert_eq!(request_ids(&batch), vec![2, 3, 4]);
        go2.send(()).expect("batch waiting");
        for (i, h) in later.into_iter().enumerate() {
            let (response, log_id) = h.await.expect("join").expect("answered");
            assert_eq!(
                response,
                Response::Revoked {
                    lease_id: i as u64 + 2
                }
            );
            assert_eq!(log_id.index(), 7);
        }
        assert!(seen.try_recv().is_err(), "exactly two packed entries");
    }

    // Packing (docs/performance.md): with two slots a second concurrent command goes out at once,
    // alone (no wait behind the first), and only a third queues; a caller that gave up
    // before its entry went out is left out of it.
    #[tokio::test]
    async fn a_second_slot_sends_at_once_and_abandoned_commands_are_dropped() {
        let (p, mut seen) = gated(2);
        let spawn = |id| propose_on_task(&p, acquire(id));
        let a = spawn(1);
        let (c1, go1) = seen.recv().await.expect("first");
        let b = spawn(2);
        let (c2, go2) = seen.recv().await.expect("second");
        assert_eq!((c1, c2), (acquire(1), acquire(2)));
        let c = spawn(3);
        wait_queued(&p, 1).await;
        let d = spawn(4);
        wait_queued(&p, 2).await;
        c.abort();
        assert!(c.await.is_err_and(|e| e.is_cancelled()));
        go2.send(()).expect("second waiting");
        assert!(b.await.expect("join").is_ok());
        // Only request 4 is left: it goes out alone, not as a batch of one.
        let (c4, go4) = seen.recv().await.expect("third entry");
        assert!(
            matches!(&c4, Command::Acquire(a) if a.header.request_id == 4),
            "{c4:?}"
        );
        go4.send(()).expect("fourth waiting");
        go1.send(()).expect("first waiting");
        assert!(a.await.expect("join").is_ok());
        assert!(matches!(
            d.await.expect("join"),
            Ok((Response::Revoked { lease_id: 4 }, _))
        ));
        assert!(seen.try_recv().is_err());
    }

    fn release(request_id: u64) -> Command {
        Command::Release(warden_core::types::Release {
            header: RequestHeader {
                client_id: 2,
                request_id,
                acked_request_id: 0,
            },
            resource: Some(format!("r{request_id}")),
            lease_id: 5,
            fencing_token: None,
        })
    }

    // A review of packing (docs/performance.md, change 10's landing condition "a release
    // that never waits behind an acquire"; the contended hand-off, S8's release hands the
    // lock to the next waiter in its own entry): a release that arrives while an acquire
    // entry is uncommitted goes out at once, instead of queueing behind that entry.
    #[tokio::test]
    async fn a_release_goes_out_at_once_while_an_acquire_entry_is_uncommitted() {
        let (p, mut seen) = gated(1);
        let first = propose_on_task(&p, acquire(1));
        let (cmd, go1) = seen.recv().await.expect("acquire entry");
        assert_eq!(cmd, acquire(1));
        let rel = propose_on_task(&p, release(2));
        // The acquire's entry stays uncommitted: the release must reach the
        // sink anyway (it must never sit in the queue).
        let (cmd, go2) = loop {
            if let Ok(entry) = seen.try_recv() {
                break entry;
            }
            assert_eq!(
                p.queued(),
                0,
                "the release queued behind the uncommitted acquire entry"
            );
            tokio::task::yield_now().await;
        };
        assert_eq!(cmd, release(2), "the release alone, at once");
        go2.send(()).expect("release waiting");
        assert!(matches!(rel.await.expect("join"), Ok((Response::Done, _))));
        go1.send(()).expect("acquire waiting");
        assert!(first.await.expect("join").is_ok());
        assert!(seen.try_recv().is_err());
    }

    // Packing under load (64 clients): a release that finds commands
    // already queued packs with them instead of going alone, so releases keep
    // sharing entries when many clients cycle; the hand-off case (nothing
    // queued) is the test above.
    #[tokio::test]
    async fn a_release_that_finds_commands_queued_packs_with_them() {
        let (p, mut seen) = gated(1);
        let spawn = |cmd: Command| propose_on_task(&p, cmd);
        let first = spawn(acquire(1));
        let (cmd, go1) = seen.recv().await.expect("acquire entry");
        assert_eq!(cmd, acquire(1));
        let second = spawn(acquire(2));
        wait_queued(&p, 1).await;
        let rel = spawn(release(3));
        wait_queued(&p, 2).await;
        go1.send(()).expect("acquire waiting");
        let (cmd, go2) = seen.recv().await.expect("packed entry");
        match cmd {
            Command::Batch(cmds) => assert_eq!(cmds.len(), 2, "{cmds:?}"),
            other => panic!("expected one packed entry, got {other:?}"),
        }
        go2.send(()).expect("batch waiting");
        for call in [first, second, rel] {
            assert!(call.await.expect("join").is_ok());
        }
        assert!(seen.try_recv().is_err(), "nothing went alone");
    }

    fn wrapped(cmd: Command) -> Command {
        Command::Authorized(warden_core::types::Authorized {
            principal: Some(warden_core::types::Principal::new("alice").expect("principal")),
            command: Box::new(cmd),
        })
    }

    // Packing with identities (docs/performance.md, "Packing queued
    // commands"): acquires and releases wrapped in `Command::Authorized`, as
    // every client command is, queue and pack exactly like bare ones, still
    // wrapped; a wrapped lease grant is not packable, as a bare one is not.
    #[tokio::test]
    async fn authorized_acquires_and_releases_pack_like_bare_ones() {
        assert!(packable(&wrapped(acquire(1))) && packable(&wrapped(release(1))));
        let grant = Command::LeaseGrant(warden_core::types::LeaseGrant {
            header: RequestHeader {
                client_id: 3,
                request_id: 1,
                acked_request_id: 0,
            },
            ttl_ms: 5_000,
        });
        assert!(!packable(&wrapped(grant)));
        let (p, mut seen) = gated(1);
        let first = propose_on_task(&p, wrapped(acquire(1)));
        let (cmd, go1) = seen.recv().await.expect("first entry");
        assert_eq!(cmd, wrapped(acquire(1)), "alone, at once, still wrapped");
        let second = propose_on_task(&p, wrapped(acquire(2)));
        wait_queued(&p, 1).await;
        let third = propose_on_task(&p, wrapped(release(3)));
        wait_queued(&p, 2).await;
        go1.send(()).expect("first waiting");
        let (batch, go2) = seen.recv().await.expect("packed entry");
        match &batch {
            Command::Batch(cmds) => {
                assert_eq!(cmds.len(), 2, "{cmds:?}");
                assert!(cmds.iter().all(|c| matches!(c, Command::Authorized(_))));
            }
            other => panic!("expected one packed entry, got {other:?}"),
        }
        go2.send(()).expect("batch waiting");
        for call in [first, second, third] {
            assert!(call.await.expect("join").is_ok());
        }
        assert!(seen.try_recv().is_err());
    }

    // L3 / S3: a failed entry fails every caller packed into it with the same status
    // (e.g. "not the leader"), never a success.
    #[tokio::test]
    async fn a_failed_batch_fails_each_caller() {
        let (p, mut seen) = gated(1);
        let spawn = |id| propose_on_task(&p, acquire(id));
        let a = spawn(1);
        let (_, go1) = seen.recv().await.expect("first");
        let b = spawn(2);
        wait_queued(&p, 1).await;
        let c = spawn(3);
        wait_queued(&p, 2).await;
        go1.send(()).expect("first waiting");
        assert!(a.await.expect("join").is_ok());
        let (batch, go2) = seen.recv().await.expect("batch");
        assert_eq!(request_ids(&batch), vec![2, 3]);
        drop(go2); // the entry fails
        for h in [b, c] {
            let e = h.await.expect("join").expect_err("failed entry");
            assert!(
                matches!(&e, SubmitError::Unknown { reason } if reason == "dropped"),
                "{e}"
            );
        }
    }
}
