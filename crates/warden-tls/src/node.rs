//! [`NodeTls`]: a node's server configs and its outgoing peer config from
//! one certs dir, reloaded together.

use std::path::Path;

use crate::certs::NodeCerts;
use crate::client::{ClientTls, TlsConnector};
use crate::error::LoadError;
use crate::server::{Installed, ServerTls};

/// Everything TLS a node needs: [`ServerTls`] for its listeners and
/// [`ClientTls`] (its node certificate as the client identity) for its
/// channels to peers. Cloning is cheap and shares both.
#[derive(Debug, Clone)]
pub struct NodeTls {
    server: ServerTls,
    peers: ClientTls,
}

impl NodeTls {
    /// Loads `dir` for node `node_id` ([`NodeCerts::load_for`]).
    pub fn load(dir: &Path, node_id: u64) -> Result<NodeTls, LoadError> {
        let certs = NodeCerts::load_for(dir, node_id)?;
        Ok(NodeTls {
            server: ServerTls::from_certs(&certs)?,
            peers: ClientTls::from_node_certs(&certs)?,
        })
    }

    /// Re-reads the certs dir once and, only if everything loads, swaps the
    /// server and the peer configs (e.g. on SIGHUP). On error neither
    /// changes: log the error (it names the file) and go on with the old set.
    pub fn reload(&self) -> Result<Installed, LoadError> {
        let certs = NodeCerts::load_for(self.server.dir(), self.server.node_id())?;
        let server = self.server.prepare(&certs)?;
        let peers = self.peers.prepare_node(&certs)?;
        self.peers.commit(peers);
        Ok(self.server.commit(server))
    }

    /// The server side: `incoming`, `listener`.
    pub fn server(&self) -> &ServerTls {
        &self.server
    }

    /// The client side of peer channels.
    pub fn peers(&self) -> &ClientTls {
        &self.peers
    }

    /// The connector for the channel to peer `peer_id`: the server reached
    /// must present node `peer_id`'s certificate.
    pub fn peer_connector(&self, peer_id: u64) -> TlsConnector {
        self.peers.peer_connector(peer_id)
    }
}
