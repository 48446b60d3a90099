//! How the client opens a channel to a node: TCP by default; the simulator
//! (`warden-sim`) sets its own network once per process.

use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use tonic::transport::{Channel, Endpoint};

/// Opens lazily connected channels for configured endpoints.
pub trait Connector: Send + Sync + Debug + 'static {
    /// A lazily connected channel for `endpoint` (its timeouts already set).
    fn channel(&self, endpoint: Endpoint) -> Channel;
}

static CONNECTOR: OnceLock<Arc<dyn Connector>> = OnceLock::new();

/// Sets the process-wide connector (the simulator, once, before any client
/// connects). Returns false if one was already set. Applications never need it.
pub fn set_connector(connector: Arc<dyn Connector>) -> bool {
    CONNECTOR.set(connector).is_ok()
}

/// A lazily connected channel: through the connector set by
/// [`set_connector`], else TCP.
pub(crate) fn connect_lazy(endpoint: Endpoint) -> Channel {
    match CONNECTOR.get() {
        Some(c) => c.channel(endpoint),
        None => endpoint.connect_lazy(),
    }
}
