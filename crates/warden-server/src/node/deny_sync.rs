//! The deny list, from the table to the handshakes: every
//! [`DENY_SYNC_PERIOD`] this node compares the replicated deny list of its
//! applied table with what it last gave its TLS, and on a change hands the
//! new list over ([`warden_tls::NodeTls::set_denied`]): from then on
//! handshakes with a denied principal's or serial's certificate fail, and
//! its open connections are closed at once (docs/security.md "A key was
//! stolen"). So a deny is enforced on a node at most one period after the
//! node applies it. The node's deny file (`deny.toml` in its certs dir)
//! binds from the start, before the node has caught up.
//!
//! Reading the table, not the entry that changed it, also covers a deny
//! list that arrives in a snapshot.

use std::sync::Weak;
use std::time::Duration;

use warden_tls::DenyList;

use super::Node;

/// How often the applied deny list is compared with the one in force: 250
/// ms (a deny closes connections well within a second of its apply).
pub const DENY_SYNC_PERIOD: Duration = Duration::from_millis(250);

/// The replicated deny list of `node`'s applied table.
fn applied_list(node: &Node) -> Option<DenyList> {
    let m = node.machine().ok()?;
    let auth = m.table.auth();
    Some(DenyList {
        principals: auth
            .denied_principals()
            .map(|p| p.as_str().to_owned())
            .collect(),
        serials: auth.denied_serials().map(str::to_owned).collect(),
    })
}

/// Runs until the node is dropped; returns at once on a node without TLS.
pub async fn run(node: Weak<Node>) {
    let mut in_force = DenyList::default();
    let mut tick = tokio::time::interval(DENY_SYNC_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(node) = node.upgrade() else {
            return;
        };
        let Some(tls) = node.tls().cloned() else {
            return;
        };
        let Some(list) = applied_list(&node) else {
            continue;
        };
        if list == in_force {
            continue;
        }
        let closed = tls.set_denied(list.clone());
        tracing::info!(
            principals = list.principals.len(),
            serials = list.serials.len(),
            closed_connections = closed,
            "deny list changed: denied certificates are refused and their connections closed"
        );
        in_force = list;
    }
}
