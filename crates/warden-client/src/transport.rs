//! How the client opens a channel to a node: through the [`Connector`] in
//! [`ClientOptions::connector`](crate::ClientOptions::connector), one per
//! client; none is plain TCP ([`TcpConnector`]). The simulator (`warden-sim`)
//! passes its own network there; a TLS connector belongs there too.

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

/// Plain TCP (tonic's lazy connect): what a client without a connector uses.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpConnector;

impl Connector for TcpConnector {
    fn channel(&self, endpoint: Endpoint) -> Channel {
        endpoint.connect_lazy()
    }
}
