//! [`ClientError`]: every way a call can fail, and the one place where gRPC
//! statuses are mapped to it.

use std::error::Error as _;

use tonic::{Code, Status};

/// Why a call failed.
///
/// Errors the server chose ([`InvalidArgument`](Self::InvalidArgument),
/// [`NotFound`](Self::NotFound), [`FailedPrecondition`](Self::FailedPrecondition),
/// [`ResourceExhausted`](Self::ResourceExhausted),
/// [`RequestExpired`](Self::RequestExpired)) keep the server's message, which
/// names the field and the limit; nothing in the lock table changed. They are
/// never retried. [`NoQuorum`](Self::NoQuorum) and
/// [`Unavailable`](Self::Unavailable) come only after the client kept retrying
/// (following the leader, then the other endpoints) until the caller's
/// deadline ran out (docs/semantics.md L3: a call never hangs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The request was refused as malformed or out of bounds (gRPC
    /// `InvalidArgument` or `OutOfRange`), or a client-side argument was bad.
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// The field at fault, as the server named it in the status's
        /// `google.rpc.BadRequest` details (`ttl_ms`, `resource`, ...), or
        /// the client's own option; `None` when neither says.
        field: Option<String>,
        /// The server's message: names the field and the limit.
        message: String,
    },
    /// An endpoint string could not be parsed as `host:port`.
    #[error("invalid endpoint {endpoint:?}: {message}")]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        message: String,
    },
    /// The TLS files of [`ClientOptions::tls`](crate::ClientOptions::tls)
    /// cannot be used: missing, unreadable, not PEM, a key that is not the
    /// certificate's, a certificate not signed by a CA in `ca.crt`, expired
    /// or not yet valid, not a client certificate, or a user name that is
    /// not a principal. Found by [`Client::connect`](crate::Client::connect)
    /// before anything is sent.
    #[error("TLS: {message}")]
    Tls {
        /// The file at fault (for a key that does not match, the key; for
        /// rustls refusing the set, the certs dir); `None` when the user
        /// name itself is refused.
        file: Option<std::path::PathBuf>,
        /// What is wrong, naming the file (or `user`) first.
        message: String,
    },
    /// The lease or resource named does not exist (gRPC `NotFound`), e.g. a
    /// lease that expired or was released.
    #[error("not found: {message}")]
    NotFound {
        /// The server's message.
        message: String,
    },
    /// The request does not fit the current state (gRPC
    /// `FailedPrecondition`), e.g. a stale fencing token or another holder
    /// (docs/semantics.md S6).
    #[error("failed precondition: {message}")]
    FailedPrecondition {
        /// The server's message.
        message: String,
    },
    /// The serving node refuses the caller this call (gRPC
    /// `PermissionDenied`), e.g. a membership change or a forced release on a
    /// node started without `--allow-admin`.
    #[error("permission denied: {message}")]
    PermissionDenied {
        /// The server's message: names what is refused and how to allow it.
        message: String,
    },
    /// The node does not know who is calling (gRPC `Unauthenticated`): a
    /// secure node reached without a client certificate (e.g. a client
    /// without [`ClientOptions::tls`](crate::ClientOptions::tls)).
    /// Nothing was done.
    #[error("unauthenticated: {message}")]
    Unauthenticated {
        /// The server's message.
        message: String,
    },
    /// A table or counter is full (gRPC `ResourceExhausted`).
    #[error("resource exhausted: {message}")]
    ResourceExhausted {
        /// The server's message: names the table and its bound.
        message: String,
    },
    /// The server no longer remembers the outcome of this retried request
    /// (its status message starts with `request_expired`). The request may or
    /// may not have taken effect; it was not executed twice (docs/semantics.md S7).
    #[error("request expired: {message}")]
    RequestExpired {
        /// The server's message.
        message: String,
    },
    /// Servers answered, but none of them could serve the call before the
    /// deadline: no leader was elected or no quorum was reachable
    /// (docs/semantics.md L3).
    #[error(
        "no quorum: no leader served the call within {waited_ms} ms (tried {}); last error: {last_error}",
        tried.join(", ")
    )]
    NoQuorum {
        /// Every address tried, in order of first attempt.
        tried: Vec<String>,
        /// How long the client kept trying, in milliseconds.
        waited_ms: u64,
        /// The last failure seen, prefixed with the address it came from.
        last_error: String,
    },
    /// No server could be reached before the deadline (connection refused,
    /// timeouts).
    #[error(
        "unavailable: no server reachable after trying for {waited_ms} ms (tried {}); last error: {last_error}",
        tried.join(", ")
    )]
    Unavailable {
        /// Every address tried, in order of first attempt.
        tried: Vec<String>,
        /// How long the client kept trying, in milliseconds.
        waited_ms: u64,
        /// The last failure seen, prefixed with the address it came from.
        last_error: String,
    },
    /// A call that is not repeated once it may have reached the leader (a
    /// membership change: it carries no request id, so the server cannot
    /// recognise a second attempt, S7) failed without a final answer: the
    /// attempt timed out, its connection dropped, or the leader answered
    /// `Unavailable` without naming another leader (e.g. "the membership
    /// change did not commit within 10 s"). The change may or may not have
    /// been applied: look (`warden cluster status`) before trying again.
    #[error(
        "outcome unknown: {last_error} (tried {}); the change may or may not have been applied: check before trying again",
        tried.join(", ")
    )]
    OutcomeUnknown {
        /// Every address tried, in order of first attempt.
        tried: Vec<String>,
        /// The failure that ended the call, prefixed with the address it came from.
        last_error: String,
    },
    /// The [`Session`](crate::Session) the call depends on is lost (S5): its
    /// locks can no longer be trusted. Open a new session.
    #[error("{reason}")]
    SessionLost {
        /// Why.
        reason: crate::Lost,
    },
    /// A snapshot stream ([`Admin::save_snapshot`](crate::Admin::save_snapshot))
    /// was refused after it started: cut off before its last message, more
    /// or fewer bytes than it declared, a declared length or a message above
    /// its bound, or a transfer that failed or stalled mid-way. Nothing of
    /// it is returned; saving again takes a new snapshot.
    #[error("snapshot stream: {error}")]
    SnapshotStream {
        /// What was wrong, naming the field and the limit.
        error: crate::SnapshotStreamError,
    },
    /// The server or the transport failed in a way the client does not retry
    /// (an unexpected gRPC code, a malformed reply).
    #[error("transport: {message}")]
    Transport {
        /// What went wrong, with the gRPC code when there was one.
        message: String,
    },
}

/// What the retry loop does with a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// Try again (leader hint, next endpoint or backoff), same request id.
    Retry,
    /// Give up: the server's answer is final.
    Fatal,
}

/// Whether a failed attempt may be retried. Retrying a mutating request is
/// safe because it reuses its request id (docs/semantics.md S7).
pub(crate) fn disposition(status: &Status) -> Disposition {
    match status.code() {
        Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded | Code::Aborted => {
            Disposition::Retry
        }
        // A broken connection or stream surfaces as Unknown/Internal with a
        // transport error as its source; a server-chosen status has none.
        Code::Unknown | Code::Internal if status.source().is_some() => Disposition::Retry,
        Code::Unknown | Code::Internal if status.message().starts_with("h2 protocol error") => {
            Disposition::Retry
        }
        Code::Unknown
            if status
                .message()
                .starts_with("protocol error: missing grpc-status") =>
        {
            Disposition::Retry
        }
        // Not a Warden node (another HTTP/2 service answered, e.g. with 404):
        // try the next endpoint rather than give up. Warden itself answers
        // Unimplemented only to `Calls` on a version from before it, which
        // `Client::first_answer` handles (unary calls) before this.
        Code::Unimplemented => Disposition::Retry,
        _ => Disposition::Fatal,
    }
}

/// True when the server itself answered `Unavailable` (not leader, no
/// quorum), as opposed to the transport failing to reach it.
pub(crate) fn is_server_unavailable(status: &Status) -> bool {
    status.code() == Code::Unavailable && status.source().is_none()
}

/// True when a failed attempt certainly did nothing on the cluster, so that
/// even a call without a request id may be repeated: the connection to the
/// node never opened (refused, or the connect timed out: the request was
/// never sent); the node redirected to the leader (`Unavailable` naming it in
/// `warden-leader`: a node that is not the leader, or a leader that handed
/// leadership over before changing anything, acts on nothing); or the node
/// does not serve the method (`Unimplemented`). Anything else (an attempt
/// that timed out, a dropped connection, `Unavailable` without a redirect)
/// may have been applied.
pub(crate) fn certainly_not_acted(status: &Status) -> bool {
    match status.code() {
        Code::Unimplemented => true,
        Code::Unavailable if is_server_unavailable(status) => {
            crate::routing::leader_hint(status.metadata()).is_some()
        }
        _ => never_connected(status),
    }
}

/// True when the status comes from a connection that never opened: its
/// source chain holds tonic's `ConnectError` (refused, unreachable) or the
/// connect timeout's `TimedOut` (tonic wraps the connector in one).
pub(crate) fn never_connected(status: &Status) -> bool {
    let mut source = status.source();
    while let Some(e) = source {
        if e.is::<tonic::ConnectError>() {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            let connect_timeout = io.kind() == std::io::ErrorKind::TimedOut
                && io
                    .get_ref()
                    .is_some_and(|inner| inner.is::<tokio::time::error::Elapsed>());
            if connect_timeout {
                return true;
            }
        }
        source = e.source();
    }
    false
}

/// A short description of a failed attempt for [`ClientError::NoQuorum`] and
/// [`ClientError::Unavailable`].
/// A transport failure's status says only "transport error": the reason
/// (a refused TLS handshake, with rustls' verdict; a closed connection) is
/// the innermost error of its source chain, which is added.
pub(crate) fn describe(status: &Status) -> String {
    let message = status.message();
    let mut text = if message.is_empty() {
        format!("{:?}", status.code())
    } else {
        format!("{:?}: {message}", status.code())
    };
    let cause = causes(status).last().map(|e| {
        let elapsed = e.is::<tokio::time::error::Elapsed>()
            || e.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|inner| inner.is::<tokio::time::error::Elapsed>());
        if elapsed {
            // tonic's connect timeout (the endpoint's, = attempt_timeout).
            "no connection within the connect timeout".to_string()
        } else {
            e.to_string()
        }
    });
    if let Some(cause) = cause {
        if !cause.is_empty() && !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    if let Some(hint) = not_warden_hint(status) {
        text.push_str(" (");
        text.push_str(hint);
        text.push(')');
    }
    text
}

/// Whether the attempt failed because the node refused the TCP connection
/// (nothing listens on the port): an `io::Error` of kind
/// `ConnectionRefused` anywhere in the status's source chain (tonic's
/// plaintext connector and warden-tls' both keep it).
pub(crate) fn connection_refused(status: &Status) -> bool {
    causes(status).any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// What a transport failure says about the server, for a reader: a port
/// that answered the TLS handshake with plaintext (warden-tls' typed
/// [`warden_tls::ConnectError::is_not_tls`]). `None` otherwise: a status
/// from a server, or a failure that names its own cause (a TLS alert, a
/// closed connection), where a guess would mislead.
fn not_warden_hint(status: &Status) -> Option<&'static str> {
    not_tls(status).then_some(
            "the port does not speak TLS: a node started with --insecure (then pass --insecure), or not a Warden node",
        )
}

/// Whether the TLS handshake got plaintext back (warden-tls' typed
/// [`warden_tls::ConnectError::is_not_tls`]): no Warden node with
/// certificates is on that port.
pub(crate) fn not_tls(status: &Status) -> bool {
    causes(status)
        .filter_map(|e| e.downcast_ref::<warden_tls::ConnectError>())
        .any(warden_tls::ConnectError::is_not_tls)
}

/// The status's source chain, outermost first (empty for a status a
/// server sent).
fn causes(status: &Status) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    std::iter::successors(status.source(), |&e| e.source())
}

/// The `google.rpc.ErrorInfo` domain of Warden's errors.
pub const ERROR_DOMAIN: &str = "warden.v1";

impl ClientError {
    /// True for the server's (or the client's own) refusal of a request:
    /// the request changed nothing, so it left no waiter behind (bad input,
    /// not found, failed precondition, permission, quota, an expired
    /// request id, bad TLS files or endpoints).
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(
            self,
            ClientError::InvalidArgument { .. }
                | ClientError::InvalidEndpoint { .. }
                | ClientError::Tls { .. }
                | ClientError::NotFound { .. }
                | ClientError::FailedPrecondition { .. }
                | ClientError::PermissionDenied { .. }
                | ClientError::Unauthenticated { .. }
                | ClientError::ResourceExhausted { .. }
                | ClientError::RequestExpired { .. }
        )
    }

    /// Maps a final (non-retried) gRPC status to a typed error, keeping the
    /// server's message.
    ///
    /// The kind is read from the status's structured details where the
    /// server attached them (`google.rpc.ErrorInfo` reason, domain
    /// `warden.v1`; `google.rpc.BadRequest` field), never from its text;
    /// a status without details (an older server, a proxy) falls back to
    /// its code.
    pub(crate) fn from_status(status: &Status) -> ClientError {
        use tonic_types::StatusExt as _;
        let message = status.message().to_string();
        let details = status.get_error_details();
        let reason = details
            .error_info()
            .filter(|info| info.domain == ERROR_DOMAIN)
            .map(|info| info.reason.as_str());
        if reason == Some("REQUEST_EXPIRED") {
            return ClientError::RequestExpired { message };
        }
        match status.code() {
            Code::InvalidArgument | Code::OutOfRange => ClientError::InvalidArgument {
                field: details
                    .bad_request()
                    .and_then(|b| b.field_violations.first())
                    .map(|v| v.field.clone()),
                message,
            },
            Code::NotFound => ClientError::NotFound { message },
            Code::FailedPrecondition => ClientError::FailedPrecondition { message },
            Code::ResourceExhausted => ClientError::ResourceExhausted { message },
            Code::PermissionDenied => ClientError::PermissionDenied { message },
            Code::Unauthenticated => ClientError::Unauthenticated { message },
            code => ClientError::Transport {
                message: if message.is_empty() {
                    format!("{code:?}")
                } else {
                    format!("{code:?}: {message}")
                },
            },
        }
    }

    /// True for [`NoQuorum`](Self::NoQuorum) and
    /// [`Unavailable`](Self::Unavailable): the cluster could not serve the call
    /// in time, and trying again later may succeed.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            ClientError::NoQuorum { .. } | ClientError::Unavailable { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "What bad input gets": the server's message (naming the field and limit) survives the mapping.
    #[test]
    fn server_codes_map_to_typed_errors_keeping_the_message() {
        let e = ClientError::from_status(&Status::invalid_argument("ttl_ms: 10 is below 1000"));
        assert_eq!(
            e,
            ClientError::InvalidArgument {
                field: None,
                message: "ttl_ms: 10 is below 1000".into()
            }
        );
        // With details, the field comes from BadRequest and the kind from
        // ErrorInfo, whatever the text says.
        let mut details = tonic_types::ErrorDetails::with_error_info(
            "INVALID_ARGUMENT",
            ERROR_DOMAIN,
            std::collections::HashMap::<String, String>::new(),
        );
        details.add_bad_request_violation("wait_timeout_ms", "at most 1 h");
        let status = {
            use tonic_types::StatusExt as _;
            Status::with_error_details(Code::InvalidArgument, "no field here", details)
        };
        assert_eq!(
            ClientError::from_status(&status),
            ClientError::InvalidArgument {
                field: Some("wait_timeout_ms".into()),
                message: "no field here".into()
            }
        );
        let expired = {
            use tonic_types::StatusExt as _;
            Status::with_error_details(
                Code::FailedPrecondition,
                "request 3 is below the acknowledged watermark",
                tonic_types::ErrorDetails::with_error_info(
                    "REQUEST_EXPIRED",
                    ERROR_DOMAIN,
                    std::collections::HashMap::<String, String>::new(),
                ),
            )
        };
        assert!(matches!(
            ClientError::from_status(&expired),
            ClientError::RequestExpired { .. }
        ));
        assert!(matches!(
            ClientError::from_status(&Status::not_found("lease 7")),
            ClientError::NotFound { .. }
        ));
        assert!(matches!(
            ClientError::from_status(&Status::failed_precondition("stale fencing_token")),
            ClientError::FailedPrecondition { .. }
        ));
        assert!(matches!(
            ClientError::from_status(&Status::resource_exhausted("waiters: 10000")),
            ClientError::ResourceExhausted { .. }
        ));
        assert!(matches!(
            ClientError::from_status(&Status::permission_denied("start with --allow-admin")),
            ClientError::PermissionDenied { .. }
        ));
        assert_eq!(
            ClientError::from_status(&Status::unauthenticated("no client certificate")),
            ClientError::Unauthenticated {
                message: "no client certificate".into()
            }
        );
        assert_eq!(
            disposition(&Status::unauthenticated("no client certificate")),
            Disposition::Fatal
        );
        assert!(matches!(
            ClientError::from_status(&Status::internal("boom")),
            ClientError::Transport { .. }
        ));
    }

    // S7 for calls without a request id (membership): only an attempt that
    // certainly did nothing may be repeated. A redirect naming the leader
    // did nothing; a timeout, or "no quorum" without a redirect, may have
    // applied the change.
    #[test]
    fn only_a_redirect_or_a_connection_that_never_opened_certainly_did_nothing() {
        let mut redirect = Status::unavailable("not the leader; the leader is node 2");
        redirect.metadata_mut().insert(
            warden_proto::LEADER_METADATA,
            tonic::metadata::MetadataValue::from_static("127.0.0.1:7002"),
        );
        assert!(certainly_not_acted(&redirect));
        assert!(certainly_not_acted(&Status::unimplemented(
            "no such method"
        )));
        for may_have_applied in [
            Status::unavailable("the membership change did not commit within 10 s"),
            Status::unavailable("no quorum: no leader is known"),
            Status::deadline_exceeded("no answer within 45000 ms"),
            Status::cancelled("Timeout expired"),
            Status::unknown("h2 protocol error: connection reset"),
        ] {
            assert!(
                !certainly_not_acted(&may_have_applied),
                "{may_have_applied:?}"
            );
        }
        let refused = Status::from_error(Box::new(tonic::ConnectError(Box::new(
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        ))));
        assert_eq!(refused.code(), Code::Unavailable);
        assert!(certainly_not_acted(&refused), "{refused:?}");
    }

    // L3's final error must say why: a transport failure's status says
    // only "transport error"; the innermost cause (rustls' verdict, a
    // closed connection, the connect timeout) is added once.
    #[test]
    fn a_transport_failure_is_described_with_its_innermost_cause() {
        #[derive(Debug)]
        struct Transport(std::io::Error);
        impl std::fmt::Display for Transport {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("transport error")
            }
        }
        impl std::error::Error for Transport {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let broken = Status::from_error(Box::new(Transport(std::io::Error::other(
            "received fatal alert: UnknownCA",
        ))));
        assert_eq!(
            describe(&broken),
            "Unknown: transport error: received fatal alert: UnknownCA"
        );
        let already_said = Status::unavailable("TLS handshake failed: UnknownIssuer");
        assert_eq!(
            describe(&already_said),
            "Unavailable: TLS handshake failed: UnknownIssuer"
        );
    }

    // S7: a retry whose outcome record is gone is reported as RequestExpired
    // whatever the code, told by its ErrorInfo reason; the text alone
    // decides nothing.
    #[test]
    fn request_expired_is_recognised_by_its_error_info() {
        use tonic_types::StatusExt as _;
        let expired = |code| {
            Status::with_error_details(
                code,
                "request 3 of client 9",
                tonic_types::ErrorDetails::with_error_info(
                    "REQUEST_EXPIRED",
                    ERROR_DOMAIN,
                    std::collections::HashMap::<String, String>::new(),
                ),
            )
        };
        for status in [
            expired(Code::FailedPrecondition),
            expired(Code::InvalidArgument),
        ] {
            assert!(matches!(
                ClientError::from_status(&status),
                ClientError::RequestExpired { .. }
            ));
        }
        assert!(matches!(
            ClientError::from_status(&Status::failed_precondition("request_expired: no details")),
            ClientError::FailedPrecondition { .. }
        ));
    }

    // L3: not-leader/no-quorum answers are retried; a server's refusal is final.
    #[test]
    fn unavailable_is_retried_and_refusals_are_final() {
        assert_eq!(
            disposition(&Status::unavailable("not leader")),
            Disposition::Retry
        );
        assert_eq!(
            disposition(&Status::deadline_exceeded("attempt timed out")),
            Disposition::Retry
        );
        assert_eq!(
            disposition(&Status::invalid_argument("resource")),
            Disposition::Fatal
        );
        assert_eq!(
            disposition(&Status::failed_precondition("held")),
            Disposition::Fatal
        );
        assert!(is_server_unavailable(&Status::unavailable("no leader")));
    }

    // L3: the final error names every address tried.
    #[test]
    fn no_quorum_names_what_was_tried() {
        let e = ClientError::NoQuorum {
            tried: vec!["a:1".into(), "b:2".into()],
            waited_ms: 5000,
            last_error: "b:2: Unavailable: no leader".into(),
        };
        let text = e.to_string();
        assert!(text.contains("a:1, b:2"), "{text}");
        assert!(text.contains("5000 ms"), "{text}");
        assert!(e.is_unavailable());
    }
}
