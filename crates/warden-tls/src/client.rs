//! The client side: [`ClientTls`] (a reloadable rustls client config from a
//! client's or a node's certs dir) and [`TlsConnector`], a
//! `tower::Service<Uri>` for `tonic::transport::Endpoint::connect_with_connector`
//! / `connect_with_connector_lazy` that dials TCP (TCP_NODELAY), runs the
//! rustls handshake and checks who answered.
//!
//! # What is verified
//!
//! - The server's chain, validity and serverAuth usage against `ca.crt`, and
//!   that its certificate's SANs match the host dialled (a DNS name or an IP
//!   literal, from the URI): rustls' `WebPkiServerVerifier`. So a node
//!   certificate must name every address clients and peers dial (`warden
//!   cert create-node --id N HOST...` with each host of `--peers` /
//!   `--listen`).
//! - That the server presented a **node** certificate (`warden://node/N`);
//!   a peer connector ([`ClientTls::peer_connector`]) also that `N` is the
//!   peer expected; and, when this side's own certificate and the server's
//!   both name a cluster (`warden://cluster/NAME`), that it is the same one
//!   ([`crate::check_cluster`]; a server naming none is taken, so clients
//!   can move to named certificates before the nodes do). Checked right after the handshake, before
//!   a byte of HTTP/2 is sent.
//! - For a node's peer side ([`crate::NodeTls`]), that the server's node
//!   certificate's serial is not on the node's deny list
//!   ([`crate::NodeTls::set_denied`], the deny file): a stolen node key
//!   cannot pose as a peer once its certificate is revoked. Other configs
//!   have an empty list.
//!
//! TLS 1.3 only, ALPN `h2`, client auth with the user's (or node's)
//! certificate.
//!
//! # URIs
//!
//! Give tonic `http://HOST:PORT` endpoints ([`endpoint`]): this connector
//! does the TLS itself, and tonic refuses an `https` URI on a connector
//! without its own TLS config.
//!
//! # Rotation
//!
//! Each new connection reads the current config (an `RwLock<Arc<_>>`);
//! [`ClientTls::reload`] re-reads the files and swaps it only if they load,
//! so established channels are untouched and later connections use the new
//! files.

use std::fmt;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::certs::{provider, CaBundle, ClientCerts, NodeCerts};
use crate::deny::{serial_of, Denied, DenyList, DenyState};
use crate::error::LoadError;
use crate::identity::{check_cluster, CertIdentity, ClusterMismatch};
use crate::server::ALPN_H2;

/// Default [`TlsConnector::with_handshake_timeout`].
pub const CLIENT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URI has no host or no port.
    #[error("{uri}: {reason}")]
    BadUri {
        /// The URI.
        uri: String,
        /// What is missing.
        reason: &'static str,
    },
    /// The host is neither an IP address nor a DNS name.
    #[error("{host:?} is not a DNS name or IP address: {reason}")]
    BadServerName {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// TCP connect failed.
    #[error("{addr}: cannot connect: {source}")]
    Dial {
        /// `host:port`.
        addr: String,
        /// The IO error.
        source: io::Error,
    },
    /// The TLS handshake failed (another CA, a name mismatch, an expired
    /// certificate, ...).
    #[error("{addr}: TLS handshake failed: {source}")]
    Handshake {
        /// `host:port`.
        addr: String,
        /// The error (rustls' inside).
        source: io::Error,
    },
    /// No handshake within the timeout.
    #[error("{addr}: no TLS handshake within {timeout:?}")]
    Timeout {
        /// `host:port`.
        addr: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The server's certificate is not a node's.
    #[error("{addr}: the server is not a warden node ({reason})")]
    NotANode {
        /// `host:port`.
        addr: String,
        /// What it presented instead.
        reason: String,
    },
    /// The server's certificate is for another cluster than this side's.
    #[error("{addr}: the server is not a node of this cluster: {reason}")]
    OtherCluster {
        /// `host:port`.
        addr: String,
        /// Both clusters.
        reason: ClusterMismatch,
    },
    /// The server's node certificate is on the deny list (revoked).
    #[error("{addr}: refusing the server: {reason}")]
    Denied {
        /// `host:port`.
        addr: String,
        /// The entry that denies it.
        reason: Denied,
    },
    /// A peer connection reached another node than expected.
    #[error("{addr}: expected node {expected}, the server is node {found}")]
    WrongNode {
        /// `host:port`.
        addr: String,
        /// The peer id dialled.
        expected: u64,
        /// The node id in its certificate.
        found: u64,
    },
}

impl ConnectError {
    /// Whether the server answered the handshake with something that is not
    /// TLS at all (rustls' `InvalidContentType`): a plaintext port, e.g. a
    /// node started with `--insecure` or another service.
    pub fn is_not_tls(&self) -> bool {
        let ConnectError::Handshake { source, .. } = self else {
            return false;
        };
        source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .is_some_and(|e| {
                matches!(
                    e,
                    rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
                )
            })
    }
}

/// Where a [`ClientTls`] reloads from.
#[derive(Debug, Clone)]
enum Source {
    Client { dir: PathBuf, user: String },
    Node { dir: PathBuf, node_id: u64 },
    Anonymous { ca_file: PathBuf },
}

/// A rustls client config from a certs dir, reloadable. Cloning is cheap
/// and shares the config.
#[derive(Clone)]
pub struct ClientTls {
    inner: Arc<Inner>,
}

struct Inner {
    source: Source,
    current: RwLock<Current>,
    /// Servers whose certificate serial it denies (a node's peer side
    /// shares its server's; empty otherwise).
    deny: Arc<DenyState>,
    /// Its open connections, closed when their server becomes denied.
    outbound: crate::outbound::Outbound,
}

/// The config in use and the cluster its certificate names.
#[derive(Clone)]
struct Current {
    config: Arc<ClientConfig>,
    cluster: Option<String>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("source", &self.inner.source)
            .finish_non_exhaustive()
    }
}

fn config_error(dir: &Path, e: impl fmt::Display) -> LoadError {
    LoadError::Config {
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    }
}

/// A TLS 1.3, ALPN `h2` config verifying servers against `roots`, with
/// client auth when `identity` is given.
fn build_config(
    dir: &Path,
    roots: Arc<rustls::RootCertStore>,
    identity: Option<(
        Vec<rustls_pki_types::CertificateDer<'static>>,
        rustls_pki_types::PrivateKeyDer<'static>,
    )>,
) -> Result<Arc<ClientConfig>, LoadError> {
    let provider = provider();
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| config_error(dir, e))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| config_error(dir, e))?
        .with_webpki_verifier(verifier);
    let mut config = match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| config_error(dir, e))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    // The servers resume nothing (see `server.rs`); do not offer to.
    config.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(config))
}

fn client_config(certs: &ClientCerts) -> Result<Arc<ClientConfig>, LoadError> {
    let identity = (certs.chain().to_vec(), certs.key());
    build_config(certs.dir(), certs.ca().roots(), Some(identity))
}

fn node_config(certs: &NodeCerts) -> Result<Arc<ClientConfig>, LoadError> {
    let identity = (certs.chain().to_vec(), certs.key());
    build_config(certs.dir(), certs.ca().roots(), Some(identity))
}

fn anonymous_config(ca_file: &Path) -> Result<Arc<ClientConfig>, LoadError> {
    let ca = CaBundle::load(ca_file)?;
    build_config(ca_file.parent().unwrap_or(Path::new(".")), ca.roots(), None)
}

/// A config built by [`ClientTls::prepare_node`], not yet installed, with
/// the cluster its certificate names.
pub(crate) struct PreparedClient(Arc<ClientConfig>, Option<String>);

impl ClientTls {
    /// A client's config: [`ClientCerts::load`]`(dir, user)`.
    pub fn load_client(dir: &Path, user: &str) -> Result<ClientTls, LoadError> {
        ClientTls::from_client_certs(&ClientCerts::load(dir, user)?)
    }

    /// A node's config for its outgoing peer channels (its own node
    /// certificate as the client identity): [`NodeCerts::load_for`].
    pub fn load_node(dir: &Path, node_id: u64) -> Result<ClientTls, LoadError> {
        ClientTls::from_node_certs(&NodeCerts::load_for(dir, node_id)?)
    }

    /// A config without a client certificate, verifying servers against
    /// the CA bundle `ca_file` (probes, tools): servers see
    /// [`crate::Identity::Anonymous`].
    pub fn anonymous(ca_file: &Path) -> Result<ClientTls, LoadError> {
        Ok(ClientTls::new(
            Source::Anonymous {
                ca_file: ca_file.to_path_buf(),
            },
            PreparedClient(anonymous_config(ca_file)?, None),
        ))
    }

    /// From loaded client certs; reloads from the same dir and user.
    pub fn from_client_certs(certs: &ClientCerts) -> Result<ClientTls, LoadError> {
        Ok(ClientTls::new(
            Source::Client {
                dir: certs.dir().to_path_buf(),
                user: certs.user().to_string(),
            },
            PreparedClient(client_config(certs)?, certs.cluster().map(str::to_string)),
        ))
    }

    /// From loaded node certs; reloads from the same dir and node id. Its
    /// deny list is empty (a [`crate::NodeTls`]'s peer side has the node's).
    pub fn from_node_certs(certs: &NodeCerts) -> Result<ClientTls, LoadError> {
        ClientTls::from_node_certs_denying(certs, Arc::default())
    }

    fn new(source: Source, prepared: PreparedClient) -> ClientTls {
        ClientTls::with_deny(source, prepared, Arc::default())
    }

    fn with_deny(source: Source, prepared: PreparedClient, deny: Arc<DenyState>) -> ClientTls {
        ClientTls {
            inner: Arc::new(Inner {
                source,
                current: RwLock::new(Current {
                    config: prepared.0,
                    cluster: prepared.1,
                }),
                deny,
                outbound: crate::outbound::Outbound::default(),
            }),
        }
    }

    /// A node's peer side ([`ClientTls::from_node_certs`]) that refuses
    /// servers by the deny lists `deny` (its server's, shared).
    pub(crate) fn from_node_certs_denying(
        certs: &NodeCerts,
        deny: Arc<DenyState>,
    ) -> Result<ClientTls, LoadError> {
        Ok(ClientTls::with_deny(
            Source::Node {
                dir: certs.dir().to_path_buf(),
                node_id: certs.node_id(),
            },
            PreparedClient(node_config(certs)?, certs.cluster().map(str::to_string)),
            deny,
        ))
    }

    /// The deny list servers are checked against (by their certificate's
    /// serial): a node's, through [`crate::NodeTls`]; empty otherwise.
    pub fn denied(&self) -> DenyList {
        (*self.inner.deny.effective()).clone()
    }

    /// Closes every open connection of this config whose server's
    /// certificate serial the deny list in force now holds; how many
    /// ([`crate::outbound`]).
    pub fn close_denied(&self) -> usize {
        self.inner
            .outbound
            .close_denied(&self.inner.deny.effective())
    }

    /// Re-reads the files it was loaded from; on error nothing changes.
    pub fn reload(&self) -> Result<(), LoadError> {
        let prepared = match &self.inner.source {
            Source::Client { dir, user } => {
                let certs = ClientCerts::load(dir, user)?;
                PreparedClient(client_config(&certs)?, certs.cluster().map(str::to_string))
            }
            Source::Node { dir, node_id } => {
                let certs = NodeCerts::load_for(dir, *node_id)?;
                PreparedClient(node_config(&certs)?, certs.cluster().map(str::to_string))
            }
            Source::Anonymous { ca_file } => PreparedClient(anonymous_config(ca_file)?, None),
        };
        self.commit(prepared);
        Ok(())
    }

    /// Builds a node config for `certs` without installing it (they must be
    /// the node this was loaded for).
    pub(crate) fn prepare_node(&self, certs: &NodeCerts) -> Result<PreparedClient, LoadError> {
        match &self.inner.source {
            Source::Node { node_id, .. } if *node_id == certs.node_id() => Ok(PreparedClient(
                node_config(certs)?,
                certs.cluster().map(str::to_string),
            )),
            Source::Node { node_id, .. } => Err(LoadError::WrongNode {
                file: certs.dir().join(crate::certs::NODE_CERT),
                expected: *node_id,
                found: certs.node_id(),
            }),
            Source::Client { dir, .. } => Err(config_error(
                dir,
                "a client's config cannot take a node's certificates",
            )),
            Source::Anonymous { ca_file } => Err(config_error(
                ca_file,
                "an anonymous config cannot take a node's certificates",
            )),
        }
    }

    pub(crate) fn commit(&self, prepared: PreparedClient) {
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Current {
            config: prepared.0,
            cluster: prepared.1,
        };
    }

    fn current(&self) -> Current {
        self.inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The current config.
    pub fn config(&self) -> Arc<ClientConfig> {
        self.current().config
    }

    /// The cluster this side's certificate names, if any (none for an
    /// anonymous config): servers must then be nodes of that cluster.
    pub fn cluster(&self) -> Option<String> {
        self.current().cluster
    }

    /// A connector that accepts any node's certificate (clients).
    pub fn connector(&self) -> TlsConnector {
        TlsConnector {
            tls: self.clone(),
            expected_node: None,
            handshake_timeout: CLIENT_HANDSHAKE_TIMEOUT,
        }
    }

    /// A connector for the peer channel to node `peer_id`: the server must
    /// present node `peer_id`'s certificate.
    pub fn peer_connector(&self, peer_id: u64) -> TlsConnector {
        TlsConnector {
            tls: self.clone(),
            expected_node: Some(peer_id),
            handshake_timeout: CLIENT_HANDSHAKE_TIMEOUT,
        }
    }

    /// A lazily connected channel to `addr` (`host:port`) over
    /// [`ClientTls::connector`].
    pub fn channel_lazy(&self, addr: &str) -> Result<Channel, tonic::transport::Error> {
        Ok(endpoint(addr)?.connect_with_connector_lazy(self.connector()))
    }
}

/// The tonic endpoint for `addr` (`host:port`, IPv6 in brackets) to use
/// with a [`TlsConnector`]: `http://addr` (the connector does the TLS).
pub fn endpoint(addr: &str) -> Result<Endpoint, tonic::transport::Error> {
    Endpoint::from_shared(format!("http://{addr}"))
}

/// Dials and handshakes for tonic; see the module docs. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct TlsConnector {
    tls: ClientTls,
    expected_node: Option<u64>,
    handshake_timeout: Duration,
}

/// A connection made by [`TlsConnector`], in hyper's IO traits (closed
/// when its server's certificate becomes denied, [`crate::outbound`]).
pub type TlsIo = TokioIo<crate::outbound::OutboundStream>;

impl TlsConnector {
    /// The longest a handshake may take (after TCP connected).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> TlsConnector {
        self.handshake_timeout = timeout;
        self
    }

    /// Dials `uri`'s host and port, handshakes with the current config and
    /// checks the server's identity.
    pub async fn connect(&self, uri: &Uri) -> Result<TlsIo, ConnectError> {
        let bad = |reason| ConnectError::BadUri {
            uri: uri.to_string(),
            reason,
        };
        let host = uri.host().ok_or_else(|| bad("no host"))?;
        let port = uri.port_u16().ok_or_else(|| bad("no port"))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .to_string();
        let server_name =
            ServerName::try_from(host.clone()).map_err(|e| ConnectError::BadServerName {
                host: host.clone(),
                reason: e.to_string(),
            })?;
        let addr = match server_name {
            ServerName::IpAddress(_) if host.contains(':') => format!("[{host}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        let tcp = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|source| ConnectError::Dial {
                addr: addr.clone(),
                source,
            })?;
        let _ = tcp.set_nodelay(true);
        let current = self.tls.current();
        let connector = tokio_rustls::TlsConnector::from(current.config);
        let stream =
            match tokio::time::timeout(self.handshake_timeout, connector.connect(server_name, tcp))
                .await
            {
                Ok(Ok(stream)) => stream,
                Ok(Err(source)) => return Err(ConnectError::Handshake { addr, source }),
                Err(_) => {
                    return Err(ConnectError::Timeout {
                        addr,
                        timeout: self.handshake_timeout,
                    })
                }
            };
        let serial = self.check_server(&addr, &stream, current.cluster.as_deref())?;
        Ok(TokioIo::new(self.tls.inner.outbound.track(stream, serial)))
    }

    /// The server must be a node (and the expected one, for a peer) of
    /// cluster `cluster` when that is given, whose serial is not denied;
    /// its certificate's serial.
    fn check_server(
        &self,
        addr: &str,
        stream: &tokio_rustls::client::TlsStream<TcpStream>,
        cluster: Option<&str>,
    ) -> Result<String, ConnectError> {
        let not_a_node = |reason: String| ConnectError::NotANode {
            addr: addr.to_string(),
            reason,
        };
        let Some([end_entity, ..]) = stream.get_ref().1.peer_certificates() else {
            return Err(not_a_node("no certificate".into()));
        };
        match CertIdentity::read(end_entity) {
            Ok((CertIdentity::Node(found), theirs)) => {
                let serial = serial_of(end_entity).map_err(|e| not_a_node(e.to_string()))?;
                self.tls
                    .inner
                    .deny
                    .effective()
                    .check(None, &serial)
                    .map_err(|reason| ConnectError::Denied {
                        addr: addr.to_string(),
                        reason,
                    })?;
                // A server naming no cluster is taken (a node not yet given
                // a named certificate: clients move first); the server's
                // own check refuses this side if it must.
                if theirs.is_some() {
                    check_cluster(cluster, theirs.as_deref()).map_err(|reason| {
                        ConnectError::OtherCluster {
                            addr: addr.to_string(),
                            reason,
                        }
                    })?;
                }
                match self.expected_node {
                    Some(expected) if expected != found => Err(ConnectError::WrongNode {
                        addr: addr.to_string(),
                        expected,
                        found,
                    }),
                    _ => Ok(serial),
                }
            }
            Ok((CertIdentity::Client(principal), _)) => {
                Err(not_a_node(format!("a certificate of client {principal:?}")))
            }
            Err(e) => Err(not_a_node(e.to_string())),
        }
    }
}

impl tower::Service<Uri> for TlsConnector {
    type Response = TlsIo;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsIo, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.connect(&uri).await })
    }
}
