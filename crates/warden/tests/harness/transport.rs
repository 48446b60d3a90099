//! How the harness reaches a node: mutual TLS as a principal (the default,
//! with [`super::certs`]), or plaintext for a cluster started with
//! `--insecure`.
//!
//! Every address the harness hands to a cluster is registered with that
//! cluster's [`Security`] ([`register`]), so the free functions that take
//! only an address ([`super::cluster_status_at`], [`super::channel`],
//! [`super::call_leader`], [`super::Api::new`]) speak what the node speaks,
//! as `root`. Ports are never handed out twice in one test binary
//! ([`super::free_port`]), so an address names one node for the binary's
//! whole run. An address the harness never handed out is taken for TLS.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};
use tonic::Status;
use warden_client::{ClientOptions, TlsOptions};
use warden_tls::ClientTls;

use super::certs::certs;

/// How a cluster serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `--certs-dir` with the binary's certificates: mutual TLS, principals.
    Tls,
    /// `--insecure`: plaintext, no identities.
    Insecure,
}

fn registry() -> &'static Mutex<BTreeMap<String, Security>> {
    static REGISTRY: OnceLock<Mutex<BTreeMap<String, Security>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// Records that `addr` serves with `security`.
pub fn register(addr: &str, security: Security) {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(addr.to_string(), security);
}

/// What `addr` serves ([`Security::Tls`] unless registered otherwise).
pub fn security_of(addr: &str) -> Security {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(addr)
        .copied()
        .unwrap_or(Security::Tls)
}

/// What `endpoints` serve: the first one's [`security_of`].
pub fn security_of_all(endpoints: &[String]) -> Security {
    endpoints
        .first()
        .map(|e| security_of(e))
        .unwrap_or(Security::Tls)
}

/// A client's TLS config for `user` (cached per user).
pub fn client_tls(user: &str) -> ClientTls {
    static CACHE: OnceLock<Mutex<BTreeMap<String, ClientTls>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    cache
        .entry(user.to_string())
        .or_insert_with(|| {
            ClientTls::load_client(certs().client_dir_with(user), user)
                .unwrap_or_else(|e| panic!("test certificate of {user}: {e}"))
        })
        .clone()
}

/// warden-client options for `user` on a cluster with `security` (the
/// user is ignored on an insecure one).
pub fn client_options(security: Security, user: &str) -> ClientOptions {
    ClientOptions {
        tls: match security {
            Security::Tls => Some(TlsOptions::new(certs().client_dir_with(user), user)),
            Security::Insecure => None,
        },
        ..ClientOptions::default()
    }
}

/// The CLI flags of a client command as `user`: `--certs-dir DIR --user
/// USER`, or `--insecure`.
pub fn cli_flags(security: Security, user: &str) -> Vec<OsString> {
    match security {
        Security::Tls => vec![
            "--certs-dir".into(),
            certs().client_dir_with(user).into(),
            "--user".into(),
            user.into(),
        ],
        Security::Insecure => vec!["--insecure".into()],
    }
}

/// The server flags of node `id`: `--certs-dir` of its certificate, or
/// `--insecure`.
pub fn server_flags(security: Security, id: u64) -> Vec<OsString> {
    match security {
        Security::Tls => vec!["--certs-dir".into(), certs().node_dir(id).into()],
        Security::Insecure => vec!["--insecure".into()],
    }
}

/// The `WARDEN_*` variables a child must not inherit from the shell that
/// runs the tests: the harness's flags alone say how it connects.
pub const CLEARED_ENV: [&str; 5] = [
    "WARDEN_ENDPOINTS",
    "WARDEN_CERTS_DIR",
    "WARDEN_USER",
    "WARDEN_INSECURE",
    "WARDEN_PROFILE",
];

/// A connected channel to `addr` as `root` (connect timeout 300 ms;
/// `request_timeout` per call, if any), over what `addr` serves.
pub async fn channel(addr: &str, request_timeout: Option<Duration>) -> Result<Channel, Status> {
    let unavailable = |e: tonic::transport::Error| Status::unavailable(format!("{addr}: {e}"));
    let mut endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(unavailable)?
        .connect_timeout(Duration::from_millis(300));
    if let Some(t) = request_timeout {
        endpoint = endpoint.timeout(t);
    }
    match security_of(addr) {
        Security::Tls => endpoint
            .connect_with_connector(client_tls("root").connector())
            .await
            .map_err(unavailable),
        Security::Insecure => endpoint.connect().await.map_err(unavailable),
    }
}

/// A connected channel to node `id` at `addr` presenting node `id`'s own
/// certificate (the Peer service takes node certificates only), or
/// plaintext on an insecure node.
pub async fn peer_channel(addr: &str, id: u64) -> Result<Channel, Status> {
    let unavailable = |e: tonic::transport::Error| Status::unavailable(format!("{addr}: {e}"));
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).map_err(unavailable)?;
    match security_of(addr) {
        Security::Tls => {
            let tls = ClientTls::load_node(&certs().node_dir(id), id)
                .map_err(|e| Status::internal(format!("node {id}'s test certificate: {e}")))?;
            endpoint
                .connect_with_connector(tls.peer_connector(id))
                .await
                .map_err(unavailable)
        }
        Security::Insecure => endpoint.connect().await.map_err(unavailable),
    }
}

/// `GET path` on an `--admin-listen` address, as a load balancer would:
/// over TLS without a client certificate (verifying the node against the
/// test CA) on a secure node, plain HTTP on an insecure one; one request,
/// the whole reply, within `timeout`.
pub async fn http_get(
    addr: &str,
    path: &str,
    timeout: Duration,
) -> std::io::Result<warden_fence::http::client::Reply> {
    http_get_as(addr, path, None, timeout).await
}

/// [`http_get`], presenting `user`'s client certificate on a secure node
/// (Prometheus' scrape of `/metrics`); None: no certificate.
pub async fn http_get_as(
    addr: &str,
    path: &str,
    user: Option<&str>,
    timeout: Duration,
) -> std::io::Result<warden_fence::http::client::Reply> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let insecure = security_of(addr) == Security::Insecure;
    if insecure {
        return warden_fence::http::client::request(addr, "GET", path, &[], b"", timeout).await;
    }
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let work = async {
        let tls = match user {
            Some(user) => client_tls(user),
            None => ClientTls::anonymous(&certs().client_dir.join("ca.crt"))
                .map_err(|e| invalid(e.to_string()))?,
        };
        let mut config = (*tls.config()).clone();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
        let name = rustls_pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| invalid(e.to_string()))?;
        let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
            .connect(name, tcp)
            .await?;
        tls.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
        let mut raw = Vec::new();
        // A server may end TLS without close_notify after `Connection:
        // close`: what was read by then is the reply.
        if let Err(e) = tls.read_to_end(&mut raw).await {
            if raw.is_empty() {
                return Err(e);
            }
        }
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| invalid(format!("no header end in {raw:?}")))?;
        let head = String::from_utf8_lossy(&raw[..split]);
        let status = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| invalid(format!("bad status line in {head:?}")))?;
        Ok(warden_fence::http::client::Reply {
            status,
            body: String::from_utf8_lossy(&raw[split + 4..]).into_owned(),
        })
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("GET {path} on {addr}: no reply within {timeout:?}"),
        )
    })?
}
