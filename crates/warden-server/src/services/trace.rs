//! One `tracing` span per public gRPC request, opened at the edge (tonic's
//! `Server::trace_fn`, before any service runs), so every line a request's
//! handler logs names it:
//!
//! - `method`: the gRPC path (`/warden.v1.Lock/Acquire`);
//! - `principal`: the caller's principal from its verified TLS handshake
//!   (as `services::principal` derives it; `anonymous` for a TLS caller
//!   without a certificate; left empty on a plaintext connection);
//! - `resource`: the lock the request names, recorded by the handler
//!   ([`record_resource`]) once the message is decoded;
//! - `client_id`, `request_id`: the request header's ids, recorded when the
//!   header is read ([`record_request`]); together they name a mutating
//!   request (docs/semantics.md S7).
//!
//! The peer (Raft) service gets no span: it carries ~20 calls a second per
//! peer, and its failures are summarised per peer by `raft::network`.
//! Nothing here reads a certificate's key or a request's payload beyond the
//! fields above.

use tonic::codegen::http;
use warden_tls::{Identity, PeerInfo};

use super::node_principal;

/// The path prefix of the internal peer service (no span).
const PEER_SERVICE_PREFIX: &str = "/warden.peer.";

/// The span of one request (see the module docs); `Span::none()` for the
/// peer service.
pub fn request_span(req: &http::Request<()>) -> tracing::Span {
    let method = req.uri().path();
    if method.starts_with(PEER_SERVICE_PREFIX) {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "request",
        method,
        principal = tracing::field::Empty,
        resource = tracing::field::Empty,
        client_id = tracing::field::Empty,
        request_id = tracing::field::Empty,
    );
    // Disabled (the level filtered out): nothing to name, nothing to build.
    if span.is_disabled() {
        return span;
    }
    match req.extensions().get::<PeerInfo>().map(PeerInfo::identity) {
        None => {}
        Some(Identity::Anonymous) => {
            span.record("principal", "anonymous");
        }
        Some(Identity::Client { principal }) => {
            span.record("principal", principal.as_str());
        }
        Some(Identity::Node { node_id }) => {
            span.record("principal", node_principal(*node_id).as_str());
        }
    }
    span
}

/// Records the resource a request names on the current request span (a
/// no-op outside one, e.g. on a spawned stream task).
pub fn record_resource(resource: &str) {
    if !resource.is_empty() {
        tracing::Span::current().record("resource", resource);
    }
}

/// Records a request header's ids on the current request span.
pub fn record_request(client_id: u64, request_id: u64) {
    let span = tracing::Span::current();
    span.record("client_id", client_id);
    span.record("request_id", request_id);
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// Captures what the fmt layer writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    // docs/operations.md "Logs": a line logged while a request is served
    // names its method, resource and request ids; a plaintext caller has
    // no principal field; the peer service gets no span.
    #[test]
    fn a_request_span_names_method_resource_and_ids() {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_writer(move || writer.clone()),
        );
        tracing::subscriber::with_default(subscriber, || {
            let req = http::Request::builder()
                .uri("/warden.v1.Lock/Acquire")
                .body(())
                .unwrap();
            let span = request_span(&req);
            let _entered = span.enter();
            record_resource("orders");
            record_request(7, 42);
            tracing::info!("inside");
            drop(_entered);
            let peer = http::Request::builder()
                .uri("/warden.peer.v1.Peer/AppendEntries")
                .body(())
                .unwrap();
            assert!(request_span(&peer).is_none());
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.contains(
                "request{method=\"/warden.v1.Lock/Acquire\" resource=\"orders\" client_id=7 request_id=42}"
            ),
            "{text}"
        );
        assert!(!text.contains("principal"), "{text}");
    }
}
