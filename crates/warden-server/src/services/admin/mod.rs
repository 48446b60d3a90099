//! The public `warden.v1.Admin` gRPC service: `List`, `TopLocks` (see
//! [`crate::node::top`]), `ForceRelease` and
//! `AuditTrail`; `AddNode`, `RemoveNode`, `ReplaceNode` (see
//! [`crate::node::membership`]), `SaveSnapshot` and `SaveSnapshotStream`
//! (a read-index-confirmed copy of the leader's table, see
//! [`crate::raft::backup`]: in one message, or a head and data messages of
//! at most [`MAX_SNAPSHOT_CHUNK_BYTES`] each, see [`snapshot_chunks`]; both
//! take the copy, and check `admin` on `""`, in
//! [`Node::snapshot_cut`] only); and the auth
//! calls: roles, grants, principals' roles, quotas, limits and the auth
//! audit trail (`warden_core::auth`).
//!
//! Reads are linearizable (read-index, as `Status`) and check the caller's
//! permission against the table they are served from (see
//! [`crate::node::read`]). The ages and times left `List` reports are in
//! cluster time: the table's replicated instants less the read's `now`
//! (docs/semantics.md "Time"). `ForceRelease` and the auth changes are
//! proposed like any client command (S7 header, reply after commit) with
//! the caller's principal: the table
//! decides their `admin` permission when they apply, records who asked in
//! the replicated audit trails with the proposer's wall-clock time (display
//! only, docs/semantics.md "Time"). On an insecure node every administration
//! call that changes something is refused unless it runs with `--insecure
//! --allow-admin` ([`crate::node::Node::insecure_admin_gate`]).

use std::pin::Pin;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::Stream;
use tonic::{Request, Response, Status};
use warden_core::auth::Target;
use warden_core::types::{AuthChange, AuthOp, Command, ForceRelease, Permission};
use warden_core::validate;
use warden_proto::v1 as pb;
use warden_proto::v1::admin_server::Admin;

use super::convert::{self, nonzero, request_header};
use super::principal;
use crate::node::membership::Membership;
use crate::node::read::ListedHolder;
use crate::node::submit::{AuthChanged, Released};
use crate::node::{Node, NodeCell, Principal, SubmitError};
use crate::raft::snapshot_chunks::{pieces, MAX_SNAPSHOT_CHUNK_BYTES};

/// Longest `requested_by` a caller may send, in bytes; the server appends
/// " from <caller address>" and the whole stays within
/// [`warden_core::limits::MAX_REQUESTED_BY_BYTES`].
pub const MAX_CALLER_REQUESTED_BY_BYTES: usize = 200;

/// The service; answers `Unavailable` until the node has bootstrapped.
#[derive(Clone, Debug)]
pub struct AdminService {
    node: NodeCell,
    /// Most data bytes in one `SaveSnapshotStream` message:
    /// [`MAX_SNAPSHOT_CHUNK_BYTES`] (smaller only in tests).
    snapshot_chunk_bytes: usize,
}

impl AdminService {
    /// A service over the (not yet started) node.
    pub fn new(node: NodeCell) -> Self {
        AdminService {
            node,
            snapshot_chunk_bytes: MAX_SNAPSHOT_CHUNK_BYTES,
        }
    }

    /// Test hook: `SaveSnapshotStream` cuts the data into messages of at
    /// most `bytes` (clamped to 1..=[`MAX_SNAPSHOT_CHUNK_BYTES`]), so a
    /// small table travels as several.
    #[cfg(test)]
    pub(crate) fn with_snapshot_chunk_bytes(mut self, bytes: usize) -> Self {
        self.snapshot_chunk_bytes = bytes.clamp(1, MAX_SNAPSHOT_CHUNK_BYTES);
        self
    }
}

/// The messages of `SaveSnapshotStream` (see [`snapshot_chunks`]).
pub type SnapshotChunks =
    Pin<Box<dyn Stream<Item = Result<pb::SaveSnapshotChunk, Status>> + Send + 'static>>;

/// The messages of one `SaveSnapshotStream` (admin.proto): `head` (its
/// `data_bytes` set here to `data`'s length) with no data, then `data` in
/// pieces of at most `chunk_bytes` (clamped to
/// 1..=[`MAX_SNAPSHOT_CHUNK_BYTES`]), at least one, the last marked `done`.
pub fn snapshot_chunks(
    mut head: pb::SaveSnapshotHead,
    data: Arc<Vec<u8>>,
    chunk_bytes: usize,
) -> impl Iterator<Item = pb::SaveSnapshotChunk> + Send + 'static {
    head.data_bytes = data.len() as u64;
    let first = pb::SaveSnapshotChunk {
        head: Some(head),
        data: Vec::new(),
        done: false,
    };
    let rest = pieces(data.len(), chunk_bytes).map(move |(range, done)| pb::SaveSnapshotChunk {
        head: None,
        data: data[range].to_vec(),
        done,
    });
    std::iter::once(first).chain(rest)
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
pub(super) fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The caller's permission for a membership change: `--allow-admin` on an
/// insecure node, `admin` on `""` (in the applied table) with certificates.
fn membership_allowed(node: &Node, principal: &Principal) -> Result<(), Status> {
    node.insecure_admin_gate(principal, "membership changes")
        .map_err(SubmitError::from)?;
    node.check_applied(principal, Permission::Admin, Target::Prefix(""), None)?;
    Ok(())
}

/// Proposes the auth change `op` for `principal` (refused first on an
/// insecure node without `--allow-admin`).
async fn auth_change(
    node: &Node,
    principal: &Principal,
    header: Option<pb::RequestHeader>,
    op: AuthOp,
) -> Result<Response<pb::AuthChangeResponse>, Status> {
    node.insecure_admin_gate(principal, "auth changes")
        .map_err(SubmitError::from)?;
    let cmd = Command::AuthChange(AuthChange {
        header: request_header(header)?,
        op,
        at_unix_ms: wall_clock_ms(),
    });
    let AuthChanged = node.submit(principal, cmd).await?;
    Ok(Response::new(pb::AuthChangeResponse {}))
}

#[tonic::async_trait]
impl Admin for AdminService {
    type SaveSnapshotStreamStream = SnapshotChunks;

    async fn list(
        &self,
        req: Request<pb::ListRequest>,
    ) -> Result<Response<pb::ListResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, locks) = node.list(&principal, &req.into_inner().prefix).await?;
        let locks = locks
            .into_iter()
            .map(|l| {
                let kind = Some(l.kind);
                let holder = |h: &ListedHolder| pb::ListHolder {
                    lease_id: h.lease_id,
                    fencing_token: h.fencing_token,
                    age_ms: h.age_ms,
                    ttl_remaining_ms: h.ttl_remaining_ms,
                    mode: convert::wire_mode(kind, h.mode) as i32,
                    slot: h.slot,
                };
                let (kind_name, limit) = convert::kind_name(kind);
                pb::ListedLock {
                    holder: l.holder().map(holder),
                    holders: l.holders.iter().map(holder).collect(),
                    resource: l.resource,
                    kind: kind_name.to_owned(),
                    limit,
                    waiters: l
                        .waiters
                        .into_iter()
                        .map(|w| pb::ListWaiter {
                            lease_id: w.lease_id,
                            age_ms: w.age_ms,
                        })
                        .collect(),
                    lock_delay_remaining_ms: l.lock_delay_remaining_ms,
                }
            })
            .collect();
        Ok(Response::new(pb::ListResponse { locks, read_index }))
    }

    async fn top_locks(
        &self,
        req: Request<pb::TopLocksRequest>,
    ) -> Result<Response<pb::TopLocksResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let req = req.into_inner();
        let (read_index, hot) = node.top_locks(&principal, &req.prefix, req.limit).await?;
        let locks = hot
            .into_iter()
            .map(|h| pb::HotLock {
                resource: h.resource,
                queue_length: h.queue.queue_length,
                oldest_waiter_age_ms: h.queue.oldest_waiter_age_ms,
                grants_last_minute: h.recent.grants,
                expiries_last_minute: h.recent.expiries,
                wait_p99_ms: h.recent.wait_p99_ms,
            })
            .collect();
        Ok(Response::new(pb::TopLocksResponse { locks, read_index }))
    }

    async fn force_release(
        &self,
        req: Request<pb::ForceReleaseRequest>,
    ) -> Result<Response<pb::ForceReleaseResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        node.insecure_admin_gate(&principal, "force-release")
            .map_err(SubmitError::from)?;
        let peer = super::remote_addr(&req);
        let r = req.into_inner();
        super::trace::record_resource(&r.resource);
        let cmd = Command::ForceRelease(ForceRelease {
            header: request_header(r.header)?,
            resource: r.resource,
            fencing_token: nonzero(r.fencing_token),
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
        req: Request<pb::AuditTrailRequest>,
    ) -> Result<Response<pb::AuditTrailResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, records) = node.audit_trail(&principal).await?;
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
        membership_allowed(&node, &principal(&req)?)?;
        let r = req.into_inner();
        let m = node
            .add_node(r.node_id, &r.addr, non_empty(r.peer_addr).as_deref())
            .await?;
        Ok(Response::new(membership(m)))
    }

    async fn remove_node(
        &self,
        req: Request<pb::RemoveNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        membership_allowed(&node, &principal(&req)?)?;
        let m = node.remove_node(req.into_inner().node_id).await?;
        Ok(Response::new(membership(m)))
    }

    async fn replace_node(
        &self,
        req: Request<pb::ReplaceNodeRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        let node = self.node.get()?;
        membership_allowed(&node, &principal(&req)?)?;
        let r = req.into_inner();
        let m = node
            .replace_node(
                r.old_node_id,
                r.new_node_id,
                &r.addr,
                non_empty(r.peer_addr).as_deref(),
            )
            .await?;
        Ok(Response::new(membership(m)))
    }

    async fn save_snapshot(
        &self,
        req: Request<pb::SaveSnapshotRequest>,
    ) -> Result<Response<pb::SaveSnapshotResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let cut = node.snapshot_cut(&principal).await?;
        Ok(Response::new(pb::SaveSnapshotResponse {
            cluster_id: node.cluster_id().to_string(),
            applied_index: cut.applied_index,
            term: cut.term,
            leader_node_id: cut.leader_node_id,
            data: cut.data,
            node_id: node.id(),
        }))
    }

    async fn save_snapshot_stream(
        &self,
        req: Request<pb::SaveSnapshotRequest>,
    ) -> Result<Response<Self::SaveSnapshotStreamStream>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        // The permission is checked, and the copy taken, before the first
        // message: a refusal is the call's status, never a cut stream.
        let cut = node.snapshot_cut(&principal).await?;
        let head = pb::SaveSnapshotHead {
            cluster_id: node.cluster_id().to_string(),
            applied_index: cut.applied_index,
            term: cut.term,
            leader_node_id: cut.leader_node_id,
            node_id: node.id(),
            data_bytes: 0,
        };
        let chunks = snapshot_chunks(head, Arc::new(cut.data), self.snapshot_chunk_bytes);
        Ok(Response::new(Box::pin(futures::stream::iter(
            chunks.map(Ok),
        ))))
    }

    async fn grant_permission(
        &self,
        req: Request<pb::GrantPermissionRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = AuthOp::GrantPermission {
            role: r.role,
            prefix: r.prefix,
            permission: convert::permission(r.permission)?,
        };
        auth_change(&node, &principal, r.header, op).await
    }

    async fn revoke_permission(
        &self,
        req: Request<pb::RevokePermissionRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = AuthOp::RevokePermission {
            role: r.role,
            prefix: r.prefix,
        };
        auth_change(&node, &principal, r.header, op).await
    }

    async fn delete_role(
        &self,
        req: Request<pb::DeleteRoleRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        auth_change(
            &node,
            &principal,
            r.header,
            AuthOp::DeleteRole { role: r.role },
        )
        .await
    }

    async fn grant_role(
        &self,
        req: Request<pb::GrantRoleRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = AuthOp::GrantRole {
            user: convert::user(&r.user)?,
            role: r.role,
        };
        auth_change(&node, &principal, r.header, op).await
    }

    async fn revoke_role(
        &self,
        req: Request<pb::RevokeRoleRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = AuthOp::RevokeRole {
            user: convert::user(&r.user)?,
            role: r.role,
        };
        auth_change(&node, &principal, r.header, op).await
    }

    async fn set_role_quota(
        &self,
        req: Request<pb::SetRoleQuotaRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = AuthOp::SetRoleQuota {
            role: r.role,
            quota: r.quota.map(convert::quota),
        };
        auth_change(&node, &principal, r.header, op).await
    }

    async fn set_limits(
        &self,
        req: Request<pb::SetLimitsRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = AuthOp::SetLimits(convert::limits(r.limits)?);
        auth_change(&node, &principal, r.header, op).await
    }

    async fn list_roles(
        &self,
        req: Request<pb::ListRolesRequest>,
    ) -> Result<Response<pb::ListRolesResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, roles) = node.roles(&principal).await?;
        Ok(Response::new(pb::ListRolesResponse {
            roles: roles.into_iter().map(convert::role_pb).collect(),
            read_index,
        }))
    }

    async fn list_users(
        &self,
        req: Request<pb::ListUsersRequest>,
    ) -> Result<Response<pb::ListUsersResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, users) = node.users(&principal).await?;
        Ok(Response::new(pb::ListUsersResponse {
            users: users.into_iter().map(convert::user_pb).collect(),
            read_index,
        }))
    }

    async fn get_limits(
        &self,
        req: Request<pb::GetLimitsRequest>,
    ) -> Result<Response<pb::GetLimitsResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, limits) = node.limits(&principal).await?;
        Ok(Response::new(pb::GetLimitsResponse {
            limits: Some(convert::limits_pb(&limits)),
            read_index,
        }))
    }

    async fn deny(
        &self,
        req: Request<pb::DenyRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        self.deny_change(req, AuthOp::Deny).await
    }

    async fn undeny(
        &self,
        req: Request<pb::DenyRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        self.deny_change(req, AuthOp::Undeny).await
    }

    async fn list_denied(
        &self,
        req: Request<pb::ListDeniedRequest>,
    ) -> Result<Response<pb::ListDeniedResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, d) = node.denied(&principal).await?;
        Ok(Response::new(pb::ListDeniedResponse {
            users: d.users,
            serials: d.serials,
            file_users: d.file_users,
            file_serials: d.file_serials,
            read_index,
        }))
    }

    async fn auth_audit_trail(
        &self,
        req: Request<pb::AuthAuditTrailRequest>,
    ) -> Result<Response<pb::AuthAuditTrailResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let (read_index, records) = node.auth_audit_trail(&principal).await?;
        Ok(Response::new(pb::AuthAuditTrailResponse {
            records: records.iter().map(convert::audit_pb).collect(),
            read_index,
        }))
    }
}

impl AdminService {
    /// `Deny` or `Undeny` (`op`) of the request's target.
    async fn deny_change(
        &self,
        req: Request<pb::DenyRequest>,
        op: fn(warden_core::types::DenyTarget) -> AuthOp,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let node = self.node.get()?;
        let principal = principal(&req)?;
        let r = req.into_inner();
        let op = op(convert::deny_target(r.target)?);
        auth_change(&node, &principal, r.header, op).await
    }
}

/// The membership after a change, on the wire.
/// A proto3 string field: empty means not given.
fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn membership(m: Membership) -> pb::MembershipResponse {
    pb::MembershipResponse {
        voters: m.voters,
        learners: m.learners,
        log_index: m.log_index,
    }
}

#[cfg(test)]
mod tests;
