//! The `watches` quota: how many watch streams one principal may have open
//! at once on this node (docs/security.md "Quotas and limits"). The quota
//! is replicated like every other (per role, the largest, else the default);
//! each node counts only its own streams, so a principal may hold that many
//! on every node. Root and anonymous callers have no quota.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use warden_core::types::ErrorCode;

use super::error::command_error;
use super::{Node, Principal, ReadError};

/// Open watch streams by principal, on this node.
#[derive(Debug, Default)]
pub struct WatchCounts(Mutex<HashMap<String, u64>>);

/// One open watch stream of a principal; dropping it (the stream ended)
/// gives its place back.
#[derive(Debug)]
pub struct WatchSlot {
    counts: Arc<WatchCounts>,
    principal: String,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.principal);
            }
        }
    }
}

impl Node {
    /// A place for one more watch stream of `principal` on this node, held
    /// while the stream is open; `None` for callers without a quota.
    ///
    /// # Errors
    /// ResourceExhausted, field `quota.watches`, naming the principal and
    /// the limit, when it has that many open here.
    pub fn open_watch(&self, principal: &Principal) -> Result<Option<WatchSlot>, ReadError> {
        let Some(name) = principal.as_ref().map(|p| p.as_str()) else {
            return Ok(None);
        };
        let limit = {
            let m = self.machine()?;
            m.table.effective_quota(Some(name)).map(|q| q.watches)
        };
        let Some(limit) = limit else {
            return Ok(None);
        };
        let mut counts = self
            .watch_counts
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let open = counts.get(name).copied().unwrap_or(0);
        if open >= limit {
            return Err(ReadError::Refused(command_error(
                ErrorCode::ResourceExhausted,
                Some("quota.watches"),
                format!(
                    "quota watches of principal {name} reached on node {}: {limit} open watch streams (raise it per role)",
                    self.id
                ),
            )));
        }
        counts.insert(name.to_owned(), open + 1);
        Ok(Some(WatchSlot {
            counts: self.watch_counts.clone(),
            principal: name.to_owned(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use warden_core::types::{AuthOp, Permission, Quota};

    use crate::node::test_node::{named, Setup, TestNode};

    // The `watches` quota (docs/security.md "Quotas and limits"): with a
    // quota of 2, alice's third open watch on this node is refused naming
    // the quota, and ending one gives its place back; bob is not touched,
    // nor is root.
    #[tokio::test]
    async fn a_principals_open_watches_stop_at_its_quota() {
        let t = TestNode::start(Setup::default()).await;
        t.grant("alice", "w/", Permission::Read).await;
        t.auth(
            &named("root"),
            AuthOp::SetRoleQuota {
                role: "alice".into(),
                quota: Some(Quota {
                    watches: 2,
                    ..Quota::default()
                }),
            },
        )
        .await
        .expect("quota");
        let alice = named("alice");
        let first = t.node.open_watch(&alice).expect("first").expect("a slot");
        let _second = t.node.open_watch(&alice).expect("second");
        let e = t.node.open_watch(&alice).expect_err("third");
        let crate::node::ReadError::Refused(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (e.code, e.field.as_deref()),
            (
                warden_core::types::ErrorCode::ResourceExhausted,
                Some("quota.watches")
            )
        );
        assert!(
            e.message.contains("quota watches of principal alice"),
            "{}",
            e.message
        );
        t.node.open_watch(&named("bob")).expect("bob");
        assert!(t.node.open_watch(&named("root")).expect("root").is_none());
        drop(first);
        t.node.open_watch(&alice).expect("a place was given back");
    }
}
