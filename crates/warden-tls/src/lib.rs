//! `warden-tls`: certificates and TLS for warden's nodes and clients, on
//! rustls (ring provider) and webpki. Nothing here verifies a certificate by
//! hand: chains, validity, usages and host names are rustls'/webpki's;
//! this crate adds only who a verified certificate names.
//!
//! A certs dir holds `ca.crt` (one or more CAs), a node's `node.crt` /
//! `node.key` (SAN URI `warden://node/N`, serverAuth + clientAuth) and
//! clients' `client.NAME.crt` / `client.NAME.key` (principal NAME in the
//! common name, clientAuth only). The CA key lives outside it. A node or
//! client certificate may name its cluster (`warden://cluster/NAME`): a
//! node whose own certificate names one refuses, at the handshake, every
//! certificate that names another or none, and a client or peer whose own
//! certificate names one refuses a server of another
//! ([`check_cluster`]), so one CA can serve several clusters. A node's
//! certs dir may also hold `deny.toml` ([`DENY_FILE`]): principals and
//! certificate serials the node refuses ([`deny`]), with the cluster's
//! replicated revocations ([`ServerTls::set_denied`]).
//!
//! # Modules
//!
//! - `identity.rs`: [`Identity`] (`Anonymous`, `Client { principal }`,
//!   `Node { node_id }`), the principal rules ([`validate_principal`]),
//!   cluster names ([`validate_cluster_name`], [`check_cluster`]) and
//!   [`CertIdentity::of`] / [`CertIdentity::read`], the one reader of an
//!   identity (and cluster name) from a certificate.
//! - `error.rs`: [`LoadError`], each variant naming the file.
//! - `deny.rs`: key revocation: [`DenyList`], the serial form
//!   ([`normalize_serial`], [`serial_of`]: lowercase hex, no separators or
//!   leading zeros, at most 40 digits), the optional deny file
//!   ([`read_deny_file`]), and the lists a [`ServerTls`] enforces.
//! - `certs.rs`: [`NodeCerts::load`], [`ClientCerts::load`], [`CaBundle`]:
//!   a certs dir read and checked (PEM, key matches, chain to `ca.crt`,
//!   validity, usages, identity) before anything uses it.
//! - `failure_log.rs`: [`HandshakeFailure`] and the rate-limited `warn` log
//!   of failed handshakes (one line per reason per second).
//! - `limits.rs`: [`AcceptOptions`] (handshake deadline, pending
//!   handshakes in all and per source, connections in all and per
//!   principal, idle timeout), their checks, each listener's registry of
//!   established connections (closing the idle, and the denied when the
//!   deny list changes), and [`AcceptBackoff`] (every accept loop's pause
//!   on `EMFILE`/`ENFILE`).
//! - `server.rs`: [`ServerTls`] (reloadable TLS 1.3 configs; client
//!   certificates optional; the deny lists, [`ServerTls::set_denied`]),
//!   [`ServerTls::incoming`] (tonic) and [`ServerTls::listener`] (axum),
//!   [`TlsConnection`], [`PeerInfo`], [`peer_identity`];
//!   `server/accept.rs`: the accept loop and the handshake task.
//! - `client.rs`: [`ClientTls`] (reloadable client config) and
//!   [`TlsConnector`], a `tower::Service<Uri>` for tonic's
//!   `connect_with_connector_lazy` that checks the server is a node (the
//!   expected one, for peers; not a denied one, for a node's peers).
//! - `outbound.rs`: [`outbound::OutboundStream`], the connections a
//!   [`TlsConnector`] makes, each keeping its server's serial, closed when
//!   that serial becomes denied ([`ClientTls::close_denied`]).
//! - `node.rs`: [`NodeTls`], a node's server and peer configs and deny
//!   lists reloaded together ([`NodeTls::set_denied`] for both sides).
//! - `inspect.rs`: [`inspect::list`], what every certificate in a certs dir
//!   says (`warden cert list`).
//! - `mint.rs` (feature `mint`): [`mint::create_ca`], [`mint::create_node`],
//!   [`mint::create_client`], [`mint::loopback_set`], with rcgen.
//!
//! # Use
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::path::Path;
//! // A node: serve gRPC over TLS, dial peers, reload on SIGHUP.
//! let tls = warden_tls::NodeTls::load(Path::new("/etc/warden/certs"), 1)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7001").await?;
//! let incoming = tls.server().incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
//! // tonic::transport::Server::builder().add_service(..).serve_with_incoming(incoming)
//! let peer = warden_tls::endpoint("10.0.0.2:7001")?
//!     .connect_with_connector_lazy(tls.peer_connector(2));
//! if let Err(e) = tls.reload() { tracing::error!("TLS reload refused: {e}") }
//! // In a handler: warden_tls::peer_identity(&request)
//! # drop(peer); drop(incoming); Ok(()) }
//! ```

mod certs;
mod client;
pub mod deny;
mod error;
pub mod failure_log;
mod identity;
pub mod inspect;
pub mod limits;
#[cfg(feature = "mint")]
pub mod mint;
mod node;
pub mod outbound;
mod server;

pub use certs::{
    client_cert_file, client_key_file, CaBundle, ClientCerts, NodeCerts, CA_CERT, NODE_CERT,
    NODE_KEY,
};
pub use client::{
    endpoint, ClientTls, ConnectError, TlsConnector, TlsIo, CLIENT_HANDSHAKE_TIMEOUT,
};
pub use deny::{
    normalize_serial, read_deny_file, serial_of, Denied, DenyError, DenyList, SerialError,
    DENY_FILE, MAX_DENY_FILE_ENTRIES, MAX_SERIAL_HEX_DIGITS,
};
pub use error::LoadError;
pub use failure_log::HandshakeFailure;
pub use identity::{
    check_cluster, cluster_uri, node_uri, principal_uri, validate_cluster_name, validate_principal,
    CertIdentity, ClusterMismatch, ClusterNameError, Identity, IdentityError, PrincipalError,
    CLUSTER_URI_PREFIX, MAX_CLUSTER_NAME_BYTES, MAX_NODE_ID, MAX_PRINCIPAL_BYTES, NODE_URI_PREFIX,
    PRINCIPAL_URI_PREFIX,
};
pub use limits::{
    AcceptBackoff, AcceptOptions, LimitError, StreamGuard, HANDSHAKE_TIMEOUT, MAX_HANDSHAKES,
};
pub use node::NodeTls;
pub use server::{
    peer_identity, peer_info, Installed, PeerInfo, ServerTls, TlsConnection, TlsIncoming,
    TlsListener, ALPN_H2, ALPN_HTTP1,
};
