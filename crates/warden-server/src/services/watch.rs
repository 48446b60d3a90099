//! The public `warden.v1.Watch` service: a subscriber replays retained
//! events at or above its `start_index` that match its resource or prefix,
//! then follows live ones, in commit order, each exactly once (see
//! [`crate::events`]). Below the window it gets `OutOfRange` `compacted`;
//! above the cluster's commit index + 1 `OutOfRange` naming both indexes
//! (`Node::check_watch_start`: no client can resume there, so it is not
//! left waiting for ever).
//!
//! A watch needs `read` on its resource, or on a prefix of its prefix
//! (never a silently filtered stream), checked when it starts and again
//! against the applied table before each batch of events it sends: a
//! stream whose principal lost `read` ends with `PermissionDenied`, and no
//! event of an entry after the table the check was made at is sent before
//! the next check (an auth change binds the entries after it).

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use warden_core::auth::{Target, ROOT};
use warden_core::types::Permission;
use warden_core::validate;
use warden_proto::v1 as pb;
use warden_proto::v1::watch_server;

use super::principal;
use super::status::compacted;
use crate::events::{Event, Filter};
use crate::node::{Node, NodeCell, Principal, SubmitError};

/// Response metadata key carrying the first index this stream covers (the
/// resolved `start_index`: for 0, the index after this node's last applied
/// one), so a client that saw no event yet can still resume without a gap.
pub const START_INDEX_METADATA: &str = "warden-start-index";

/// Buffered events per stream before the sender waits for the client.
const STREAM_BUFFER: usize = 256;

fn event_pb(e: &Event) -> pb::WatchEvent {
    pb::WatchEvent {
        index: e.index,
        resource: e.resource.clone(),
        event: e.kind.as_str().to_string(),
        lease_id: e.lease_id,
        fencing_token: e.fencing_token,
    }
}

/// The service; answers `Unavailable` until the node has bootstrapped.
#[derive(Clone, Debug)]
pub struct WatchService {
    node: NodeCell,
}

impl WatchService {
    /// A service over the (not yet started) node.
    pub fn new(node: NodeCell) -> Self {
        WatchService { node }
    }
}

fn filter(target: Option<pb::watch_request::Target>) -> Result<Filter, SubmitError> {
    match target {
        Some(pb::watch_request::Target::Resource(r)) => {
            validate::resource(&r)?;
            Ok(Filter::Resource(r))
        }
        Some(pb::watch_request::Target::Prefix(p)) => {
            if p.len() > 512 || p.chars().any(char::is_control) {
                return Err(SubmitError::invalid(
                    "prefix",
                    format!(
                        "must be at most 512 bytes of UTF-8 without control characters; got {} bytes",
                        p.len()
                    ),
                ));
            }
            Ok(Filter::Prefix(p))
        }
        None => Err(SubmitError::invalid(
            "resource",
            "set exactly one of resource and prefix",
        )),
    }
}

/// What a watch of `filter` needs: `read` on the resource or the prefix.
fn target(filter: &Filter) -> (Target<'_>, &'static str) {
    match filter {
        Filter::Resource(r) => (Target::Resource(r), "resource"),
        Filter::Prefix(p) => (Target::Prefix(p), "prefix"),
    }
}

/// Checks `principal`'s `read` for `filter` in the applied table: the index
/// up to which events may be sent (every index for a caller that always
/// passes: anonymous or `root`).
fn readable_up_to(node: &Node, principal: &Principal, filter: &Filter) -> Result<u64, Status> {
    if principal.as_ref().is_none_or(|p| p.as_str() == ROOT) {
        return Ok(u64::MAX);
    }
    let (target, field) = target(filter);
    Ok(node.check_applied(principal, Permission::Read, target, Some(field))?)
}

/// Feeds one subscriber until its client goes away, it falls out of the
/// window, or its principal loses `read`.
async fn follow(
    node: Arc<Node>,
    tx: mpsc::Sender<Result<pb::WatchEvent, Status>>,
    mut cursor: u64,
    filter: Filter,
    principal: Principal,
) {
    let _open = node.metrics().watch_stream();
    let log = node.events();
    // Subscribe before the first read so no record between them is missed.
    let mut rx = log.subscribe();
    loop {
        rx.borrow_and_update();
        // Checked before the read: every event read below that is at or
        // below `allowed` was applied with the permission in place.
        let allowed = match readable_up_to(&node, &principal, &filter) {
            Ok(i) => i,
            Err(status) => {
                let _ = tx.send(Err(status)).await;
                return;
            }
        };
        let (mut events, mut next) = match log.read(cursor, &filter) {
            Ok(r) => r,
            Err(c) => {
                let _ = tx.send(Err(compacted(c, cursor))).await;
                return;
            }
        };
        // Entries applied after the check wait for the next check.
        let held_back = next > allowed.saturating_add(1);
        if held_back {
            events.retain(|e| e.index <= allowed);
            next = allowed + 1;
        }
        for e in &events {
            if tx.send(Ok(event_pb(e))).await.is_err() {
                return;
            }
        }
        if next == cursor && !held_back {
            // Caught up: wait for the next record (or reset) of the log.
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                _ = tx.closed() => return,
            }
        }
        cursor = next;
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl watch_server::Watch for WatchService {
    type WatchStream = WatchStream;

    async fn watch(
        &self,
        req: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let filter = filter(r.target)?;
        readable_up_to(&node, &principal, &filter)?;
        // Held by the stream's task: the place is given back when it ends.
        let slot = node.open_watch(&principal)?;
        let cursor = node
            .events()
            .start(r.start_index)
            .map_err(|c| compacted(c, r.start_index))?;
        // Beyond the cluster's commit index + 1 no event will come that a
        // client could have resumed from: refused, not left waiting.
        node.check_watch_start(r.start_index).await?;
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        tokio::spawn(async move {
            follow(node, tx, cursor, filter, principal).await;
            drop(slot);
        });
        let mut response: Response<Self::WatchStream> =
            Response::new(Box::pin(ReceiverStream::new(rx)));
        if let Ok(v) = cursor.to_string().parse() {
            response.metadata_mut().insert(START_INDEX_METADATA, v);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use warden_core::types::{Acquire, AcquireReply, Command, LeaseSpec};

    use super::*;
    use crate::node::test_node::{header, named, Setup, TestNode};

    fn acquire(request_id: u64, resource: &str) -> Command {
        Command::Acquire(Acquire::mutex(
            header(40, request_id),
            resource,
            LeaseSpec::New { ttl_ms: 30_000 },
            0,
            0,
        ))
    }

    // `watch` needs `read` on a prefix of its prefix (never a silently
    // filtered stream), and an auth change binds the entries after it: a
    // watch of "w/" by alice (read on "w/") sees the grant of "w/1"; once
    // her read is revoked the stream ends with PermissionDenied, and the
    // grant of "w/2", applied after the revoke, is never sent. A watch of
    // "" by her is refused at the start; an anonymous caller's is not.
    #[tokio::test]
    async fn a_watch_ends_when_its_principal_loses_read() {
        let t = TestNode::start(Setup::default()).await;
        t.grant("alice", "w/", Permission::Read).await;
        let alice = named("alice");
        let everything = Filter::Prefix(String::new());
        let refused = readable_up_to(&t.node, &alice, &everything).expect_err("refused");
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert!(
            refused.message().contains("prefix \"\""),
            "{}",
            refused.message()
        );
        assert!(readable_up_to(&t.node, &None, &everything).is_ok());

        let cursor = t.node.events().start(0).expect("start");
        let (tx, mut rx) = mpsc::channel(16);
        let follower = tokio::spawn(follow(
            t.node.clone(),
            tx,
            cursor,
            Filter::Prefix("w/".into()),
            alice,
        ));
        let root = named("root");
        let _: AcquireReply = t.node.submit(&root, acquire(1, "w/1")).await.expect("w/1");
        let first = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an event")
            .expect("open")
            .expect("not an error");
        assert_eq!(
            (first.resource.as_str(), first.event.as_str()),
            ("w/1", "granted")
        );
        t.revoke("alice", "w/").await;
        let _: AcquireReply = t.node.submit(&root, acquire(2, "w/2")).await.expect("w/2");
        let end = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an answer")
            .expect("open");
        let status = end.expect_err("the stream ends, no event of w/2");
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
        assert!(rx.recv().await.is_none(), "nothing after the refusal");
        follower.await.expect("follower ends");
    }
}
