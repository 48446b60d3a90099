//! A loopback TCP proxy that delays every byte by a fixed one-way latency,
//! for clusters whose peers are far apart (docs/operations.md "Latency
//! between nodes"): listens on 127.0.0.1:0 and forwards each connection to
//! the target, each direction on its own. A chunk is stamped with its
//! arrival time when read and written at arrival + delay, chunks in the
//! order read, so the byte stream is the target's own, only later; a
//! chunk's delay does not hold up the reading of the next (the link
//! carries many chunks at once, as a long one does). An end of stream (or a
//! read error) is passed on after the chunks before it, as a half-close of
//! the other side.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running delaying proxy; stops accepting when dropped (its open
/// connections end with the runtime or when either side closes).
pub struct DelayProxy {
    /// Where to connect to reach the target through the delay.
    pub addr: String,
    accept: tokio::task::JoinHandle<()>,
}

impl DelayProxy {
    /// A proxy to `target` (`host:port`) adding `one_way` to each direction.
    pub async fn start(target: &str, one_way: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind :0");
        let addr = listener.local_addr().expect("addr").to_string();
        super::transport::register(&addr, super::transport::security_of(target));
        let target = target.to_string();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    // A connect to a loopback port nothing listens on yet can
                    // pick that very port as its source and connect to
                    // itself (TCP simultaneous open); kept, it held the
                    // port and its node failed to bind it ("Address already
                    // in use", seen once in the 50 ms WAN test). Dropped at
                    // once, the port is free again; the caller retries.
                    if server.local_addr().ok() == server.peer_addr().ok() {
                        return;
                    }
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::spawn(delayed(cr, sw, one_way));
                    tokio::spawn(delayed(sr, cw, one_way));
                });
            }
        });
        DelayProxy { addr, accept }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One direction: a reader stamps chunks, a writer delivers each at its
/// stamp + `delay`, in order; the end of `from` (an empty chunk, stamped
/// too) shuts `to` down one delay after it was read.
async fn delayed(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((arrived, chunk)) = rx.recv().await {
            tokio::time::sleep_until(arrived + delay).await;
            if chunk.is_empty() {
                break;
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).await.unwrap_or(0);
        // n == 0: the end of the stream, passed on as an empty chunk.
        if tx.send((Instant::now(), buf[..n].to_vec())).is_err() || n == 0 {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}
