//! A loopback TCP proxy in front of one node, for cutting a client off:
//! listens on 127.0.0.1:0 and forwards to the node, byte for byte, until told
//! otherwise. The mode applies to open connections at once (each chunk is
//! checked), so an established HTTP/2 connection can be cut mid-stream.

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
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// A proxy to `target` (`host:port`), forwarding.
    pub async fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind :0");
        let addr = listener.local_addr().expect("addr").to_string();
        let mode = Arc::new(AtomicU8::new(Mode::Forward as u8));
        let target = target.to_string();
        let m = mode.clone();
        let dropped_replies = Arc::new(AtomicU64::new(0));
        let dropped = dropped_replies.clone();
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
                    Direction::ToClient,
                    Some(dropped.clone()),
                ));
            }
        });
        Proxy {
            addr,
            mode,
            dropped_replies,
            accept,
        }
    }

    /// Bytes from the node that were dropped so far.
    pub fn dropped_reply_bytes(&self) -> u64 {
        self.dropped_replies.load(Ordering::SeqCst)
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    ToNode,
    ToClient,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: Arc<AtomicU8>,
    direction: Direction,
    dropped: Option<Arc<AtomicU64>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let forward = match mode.load(Ordering::SeqCst) {
            0 => true,
            1 => direction == Direction::ToNode,
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
