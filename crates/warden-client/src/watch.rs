//! [`Client::watch`]: a resumable stream of lock events.
//!
//! Any node serves a watch (followers apply the same committed entries; one
//! may lag the leader). The [`Watcher`] remembers where it is (the last index
//! it returned and how many events of that index it returned) and, when its
//! node goes away, reconnects to another endpoint and resumes there without
//! gaps or duplicates: it asks for the last index again and skips the events
//! of that index it already returned (every node derives the same events, in
//! the same order, from the same entry).

use std::time::Duration;

use tokio::time::Instant;
use tonic::codec::Streaming;
use tonic::{Code, Status};
use warden_proto::v1::{self, watch_client::WatchClient};

use crate::error::{disposition, ClientError, Disposition};
use crate::Client;

/// Metadata key with the oldest retained index on a `compacted` error.
const OLDEST_INDEX_METADATA: &str = "warden-oldest-index";
/// Response metadata key with the first index a stream covers.
const START_INDEX_METADATA: &str = "warden-start-index";

/// What to watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchTarget {
    /// One resource, by its exact name.
    Resource(String),
    /// Every resource whose name starts with this ("" = all).
    Prefix(String),
}

/// One event, as the server streamed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// Log index of the committed entry that made the change.
    pub index: u64,
    /// The resource.
    pub resource: String,
    /// granted, released, expired, revoked, queued, cancelled, forced or
    /// lock_delay_ended.
    pub event: String,
    /// The lease concerned; 0 when none.
    pub lease_id: u64,
    /// The grant's token (granted) or the ended grant's (released, expired,
    /// revoked, forced); 0 otherwise.
    pub fencing_token: u64,
}

impl From<v1::WatchEvent> for WatchEvent {
    fn from(e: v1::WatchEvent) -> Self {
        WatchEvent {
            index: e.index,
            resource: e.resource,
            event: e.event,
            lease_id: e.lease_id,
            fencing_token: e.fencing_token,
        }
    }
}

/// Why a watch stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchError {
    /// The index to resume from is older than the node's retained window
    /// (gRPC `OutOfRange`, `ErrorInfo` reason `COMPACTED`).
    #[error("{message}")]
    Compacted {
        /// The oldest index the node still retains.
        oldest_index: u64,
        /// The server's message.
        message: String,
    },
    /// Any other failure (bad argument, no node reachable before the deadline).
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// The compaction refusal, told by the status's `google.rpc.ErrorInfo`
/// reason `COMPACTED` (domain `warden.v1`), never by its text; a status
/// without details counts when it is `OutOfRange` naming the oldest index
/// in its metadata.
fn compacted(status: &Status) -> Option<WatchError> {
    use tonic_types::StatusExt as _;
    if status.code() != Code::OutOfRange {
        return None;
    }
    let reason = status
        .get_error_details()
        .error_info()
        .filter(|info| info.domain == crate::error::ERROR_DOMAIN)
        .map(|info| info.reason.clone());
    let named_oldest = status.metadata().get(OLDEST_INDEX_METADATA).is_some();
    match reason.as_deref() {
        Some("COMPACTED") => {}
        None if named_oldest => {}
        _ => return None,
    }
    let oldest_index = status
        .metadata()
        .get(OLDEST_INDEX_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Some(WatchError::Compacted {
        oldest_index,
        message: status.message().to_string(),
    })
}

/// A running watch; see [`Client::watch`].
#[derive(Debug)]
pub struct Watcher {
    client: Client,
    target: WatchTarget,
    /// Index to ask for on reconnect.
    resume_index: u64,
    /// Events of `resume_index` already returned (skipped on reconnect).
    seen_at_resume: usize,
    /// Events of `resume_index` received on the current stream.
    received_at_resume: usize,
    stream: Option<Streaming<v1::WatchEvent>>,
}

impl Client {
    /// Watches `target` from `start_index` (0 = from now): retained events
    /// at or above it first, then live ones, in commit order.
    ///
    /// # Errors
    ///
    /// [`WatchError::Compacted`] when `start_index` is older than the node's
    /// retained window; [`ClientError::InvalidArgument`] for a bad resource or
    /// prefix, or a `start_index` beyond the cluster's commit index + 1 (no
    /// event can come there: the node refuses it rather than wait for ever); [`ClientError::NoQuorum`] / [`ClientError::Unavailable`] when no
    /// node served the watch before the deadline.
    pub async fn watch(
        &self,
        target: WatchTarget,
        start_index: u64,
    ) -> Result<Watcher, WatchError> {
        let mut w = Watcher {
            client: self.clone(),
            target,
            resume_index: start_index,
            seen_at_resume: 0,
            received_at_resume: 0,
            stream: None,
        };
        w.connect().await?;
        Ok(w)
    }
}

impl Watcher {
    /// The index the watch would resume from now (the last event's index,
    /// whose already returned events are skipped, or the start).
    pub fn resume_index(&self) -> u64 {
        self.resume_index
    }

    async fn connect(&mut self) -> Result<(), WatchError> {
        let request = v1::WatchRequest {
            target: Some(match &self.target {
                WatchTarget::Resource(r) => v1::watch_request::Target::Resource(r.clone()),
                WatchTarget::Prefix(p) => v1::watch_request::Target::Prefix(p.clone()),
            }),
            start_index: self.resume_index,
        };
        let options = self.client.options();
        let attempt_timeout = options.attempt_timeout;
        let deadline = Instant::now() + options.deadline;
        let request = &request;
        let opened = self
            .client
            .call_channel("watch", deadline, move |channel| async move {
                let mut client = WatchClient::new(channel);
                match tokio::time::timeout(attempt_timeout, client.watch(request.clone())).await {
                    Err(_) => Err(Status::deadline_exceeded(format!(
                        "no answer within {} ms",
                        attempt_timeout.as_millis()
                    ))),
                    // A compacted start is final: hand it out unmapped.
                    Ok(Err(s)) if compacted(&s).is_some() => Ok(Err(s)),
                    Ok(Err(s)) => Err(s),
                    Ok(Ok(r)) => Ok(Ok(r)),
                }
            })
            .await?;
        let response = match opened {
            Ok(r) => r,
            Err(s) => {
                return Err(
                    compacted(&s).unwrap_or(WatchError::Client(ClientError::from_status(&s)))
                )
            }
        };
        if self.resume_index == 0 {
            // "From now": pin "now" so a reconnect leaves no gap.
            self.resume_index = response
                .metadata()
                .get(START_INDEX_METADATA)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        }
        self.received_at_resume = 0;
        self.stream = Some(response.into_inner());
        Ok(())
    }

    /// The next event; reconnects (to any endpoint, within the client's
    /// deadline) when the node goes away. `None` never happens while the
    /// cluster serves; an error ends the watch.
    pub async fn next(&mut self) -> Result<WatchEvent, WatchError> {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                self.connect().await?;
                continue;
            };
            let status = match stream.message().await {
                Ok(Some(e)) => {
                    if e.index == self.resume_index {
                        self.received_at_resume += 1;
                        if self.received_at_resume <= self.seen_at_resume {
                            // Already returned before the reconnect.
                            continue;
                        }
                        self.seen_at_resume = self.received_at_resume;
                    } else {
                        self.resume_index = e.index;
                        self.received_at_resume = 1;
                        self.seen_at_resume = 1;
                    }
                    return Ok(WatchEvent::from(e));
                }
                // The node closed the stream (shutting down): go elsewhere.
                Ok(None) => Status::unavailable("watch stream ended"),
                Err(s) => s,
            };
            if let Some(c) = compacted(&status) {
                return Err(c);
            }
            if disposition(&status) == Disposition::Fatal {
                return Err(WatchError::Client(ClientError::from_status(&status)));
            }
            tracing::debug!(error = %status, resume = self.resume_index, "watch stream lost; reconnecting");
            self.stream = None;
            // Let a restarting cluster settle a little between full reconnects.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
