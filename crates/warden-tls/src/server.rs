//! The server side: [`ServerTls`] (reloadable rustls configs from a node's
//! certs dir), the acceptor that turns accepted TCP connections into
//! [`TlsConnection`]s for tonic ([`ServerTls::incoming`]) or axum
//! ([`ServerTls::listener`]), and [`PeerInfo`] / [`peer_identity`] to read
//! the verified peer in a handler.
//!
//! # Configs
//!
//! TLS 1.3 only. Client certificates are **optional** at the handshake
//! (health probes and load balancers have none: [`Identity::Anonymous`]);
//! one that is presented must chain to `ca.crt` (rustls'
//! `WebPkiClientVerifier` with `allow_unauthenticated`) and carry an identity
//! by the rules of [`crate::identity`] (checked in the verifier, so a bad one
//! fails the handshake with an alert); when the node's own certificate
//! names a cluster, the client's must name the same one
//! ([`crate::check_cluster`]: a certificate of another cluster, or of none,
//! fails the handshake the same way). A certificate on the deny list in
//! force (see "Deny list" below) fails the handshake the same way too.
//! Another CA, an expired certificate or garbage fails the handshake. The
//! gRPC config offers ALPN `h2`; the HTTP config (admin listener) `h2` and
//! `http/1.1`.
//!
//! # Deny list
//!
//! A `ServerTls` keeps two [`DenyList`]s ([`crate::deny`]): the deny file's
//! (`deny.toml` in the certs dir, optional, read at load and as part of
//! every reload) and a replicated one, the cluster's revocations, which the
//! server replaces with [`ServerTls::set_denied`] after applying a change.
//! Their union ([`ServerTls::denied`]) is in force: the verifier reads it
//! at every handshake (a pointer copy under a read lock, no IO) and refuses
//! a client certificate whose principal or serial it names and a node
//! certificate whose serial it names (warn reason `certificate denied
//! (revoked)`, rate-limited, naming the entry). When the union changes
//! (`set_denied`, a reload), every established connection it denies, on
//! every listener of this `ServerTls`, is closed before the call returns:
//! its next read or write fails and the task reading it is woken. One info
//! line gives the count, which `set_denied` returns
//! ([`Installed::closed_denied`] for a reload).
//!
//! # Reload
//!
//! The current configs sit behind an `RwLock<Arc<_>>` that every handshake
//! reads once (a pointer copy under a read lock, no IO). [`ServerTls::reload`]
//! loads and checks the whole certs dir, the deny file included, first and
//! swaps only if that succeeds, so a broken set (or deny file) is refused
//! with its [`LoadError`] and the old one stays in use; established
//! connections keep the config they handshook with (but not a certificate
//! the new deny list denies). Session resumption is off (no tickets, no session
//! cache), so every connection's certificate is verified in full against
//! the config in use: a CA removed from `ca.crt` cannot be kept alive by
//! resumption.
//!
//! # Accepting
//!
//! Each accepted connection's handshake runs in its own task, within the
//! listener's limits ([`AcceptOptions`], [`crate::limits`]): a handshake
//! deadline, pending handshakes in all and per source, then a cap on
//! established connections in all and per principal and an idle timeout;
//! the accept loop pauses on `EMFILE`/`ENFILE` ([`crate::AcceptBackoff`]). So a
//! slow or malicious client never blocks accepting others. Each
//! established connection is registered with its certificate's serial and
//! principal in its listener's registry, which the `ServerTls` knows
//! (weakly) so that a deny list change reaches it; a connection admitted
//! while a new list was being set is checked against it once more. Failed
//! handshakes are logged, rate-limited, by [`crate::failure_log`].
//! Dropping the [`TlsIncoming`] (tonic does on shutdown) or
//! [`TlsListener`] stops accepting and aborts handshakes in progress;
//! established connections are not touched.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::SystemTime;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use rustls_pki_types::{CertificateDer, UnixTime};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_stream::Stream;

use crate::certs::{provider, NodeCerts};
use crate::deny::{check_cert, read_deny_file, DenyList, DenyState};
use crate::error::LoadError;
use crate::failure_log::FailureLog;
use crate::identity::{check_cluster, CertIdentity, Identity, IdentityError};
use crate::limits::{AcceptOptions, ConnState, Registries, StreamGuard};

/// ALPN for gRPC.
pub const ALPN_H2: &[u8] = b"h2";
/// ALPN for HTTP/1.1 (admin listener only).
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// What a TLS connection's peer is, from its verified handshake. Tonic puts
/// it in every request's extensions (see [`peer_info`]); axum handlers get
/// it with `ConnectInfo<PeerInfo>` (serve with
/// `into_make_service_with_connect_info::<PeerInfo>()`). Only this crate's
/// acceptor builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    remote_addr: SocketAddr,
    local_addr: SocketAddr,
    identity: Identity,
    alpn: Option<Vec<u8>>,
    conn: ConnHandle,
}

/// The connection's state in its listener's registry (compared by
/// identity: two `PeerInfo`s of one connection are equal).
#[derive(Clone)]
struct ConnHandle(Arc<ConnState>);

impl fmt::Debug for ConnHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for ConnHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ConnHandle {}

impl PeerInfo {
    /// The peer's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote_addr
    }

    /// Our address of the connection.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The verified identity.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The ALPN protocol agreed on, if any.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.alpn.as_deref()
    }

    /// Opens a stream of this connection: it does not count as idle
    /// ([`AcceptOptions::idle_timeout`], and the oldest idle connection is
    /// the one closed at a connection cap) until the guard is dropped.
    /// The HTTP layer holds one per request until its response ends.
    pub fn stream_guard(&self) -> StreamGuard {
        self.conn.0.stream()
    }

    /// Whether the connection was closed by the limits (idle, or replaced
    /// at a cap).
    pub fn is_closed(&self) -> bool {
        self.conn.0.is_closed()
    }
}

/// The [`PeerInfo`] of the connection a tonic request came on; `None` when
/// it did not come through this crate's acceptor (a plaintext listener).
pub fn peer_info<T>(request: &tonic::Request<T>) -> Option<&PeerInfo> {
    request.extensions().get::<PeerInfo>()
}

/// The verified identity of the peer a tonic request came from; `None`
/// when it did not come through this crate's acceptor (a plaintext
/// listener: treat as anonymous or refuse, never as authenticated).
pub fn peer_identity<T>(request: &tonic::Request<T>) -> Option<&Identity> {
    peer_info(request).map(PeerInfo::identity)
}

/// An accepted connection after a successful handshake.
pub struct TlsConnection {
    stream: tokio_rustls::server::TlsStream<TcpStream>,
    info: PeerInfo,
}

impl fmt::Debug for TlsConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnection")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl TlsConnection {
    /// The peer.
    pub fn info(&self) -> &PeerInfo {
        &self.info
    }
}

impl Drop for TlsConnection {
    fn drop(&mut self) {
        self.info.conn.0.forget();
    }
}

/// The error a connection closed by the limits fails with.
fn closed_by_limits() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection closed by the connection limits (idle, or replaced at a cap)",
    )
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Registers the reading task, so that closing wakes it.
        if self.info.conn.0.poll_closed(cx) {
            return Poll::Ready(Err(closed_by_limits()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.info.conn.0.is_closed() {
            return Poll::Ready(Err(closed_by_limits()));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.info.conn.0.is_closed() {
            return Poll::Ready(Err(closed_by_limits()));
        }
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for TlsConnection {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        self.info.clone()
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for PeerInfo
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> PeerInfo {
        stream.io().info.clone()
    }
}

/// The client-certificate verifier: rustls' `WebPkiClientVerifier` (chain,
/// validity, clientAuth usage), then the identity rules, then the cluster:
/// when this node's certificate names a cluster, the caller's must name
/// the same one ([`check_cluster`]). A certificate without a valid
/// identity, or of another cluster, fails the handshake.
#[derive(Debug)]
struct IdentityVerifier {
    webpki: Arc<dyn ClientCertVerifier>,
    /// The cluster this node's own certificate names.
    cluster: Option<String>,
    /// The deny lists, read at every handshake.
    deny: Arc<DenyState>,
}

impl ClientCertVerifier for IdentityVerifier {
    fn offer_client_auth(&self) -> bool {
        self.webpki.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.webpki.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .webpki
            .verify_client_cert(end_entity, intermediates, now)?;
        let refuse = |e: IdentityError| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
                Arc::new(e),
            )))
        };
        let (identity, cluster) = CertIdentity::read(end_entity).map_err(refuse)?;
        check_cluster(self.cluster.as_deref(), cluster.as_deref())
            .map_err(|e| refuse(IdentityError::OtherCluster(e)))?;
        check_cert(&self.deny.effective(), &identity, end_entity)?;
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Which config a listener uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alpn {
    /// gRPC: `h2`.
    Grpc,
    /// Admin HTTP: `h2`, `http/1.1`.
    Http,
}

/// Configs built by [`ServerTls::prepare`], not yet installed, with the
/// deny file's list read with them.
pub(crate) struct PreparedServer(Arc<Configs>, DenyList);

/// The configs in use.
struct Configs {
    grpc: Arc<ServerConfig>,
    http: Arc<ServerConfig>,
    node_id: u64,
    cluster: Option<String>,
    not_after: SystemTime,
    cas: usize,
}

/// The rustls server configs of one node's certs dir, reloadable. Cloning
/// is cheap and shares the configs (and the failure log).
#[derive(Clone)]
pub struct ServerTls {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    node_id: u64,
    current: RwLock<Arc<Configs>>,
    log: Arc<FailureLog>,
    /// The deny file's and the replicated list (shared with the node's
    /// peer side).
    deny: Arc<DenyState>,
    /// Every listener's connections, for closing the denied ones.
    registries: Registries,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("dir", &self.inner.dir)
            .field("node_id", &self.inner.node_id)
            .finish_non_exhaustive()
    }
}

/// What a successful load or reload installed (for the caller's log line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The node id in `node.crt`.
    pub node_id: u64,
    /// The cluster `node.crt` names, if any.
    pub cluster: Option<String>,
    /// `node.crt`'s notAfter.
    pub not_after: SystemTime,
    /// CA certificates in `ca.crt`.
    pub cas: usize,
    /// Entries (principals and serials) of the deny file in force
    /// ([`crate::deny`]; 0 without one).
    pub denied_in_file: usize,
    /// Established connections this load or reload closed because its
    /// deny file denies them (0 from [`ServerTls::installed`]).
    pub closed_denied: usize,
}

fn config_error(dir: &Path, e: impl fmt::Display) -> LoadError {
    LoadError::Config {
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    }
}

fn build_configs(certs: &NodeCerts, deny: &Arc<DenyState>) -> Result<Configs, LoadError> {
    let provider = provider();
    let webpki = WebPkiClientVerifier::builder_with_provider(certs.ca().roots(), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| config_error(certs.dir(), e))?;
    let verifier: Arc<dyn ClientCertVerifier> = Arc::new(IdentityVerifier {
        webpki,
        cluster: certs.cluster().map(str::to_string),
        deny: deny.clone(),
    });
    let make = |alpn: &[&[u8]]| -> Result<Arc<ServerConfig>, LoadError> {
        let mut config = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| config_error(certs.dir(), e))?
            .with_client_cert_verifier(verifier.clone())
            .with_single_cert(certs.chain().to_vec(), certs.key())
            .map_err(|e| config_error(certs.dir(), e))?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        // No resumption: every connection's identity comes from a full
        // verification of its certificate (connections are long-lived
        // HTTP/2, so resumption would save next to nothing).
        config.send_tls13_tickets = 0;
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        Ok(Arc::new(config))
    };
    Ok(Configs {
        grpc: make(&[ALPN_H2])?,
        http: make(&[ALPN_H2, ALPN_HTTP1])?,
        node_id: certs.node_id(),
        cluster: certs.cluster().map(str::to_string),
        not_after: certs.not_after(),
        cas: certs.ca().certs().len(),
    })
}

impl ServerTls {
    /// Loads `dir` ([`NodeCerts::load_for`]: its `node.crt` must be node
    /// `node_id`'s) and builds the configs.
    pub fn load(dir: &Path, node_id: u64) -> Result<ServerTls, LoadError> {
        ServerTls::from_certs(&NodeCerts::load_for(dir, node_id)?)
    }

    /// Builds the configs from loaded certs, with the deny file of
    /// `certs.dir()` ([`read_deny_file`]); [`ServerTls::reload`] re-reads
    /// `certs.dir()` and keeps requiring `certs.node_id()`.
    pub fn from_certs(certs: &NodeCerts) -> Result<ServerTls, LoadError> {
        let deny = Arc::new(DenyState::new(read_deny_file(certs.dir())?));
        let configs = build_configs(certs, &deny)?;
        Ok(ServerTls {
            inner: Arc::new(Inner {
                dir: certs.dir().to_path_buf(),
                node_id: certs.node_id(),
                current: RwLock::new(Arc::new(configs)),
                log: Arc::new(FailureLog::default()),
                deny,
                registries: Registries::default(),
            }),
        })
    }

    /// Re-reads the certs dir, the deny file included (e.g. on SIGHUP).
    /// On success new handshakes use the new files, and established
    /// connections the new deny list denies are closed; on error nothing
    /// changes and the old set and lists stay in use (log the error: it
    /// names the file).
    pub fn reload(&self) -> Result<Installed, LoadError> {
        let certs = NodeCerts::load_for(&self.inner.dir, self.inner.node_id)?;
        self.install(&certs)
    }

    /// Installs already loaded certs (they must be this node's) with the
    /// deny file of `certs.dir()`, all or nothing as [`ServerTls::reload`].
    pub fn install(&self, certs: &NodeCerts) -> Result<Installed, LoadError> {
        let prepared = self.prepare(certs)?;
        Ok(self.commit(prepared))
    }

    /// Builds the configs for `certs` and reads their deny file without
    /// installing either.
    pub(crate) fn prepare(&self, certs: &NodeCerts) -> Result<PreparedServer, LoadError> {
        if certs.node_id() != self.inner.node_id {
            return Err(LoadError::WrongNode {
                file: certs.dir().join(crate::certs::NODE_CERT),
                expected: self.inner.node_id,
                found: certs.node_id(),
            });
        }
        let deny = read_deny_file(certs.dir())?;
        let configs = build_configs(certs, &self.inner.deny)?;
        Ok(PreparedServer(Arc::new(configs), deny))
    }

    /// Installs prepared configs and deny list: the next handshake uses
    /// them, and connections the new list denies are closed.
    pub(crate) fn commit(&self, prepared: PreparedServer) -> Installed {
        let PreparedServer(configs, deny) = prepared;
        let denied_in_file = deny.principals.len() + deny.serials.len();
        let closed_denied = self.set_lists(deny, true);
        let installed = Installed {
            node_id: configs.node_id,
            cluster: configs.cluster.clone(),
            not_after: configs.not_after,
            cas: configs.cas,
            denied_in_file,
            closed_denied,
        };
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = configs;
        installed
    }

    /// Sets the replicated deny list (the cluster's revocations; the server
    /// calls it after applying a change), replacing the previous one. The
    /// list in force is its union with the deny file's
    /// ([`ServerTls::denied`]): from the next handshake on it refuses a
    /// client certificate whose principal or serial it names and a node
    /// certificate whose serial it names, and before this returns every
    /// established connection it denies, on every listener of this
    /// `ServerTls`, is closed (its next read or write fails). Serials must
    /// be normalized ([`crate::normalize_serial`]; [`DenyList::from_entries`]
    /// does it). Returns how many connections were closed.
    pub fn set_denied(&self, list: DenyList) -> usize {
        self.set_lists(list, false)
    }

    /// Replaces one list, then closes what the new union denies (the list
    /// first, so a handshake admitted after the sweep sees it: see
    /// `accept.rs`). Logs one info line when the union changed.
    fn set_lists(&self, list: DenyList, file: bool) -> usize {
        let (effective, changed) = self.inner.deny.set(list, file);
        if !changed {
            return 0;
        }
        let closed = self.inner.registries.close_denied(&effective);
        tracing::info!(
            principals = effective.principals.len(),
            serials = effective.serials.len(),
            closed,
            source = if file { "deny file" } else { "replicated" },
            "TLS deny list changed; closed the connections it denies"
        );
        closed
    }

    /// The deny list in force: the deny file's and the replicated one.
    pub fn denied(&self) -> DenyList {
        (*self.inner.deny.effective()).clone()
    }

    /// The deny file's list alone (as last loaded).
    pub fn file_denied(&self) -> DenyList {
        self.inner.deny.file()
    }

    /// The deny lists, shared with the node's peer side.
    pub(crate) fn deny_state(&self) -> &Arc<DenyState> {
        &self.inner.deny
    }

    /// The certs dir.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// This node's id.
    pub fn node_id(&self) -> u64 {
        self.inner.node_id
    }

    /// What is installed now.
    pub fn installed(&self) -> Installed {
        let c = self.current();
        let file = self.inner.deny.file();
        Installed {
            node_id: c.node_id,
            cluster: c.cluster.clone(),
            not_after: c.not_after,
            cas: c.cas,
            denied_in_file: file.principals.len() + file.serials.len(),
            closed_denied: 0,
        }
    }

    fn current(&self) -> Arc<Configs> {
        self.inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The current gRPC config (ALPN `h2`).
    pub fn config(&self) -> Arc<ServerConfig> {
        self.current().grpc.clone()
    }

    /// The current HTTP config (ALPN `h2`, `http/1.1`).
    pub fn http_config(&self) -> Arc<ServerConfig> {
        self.current().http.clone()
    }

    /// TLS connections for `tonic::transport::Server::serve_with_incoming`
    /// (or `..._shutdown`) from accepted TCP connections (e.g. tonic's
    /// `TcpIncoming` or `tokio_stream::wrappers::TcpListenerStream`), with
    /// the gRPC config and default [`AcceptOptions`]. Must be called inside
    /// a tokio runtime (it spawns the accept task).
    pub fn incoming<S>(&self, tcp: S) -> TlsIncoming
    where
        S: Stream<Item = io::Result<TcpStream>> + Send + Unpin + 'static,
    {
        self.incoming_with(tcp, AcceptOptions::default())
    }

    /// [`ServerTls::incoming`] with options (not checked here: see
    /// [`AcceptOptions::validate`]).
    pub fn incoming_with<S>(&self, tcp: S, options: AcceptOptions) -> TlsIncoming
    where
        S: Stream<Item = io::Result<TcpStream>> + Send + Unpin + 'static,
    {
        TlsIncoming {
            rx: spawn_acceptor(self.clone(), Alpn::Grpc, tcp, options),
        }
    }

    /// An axum listener over `listener` with the HTTP config (ALPN `h2`,
    /// `http/1.1`): `axum::serve(tls.listener(l)?, router)`. A client without
    /// a certificate is served (as [`Identity::Anonymous`]), so `/healthz`
    /// works for probes. Must be called inside a tokio runtime.
    pub fn listener(&self, listener: TcpListener) -> io::Result<TlsListener> {
        self.listener_with(listener, AcceptOptions::default())
    }

    /// [`ServerTls::listener`] with options.
    pub fn listener_with(
        &self,
        listener: TcpListener,
        options: AcceptOptions,
    ) -> io::Result<TlsListener> {
        let local_addr = listener.local_addr()?;
        let tcp = tokio_stream::wrappers::TcpListenerStream::new(listener);
        Ok(TlsListener {
            rx: spawn_acceptor(self.clone(), Alpn::Http, tcp, options),
            local_addr,
        })
    }
}

/// The stream [`ServerTls::incoming`] returns: completed handshakes only
/// (failures are logged, never yielded), in the order they complete.
#[derive(Debug)]
pub struct TlsIncoming {
    rx: mpsc::Receiver<TlsConnection>,
}

impl Stream for TlsIncoming {
    type Item = Result<TlsConnection, io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx).map(|c| c.map(Ok))
    }
}

/// An axum `Listener` of TLS connections ([`ServerTls::listener`]).
#[derive(Debug)]
pub struct TlsListener {
    rx: mpsc::Receiver<TlsConnection>,
    local_addr: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsConnection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TlsConnection, SocketAddr) {
        match self.rx.recv().await {
            Some(conn) => {
                let addr = conn.info.remote_addr;
                (conn, addr)
            }
            // The accept task ended (its listener failed for good): accept
            // nothing more, as a closed listener would.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local_addr)
    }
}

mod accept;
use accept::spawn_acceptor;
