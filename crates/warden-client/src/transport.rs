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
