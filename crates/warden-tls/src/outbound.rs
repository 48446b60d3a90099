//! A node's outbound peer connections, closable when the server's
//! certificate is denied afterwards: [`OutboundStream`] (what
//! [`crate::TlsConnector`] hands tonic, inside hyper's `TokioIo`) and the
//! [`Outbound`] list of a [`crate::ClientTls`].
//!
//! A deny list checked only at the handshake would leave a connection
//! made before the deny open for good: a revoked node that a leader
//! already replicates to would go on receiving the log and counting
//! towards its quorum. So every outbound connection keeps its server's
//! serial, and a change of the deny list closes the ones it now denies
//! ([`crate::NodeTls::set_denied`], [`crate::NodeTls::reload`]): their IO
//! fails from the next read or write on, and the task reading is woken.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::deny::DenyList;

/// One outbound connection's state.
#[derive(Debug)]
struct OutConn {
    /// The server certificate's serial (canonical).
    serial: String,
    closed: AtomicBool,
    waker: AtomicWaker,
}

/// The outbound connections of one [`crate::ClientTls`] (weakly: a
/// dropped connection leaves the list at the next change).
#[derive(Debug, Default)]
pub(crate) struct Outbound(Mutex<Vec<Weak<OutConn>>>);

impl Outbound {
    /// Wraps a connection to a server whose certificate has `serial`.
    pub(crate) fn track(
        &self,
        stream: tokio_rustls::client::TlsStream<TcpStream>,
        serial: String,
    ) -> OutboundStream {
        let conn = Arc::new(OutConn {
            serial,
            closed: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        });
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|c| c.strong_count() > 0);
        all.push(Arc::downgrade(&conn));
        OutboundStream { stream, conn }
    }

    /// Closes every open connection whose server serial `denied` holds;
    /// how many.
    pub(crate) fn close_denied(&self, denied: &DenyList) -> usize {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|c| c.strong_count() > 0);
        let mut closed = 0;
        for conn in all.iter().filter_map(Weak::upgrade) {
            if denied.serials.contains(&conn.serial) && !conn.closed.swap(true, Ordering::AcqRel) {
                conn.waker.wake();
                closed += 1;
            }
        }
        closed
    }
}

/// A TLS connection to a server, closable by the deny list (see the module
/// docs).
#[derive(Debug)]
pub struct OutboundStream {
    stream: tokio_rustls::client::TlsStream<TcpStream>,
    conn: Arc<OutConn>,
}

fn denied_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection closed: the server's certificate is on the deny list",
    )
}

impl OutboundStream {
    fn is_closed(&self) -> bool {
        self.conn.closed.load(Ordering::Acquire)
    }
}

impl AsyncRead for OutboundStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.is_closed() {
            return Poll::Ready(Err(denied_error()));
        }
        // Registered before the second look: a close in between wakes us.
        self.conn.waker.register(cx.waker());
        if self.is_closed() {
            return Poll::Ready(Err(denied_error()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for OutboundStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.is_closed() {
            return Poll::Ready(Err(denied_error()));
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
        if self.is_closed() {
            return Poll::Ready(Err(denied_error()));
        }
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
