//! Failed server-side handshakes: [`HandshakeFailure`] (why, from the rustls
//! error) and [`FailureLog`], which writes one `warn` line per failure but at
//! most one line per reason per interval (1 s), the next line saying how
//! many were suppressed meanwhile. A scanner hammering the port therefore
//! costs a few lines per second, not one per connection. Lines name the
//! remote address and the reason; they carry rustls' error text, which never
//! contains key material.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::deny::Denied;
use crate::identity::IdentityError;

/// At most one line per reason per this interval.
pub const LOG_INTERVAL: Duration = Duration::from_secs(1);

/// Why a handshake failed, as logged (`reason = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandshakeFailure {
    /// The peer's certificate does not chain to a CA in `ca.crt`.
    UnknownCa,
    /// The peer's certificate is past its notAfter.
    Expired,
    /// The peer's certificate is before its notBefore.
    NotYetValid,
    /// The peer's certificate is not for this use (extended key usage).
    WrongUsage,
    /// The peer's certificate verified but carries no usable identity
    /// ([`crate::identity`]).
    BadIdentity,
    /// The peer's certificate is for another cluster (or names none where
    /// this node's names one).
    OtherCluster,
    /// The peer's certificate is on the deny list ([`crate::deny`]): its
    /// serial, or a client's principal.
    Denied,
    /// Another certificate problem (encoding, signature, ...).
    BadCertificate,
    /// Not a TLS client hello (plain HTTP, garbage).
    NotTls,
    /// TLS, but nothing in common (an older version, no shared cipher).
    Incompatible,
    /// No ALPN protocol in common.
    NoAlpn,
    /// The peer sent an alert (for instance it rejected our certificate).
    PeerAlert,
    /// No handshake within the timeout.
    Timeout,
    /// Too many handshakes in progress: the connection was closed at once,
    /// or it lost its slot to a source holding fewer.
    TooMany,
    /// Its source had too many handshakes in progress: the oldest of them
    /// was closed.
    SourceBudget,
    /// Too many connections (of its principal, or in all) with none idle:
    /// closed after its handshake.
    ConnectionLimit,
    /// Idle connections closed (logged at info, rate-limited).
    Idle,
    /// Accepting the TCP connection failed.
    Accept,
    /// The peer closed the connection during the handshake (port probes,
    /// TCP health checks): logged at debug, not warn.
    Closed,
    /// Anything else.
    Other,
}

impl HandshakeFailure {
    /// The reason as logged.
    pub fn as_str(self) -> &'static str {
        match self {
            HandshakeFailure::UnknownCa => "certificate not signed by a trusted CA",
            HandshakeFailure::Expired => "certificate expired",
            HandshakeFailure::NotYetValid => "certificate not yet valid",
            HandshakeFailure::WrongUsage => "certificate not for this use",
            HandshakeFailure::BadIdentity => "certificate carries no valid identity",
            HandshakeFailure::OtherCluster => "certificate of another cluster",
            HandshakeFailure::Denied => "certificate denied (revoked)",
            HandshakeFailure::BadCertificate => "bad certificate",
            HandshakeFailure::NotTls => "not TLS",
            HandshakeFailure::Incompatible => "no TLS version or cipher suite in common",
            HandshakeFailure::NoAlpn => "no ALPN protocol in common",
            HandshakeFailure::PeerAlert => "peer sent an alert",
            HandshakeFailure::Timeout => "handshake timed out",
            HandshakeFailure::TooMany => "too many handshakes in progress",
            HandshakeFailure::SourceBudget => "too many handshakes from one source",
            HandshakeFailure::ConnectionLimit => "connection limit reached",
            HandshakeFailure::Idle => "idle connection closed",
            HandshakeFailure::Accept => "accept failed",
            HandshakeFailure::Closed => "closed during handshake",
            HandshakeFailure::Other => "handshake failed",
        }
    }

    /// Classifies the error `tokio_rustls` returned from an accept.
    pub fn of_io_error(e: &std::io::Error) -> HandshakeFailure {
        if let Some(tls) = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Self::of_rustls_error(tls);
        }
        match e.kind() {
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::BrokenPipe => HandshakeFailure::Closed,
            std::io::ErrorKind::InvalidData => HandshakeFailure::NotTls,
            _ => HandshakeFailure::Other,
        }
    }

    /// The identity rule a refused certificate broke, when that is why an
    /// accept failed (its own message reads better than rustls' debug form).
    pub fn identity_error(e: &std::io::Error) -> Option<&IdentityError> {
        let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        match tls {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) => {
                other.0.downcast_ref::<IdentityError>()
            }
            _ => None,
        }
    }

    /// The deny-list entry a refused certificate matched, when that is why
    /// an accept failed.
    pub fn denial(e: &std::io::Error) -> Option<&Denied> {
        let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        match tls {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) => {
                other.0.downcast_ref::<Denied>()
            }
            _ => None,
        }
    }

    /// Classifies a rustls error.
    pub fn of_rustls_error(e: &rustls::Error) -> HandshakeFailure {
        use rustls::CertificateError as C;
        match e {
            rustls::Error::InvalidCertificate(c) => match c {
                C::UnknownIssuer | C::BadSignature => HandshakeFailure::UnknownCa,
                C::Expired | C::ExpiredContext { .. } => HandshakeFailure::Expired,
                C::NotValidYet | C::NotValidYetContext { .. } => HandshakeFailure::NotYetValid,
                C::InvalidPurpose | C::InvalidPurposeContext { .. } => HandshakeFailure::WrongUsage,
                C::Other(other) => match other.0.downcast_ref::<IdentityError>() {
                    Some(IdentityError::OtherCluster(_)) => HandshakeFailure::OtherCluster,
                    Some(_) => HandshakeFailure::BadIdentity,
                    None if other.0.downcast_ref::<Denied>().is_some() => HandshakeFailure::Denied,
                    None => HandshakeFailure::BadCertificate,
                },
                _ => HandshakeFailure::BadCertificate,
            },
            rustls::Error::InvalidMessage(_)
            | rustls::Error::InappropriateMessage { .. }
            | rustls::Error::InappropriateHandshakeMessage { .. } => HandshakeFailure::NotTls,
            rustls::Error::PeerIncompatible(_) => HandshakeFailure::Incompatible,
            rustls::Error::NoApplicationProtocol => HandshakeFailure::NoAlpn,
            rustls::Error::AlertReceived(_) => HandshakeFailure::PeerAlert,
            rustls::Error::NoCertificatesPresented => HandshakeFailure::BadCertificate,
            _ => HandshakeFailure::Other,
        }
    }
}

#[derive(Debug)]
struct Window {
    last_line: Instant,
    suppressed: u64,
}

/// The rate-limited log of failed handshakes, shared by every listener of
/// one [`crate::ServerTls`].
#[derive(Debug)]
pub struct FailureLog {
    interval: Duration,
    windows: Mutex<HashMap<HandshakeFailure, Window>>,
}

impl Default for FailureLog {
    fn default() -> Self {
        FailureLog::new(LOG_INTERVAL)
    }
}

impl FailureLog {
    /// A log allowing one line per reason per `interval`.
    pub fn new(interval: Duration) -> FailureLog {
        FailureLog {
            interval,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a failure for `reason` at `now` gets a line: `Some(n)` with
    /// the number of failures suppressed since the previous line, or `None`
    /// (counted as suppressed).
    pub fn admit(&self, reason: HandshakeFailure, now: Instant) -> Option<u64> {
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        match windows.get_mut(&reason) {
            None => {
                windows.insert(
                    reason,
                    Window {
                        last_line: now,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
            Some(w) if now.saturating_duration_since(w.last_line) >= self.interval => {
                let suppressed = w.suppressed;
                w.last_line = now;
                w.suppressed = 0;
                Some(suppressed)
            }
            Some(w) => {
                w.suppressed += 1;
                None
            }
        }
    }

    /// Logs a failed handshake from `remote` (rate-limited; `Closed` at
    /// debug level, unlimited since debug is off in production).
    pub fn failed(
        &self,
        remote: SocketAddr,
        reason: HandshakeFailure,
        detail: &dyn std::fmt::Display,
    ) {
        if reason == HandshakeFailure::Closed {
            tracing::debug!(remote = %remote, reason = reason.as_str(), %detail, "TLS handshake failed");
            return;
        }
        if let Some(suppressed) = self.admit(reason, Instant::now()) {
            tracing::warn!(
                remote = %remote,
                reason = reason.as_str(),
                %detail,
                suppressed,
                "TLS handshake failed"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What bad input gets (a scanner): at most one line per reason per
    // interval, and the next line counts what was suppressed.
    #[test]
    fn one_line_per_reason_per_interval_with_the_suppressed_count() {
        let log = FailureLog::new(Duration::from_secs(1));
        let t0 = Instant::now();
        assert_eq!(log.admit(HandshakeFailure::UnknownCa, t0), Some(0));
        for i in 1..=50 {
            let at = t0 + Duration::from_millis(i * 10);
            assert_eq!(log.admit(HandshakeFailure::UnknownCa, at), None);
        }
        // Another reason has its own window.
        assert_eq!(
            log.admit(HandshakeFailure::Expired, t0 + Duration::from_millis(500)),
            Some(0)
        );
        assert_eq!(
            log.admit(HandshakeFailure::UnknownCa, t0 + Duration::from_millis(999)),
            None
        );
        assert_eq!(
            log.admit(HandshakeFailure::UnknownCa, t0 + Duration::from_secs(1)),
            Some(51)
        );
        assert_eq!(
            log.admit(
                HandshakeFailure::UnknownCa,
                t0 + Duration::from_millis(1500)
            ),
            None
        );
        assert_eq!(
            log.admit(HandshakeFailure::UnknownCa, t0 + Duration::from_secs(3)),
            Some(1)
        );
    }

    // Failed handshakes are classified from rustls' own errors.
    #[test]
    fn rustls_errors_are_classified() {
        use rustls::CertificateError as C;
        let cases = [
            (
                rustls::Error::InvalidCertificate(C::UnknownIssuer),
                HandshakeFailure::UnknownCa,
            ),
            (
                rustls::Error::InvalidCertificate(C::Expired),
                HandshakeFailure::Expired,
            ),
            (
                rustls::Error::InvalidCertificate(C::NotValidYet),
                HandshakeFailure::NotYetValid,
            ),
            (
                rustls::Error::InvalidCertificate(C::InvalidPurpose),
                HandshakeFailure::WrongUsage,
            ),
            (
                rustls::Error::InvalidCertificate(C::BadEncoding),
                HandshakeFailure::BadCertificate,
            ),
            (
                rustls::Error::NoApplicationProtocol,
                HandshakeFailure::NoAlpn,
            ),
            (
                rustls::Error::InvalidCertificate(C::Other(rustls::OtherError(
                    std::sync::Arc::new(IdentityError::NoCommonName),
                ))),
                HandshakeFailure::BadIdentity,
            ),
            (
                rustls::Error::InvalidCertificate(C::Other(rustls::OtherError(
                    std::sync::Arc::new(Denied::Serial("1a".into())),
                ))),
                HandshakeFailure::Denied,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(HandshakeFailure::of_rustls_error(&e), want, "{e}");
            let io = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
            assert_eq!(HandshakeFailure::of_io_error(&io), want);
        }
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(
            HandshakeFailure::of_io_error(&eof),
            HandshakeFailure::Closed
        );
    }
}
