//! What the simulator injects into the production code: turmoil's network
//! (a tonic connector and an incoming-connection stream), the identity each
//! connection carries where a TLS handshake would put it ([`SimIdentities`]),
//! a drifting clock per host, and a disk whose unsynced writes a crash drops.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::{Channel, Endpoint, Uri};

/// Global simulated time (the same on every host), or zero outside a host.
pub fn global_now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

// ---------------------------------------------------------------- logs

/// Prints the production code's tracing events (openraft's included) to
/// stderr when `WARDEN_SIM_LOG` is set to a filter (`info`,
/// `openraft=debug,warden_server=debug`, ...), each stamped with the global
/// simulated time. openraft's events carry its `RaftCore{id=N}` span, which
/// names the node. Installed once per process; off by default (it is slow).
pub fn install_logs() {
    let Some(filter) = std::env::var_os("WARDEN_SIM_LOG") else {
        return;
    };
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = EventsAndEverySpan(tracing_subscriber::EnvFilter::new(filter.to_string_lossy()));
    let layer = tracing_subscriber::fmt::layer()
        .with_timer(SimTime)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_filter(filter);
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// The filter's levels apply to events only: every span is kept, so that an
/// event names its node through openraft's debug-level `RaftCore{id=N}` span.
struct EventsAndEverySpan(tracing_subscriber::EnvFilter);

impl<S> tracing_subscriber::layer::Filter<S> for EventsAndEverySpan {
    fn enabled(
        &self,
        meta: &tracing::Metadata<'_>,
        cx: &tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        meta.is_span()
            || <tracing_subscriber::EnvFilter as tracing_subscriber::layer::Filter<S>>::enabled(
                &self.0, meta, cx,
            )
    }
}

/// Formats the global simulated time (`-` outside a host).
struct SimTime;

impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match turmoil::sim_elapsed() {
            Some(t) => write!(w, "{:>9.3}", t.as_secs_f64()),
            None => write!(w, "{:>9}", "-"),
        }
    }
}

// ---------------------------------------------------------------- network

/// A turmoil TCP stream that tonic's server accepts. Its connection info
/// is a plaintext TCP connection's (both addresses), from which the node's
/// [`SimIdentities`] tells the peer's identity.
pub struct SimConn(pub turmoil::net::TcpStream);

impl tonic::transport::server::Connected for SimConn {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;
    fn connect_info(&self) -> Self::ConnectInfo {
        tonic::transport::server::TcpConnectInfo {
            local_addr: self.0.local_addr().ok(),
            remote_addr: self.0.peer_addr().ok(),
        }
    }
}

/// What each simulated host would present in a TLS handshake (TLS itself is
/// not simulated): a node host its node certificate, a client host the
/// client certificate of its principal, any other host none. Given to every
/// node as `Injected::identities`; asked with a connection's remote address,
/// it names the host by turmoil's reverse lookup.
#[derive(Debug, Clone, Default)]
pub struct SimIdentities {
    /// Node host name → node id.
    pub nodes: BTreeMap<String, u64>,
    /// Client host name → its principal (shared with the run's
    /// `world::World`, whose scenarios fill it as they spawn clients).
    pub clients: Arc<Mutex<BTreeMap<String, String>>>,
}

impl warden_server::sim_hooks::IdentitySource for SimIdentities {
    fn identity_of(&self, remote: std::net::SocketAddr) -> warden_tls::Identity {
        use warden_tls::Identity;
        let Some(host) = turmoil::reverse_lookup(remote.ip()) else {
            return Identity::Anonymous;
        };
        if let Some(node_id) = self.nodes.get(&host) {
            return Identity::Node { node_id: *node_id };
        }
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        match clients.get(&host) {
            Some(principal) => Identity::Client {
                principal: principal.clone(),
            },
            None => Identity::Anonymous,
        }
    }
}

impl AsyncRead for SimConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for SimConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// The connections a host's listener accepts, as tonic wants them.
pub fn incoming(
    listener: turmoil::net::TcpListener,
) -> impl Stream<Item = io::Result<SimConn>> + Send + 'static {
    futures::stream::unfold(listener, |l| async move {
        let next = l.accept().await.map(|(s, _)| SimConn(s));
        Some((next, l))
    })
}

/// Opens tonic channels over turmoil's TCP, for peers and clients.
#[derive(Debug)]
pub struct TurmoilConnector;

fn channel_over_turmoil(endpoint: Endpoint) -> Channel {
    endpoint.connect_with_connector_lazy(tower::service_fn(|uri: Uri| async move {
        let host = uri
            .host()
            .ok_or_else(|| io::Error::other("no host in uri"))?
            .to_string();
        let port = uri.port_u16().unwrap_or(80);
        let stream = turmoil::net::TcpStream::connect((host.as_str(), port)).await?;
        Ok::<_, io::Error>(TokioIo::new(stream))
    }))
}

impl warden_server::raft::network::PeerConnector for TurmoilConnector {
    fn channel(&self, _peer_id: u64, endpoint: Endpoint) -> Channel {
        channel_over_turmoil(endpoint)
    }
}

impl warden_client::transport::Connector for TurmoilConnector {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        channel_over_turmoil(endpoint)
    }
}

/// The client options of every simulated client: the defaults, over turmoil
/// (each server takes the same connector in its `Injected`).
pub fn client_options() -> warden_client::ClientOptions {
    warden_client::ClientOptions {
        connector: Some(Arc::new(TurmoilConnector)),
        ..warden_client::ClientOptions::default()
    }
}

// ---------------------------------------------------------------- clock

/// A host's clock: its own origin (hours from any other's) and its own rate
/// (within ±ρ/2 of real time, so any two differ by at most ρ).
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    /// Reading at global time zero.
    pub origin: Duration,
    /// Rate error in parts per million.
    pub rate_ppm: i64,
    /// Epoch (one per simulated machine: survives process restarts).
    pub epoch: u64,
}

impl SimClock {
    /// The reading at global time `g`.
    pub fn at(&self, g: Duration) -> Duration {
        let ns = g.as_nanos() as i128;
        let scaled = ns + ns * i128::from(self.rate_ppm) / 1_000_000;
        self.origin + Duration::from_nanos(u64::try_from(scaled.max(0)).unwrap_or(u64::MAX))
    }

    /// The global time at which this clock reads `reading` (inverse of `at`).
    pub fn global_at(&self, reading: Duration) -> Duration {
        let local = reading.saturating_sub(self.origin).as_nanos() as i128;
        let g = local * 1_000_000 / (1_000_000 + i128::from(self.rate_ppm));
        Duration::from_nanos(u64::try_from(g.max(0)).unwrap_or(u64::MAX))
    }

    /// The reading now.
    pub fn now(&self) -> Duration {
        self.at(global_now())
    }
}

impl warden_server::clock::Clock for SimClock {
    fn now(&self) -> Result<Duration, warden_server::clock::ClockError> {
        Ok(SimClock::now(self))
    }
    fn epoch(&self) -> Option<u64> {
        Some(self.epoch)
    }
}

// ---------------------------------------------------------------- disk

const PAGE: u64 = 4096;

#[derive(Debug, Default)]
struct DiskState {
    /// What survives a crash: bytes as of the last sync.
    synced: Vec<u8>,
    synced_len: u64,
    /// Written since the last sync, by page.
    dirty: BTreeMap<u64, Vec<u8>>,
    len: u64,
    /// Between a crash and the restart: the dying process's IO is refused.
    dead: bool,
}

/// One simulated machine's disk: written bytes reach `synced` only on
/// `sync_data`; a crash drops everything written since.
#[derive(Debug, Default, Clone)]
pub struct SimDisk(Arc<Mutex<DiskState>>);

fn dead() -> io::Error {
    io::Error::other("simulated crash: disk detached")
}

impl SimDisk {
    fn state(&self) -> std::sync::MutexGuard<'_, DiskState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The process died: refuse its IO from now on, drop unsynced writes.
    pub fn crash(&self) {
        let mut s = self.state();
        s.dead = true;
        s.dirty.clear();
        s.len = s.synced_len;
    }

    /// The machine restarts: IO works again on the synced bytes.
    pub fn restart(&self) {
        let mut s = self.state();
        s.dirty.clear();
        s.len = s.synced_len;
        s.dead = false;
    }
}

impl DiskState {
    fn page(&self, p: u64) -> Vec<u8> {
        if let Some(d) = self.dirty.get(&p) {
            return d.clone();
        }
        let start = (p * PAGE) as usize;
        let mut out = vec![0u8; PAGE as usize];
        if start < self.synced.len() {
            let end = (start + PAGE as usize).min(self.synced.len());
            out[..end - start].copy_from_slice(&self.synced[start..end]);
        }
        out
    }
}

impl redb::StorageBackend for SimDisk {
    fn len(&self) -> Result<u64, io::Error> {
        let s = self.state();
        if s.dead {
            return Err(dead());
        }
        Ok(s.len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        let s = self.state();
        if s.dead {
            return Err(dead());
        }
        if offset + out.len() as u64 > s.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past end",
            ));
        }
        let mut done = 0usize;
        while done < out.len() {
            let pos = offset + done as u64;
            let p = pos / PAGE;
            let within = (pos % PAGE) as usize;
            let n = (PAGE as usize - within).min(out.len() - done);
            if let Some(d) = s.dirty.get(&p) {
                out[done..done + n].copy_from_slice(&d[within..within + n]);
            } else {
                let start = pos as usize;
                for (i, b) in out[done..done + n].iter_mut().enumerate() {
                    *b = s.synced.get(start + i).copied().unwrap_or(0);
                }
            }
            done += n;
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        let mut s = self.state();
        if s.dead {
            return Err(dead());
        }
        if len < s.len {
            // Zero what is cut off, so a later growth reads zeros.
            let first = len / PAGE;
            let keep = (len % PAGE) as usize;
            let mut page = s.page(first);
            page[keep..].fill(0);
            s.dirty.insert(first, page);
            let pages: Vec<u64> = s.dirty.range(first + 1..).map(|(k, _)| *k).collect();
            for p in pages {
                s.dirty.insert(p, vec![0u8; PAGE as usize]);
            }
            let synced_pages = (s.synced.len() as u64).div_ceil(PAGE);
            for p in first + 1..synced_pages {
                s.dirty.insert(p, vec![0u8; PAGE as usize]);
            }
        }
        s.len = len;
        Ok(())
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        let mut s = self.state();
        if s.dead {
            return Err(dead());
        }
        let len = s.len as usize;
        s.synced.resize(len, 0);
        let dirty = std::mem::take(&mut s.dirty);
        for (p, bytes) in dirty {
            let start = (p * PAGE) as usize;
            if start >= len {
                continue;
            }
            let end = (start + PAGE as usize).min(len);
            s.synced[start..end].copy_from_slice(&bytes[..end - start]);
        }
        s.synced_len = s.len;
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        let mut s = self.state();
        if s.dead {
            return Err(dead());
        }
        let mut done = 0usize;
        while done < data.len() {
            let pos = offset + done as u64;
            let p = pos / PAGE;
            let within = (pos % PAGE) as usize;
            let n = (PAGE as usize - within).min(data.len() - done);
            let mut page = s.page(p);
            page[within..within + n].copy_from_slice(&data[done..done + n]);
            s.dirty.insert(p, page);
            done += n;
        }
        let end = offset + data.len() as u64;
        if end > s.len {
            s.len = end;
        }
        Ok(())
    }
}

/// The disks of every simulated machine, by data dir.
#[derive(Debug, Default)]
pub struct Disks(Mutex<BTreeMap<std::path::PathBuf, SimDisk>>);

impl Disks {
    /// The disk of `dir` (created empty on first use).
    pub fn disk(&self, dir: &std::path::Path) -> SimDisk {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(dir.to_path_buf())
            .or_default()
            .clone()
    }

    /// Every disk of the machine whose data dir is `dir`: the database's and
    /// the files beside it (the Raft log's write-ahead file). A crash or a
    /// restart reaches all of them.
    pub fn disks_of(&self, dir: &std::path::Path) -> Vec<SimDisk> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(dir.to_path_buf()).or_default();
        map.iter()
            .filter(|(path, _)| path.starts_with(dir))
            .map(|(_, d)| d.clone())
            .collect()
    }
}

impl warden_server::store::DiskFactory for Disks {
    fn open(&self, data_dir: &std::path::Path) -> Box<dyn redb::StorageBackend> {
        Box::new(self.disk(data_dir))
    }
}
