//! The public `warden.v1.Admin` gRPC service (issue 3, item 5): `List`,
//! `ForceRelease` and `AuditTrail`; and (issue 8) `AddNode`, `RemoveNode`,
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
//! the proposer's wall-clock time (display only, SEMANTICS "Time").

use std::time::{SystemTime, UNIX_EPOCH};

use tonic::{Request, Response, Status};
use warden_core::types::{Command, ForceRelease, Response as CoreResponse};
use warden_core::validate;
use warden_proto::v1 as pb;
use warden_proto::v1::admin_server::Admin;

use crate::node::NodeCell;
use crate::services::lock::{linearizable_read, request_header};
use crate::services::status::command_status;

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
fn requested_by(text: &str, peer: Option<std::net::SocketAddr>) -> Result<String, Status> {
    let text = text.trim();
    if text.len() > MAX_CALLER_REQUESTED_BY_BYTES {
        return Err(Status::invalid_argument(format!(
            "requested_by: at most {MAX_CALLER_REQUESTED_BY_BYTES} bytes; got {}",
            text.len()
        )));
    }
    let who = if text.is_empty() { "unknown" } else { text };
    let full = match peer {
        Some(addr) => format!("{who} from {addr}"),
        None => who.to_string(),
    };
    validate::requested_by(&full).map_err(|e| command_status(&e))?;
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
        let prefix = req.into_inner().prefix;
        if prefix.len() > warden_core::limits::MAX_RESOURCE_BYTES {
            return Err(Status::invalid_argument(format!(
                "prefix: at most {} bytes; got {}",
                warden_core::limits::MAX_RESOURCE_BYTES,
                prefix.len()
            )));
        }
        let read_index = linearizable_read(&node).await?;
        let now = node.shared.clock.now();
        let m = node.machine()?;
        let locks = m
            .table
            .resources_with_prefix(&prefix)
            .map(|(name, state)| pb::ListedLock {
                resource: name.clone(),
                holder: state.holder.as_ref().map(|g| pb::ListHolder {
                    lease_id: g.lease_id,
                    fencing_token: g.fencing_token,
                    age_ms: m
                        .deadlines
                        .held_for_ms(name, g.grant_index, now)
                        .unwrap_or(0),
                    ttl_remaining_ms: m.deadlines.remaining_ms(g.lease_id, now).unwrap_or(0),
                }),
                waiters: state
                    .waiters
                    .iter()
                    .map(|w| pb::ListWaiter {
                        lease_id: w.lease_id,
                        age_ms: m
                            .deadlines
                            .waited_for_ms(name, w.lease_id, w.enqueue_index, now)
                            .unwrap_or(0),
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
        if !node.config.allow_admin {
            return Err(Status::permission_denied(
                "force-release is disabled on this node: start `warden server` with --allow-admin \
                 (or `allow-admin = true` in its config file) to allow it",
            ));
        }
        let peer = req.remote_addr();
        let r = req.into_inner();
        let header = request_header(r.header)?;
        validate::resource(&r.resource).map_err(|e| command_status(&e))?;
        let fencing_token = (r.fencing_token != 0).then_some(r.fencing_token);
        if let Some(t) = fencing_token {
            validate::fencing_token(t).map_err(|e| command_status(&e))?;
        }
        let requested_by = requested_by(&r.requested_by, peer)?;
        node.require_leader()?;
        let cmd = Command::ForceRelease(ForceRelease {
            header,
            resource: r.resource,
            fencing_token,
            due: node.due_list(),
            requested_by,
            at_unix_ms: wall_clock_ms(),
        });
        match node.propose_command(cmd).await? {
            CoreResponse::Released {
                resource,
                lease_id,
                fencing_token,
            } => Ok(Response::new(pb::ForceReleaseResponse {
                resource,
                lease_id,
                fencing_token,
            })),
            other => Err(crate::services::status::unexpected(&other)),
        }
    }

    async fn audit_trail(
        &self,
        _req: Request<pb::AuditTrailRequest>,
    ) -> Result<Response<pb::AuditTrailResponse>, Status> {
        let node = self.node.get()?;
        let read_index = linearizable_read(&node).await?;
        let m = node.machine()?;
        let records = m
            .table
            .audit_trail()
            .map(|a| pb::AuditRecord {
                index: a.index,
                resource: a.resource.clone(),
                lease_id: a.lease_id,
                fencing_token: a.fencing_token,
                requested_by: a.requested_by.clone(),
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
        crate::node::membership::add_node(&node, r.node_id, &r.addr)
            .await
            .map(Response::new)
    }

    async fn remove_node(
        &self,
        req: Request<pb::RemoveNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        crate::node::membership::remove_node(&node, req.into_inner().node_id)
            .await
            .map(Response::new)
    }

    async fn replace_node(
        &self,
        req: Request<pb::ReplaceNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        let r = req.into_inner();
        crate::node::membership::replace_node(&node, r.old_node_id, r.new_node_id, &r.addr)
            .await
            .map(Response::new)
    }

    async fn save_snapshot(
        &self,
        _req: Request<pb::SaveSnapshotRequest>,
    ) -> Result<Response<pb::SaveSnapshotResponse>, Status> {
        let node = self.node.get()?;
        node.require_leader()?;
        // Read-index: this node is still the leader and has applied every
        // entry committed before the request; the table is then copied under
        // the machine lock at its applied index (one consistent cut).
        linearizable_read(&node).await?;
        let m = node.machine()?;
        let log_id = m
            .last_applied
            .ok_or_else(|| Status::unavailable("nothing applied yet; retry shortly"))?;
        let leader = crate::types::leader_of(&log_id);
        Ok(Response::new(pb::SaveSnapshotResponse {
            cluster_id: node.cluster_id.clone(),
            applied_index: log_id.index(),
            term: leader.term,
            leader_node_id: leader.node_id,
            data: m.table.to_snapshot(),
            node_id: node.id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 3 item 5 / "What bad input gets": requested_by is bounded, names
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
        let e = requested_by(&long, addr).unwrap_err();
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
