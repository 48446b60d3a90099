//! Test helpers: a tiny gRPC service that answers with the identity the
//! server saw, a server over the acceptor, a tracing capture, raw rustls
//! clients for handshakes the library's own loaders would refuse to build,
//! and rcgen for certificates `mint` refuses to make.

#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::codegen::http;
use tonic::transport::Channel;
use warden_tls::ServerTls;

/// The service's name: requests go to `/test.WhoAmI/Get`.
const SERVICE: &str = "test.WhoAmI";

/// Answers every call with `"<identity>|<remote addr>"` from the request's
/// [`warden_tls::PeerInfo`], or `"none"` without one.
#[derive(Clone, Debug)]
pub struct WhoAmI;

impl tonic::server::NamedService for WhoAmI {
    const NAME: &'static str = SERVICE;
}

struct Unary;

impl tonic::server::UnaryService<String> for Unary {
    type Response = String;
    type Future = std::future::Ready<Result<tonic::Response<String>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<String>) -> Self::Future {
        let text = match warden_tls::peer_info(&request) {
            Some(info) => format!("{}|{}", info.identity(), info.remote_addr()),
            None => "none".to_string(),
        };
        std::future::ready(Ok(tonic::Response::new(text)))
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for WhoAmI {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let codec = tonic_prost::ProstCodec::<String, String>::default();
            Ok(tonic::server::Grpc::new(codec).unary(Unary, request).await)
        })
    }
}

/// Calls [`WhoAmI`]: `"<identity>|<remote addr>"`.
pub async fn who_am_i(channel: Channel) -> Result<String, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::from_static("/test.WhoAmI/Get");
    let codec = tonic_prost::ProstCodec::<String, String>::default();
    Ok(grpc
        .unary(tonic::Request::new(String::new()), path, codec)
        .await?
        .into_inner())
}

/// The identity part of a [`who_am_i`] answer.
pub fn identity_of(answer: &str) -> &str {
    answer.split('|').next().unwrap_or("")
}

/// A tonic server with [`WhoAmI`] on 127.0.0.1:0 over `tls.incoming`.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    pub async fn start(tls: &ServerTls) -> TestServer {
        TestServer::start_with(tls, warden_tls::AcceptOptions::default()).await
    }

    /// [`TestServer::start`] with `options`.
    pub async fn start_with(tls: &ServerTls, options: warden_tls::AcceptOptions) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = tls.incoming_with(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            options,
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(WhoAmI)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        TestServer {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn addr_text(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Log lines written while the guard lives (on this thread: use a
/// current-thread runtime, as `#[tokio::test]` does).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    pub fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let buf = logs.0.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || LogWriter(buf.clone()))
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// `WARN` lines containing `needle`.
    pub fn warn_lines(&self, needle: &str) -> Vec<String> {
        self.text()
            .lines()
            .filter(|l| l.contains(" WARN ") && l.contains(needle))
            .map(str::to_string)
            .collect()
    }

    /// Waits (up to 5 s) until at least `n` WARN lines contain `needle`.
    pub async fn wait_for_warns(&self, needle: &str, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let lines = self.warn_lines(needle);
            if lines.len() >= n || Instant::now() > deadline {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn read_chain(file: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(file)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A rustls client config built straight from files, with none of the
/// checks `ClientCerts::load` makes (to present certificates it refuses).
pub fn raw_client_config(
    ca_file: &Path,
    cert_and_key: Option<(&Path, &Path)>,
    alpn: &[&[u8]],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in read_chain(ca_file) {
        roots.add(ca).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_root_certificates(roots);
    let mut config = match cert_and_key {
        Some((cert, key)) => builder
            .with_client_auth_cert(read_chain(cert), PrivateKeyDer::from_pem_file(key).unwrap())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Handshakes with `config` and then reads: TLS 1.3 finishes the client's
/// side of the handshake before the server checks the client certificate,
/// so a refused certificate shows as the server's alert on the first read.
/// `Ok` only if the connection is still up after the server's first
/// flight (HTTP/2 SETTINGS) or 300 ms.
pub async fn raw_handshake(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<()> {
    let tcp = TcpStream::connect(addr).await?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let mut tls = connector
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await?;
    // The HTTP/2 client preface, so a server that accepted answers.
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await?;
    tls.flush().await?;
    let mut buf = [0u8; 64];
    match tokio::time::timeout(Duration::from_millis(300), tls.read(&mut buf)).await {
        Ok(Ok(0)) => Err(std::io::ErrorKind::UnexpectedEof.into()),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(_) => Ok(()),
    }
}

/// Signs a leaf with the CA at `ca_key` / `certs_dir/ca.crt` using rcgen
/// directly (names and usages `mint` refuses), writing `out_dir/NAME.crt`
/// and `out_dir/NAME.key`.
pub fn sign_custom(
    certs_dir: &Path,
    ca_key: &Path,
    common_name: &str,
    uris: &[&str],
    usages: &[rcgen::ExtendedKeyUsagePurpose],
    out_dir: &Path,
    name: &str,
) -> (PathBuf, PathBuf) {
    let sans: Vec<rcgen::SanType> = uris
        .iter()
        .map(|u| rcgen::SanType::URI(rcgen::string::Ia5String::try_from(*u).unwrap()))
        .collect();
    sign_with_sans(certs_dir, ca_key, common_name, sans, usages, out_dir, name)
}

/// [`sign_custom`] with any SANs.
pub fn sign_with_sans(
    certs_dir: &Path,
    ca_key: &Path,
    common_name: &str,
    sans: Vec<rcgen::SanType>,
    usages: &[rcgen::ExtendedKeyUsagePurpose],
    out_dir: &Path,
    name: &str,
) -> (PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(ca_key).unwrap()).unwrap();
    let ca_der = read_chain(&certs_dir.join("ca.crt")).pop().unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_der(&ca_der, ca_key).unwrap();
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.subject_alt_names = sans;
    params.extended_key_usages = usages.to_vec();
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(3600)).into();
    params.not_after = (now + Duration::from_secs(3600)).into();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let cert_file = out_dir.join(format!("{name}.crt"));
    let key_file = out_dir.join(format!("{name}.key"));
    std::fs::File::create(&cert_file)
        .unwrap()
        .write_all(cert.pem().as_bytes())
        .unwrap();
    std::fs::File::create(&key_file)
        .unwrap()
        .write_all(key.serialize_pem().as_bytes())
        .unwrap();
    (cert_file, key_file)
}
