//! [`LoadError`]: what can be wrong with a certs dir, each naming the file.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::deny::DenyError;
use crate::identity::{IdentityError, PrincipalError};

/// A certs dir that cannot be used. Every variant names the file (or the
/// field, for a bad user name) and the problem; nothing panics on a bad file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file does not exist.
    #[error("{}: missing (no such file)", file.display())]
    Missing {
        /// The file.
        file: PathBuf,
    },
    /// The file exists but cannot be read.
    #[error("{}: cannot read: {source}", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// No PEM section at all, or a broken one.
    #[error("{}: not PEM: {reason}", file.display())]
    NotPem {
        /// The file.
        file: PathBuf,
        /// What the PEM parser said.
        reason: String,
    },
    /// PEM, but no `CERTIFICATE` section.
    #[error("{}: no certificate in it (expected a PEM CERTIFICATE section)", file.display())]
    NoCertificate {
        /// The file.
        file: PathBuf,
    },
    /// PEM, but no private key section.
    #[error("{}: no private key in it (expected a PEM PRIVATE KEY section)", file.display())]
    NoKey {
        /// The file.
        file: PathBuf,
    },
    /// A certificate that cannot be parsed or used as a trust anchor.
    #[error("{}: bad certificate: {reason}", file.display())]
    BadCertificate {
        /// The file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// A private key the ring provider cannot load.
    #[error("{}: unusable private key: {reason}", file.display())]
    BadKey {
        /// The file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// The key is not the certificate's key.
    #[error("{}: does not match the certificate in {}", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// The certificate does not chain to any CA in the bundle.
    #[error("{}: not signed by any CA in {}", file.display(), ca_file.display())]
    NotSignedByCa {
        /// The certificate file.
        file: PathBuf,
        /// The CA bundle.
        ca_file: PathBuf,
    },
    /// Past its notAfter.
    #[error("{}: expired at {}", file.display(), humantime::format_rfc3339_seconds(*not_after))]
    Expired {
        /// The certificate file.
        file: PathBuf,
        /// Its notAfter.
        not_after: SystemTime,
    },
    /// Before its notBefore.
    #[error("{}: not valid before {}", file.display(), humantime::format_rfc3339_seconds(*not_before))]
    NotYetValid {
        /// The certificate file.
        file: PathBuf,
        /// Its notBefore.
        not_before: SystemTime,
    },
    /// Chain verification failed for another reason (wrong extended key
    /// usage, bad signature, unsupported algorithm, ...).
    #[error("{}: rejected: {reason}", file.display())]
    Rejected {
        /// The certificate file.
        file: PathBuf,
        /// What webpki said.
        reason: String,
    },
    /// A node certificate without a `warden://node/N` URI.
    #[error("{}: not a node certificate (no warden://node/N URI; made by `warden cert create-node`?)", file.display())]
    NoNodeId {
        /// The certificate file.
        file: PathBuf,
    },
    /// A client certificate that carries a `warden://node/` URI.
    #[error("{}: carries a warden://node/ URI: a node certificate cannot be used as a client's", file.display())]
    ClientHasNodeUri {
        /// The certificate file.
        file: PathBuf,
    },
    /// The certificate's identity is unusable.
    #[error("{}: {source}", file.display())]
    BadIdentity {
        /// The certificate file.
        file: PathBuf,
        /// Why.
        source: IdentityError,
    },
    /// `node.crt` names another node than the one loading it.
    #[error("{}: issued for node {found}, but this is node {expected}", file.display())]
    WrongNode {
        /// The certificate file.
        file: PathBuf,
        /// The node id expected.
        expected: u64,
        /// The node id in the certificate.
        found: u64,
    },
    /// The user name given to [`crate::ClientCerts::load`] is not a principal.
    #[error("user: {0}")]
    BadUser(PrincipalError),
    /// The deny file (`deny.toml`, [`crate::deny`]) cannot be used: names
    /// the file and the entry (`serials[2]: ...`) or the line.
    #[error("{}: {source}", file.display())]
    DenyFile {
        /// The deny file.
        file: PathBuf,
        /// What is wrong.
        source: DenyError,
    },
    /// rustls refused to build a config from these files.
    #[error("{}: rustls refused the certificates: {reason}", dir.display())]
    Config {
        /// The certs dir.
        dir: PathBuf,
        /// What rustls said.
        reason: String,
    },
}
