//! A delaying loopback TCP proxy: every byte read on one side is written to
//! the other `one_way` later (each direction alone: a round trip through
//! it costs 2 × `one_way`). No bandwidth limit, no loss, order kept: a
//! WAN's latency, not its other faults. The `wan` scenario puts one in
//! front of each Warden node's peer port.

use std::time::Duration;

use anyhow::Result;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running proxy; dropping it stops accepting (open connections end
/// with their peers).
pub struct Proxy {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on 127.0.0.1:`listen`, forwards to 127.0.0.1:`upstream`.
    pub async fn start(listen: u16, upstream: u16, one_way: Duration) -> Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", listen)).await?;
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    // A connect to a port nothing listens on yet can connect
                    // to itself (TCP simultaneous open) and hold the port
                    // its node is about to bind: dropped at once.
                    if outbound.local_addr().ok() == outbound.peer_addr().ok() {
                        return;
                    }
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let (ir, iw) = inbound.into_split();
                    let (or, ow) = outbound.into_split();
                    tokio::join!(pipe(ir, ow, one_way), pipe(or, iw, one_way));
                });
            }
        });
        Ok(Proxy { task })
    }
}

/// Copies `from` to `to`, each chunk written `delay` after it was read.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((at, bytes)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
