//! The public `warden.v1.Admin` gRPC service: `List`,
//! `ForceRelease` and `AuditTrail`; and `AddNode`, `RemoveNode`,
//! `ReplaceNode` (see [`crate::node::membership`]) and `SaveSnapshot` (a
//! read-index-confirmed copy of the leader's table, see [`crate::raft::backup`]).
//!
//! `List` and `AuditTrail` are linearizable reads (read-index, as `Status`).
//! The ages `List` reports come from this node's own deadline table (when it
//! applied the grant, when the enqueue reached its log): display only, never
//! replicated. `ForceRelease` is refused with `PermissionDenied` unless the
//! node runs with `--allow-admin` (until authentication exists); when allowed
//! it is proposed like any client command (S7 header, due list attached, reply
//! after commit) and recorded in the replicated audit trail with who asked and
//! the proposer's wall-clock time (display only, docs/semantics.md "Time").

use std::time::{SystemTime, UNIX_EPOCH};

use tonic::{Request, Response, Status};
use warden_core::types::{Command, ForceRelease};
use warden_core::validate;
use warden_proto::v1 as pb;
use warden_proto::v1::admin_server::Admin;

use super::convert::{nonzero, request_header};
use super::principal;
use super::status::admin_disabled;
use crate::node::membership::Membership;
use crate::node::submit::Released;
use crate::node::{NodeCell, SubmitError};

/// Longest `requested_by` a caller may send, in bytes; the server appends
/// " from <caller address>" and the whole stays within
/// [`warden_core::limits::MAX_REQUESTED_BY_BYTES`].
pub const MAX_CALLER_REQUESTED_BY_BYTES: usize = 200;

/// The service; answers `Unavailable` until the node has bootstrapped.
#[derive(Clone, Debug)]
pub struct AdminService {
    node: NodeCell,
}

impl AdminService {
    /// A service over the (not yet started) node.
    pub fn new(node: NodeCell) -> Self {
        AdminService { node }
    }
}

/// Who asked, as the audit trail records it: the caller's text (or
/// "unknown") and the caller's address.
fn requested_by(text: &str, peer: Option<std::net::SocketAddr>) -> Result<String, SubmitError> {
    let text = text.trim();
    if text.len() > MAX_CALLER_REQUESTED_BY_BYTES {
        return Err(SubmitError::invalid(
            "requested_by",
            format!(
                "at most {MAX_CALLER_REQUESTED_BY_BYTES} bytes; got {}",
                text.len()
            ),
        ));
    }
    let who = if text.is_empty() { "unknown" } else { text };
    let full = match peer {
        Some(addr) => format!("{who} from {addr}"),
        None => who.to_string(),
    };
    validate::requested_by(&full)?;
    Ok(full)
}

/// Wall-clock milliseconds since the Unix epoch, for display in the audit
/// trail only (never compared, never used in logic).
fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn list(
        &self,
        req: Request<pb::ListRequest>,
    ) -> Result<Response<pb::ListResponse>, Status> {
        let node = self.node.get()?;
        let (read_index, locks) = node.list(&req.into_inner().prefix).await?;
        let locks = locks
            .into_iter()
            .map(|l| pb::ListedLock {
                resource: l.resource,
                holder: l.holder.map(|h| pb::ListHolder {
                    lease_id: h.lease_id,
                    fencing_token: h.fencing_token,
                    age_ms: h.age_ms,
                    ttl_remaining_ms: h.ttl_remaining_ms,
                }),
                waiters: l
                    .waiters
                    .into_iter()
                    .map(|w| pb::ListWaiter {
                        lease_id: w.lease_id,
                        age_ms: w.age_ms,
                    })
                    .collect(),
            })
            .collect();
        Ok(Response::new(pb::ListResponse { locks, read_index }))
    }

    async fn force_release(
        &self,
        req: Request<pb::ForceReleaseRequest>,
    ) -> Result<Response<pb::ForceReleaseResponse>, Status> {
        let node = self.node.get()?;
        if !node.config().allow_admin {
            return Err(admin_disabled("force-release is disabled on this node"));
        }
        let principal = principal(&req)?;
        let peer = req.remote_addr();
        let r = req.into_inner();
        let cmd = Command::ForceRelease(ForceRelease {
            header: request_header(r.header)?,
            resource: r.resource,
            fencing_token: nonzero(r.fencing_token),
            due: None,
            requested_by: requested_by(&r.requested_by, peer)?,
            at_unix_ms: wall_clock_ms(),
        });
        let released: Released = node.submit(&principal, cmd).await?;
        Ok(Response::new(pb::ForceReleaseResponse {
            resource: released.resource,
            lease_id: released.lease_id,
            fencing_token: released.fencing_token,
        }))
    }

    async fn audit_trail(
        &self,
        _req: Request<pb::AuditTrailRequest>,
    ) -> Result<Response<pb::AuditTrailResponse>, Status> {
        let node = self.node.get()?;
        let (read_index, records) = node.audit_trail().await?;
        let records = records
            .into_iter()
            .map(|a| pb::AuditRecord {
                index: a.index,
                resource: a.resource,
                lease_id: a.lease_id,
                fencing_token: a.fencing_token,
                requested_by: a.requested_by,
                at_unix_ms: a.at_unix_ms,
            })
            .collect();
        Ok(Response::new(pb::AuditTrailResponse {
            records,
            read_index,
        }))
    }

    async fn add_node(
        &self,
        req: Request<pb::AddNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        let r = req.into_inner();
        let m = node.add_node(r.node_id, &r.addr).await?;
        Ok(Response::new(membership(m)))
    }

    async fn remove_node(
        &self,
        req: Request<pb::RemoveNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        let m = node.remove_node(req.into_inner().node_id).await?;
        Ok(Response::new(membership(m)))
    }

    async fn replace_node(
        &self,
        req: Request<pb::ReplaceNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        let r = req.into_inner();
        let m = node
            .replace_node(r.old_node_id, r.new_node_id, &r.addr)
            .await?;
        Ok(Response::new(membership(m)))
    }

    async fn save_snapshot(
        &self,
        _req: Request<pb::SaveSnapshotRequest>,
    ) -> Result<Response<pb::SaveSnapshotResponse>, Status> {
        let node = self.node.get()?;
        let cut = node.snapshot_cut().await?;
        Ok(Response::new(pb::SaveSnapshotResponse {
            cluster_id: node.cluster_id().to_string(),
            applied_index: cut.applied_index,
            term: cut.term,
            leader_node_id: cut.leader_node_id,
            data: cut.data,
            node_id: node.id(),
        }))
    }
}

/// The membership after a change, on the wire.
fn membership(m: Membership) -> pb::MembershipResponse {
    pb::MembershipResponse {
        voters: m.voters,
        learners: m.learners,
        log_index: m.log_index,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "What bad input gets": requested_by is bounded, names
    // the field, and carries the caller's address.
    #[test]
    fn requested_by_is_bounded_and_names_the_caller() {
        let addr = "127.0.0.1:4000".parse().ok();
        assert_eq!(
            requested_by(" alice ", addr).unwrap(),
            "alice from 127.0.0.1:4000"
        );
        assert_eq!(requested_by("", None).unwrap(), "unknown");
        let long = "x".repeat(MAX_CALLER_REQUESTED_BY_BYTES + 1);
        let e = Status::from(requested_by(&long, addr).unwrap_err());
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().starts_with("requested_by"), "{}", e.message());
        assert!(requested_by("a\u{7}b", addr).is_err());
        assert!(
            MAX_CALLER_REQUESTED_BY_BYTES
                + " from [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535".len()
                <= warden_core::limits::MAX_REQUESTED_BY_BYTES
        );
    }
}
