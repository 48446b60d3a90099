//! The public `warden.v1.Watch` service: a subscriber replays retained
//! events at or above its `start_index` that match its resource or prefix,
//! then follows live ones, in commit order, each exactly once (see
//! [`crate::events`]). Below the window it gets `OutOfRange` `compacted`.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use warden_core::validate;
use warden_proto::v1 as pb;
use warden_proto::v1::watch_server;

use super::status::compacted;
use crate::events::{Event, Filter};
use crate::node::{Node, NodeCell, SubmitError};

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

/// Feeds one subscriber until its client goes away or it falls out of the window.
async fn follow(
    node: Arc<Node>,
    tx: mpsc::Sender<Result<pb::WatchEvent, Status>>,
    mut cursor: u64,
    filter: Filter,
) {
    let log = node.events();
    // Subscribe before the first read so no record between them is missed.
    let mut rx = log.subscribe();
    loop {
        rx.borrow_and_update();
        let (events, next) = match log.read(cursor, &filter) {
            Ok(r) => r,
            Err(c) => {
                let _ = tx.send(Err(compacted(c, cursor))).await;
                return;
            }
        };
        for e in &events {
            if tx.send(Ok(event_pb(e))).await.is_err() {
                return;
            }
        }
        if next == cursor {
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
        let r = req.into_inner();
        let filter = filter(r.target)?;
        let cursor = node
            .events()
            .start(r.start_index)
            .map_err(|c| compacted(c, r.start_index))?;
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        tokio::spawn(follow(node, tx, cursor, filter));
        let mut response: Response<Self::WatchStream> =
            Response::new(Box::pin(ReceiverStream::new(rx)));
        if let Ok(v) = cursor.to_string().parse() {
            response.metadata_mut().insert(START_INDEX_METADATA, v);
        }
        Ok(response)
    }
}
