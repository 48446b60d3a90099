//! A loopback TCP proxy in front of one node, for cutting a client off:
//! listens on 127.0.0.1:0 and forwards to the node, byte for byte, until told
//! otherwise. The mode applies to open connections at once (each chunk is
//! checked), so an established HTTP/2 connection can be cut mid-stream.
//! It also counts, over all its connections, the HTTP/2 PINGs the node sent
//! (its keep-alive; readable only in front of an insecure node, TLS hides
//! the frames) and the connections whose node side ended.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Forward both ways.
    Forward = 0,
    /// Forward client → node, drop node → client (replies are lost after the
    /// node acted on the request).
    DropReplies = 1,
    /// Drop both ways; connections stay open (a silent partition).
    Blackhole = 2,
}

/// A running proxy; stops when dropped (its tasks end with the runtime).
pub struct Proxy {
    pub addr: String,
    mode: Arc<AtomicU8>,
    /// Bytes the node sent that were not forwarded to the client.
    dropped_replies: Arc<AtomicU64>,
    /// What the node did on its side of the connections.
    node_side: Arc<NodeSide>,
    accept: tokio::task::JoinHandle<()>,
}

/// Counts of what the node did, over all connections.
#[derive(Default)]
struct NodeSide {
    /// HTTP/2 PING frames (not ACKs) the node sent, forwarded or dropped.
    pings: AtomicU64,
    /// Connections whose node side ended (EOF or error on reading from the
    /// node), whoever began the close.
    closed: AtomicU64,
}

impl Proxy {
    /// A proxy to `target` (`host:port`), forwarding.
    pub async fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind :0");
        let addr = listener.local_addr().expect("addr").to_string();
        // Clients of the proxy speak what the node behind it speaks.
        super::transport::register(&addr, super::transport::security_of(target));
        let mode = Arc::new(AtomicU8::new(Mode::Forward as u8));
        let target = target.to_string();
        let m = mode.clone();
        let dropped_replies = Arc::new(AtomicU64::new(0));
        let dropped = dropped_replies.clone();
        let node_side = Arc::new(NodeSide::default());
        let side = node_side.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(pump(cr, sw, m.clone(), Direction::ToNode, None));
                tokio::spawn(pump(
                    sr,
                    cw,
                    m.clone(),
                    Direction::ToClient(side.clone()),
                    Some(dropped.clone()),
                ));
            }
        });
        Proxy {
            addr,
            mode,
            dropped_replies,
            node_side,
            accept,
        }
    }

    /// Bytes from the node that were dropped so far.
    pub fn dropped_reply_bytes(&self) -> u64 {
        self.dropped_replies.load(Ordering::SeqCst)
    }

    /// HTTP/2 PINGs (not ACKs) the node has sent so far (keep-alive).
    pub fn pings_from_node(&self) -> u64 {
        self.node_side.pings.load(Ordering::SeqCst)
    }

    /// Connections whose node side has ended so far.
    pub fn closed_by_node(&self) -> u64 {
        self.node_side.closed.load(Ordering::SeqCst)
    }

    pub fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

enum Direction {
    ToNode,
    /// Node → client: bytes are scanned for PINGs, EOF is counted.
    ToClient(Arc<NodeSide>),
}

/// Finds HTTP/2 frames in the node's byte stream (which starts with a frame:
/// a server sends no preface but its SETTINGS), counting PINGs.
#[derive(Default)]
struct FrameScan {
    /// The current frame header, while incomplete (9 bytes).
    header: Vec<u8>,
    /// Payload bytes of the current frame still to skip.
    skip: usize,
}

impl FrameScan {
    /// Scans `bytes`; returns the PINGs (type 0x6 without the ACK flag) whose
    /// header ended in them.
    fn pings(&mut self, mut bytes: &[u8]) -> u64 {
        let mut pings = 0;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() == 9 {
                let h = &self.header;
                self.skip =
                    (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                if h[3] == 0x6 && h[4] & 0x1 == 0 {
                    pings += 1;
                }
                self.header.clear();
            }
        }
        pings
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: Arc<AtomicU8>,
    direction: Direction,
    dropped: Option<Arc<AtomicU64>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut scan = FrameScan::default();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                if let Direction::ToClient(side) = &direction {
                    side.closed.fetch_add(1, Ordering::SeqCst);
                }
                return;
            }
            Ok(n) => n,
        };
        if let Direction::ToClient(side) = &direction {
            side.pings
                .fetch_add(scan.pings(&buf[..n]), Ordering::SeqCst);
        }
        let forward = match mode.load(Ordering::SeqCst) {
            0 => true,
            1 => matches!(direction, Direction::ToNode),
            _ => false,
        };
        if !forward {
            if let Some(d) = &dropped {
                d.fetch_add(n as u64, Ordering::SeqCst);
            }
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
