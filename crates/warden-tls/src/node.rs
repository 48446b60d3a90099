//! [`NodeTls`]: a node's server configs and its outgoing peer config from
//! one certs dir, reloaded together.

use std::path::Path;

use crate::certs::NodeCerts;
use crate::client::{ClientTls, TlsConnector};
use crate::deny::DenyList;
use crate::error::LoadError;
use crate::server::{Installed, ServerTls};

/// Everything TLS a node needs: [`ServerTls`] for its listeners and
/// [`ClientTls`] (its node certificate as the client identity) for its
/// channels to peers, sharing one deny list ([`crate::deny`]): the server
/// refuses denied clients and nodes, the peer side denied servers. Cloning
/// is cheap and shares both.
#[derive(Debug, Clone)]
pub struct NodeTls {
    server: ServerTls,
    peers: ClientTls,
}

impl NodeTls {
    /// Loads `dir` for node `node_id` ([`NodeCerts::load_for`]) and its
    /// deny file ([`crate::read_deny_file`]).
    pub fn load(dir: &Path, node_id: u64) -> Result<NodeTls, LoadError> {
        let certs = NodeCerts::load_for(dir, node_id)?;
        let server = ServerTls::from_certs(&certs)?;
        let peers = ClientTls::from_node_certs_denying(&certs, server.deny_state().clone())?;
        Ok(NodeTls { server, peers })
    }

    /// Re-reads the certs dir once, the deny file included, and, only if
    /// everything loads, swaps the server and the peer configs and the deny
    /// file's list (e.g. on SIGHUP); connections the new list denies are
    /// closed ([`Installed::closed_denied`]). On error nothing changes: log
    /// the error (it names the file) and go on with the old set.
    pub fn reload(&self) -> Result<Installed, LoadError> {
        let certs = NodeCerts::load_for(self.server.dir(), self.server.node_id())?;
        let server = self.server.prepare(&certs)?;
        let peers = self.peers.prepare_node(&certs)?;
        self.peers.commit(peers);
        let mut installed = self.server.commit(server);
        installed.closed_denied += self.peers.close_denied();
        Ok(installed)
    }

    /// Sets the replicated deny list on both sides
    /// ([`ServerTls::set_denied`]: the server closes the connections it
    /// denies and refuses their handshakes; new peer connections refuse a
    /// server whose node certificate's serial it denies, and open peer
    /// connections to one are closed). Returns how many connections were
    /// closed, inbound and outbound.
    pub fn set_denied(&self, list: DenyList) -> usize {
        self.server.set_denied(list) + self.peers.close_denied()
    }

    /// The deny list in force on both sides (deny file and replicated).
    pub fn denied(&self) -> DenyList {
        self.server.denied()
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
