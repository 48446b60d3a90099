//! Plain-HTTP glue (axum 0.8).
//!
//! - [`ClaimHeaders`] and [`FencingHeaders`] are extractors: a handler that
//!   takes one gets 400 (JSON `{"error": ..., "header": ...}`) when a header
//!   is missing or malformed. [`ClaimHeaders`] reads `warden-slot` and
//!   `warden-lock-mode` too, giving the [`crate::Claim`] to check by its
//!   kind's rule; [`FencingHeaders`] is a plain token (the mutex rule) and
//!   refuses, with 400 naming the header, a request whose slot or mode asks
//!   for another rule, so a handler written before permits and shared grants
//!   existed never fences them by the wrong rule.
//! - [`FenceError`] is a response: `Stale` is 409 Conflict with
//!   `{"error":"stale token","resource":R,"presented":T,"highest":H}`;
//!   `StaleAt` adds the bound that refused it, `"bound":"slot","slot":N` or
//!   `"bound":"exclusive"`.
//! - [`enforce`] is a middleware (`axum::middleware::from_fn_with_state`)
//!   that fences every request it wraps by the rule its headers ask for, for
//!   a service you own whose handlers you do not want to change. It
//!   serialises requests per resource (readers' and every slot's included)
//!   and holds that resource's turn until the handler returns, so a stale
//!   request can never be checked before and write after a newer one: the
//!   wrapped handler must finish its write before it returns. When the write
//!   lives in a database, prefer recording the token in the write's own
//!   transaction ([`crate::RedbStore::check_claim_and_write`], or the SQL
//!   recipes in `docs/fencing.md`).
//! - [`client`]: a minimal HTTP/1.1 client for demos and tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::fence::{Bound, Fence, FenceError, FenceStore, Kind};
use crate::wire::{from_http_claim, ClaimHeaders, FencingHeaders, HeaderError};
use crate::wire::{MODE_HEADER, SLOT_HEADER};

/// A JSON response.
pub fn json(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

impl IntoResponse for HeaderError {
    fn into_response(self) -> Response {
        let header = match &self {
            HeaderError::Missing { header } | HeaderError::Malformed { header, .. } => *header,
        };
        json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({ "error": self.to_string(), "header": header }),
        )
    }
}

impl IntoResponse for FenceError {
    fn into_response(self) -> Response {
        match self {
            FenceError::Stale {
                resource,
                presented,
                highest,
            } => json(
                StatusCode::CONFLICT,
                serde_json::json!({
                    "error": "stale token",
                    "resource": resource,
                    "presented": presented,
                    "highest": highest,
                }),
            ),
            FenceError::StaleAt {
                resource,
                bound,
                presented,
                highest,
            } => {
                let mut body = serde_json::json!({
                    "error": "stale token",
                    "resource": resource,
                    "presented": presented,
                    "highest": highest,
                });
                match bound {
                    Bound::Slot(slot) => {
                        body["bound"] = "slot".into();
                        body["slot"] = slot.into();
                    }
                    Bound::Exclusive => body["bound"] = "exclusive".into(),
                }
                json(StatusCode::CONFLICT, body)
            }
            FenceError::Invalid(message) => json(
                StatusCode::BAD_REQUEST,
                serde_json::json!({ "error": message }),
            ),
            FenceError::Store(message) => json(
                StatusCode::INTERNAL_SERVER_ERROR,
                serde_json::json!({ "error": "fence store failure", "detail": message }),
            ),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClaimHeaders {
    type Rejection = HeaderError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        from_http_claim(&parts.headers)
    }
}

/// A plain token: 400 naming `warden-slot` or `warden-lock-mode` when the
/// request asks for the permit or the shared rule (take [`ClaimHeaders`]
/// to serve those).
impl<S: Send + Sync> FromRequestParts<S> for FencingHeaders {
    type Rejection = HeaderError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let ClaimHeaders { resource, claim } = from_http_claim(&parts.headers)?;
        let header = match claim.kind {
            Kind::Exclusive => {
                return Ok(FencingHeaders {
                    resource,
                    token: claim.token,
                })
            }
            Kind::Shared => MODE_HEADER,
            Kind::Permit { .. } => SLOT_HEADER,
        };
        Err(HeaderError::Malformed {
            header,
            reason: "this endpoint fences plain (exclusive) tokens only".into(),
        })
    }
}

/// The state of [`enforce`]: a fence and one turn per resource.
pub struct Enforcer<S> {
    inner: Arc<EnforcerInner<S>>,
}

struct EnforcerInner<S> {
    fence: Fence<S>,
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl<S> Clone for Enforcer<S> {
    fn clone(&self) -> Self {
        Enforcer {
            inner: self.inner.clone(),
        }
    }
}

impl<S: FenceStore + 'static> Enforcer<S> {
    /// An enforcer over `fence`.
    pub fn new(fence: Fence<S>) -> Self {
        Enforcer {
            inner: Arc::new(EnforcerInner {
                fence,
                turns: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The fence.
    pub fn fence(&self) -> &Fence<S> {
        &self.inner.fence
    }

    fn turn(&self, resource: &str) -> Result<Arc<tokio::sync::Mutex<()>>, FenceError> {
        let mut turns = self
            .inner
            .turns
            .lock()
            .map_err(|_| FenceError::Store("turn table poisoned".into()))?;
        Ok(turns.entry(resource.to_string()).or_default().clone())
    }

    fn forget_turn(&self, resource: &str, turn: Arc<tokio::sync::Mutex<()>>) {
        if let Ok(mut turns) = self.inner.turns.lock() {
            // Clones are taken only under this mutex: 2 = the map's and ours.
            if Arc::strong_count(&turn) == 2 {
                turns.remove(resource);
            }
        }
    }
}

/// Middleware: 400 without valid fencing headers, 409 for a stale token
/// (by the rule of the request's slot or mode: [`ClaimHeaders`]), otherwise
/// records the token and runs the wrapped handler while holding the
/// resource's turn.
///
/// ```no_run
/// use axum::{routing::put, Router};
/// use warden_fence::http::{enforce, Enforcer};
/// use warden_fence::{Fence, MemoryStore};
///
/// let enforcer = Enforcer::new(Fence::new(MemoryStore::default()));
/// let app: Router = Router::new()
///     .route("/jobs/{id}", put(|| async { "written" }))
///     .layer(axum::middleware::from_fn_with_state(enforcer, enforce::<MemoryStore>));
/// ```
pub async fn enforce<S: FenceStore + 'static>(
    State(enforcer): State<Enforcer<S>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = match from_http_claim(request.headers()) {
        Ok(h) => h,
        Err(e) => return e.into_response(),
    };
    let turn = match enforcer.turn(&headers.resource) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let response = {
        let _held = turn.lock().await;
        let check = {
            let enforcer = enforcer.clone();
            let resource = headers.resource.clone();
            // The store may fsync: keep it off the async workers.
            let claim = headers.claim;
            tokio::task::spawn_blocking(move || enforcer.fence().check_claim(&resource, claim))
                .await
                .unwrap_or_else(|e| Err(FenceError::Store(format!("check task failed: {e}"))))
        };
        match check {
            Ok(_) => next.run(request).await,
            Err(e) => e.into_response(),
        }
    };
    enforcer.forget_turn(&headers.resource, turn);
    response
}

/// A minimal HTTP/1.1 client (one request per connection), enough for the
/// demo and the tests to talk to a fenced service without another dependency.
pub mod client {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::fence::{Claim, Kind};
    use crate::wire::{MODE_HEADER, RESOURCE_HEADER, SLOT_HEADER, TOKEN_HEADER};

    /// A reply: status code and body.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Reply {
        /// The HTTP status code.
        pub status: u16,
        /// The body, as (lossy) UTF-8.
        pub body: String,
    }

    impl Reply {
        /// The body as JSON (`Null` when it is not JSON).
        pub fn json(&self) -> serde_json::Value {
            serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
        }
    }

    fn invalid(message: String) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, message)
    }

    /// Sends one request to `addr` (`host:port`) and reads the whole reply,
    /// within `timeout`.
    pub async fn request(
        addr: &str,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
        timeout: Duration,
    ) -> std::io::Result<Reply> {
        let work = async {
            let mut stream = TcpStream::connect(addr).await?;
            let mut head = format!(
                "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
                body.len()
            );
            for (name, value) in headers {
                if value.contains(['\r', '\n']) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("header {name}: contains a line break"),
                    ));
                }
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body).await?;
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).await?;
            parse_reply(&raw)
        };
        tokio::time::timeout(timeout, work).await.map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{method} {path} to {addr}: no reply within {timeout:?}"),
            )
        })?
    }

    fn parse_reply(raw: &[u8]) -> std::io::Result<Reply> {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| invalid("reply has no header end".into()))?;
        let head = String::from_utf8_lossy(&raw[..split]);
        let status = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| invalid(format!("bad status line in {head:?}")))?;
        if head.lines().any(|l| {
            l.to_ascii_lowercase()
                .starts_with("transfer-encoding: chunked")
        }) {
            return Err(invalid("chunked replies are not supported".into()));
        }
        Ok(Reply {
            status,
            body: String::from_utf8_lossy(&raw[split + 4..]).into_owned(),
        })
    }

    /// `PUT /kv/{key}` with the fencing headers and `value` as the body.
    pub async fn put(
        addr: &str,
        key: &str,
        resource: &str,
        token: u64,
        value: &[u8],
    ) -> std::io::Result<Reply> {
        put_claim(addr, key, resource, Claim::exclusive(token), value).await
    }

    /// The fencing headers of `claim` on `resource`: the two plain ones,
    /// and `warden-slot` for a permit or `warden-lock-mode: shared` for a
    /// shared grant.
    pub fn claim_headers(resource: &str, claim: Claim) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            (RESOURCE_HEADER, resource.to_string()),
            (TOKEN_HEADER, claim.token.to_string()),
        ];
        match claim.kind {
            Kind::Exclusive => {}
            Kind::Shared => headers.push((MODE_HEADER, "shared".into())),
            Kind::Permit { slot } => headers.push((SLOT_HEADER, slot.to_string())),
        }
        headers
    }

    /// `PUT /kv/{key}` with the fencing headers of `claim` and `value` as
    /// the body.
    pub async fn put_claim(
        addr: &str,
        key: &str,
        resource: &str,
        claim: Claim,
        value: &[u8],
    ) -> std::io::Result<Reply> {
        check_key(key)?;
        request(
            addr,
            "PUT",
            &format!("/kv/{key}"),
            &claim_headers(resource, claim),
            value,
            Duration::from_secs(5),
        )
        .await
    }

    /// `GET /kv/{key}`.
    pub async fn get(addr: &str, key: &str) -> std::io::Result<Reply> {
        check_key(key)?;
        request(
            addr,
            "GET",
            &format!("/kv/{key}"),
            &[],
            b"",
            Duration::from_secs(5),
        )
        .await
    }

    /// Keys go into the path unencoded: letters, digits and `-._~` only.
    fn check_key(key: &str) -> std::io::Result<()> {
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("key {key:?}: use 1 or more of A-Z a-z 0-9 - . _ ~"),
            ));
        }
        Ok(())
    }
}
