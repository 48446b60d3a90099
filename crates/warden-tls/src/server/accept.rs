//! The accept loop of [`ServerTls::incoming`] and [`ServerTls::listener`]:
//! each handshake in its own task within the listener's limits, then the
//! deny list and the connection registry (see the parent module's
//! "Accepting").

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_stream::{Stream, StreamExt};

use super::{Alpn, ConnHandle, PeerInfo, ServerTls, TlsConnection};
use crate::deny::serial_of;
use crate::failure_log::HandshakeFailure;
use crate::identity::{CertIdentity, Identity, IdentityError};
use crate::limits::{source_of, AcceptBackoff, AcceptOptions, Admit, Pending, Registry};

/// Spawns the accept task: reads `tcp` through [`AcceptBackoff`], runs
/// each handshake in its own task within the handshake limits, admits
/// each completed one to the listener's connection [`Registry`], and sends
/// it to the returned channel (see [`crate::limits`]). Ends when the
/// receiver is dropped (aborting handshakes in progress) or when `tcp`
/// ends and the last handshake finished.
pub(super) fn spawn_acceptor<S>(
    tls: ServerTls,
    alpn: Alpn,
    tcp: S,
    options: AcceptOptions,
) -> mpsc::Receiver<TlsConnection>
where
    S: Stream<Item = io::Result<TcpStream>> + Send + Unpin + 'static,
{
    let (tx, rx) = mpsc::channel(64);
    // Registered before the first handshake, so that a deny list set from
    // now on reaches every connection this listener admits.
    let registry = Registry::start(options, tls.inner.log.clone());
    tls.inner.registries.add(&registry);
    tokio::spawn(async move {
        let log = tls.inner.log.clone();
        let mut tcp = AcceptBackoff::with_log(tcp, log.clone());
        let mut handshakes: JoinSet<(IpAddr, u64, Option<TlsConnection>)> = JoinSet::new();
        let mut pending: Pending<(SocketAddr, AbortHandle)> = Pending::default();
        let mut next_id: u64 = 0;
        let mut tcp_open = true;
        loop {
            if !tcp_open && handshakes.is_empty() {
                break;
            }
            tokio::select! {
                _ = tx.closed() => break,
                next = tcp.next(), if tcp_open => match next {
                    Some(Ok(stream)) => {
                        let Ok(remote) = stream.peer_addr() else {
                            continue; // already gone
                        };
                        let source = source_of(remote.ip());
                        match pending.admit(source, &options) {
                            Admit::No => {
                                log.failed(
                                    remote,
                                    HandshakeFailure::TooMany,
                                    &format_args!("{} in progress", pending.len()),
                                );
                                continue;
                            }
                            Admit::Evicting((evicted, abort), why) => {
                                abort.abort();
                                log.failed(
                                    evicted,
                                    why,
                                    &format_args!(
                                        "pending handshake closed for a newer connection from {remote}"
                                    ),
                                );
                            }
                            Admit::Yes => {}
                        }
                        next_id += 1;
                        let id = next_id;
                        let abort = handshakes.spawn(handshake(
                            tls.clone(),
                            alpn,
                            stream,
                            options.handshake_timeout,
                            registry.clone(),
                            (source, id),
                        ));
                        pending.insert(source, id, (remote, abort));
                    }
                    // Not a resource error (`AcceptBackoff` waits those
                    // out): a connection reset before it was accepted.
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "accepting a connection failed");
                    }
                    None => tcp_open = false,
                },
                Some(done) = handshakes.join_next(), if !handshakes.is_empty() => {
                    // An aborted handshake was removed when it was evicted.
                    if let Ok((source, id, conn)) = done {
                        pending.remove(source, id);
                        if let Some(conn) = conn {
                            if tx.send(conn).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            }
        }
    });
    rx
}

/// One handshake, returning `pending`'s key with its connection: `None`
/// when it failed (logged), timed out, or the registry refused it.
async fn handshake(
    tls: ServerTls,
    alpn: Alpn,
    tcp: TcpStream,
    timeout: Duration,
    registry: Arc<Registry>,
    pending: (IpAddr, u64),
) -> (IpAddr, u64, Option<TlsConnection>) {
    let conn = handshake_inner(tls, alpn, tcp, timeout, registry).await;
    (pending.0, pending.1, conn)
}

async fn handshake_inner(
    tls: ServerTls,
    alpn: Alpn,
    tcp: TcpStream,
    timeout: Duration,
    registry: Arc<Registry>,
) -> Option<TlsConnection> {
    let (Ok(remote_addr), Ok(local_addr)) = (tcp.peer_addr(), tcp.local_addr()) else {
        return None; // already gone
    };
    let _ = tcp.set_nodelay(true);
    let config = match alpn {
        Alpn::Grpc => tls.config(),
        Alpn::Http => tls.http_config(),
    };
    let accept = tokio_rustls::TlsAcceptor::from(config).accept(tcp);
    let stream = match tokio::time::timeout(timeout, accept).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            let reason = HandshakeFailure::of_io_error(&e);
            match (
                HandshakeFailure::identity_error(&e),
                HandshakeFailure::denial(&e),
            ) {
                (Some(broken), _) => tls.inner.log.failed(remote_addr, reason, broken),
                (None, Some(denied)) => tls.inner.log.failed(remote_addr, reason, denied),
                (None, None) => tls.inner.log.failed(remote_addr, reason, &e),
            }
            return None;
        }
        Err(_) => {
            tls.inner.log.failed(
                remote_addr,
                HandshakeFailure::Timeout,
                &format_args!("no handshake within {timeout:?}"),
            );
            return None;
        }
    };
    let (_, conn) = stream.get_ref();
    let (identity, serial) = match peer_of(conn.peer_certificates()) {
        Ok(peer) => peer,
        // The verifier already checked it; a failure here would be a bug,
        // and still refuses the connection.
        Err(e) => {
            tls.inner
                .log
                .failed(remote_addr, HandshakeFailure::BadIdentity, &e);
            return None;
        }
    };
    let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
    let conn = match registry.admit(&identity, serial, remote_addr.ip()) {
        Ok(conn) => conn,
        Err(refused) => {
            tls.inner
                .log
                .failed(remote_addr, HandshakeFailure::ConnectionLimit, &refused);
            return None;
        }
    };
    // The verifier read the deny list before the handshake ended; one set
    // since then may have swept the registry before this connection was in
    // it. The setter stores the list before it sweeps (under the registry's
    // lock, which `admit` took too), so reading it again now catches that.
    if conn.denied_by(&tls.inner.deny.effective()) {
        conn.close();
        conn.forget();
        tls.inner.log.failed(
            remote_addr,
            HandshakeFailure::Denied,
            &"denied by a deny list set during the handshake",
        );
        return None;
    }
    Some(TlsConnection {
        stream,
        info: PeerInfo {
            remote_addr,
            local_addr,
            identity,
            alpn,
            conn: ConnHandle(conn),
        },
    })
}

/// The identity and the serial of the certificate a peer presented
/// (anonymous and none without one).
fn peer_of(
    certs: Option<&[rustls_pki_types::CertificateDer<'static>]>,
) -> Result<(Identity, Option<String>), IdentityError> {
    match certs {
        None | Some([]) => Ok((Identity::Anonymous, None)),
        Some([end_entity, ..]) => Ok((
            CertIdentity::of(end_entity)?.into(),
            Some(serial_of(end_entity)?),
        )),
    }
}
