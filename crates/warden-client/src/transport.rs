//! How the client opens a channel to a node: through the [`Connector`] in
//! [`ClientOptions::connector`](crate::ClientOptions::connector), one per
//! client. Without one, [`ClientOptions::tls`](crate::ClientOptions::tls)
//! decides: mutual TLS with the user's certificate ([`warden_tls::ClientTls`],
//! which is a [`Connector`] too), or plain TCP ([`TcpConnector`]) for a
//! cluster started with `--insecure`. The simulator (`warden-sim`) passes
//! its own network as the connector.

use std::fmt::Debug;

use tonic::transport::{Channel, Endpoint};

/// Opens lazily connected channels for configured endpoints.
pub trait Connector: Send + Sync + Debug + 'static {
    /// A lazily connected channel for `endpoint` (`http://host:port`, its
    /// connect timeout, TCP_NODELAY and HTTP/2 keep-alive already set by the
    /// client). It must not connect here: the client asks for a channel when
    /// it first needs one, and the connection opens on the first call.
    fn channel(&self, endpoint: Endpoint) -> Channel;
}

/// Plain TCP (tonic's lazy connect): what a client without a connector or
/// TLS options uses. Only a cluster started with `--insecure` accepts it.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpConnector;

impl Connector for TcpConnector {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        endpoint.connect_lazy()
    }
}

/// Mutual TLS 1.3 with the loaded client certificate: warden-tls'
/// [`TlsConnector`](warden_tls::TlsConnector) dials, handshakes and checks
/// that the server presented a node certificate, inside the endpoint's
/// connect timeout. Pass a `ClientTls` you keep yourself (to
/// [`reload`](warden_tls::ClientTls::reload) it when the files are rotated:
/// later connections use the new files) as the connector; or set
/// [`ClientOptions::tls`](crate::ClientOptions::tls) and the client loads one.
impl Connector for warden_tls::ClientTls {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        endpoint.connect_with_connector_lazy(self.connector())
    }
}

/// What a plaintext port that failed a call is, by what it answers to the
/// start of an HTTP/2 connection (the client preface and an empty SETTINGS
/// frame, RFC 9113 section 3.4) within `within`: None when it answers with
/// an HTTP/2 frame (a real HTTP/2 server: the failure was something else),
/// cannot be reached, or says nothing in time. Used only to name the cause
/// of a failed plaintext attempt: a call through tonic to a port that is
/// not HTTP/2 ends as "broken pipe" or "operation was canceled".
pub(crate) async fn sniff_plaintext(
    addr: &str,
    within: std::time::Duration,
) -> Option<&'static str> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // Length 0, type 4 (SETTINGS), flags 0, stream 0.
    const SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];
    let probe = async {
        let mut socket = tokio::net::TcpStream::connect(addr).await.ok()?;
        socket.write_all(PREFACE).await.ok()?;
        socket.write_all(&SETTINGS).await.ok()?;
        let mut head = [0u8; 9];
        let mut got = 0;
        while got < head.len() {
            match socket.read(&mut head[got..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        Some(classify(&head[..got]))
    };
    tokio::time::timeout(within, probe)
        .await
        .ok()
        .flatten()
        .flatten()
}

/// See [`sniff_plaintext`]: the first bytes a port sent back.
fn classify(head: &[u8]) -> Option<&'static str> {
    match head {
        [] => Some(
            "the port closed the connection without an HTTP/2 answer: not a Warden node, or a node with certificates (then pass --certs-dir instead of --insecure)",
        ),
        [b'H', b'T', b'T', b'P', ..] => {
            Some("the port answers HTTP/1, not HTTP/2: not a Warden node")
        }
        // A TLS record (alert or handshake), version 3.x.
        [0x15 | 0x16, 0x03, ..] => Some(
            "the port speaks TLS: a node with certificates (then pass --certs-dir instead of --insecure), or not a Warden node",
        ),
        // An HTTP/2 frame header: its type (byte 3) is SETTINGS or GOAWAY.
        [_, _, _, 0x04 | 0x07, ..] if head.len() == 9 => None,
        _ => Some("the port answers, but not with HTTP/2: not a Warden node"),
    }
}

#[cfg(test)]
mod tests {
    use super::classify;

    // What the first bytes back from a plaintext port say about it.
    #[test]
    fn a_port_is_named_by_its_first_bytes() {
        assert!(classify(b"HTTP/1.1 400 Bad Request\r\n")
            .unwrap()
            .contains("HTTP/1"));
        assert!(classify(&[0x15, 0x03, 0x03, 0x00, 0x02])
            .unwrap()
            .contains("--certs-dir"));
        assert!(classify(&[]).unwrap().contains("closed the connection"));
        assert_eq!(
            classify(&[0, 0, 6, 4, 0, 0, 0, 0, 0]),
            None,
            "HTTP/2 SETTINGS"
        );
        assert_eq!(
            classify(&[0, 0, 8, 7, 0, 0, 0, 0, 0]),
            None,
            "HTTP/2 GOAWAY"
        );
        assert!(classify(b"SSH-2.0-OpenSSH")
            .unwrap()
            .contains("not with HTTP/2"));
    }
}
