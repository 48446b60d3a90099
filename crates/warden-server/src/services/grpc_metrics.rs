//! `warden_grpc_requests_total{method,code}` and
//! `warden_grpc_request_duration_seconds{method}`: a tower layer in front of
//! every gRPC service of the node (client port and peer port).
//!
//! A call's code is its `grpc-status`: from the response headers (a
//! trailers-only answer, e.g. a refusal), else from the trailers at the end
//! of the body; a body dropped before either (the caller went away) counts
//! as `Canceled`. The duration runs from receipt to that point, so a stream
//! counts its whole life. The method label is the call's path
//! (`/warden.v1.Lock/Acquire`) only when a service answered it: a path no
//! service has (answered `Unimplemented` by the router) or that is not a
//! plain `/service/method` counts as `unknown`, so no caller can add series.
//!
//! The layer also keeps each call's stream open in its connection's limits
//! (`warden_tls::PeerInfo::stream_guard`) from receipt to that same end: a
//! TLS connection with no call in progress counts as idle, and is closed
//! after the idle timeout (docs/security.md "Connection limits").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body::{Body, Frame};
use tonic::codegen::http;

use crate::metrics::Metrics;

/// The layer; see the module docs.
#[derive(Clone, Debug)]
pub struct GrpcMetrics {
    metrics: Arc<Metrics>,
}

impl GrpcMetrics {
    /// Counts into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        GrpcMetrics { metrics }
    }
}

impl<S> tower::Layer<S> for GrpcMetrics {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            metrics: self.metrics.clone(),
            inner,
        }
    }
}

/// The layered service.
#[derive(Clone, Debug)]
pub struct Counted<S> {
    metrics: Arc<Metrics>,
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for Counted<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    R: Body<Data = tonic::codegen::Bytes> + Send + Unpin + 'static,
    R::Error: Into<tonic::codegen::StdError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let call = Call {
            path: request.uri().path().to_owned(),
            started: tokio::time::Instant::now(),
            metrics: self.metrics.clone(),
            _stream: request
                .extensions()
                .get::<warden_tls::PeerInfo>()
                .map(warden_tls::PeerInfo::stream_guard),
        };
        let answer = self.inner.call(request);
        Box::pin(async move {
            let (parts, body) = answer.await?.into_parts();
            let body = match status_of(&parts.headers) {
                Some(code) => {
                    call.end(code);
                    tonic::body::Body::new(body)
                }
                None => tonic::body::Body::new(CountedBody {
                    inner: body,
                    call: Some(call),
                }),
            };
            Ok(http::Response::from_parts(parts, body))
        })
    }
}

/// One call being counted.
struct Call {
    path: String,
    started: tokio::time::Instant,
    metrics: Arc<Metrics>,
    /// Over TLS, the call's stream of its connection, open until the call
    /// ends: a connection with none is idle (`warden_tls::limits`).
    _stream: Option<warden_tls::StreamGuard>,
}

impl Call {
    fn end(self, code: tonic::Code) {
        let method = method_label(&self.path, code);
        self.metrics
            .grpc_request(method, code, Some(self.started.elapsed()));
    }
}

/// The method label of a call to `path` answered with `code` (see the
/// module docs).
pub fn method_label(path: &str, code: tonic::Code) -> &str {
    let plain = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
    };
    let well_formed = path
        .strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .is_some_and(|(service, method)| plain(service) && plain(method));
    if code == tonic::Code::Unimplemented || !well_formed {
        "unknown"
    } else {
        path
    }
}

fn status_of(headers: &http::HeaderMap) -> Option<tonic::Code> {
    let value = headers.get("grpc-status")?.to_str().ok()?;
    Some(tonic::Code::from_i32(value.parse().ok()?))
}

/// A response body that ends its call at the trailers (or when dropped).
struct CountedBody<R> {
    inner: R,
    call: Option<Call>,
}

impl<R> Drop for CountedBody<R> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            call.end(tonic::Code::Cancelled);
        }
    }
}

impl<R> Body for CountedBody<R>
where
    R: Body<Data = tonic::codegen::Bytes> + Unpin,
{
    type Data = tonic::codegen::Bytes;
    type Error = R::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let end = match &polled {
            Poll::Ready(Some(Ok(frame))) => frame
                .trailers_ref()
                .map(|t| status_of(t).unwrap_or(tonic::Code::Unknown)),
            Poll::Ready(Some(Err(_))) => Some(tonic::Code::Internal),
            Poll::Ready(None) => Some(tonic::Code::Unknown),
            Poll::Pending => None,
        };
        if let Some(code) = end {
            if let Some(call) = self.call.take() {
                call.end(code);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bounded cardinality: only a plain path that a service answered is a
    // label; anything a caller makes up is `unknown`.
    #[test]
    fn made_up_paths_are_unknown() {
        use tonic::Code;
        assert_eq!(
            method_label("/warden.v1.Lock/Acquire", Code::Ok),
            "/warden.v1.Lock/Acquire"
        );
        assert_eq!(
            method_label("/warden.v1.Lock/Acquire", Code::PermissionDenied),
            "/warden.v1.Lock/Acquire"
        );
        assert_eq!(
            method_label("/warden.v1.Lock/Nope", Code::Unimplemented),
            "unknown"
        );
        assert_eq!(method_label("/a/b/c", Code::Ok), "unknown");
        assert_eq!(method_label("/a b/c", Code::Ok), "unknown");
        assert_eq!(
            method_label(&format!("/{}/x", "s".repeat(101)), Code::Ok),
            "unknown"
        );
    }
}
