//! Wire messages to commands and answers to wire messages, for the services
//! that share them. A missing or contradictory field is refused naming the
//! field ([`SubmitError::Refused`]); the limits themselves are checked by
//! `warden_core::validate` in [`crate::node::Node::submit`].

use warden_core::types::{
    Acquire, AcquireOutcome, AuthAuditRecord, AuthOp, ClusterLimits, Command, DenyTarget,
    LeaseSpec, LockKind, Mode, NotGrantedReason, Permission, Principal, Quota, Release,
    RequestHeader,
};
use warden_core::Usage;
use warden_proto::v1 as pb;

use crate::node::read::{QueueBehind, RoleInfo, UserInfo};
use crate::node::submit::AcquireAnswer;
use crate::node::SubmitError;

/// The exactly-once header of a mutating request (S7).
pub fn request_header(h: Option<pb::RequestHeader>) -> Result<RequestHeader, SubmitError> {
    let h = h.ok_or_else(|| SubmitError::invalid("header", "required (client_id, request_id)"))?;
    super::trace::record_request(h.client_id, h.request_id);
    let h = RequestHeader {
        client_id: h.client_id,
        request_id: h.request_id,
        acked_request_id: h.acked_request_id,
    };
    warden_core::validate::header(&h)?;
    Ok(h)
}

/// `0` on the wire means "none" for optional ids and tokens.
pub fn nonzero(v: u64) -> Option<u64> {
    (v != 0).then_some(v)
}

/// An `AcquireRequest` as the command it asks for: a multi-lock when
/// `resources` is set (docs/semantics.md "Multi-locks"; `resource` then ""
/// or the first of them, no mode and no limit).
pub fn acquire(mut r: pb::AcquireRequest) -> Result<Command, SubmitError> {
    let multi = !r.resources.is_empty();
    if multi {
        if !r.resource.is_empty() && r.resource != r.resources[0] {
            return Err(SubmitError::invalid(
                "resource",
                "with resources set, leave resource empty or make it the first of resources",
            ));
        }
        if r.mode != pb::LockMode::Unspecified as i32 || r.limit != 0 {
            return Err(SubmitError::invalid(
                "mode",
                "a multi-lock takes mutexes only: leave mode and limit unset",
            ));
        }
        if r.max_hold_ms != 0 {
            return Err(SubmitError::invalid(
                "max_hold_ms",
                "a multi-lock takes no max-hold: leave max_hold_ms 0, or take the locks one by one",
            ));
        }
        r.resource = r.resources[0].clone();
    }
    super::trace::record_resource(&r.resource);
    let header = request_header(r.header)?;
    // A new name may not look like another (docs/semantics.md "What bad
    // input gets"); only here: apply keeps the old rule.
    if multi {
        warden_core::validate::multi_resources(&r.resource, &r.resources)?;
        for name in &r.resources {
            warden_core::validate::new_resource_name(name)
                .map_err(|e| SubmitError::invalid("resources", e.message))?;
        }
    } else {
        warden_core::validate::new_resource_name(&r.resource).map_err(SubmitError::Refused)?;
    }
    let lease = match (r.ttl_ms, r.lease_id) {
        (0, 0) => {
            return Err(SubmitError::invalid(
                "ttl_ms",
                "set ttl_ms (1000..=3600000) or lease_id",
            ))
        }
        (ttl, 0) => LeaseSpec::New { ttl_ms: ttl },
        (0, id) => LeaseSpec::Existing { lease_id: id },
        _ => {
            return Err(SubmitError::invalid(
                "ttl_ms",
                "set exactly one of ttl_ms and lease_id",
            ))
        }
    };
    let (kind, mode) = lock_kind(r.mode, r.limit)?.unwrap_or((LockKind::Mutex, Mode::Exclusive));
    // docs/semantics.md "Lock kinds" and "Max-hold": any kind, max-hold 0 =
    // none; a multi-lock is mutexes with no max-hold (checked above).
    Ok(Command::Acquire(Acquire {
        header,
        resource: r.resource,
        resources: r.resources,
        kind,
        mode,
        lease,
        wait_timeout_ms: r.wait_timeout_ms,
        lock_delay_ms: r.lock_delay_ms,
        max_hold_ms: r.max_hold_ms,
    }))
}

/// The kind and mode an `AcquireRequest` asks for (docs/semantics.md "Lock
/// kinds"): None for a mutex (mode unspecified, limit 0: what every older
/// client sends); a reader or writer of a read-write lock; a permit of a
/// semaphore of `limit`. The limit's range is `warden_core::validate`'s.
pub fn lock_kind(mode: i32, limit: u32) -> Result<Option<(LockKind, Mode)>, SubmitError> {
    match (pb::LockMode::try_from(mode), limit) {
        (Ok(pb::LockMode::Unspecified), 0) => Ok(None),
        (Ok(pb::LockMode::Unspecified), limit) => {
            Ok(Some((LockKind::Semaphore { limit }, Mode::Shared)))
        }
        (Ok(pb::LockMode::Shared), 0) => Ok(Some((LockKind::ReadWrite, Mode::Shared))),
        (Ok(pb::LockMode::Exclusive), 0) => Ok(Some((LockKind::ReadWrite, Mode::Exclusive))),
        (Ok(_), _) => Err(SubmitError::invalid(
            "mode",
            "a semaphore permit (limit > 0) takes no mode; a read-write lock (mode shared or \
             exclusive) takes no limit",
        )),
        (Err(_), _) => Err(SubmitError::invalid(
            "mode",
            format!(
                "must be LOCK_MODE_UNSPECIFIED, LOCK_MODE_SHARED or LOCK_MODE_EXCLUSIVE; got {mode}"
            ),
        )),
    }
}

/// The mode an `AcquireRequest` asks for, to echo in its `Granted`
/// (UNSPECIFIED when the value is unknown: the request is refused anyway).
pub fn wire_mode_of(r: &pb::AcquireRequest) -> pb::LockMode {
    pb::LockMode::try_from(r.mode).unwrap_or(pb::LockMode::Unspecified)
}

/// A grant's mode on the wire: SHARED or EXCLUSIVE for a read-write lock's
/// reader or writer, UNSPECIFIED for a mutex's holder or a permit.
pub fn wire_mode(kind: Option<LockKind>, mode: Mode) -> pb::LockMode {
    match (kind, mode) {
        (Some(LockKind::ReadWrite), Mode::Shared) => pb::LockMode::Shared,
        (Some(LockKind::ReadWrite), Mode::Exclusive) => pb::LockMode::Exclusive,
        _ => pb::LockMode::Unspecified,
    }
}

/// A kind's wire name (`StatusResponse.kind`, `ListedLock.kind`) and its
/// limit (0 but for a semaphore); "" for a free resource.
pub fn kind_name(kind: Option<LockKind>) -> (&'static str, u32) {
    match kind {
        None => ("", 0),
        Some(LockKind::Mutex) => ("mutex", 0),
        Some(LockKind::ReadWrite) => ("read_write", 0),
        Some(LockKind::Semaphore { limit }) => ("semaphore", limit),
    }
}

/// A `ReleaseRequest` as the command it asks for.
pub fn release(r: pb::ReleaseRequest) -> Result<Command, SubmitError> {
    super::trace::record_resource(&r.resource);
    Ok(Command::Release(Release {
        header: request_header(r.header)?,
        resource: (!r.resource.is_empty()).then_some(r.resource),
        lease_id: r.lease_id,
        fencing_token: nonzero(r.fencing_token),
    }))
}

/// The wire name of a reason an acquire was not granted.
pub fn reason_str(r: NotGrantedReason) -> &'static str {
    match r {
        NotGrantedReason::Held => "held",
        NotGrantedReason::LockDelay => "lock_delay",
        NotGrantedReason::WaitTimeout => "wait_timeout",
        NotGrantedReason::Cancelled => "cancelled",
        NotGrantedReason::Reserved => "reserved",
    }
}

/// What a `Granted` answer says beside the grant's resource, lease and
/// token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantDetail {
    /// The lease's TTL in milliseconds.
    pub ttl_ms: u64,
    /// The entry that made the grant.
    pub log_index: u64,
    /// A semaphore permit's slot.
    pub slot: Option<u32>,
    /// The grant's mode on the wire.
    pub mode: pb::LockMode,
    /// The grant's max-hold in milliseconds (0: none).
    pub max_hold_ms: u64,
}

/// A multi-lock's tokens on the wire.
pub fn resource_tokens(grants: &[warden_core::types::ResourceToken]) -> Vec<pb::ResourceToken> {
    grants
        .iter()
        .map(|g| pb::ResourceToken {
            resource: g.resource.clone(),
            fencing_token: g.fencing_token,
        })
        .collect()
}

/// A multi-lock's `Granted` answer: `granted` with every resource's token.
pub fn with_grants(
    mut msg: pb::AcquireResponse,
    grants: &[warden_core::types::ResourceToken],
) -> pb::AcquireResponse {
    if let Some(pb::acquire_response::Event::Granted(g)) = msg.event.as_mut() {
        g.grants = resource_tokens(grants);
    }
    msg
}

/// A `Granted` acquire answer.
pub fn granted(
    resource: String,
    lease_id: u64,
    fencing_token: u64,
    d: GrantDetail,
) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::Granted(pb::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms: d.ttl_ms,
            log_index: d.log_index,
            slot: d.slot,
            mode: d.mode as i32,
            grants: Vec::new(),
            max_hold_ms: d.max_hold_ms,
        })),
    }
}

/// A `NotGranted` acquire answer; `lock_delay_remaining_ms` is sent only
/// with reason `lock_delay` (0 otherwise).
pub fn not_granted(
    resource: String,
    holder: Option<u64>,
    reason: NotGrantedReason,
    lock_delay_remaining_ms: u64,
) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::NotGranted(pb::NotGranted {
            resource,
            holder_lease_id: holder.unwrap_or(0),
            reason: reason_str(reason).to_string(),
            lock_delay_remaining_ms: if reason == NotGrantedReason::LockDelay {
                lock_delay_remaining_ms
            } else {
                0
            },
        })),
    }
}

/// A `Queued` acquire answer: the waiter's position and lease, and what it
/// waits behind.
pub fn queued(position: u64, lease_id: u64, behind: QueueBehind) -> pb::AcquireResponse {
    let (holder_lease_id, lock_delay_remaining_ms) = match behind {
        QueueBehind::Holder { lease_id } => (lease_id, 0),
        QueueBehind::LockDelay { remaining_ms } => (0, remaining_ms),
        QueueBehind::Waiters { .. } | QueueBehind::Nothing => (0, 0),
    };
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::Queued(pb::Queued {
            position,
            lease_id,
            behind: behind.as_str().to_string(),
            holder_lease_id,
            lock_delay_remaining_ms,
        })),
    }
}

/// How an acquire went once its entry applied.
pub enum AcquireStart {
    /// Granted or refused: the one final message.
    Final(pb::AcquireResponse),
    /// Queued: the waiter's follower reports the rest.
    Queued {
        /// The resource.
        resource: String,
        /// The waiting lease.
        lease_id: u64,
        /// The index of the enqueue entry.
        enqueue_index: u64,
    },
}

/// An acquire's reply as what to send. A retried acquire whose grant has
/// ended since is refused `request_expired` (S7: the first outcome, but the
/// lease no longer holds it): `Err(fencing_token, lease_id)`. A refusal for
/// the lock-delay carries `lock_delay_left(resource)`: the milliseconds left
/// in cluster time, from the applied table's lock-delay end and `now`. A
/// grant carries
/// `max_hold(resource, lease, token)`: its max-hold in ms (0: none).
pub fn acquire_start(
    answer: AcquireAnswer,
    mode: pb::LockMode,
    lock_delay_left: impl FnOnce(&str) -> u64,
    max_hold: impl FnOnce(&str, u64, u64) -> u64,
) -> Result<AcquireStart, (u64, u64)> {
    let AcquireAnswer {
        reply,
        slot,
        grants,
    } = answer;
    Ok(match reply.outcome {
        AcquireOutcome::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms,
            grant_index,
        } => {
            if reply.retried && reply.current_token != Some(fencing_token) {
                return Err((fencing_token, lease_id));
            }
            let max_hold_ms = max_hold(&resource, lease_id, fencing_token);
            AcquireStart::Final(with_grants(
                granted(
                    resource,
                    lease_id,
                    fencing_token,
                    GrantDetail {
                        ttl_ms,
                        log_index: grant_index,
                        slot,
                        mode,
                        max_hold_ms,
                    },
                ),
                &grants,
            ))
        }
        AcquireOutcome::NotGranted {
            resource,
            holder_lease_id,
            reason,
        } => {
            let left = if reason == NotGrantedReason::LockDelay {
                lock_delay_left(&resource)
            } else {
                0
            };
            AcquireStart::Final(not_granted(resource, holder_lease_id, reason, left))
        }
        AcquireOutcome::Queued {
            resource,
            lease_id,
            enqueue_index,
            ..
        } => AcquireStart::Queued {
            resource,
            lease_id,
            enqueue_index,
        },
    })
}

// ------------------------------------------------------------------ auth

/// A wire permission; `PERMISSION_UNSPECIFIED` (or an unknown value) is
/// refused naming the field.
pub fn permission(p: i32) -> Result<Permission, SubmitError> {
    match pb::Permission::try_from(p) {
        Ok(pb::Permission::Read) => Ok(Permission::Read),
        Ok(pb::Permission::Lock) => Ok(Permission::Lock),
        Ok(pb::Permission::Admin) => Ok(Permission::Admin),
        _ => Err(SubmitError::invalid(
            "permission",
            format!("must be read, lock or admin; got {p}"),
        )),
    }
}

/// A permission on the wire.
pub fn permission_pb(p: Permission) -> pb::Permission {
    match p {
        Permission::Read => pb::Permission::Read,
        Permission::Lock => pb::Permission::Lock,
        Permission::Admin => pb::Permission::Admin,
    }
}

/// The principal an auth change names (`user`), checked (field `user`).
pub fn user(name: &str) -> Result<Principal, SubmitError> {
    Principal::new(name).map_err(|e| SubmitError::invalid("user", e.message))
}

/// A wire quota (its bounds are checked with the command).
pub fn quota(q: pb::Quota) -> Quota {
    Quota {
        leases: q.leases,
        locks: q.locks,
        waiters: q.waiters,
        clients: q.clients,
        values: q.values,
        value_bytes: q.value_bytes,
        waits_per_resource: q.waits_per_resource,
        watches: q.watches,
    }
}

/// A quota on the wire.
pub fn quota_pb(q: &Quota) -> pb::Quota {
    pb::Quota {
        leases: q.leases,
        locks: q.locks,
        waiters: q.waiters,
        clients: q.clients,
        values: q.values,
        value_bytes: q.value_bytes,
        waits_per_resource: q.waits_per_resource,
        watches: q.watches,
    }
}

/// Wire limits: both the message and its default quota are required.
pub fn limits(l: Option<pb::ClusterLimits>) -> Result<ClusterLimits, SubmitError> {
    let l = l.ok_or_else(|| {
        SubmitError::invalid(
            "limits",
            "required (max_leases, max_clients, default_quota)",
        )
    })?;
    let default_quota = l.default_quota.ok_or_else(|| {
        SubmitError::invalid(
            "default_quota",
            "required (leases, locks, waiters, clients)",
        )
    })?;
    Ok(ClusterLimits {
        max_leases: l.max_leases,
        max_clients: l.max_clients,
        default_quota: quota(default_quota),
    })
}

/// Limits on the wire.
pub fn limits_pb(l: &ClusterLimits) -> pb::ClusterLimits {
    pb::ClusterLimits {
        max_leases: l.max_leases,
        max_clients: l.max_clients,
        default_quota: Some(quota_pb(&l.default_quota)),
    }
}

/// A role on the wire.
pub fn role_pb(r: RoleInfo) -> pb::RoleInfo {
    pb::RoleInfo {
        name: r.name,
        grants: r
            .grants
            .into_iter()
            .map(|(prefix, p)| pb::RoleGrant {
                prefix,
                permission: permission_pb(p) as i32,
            })
            .collect(),
        quota: r.quota.as_ref().map(quota_pb),
    }
}

fn usage_pb(u: &Usage) -> pb::QuotaUsage {
    pb::QuotaUsage {
        leases: u.leases,
        locks: u.locks,
        waiters: u.waiters,
        clients: u.clients,
        values: u.values,
        value_bytes: u.value_bytes,
    }
}

/// A principal with roles on the wire.
pub fn user_pb(u: UserInfo) -> pb::UserInfo {
    pb::UserInfo {
        principal: u.principal,
        roles: u.roles,
        quota: u.quota.as_ref().map(quota_pb),
        usage: Some(usage_pb(&u.usage)),
        denied: u.denied,
    }
}

/// An auth audit record on the wire: `op` names the change, its own fields
/// are set and the others left empty.
pub fn audit_pb(a: &AuthAuditRecord) -> pb::AuthAuditRecord {
    let mut r = pb::AuthAuditRecord {
        index: a.index,
        principal: a
            .principal
            .as_ref()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        at_unix_ms: a.at_unix_ms,
        ..Default::default()
    };
    match &a.op {
        AuthOp::GrantPermission {
            role,
            prefix,
            permission,
        } => {
            r.op = "grant_permission".into();
            r.role = role.clone();
            r.prefix = prefix.clone();
            r.permission = permission_pb(*permission) as i32;
        }
        AuthOp::RevokePermission { role, prefix } => {
            r.op = "revoke_permission".into();
            r.role = role.clone();
            r.prefix = prefix.clone();
        }
        AuthOp::DeleteRole { role } => {
            r.op = "delete_role".into();
            r.role = role.clone();
        }
        AuthOp::GrantRole { user, role } => {
            r.op = "grant_role".into();
            r.user = user.as_str().to_owned();
            r.role = role.clone();
        }
        AuthOp::RevokeRole { user, role } => {
            r.op = "revoke_role".into();
            r.user = user.as_str().to_owned();
            r.role = role.clone();
        }
        AuthOp::SetRoleQuota { role, quota } => {
            r.op = "set_role_quota".into();
            r.role = role.clone();
            r.quota = quota.as_ref().map(quota_pb);
        }
        AuthOp::SetLimits(l) => {
            r.op = "set_limits".into();
            r.limits = Some(limits_pb(l));
        }
        AuthOp::Deny(t) | AuthOp::Undeny(t) => {
            let deny = matches!(a.op, AuthOp::Deny(_));
            r.op = if deny { "deny" } else { "undeny" }.into();
            match t {
                DenyTarget::Principal(p) => r.user = p.as_str().to_owned(),
                DenyTarget::Serial(s) => r.serial = s.clone(),
            }
        }
    }
    r
}

/// A deny-list entry from the wire: a principal (field `user`) or a serial
/// in any hex form `warden cert list` or openssl prints (field `serial`),
/// made canonical here.
///
/// # Errors
/// InvalidArgument naming the field: no target, a bad principal, a bad
/// serial.
pub fn deny_target(target: Option<pb::deny_request::Target>) -> Result<DenyTarget, SubmitError> {
    match target {
        Some(pb::deny_request::Target::User(u)) => {
            // A node's certificate names no principal: a node-like name
            // would deny nothing at the handshake (found by attack).
            if let Err(e) = warden_tls::validate_principal(&u) {
                return Err(SubmitError::invalid(
                    "user",
                    format!("{e}; a node's certificate is denied by its serial (warden cert revoke --cert node.crt)"),
                ));
            }
            Ok(DenyTarget::Principal(user(&u)?))
        }
        Some(pb::deny_request::Target::Serial(s)) => warden_tls::normalize_serial(&s)
            .map(DenyTarget::Serial)
            .map_err(|e| SubmitError::invalid("serial", e.to_string())),
        None => Err(SubmitError::invalid(
            "target",
            "name a principal (user) or a certificate serial (serial)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // docs/security.md "A key was stolen": a serial is made canonical at
    // the edge, whatever way it was written; a node-like principal, `root`
    // and a missing target are refused naming the field (a node's
    // certificate is denied by its serial: found by attack, `node.2` was
    // accepted and denied nothing at the handshake).
    #[test]
    fn deny_targets_are_checked_at_the_edge() {
        use pb::deny_request::Target;
        assert_eq!(
            deny_target(Some(Target::Serial("0x00:AB".into()))).expect("serial"),
            DenyTarget::Serial("ab".into())
        );
        let field = |t: Option<Target>| match deny_target(t) {
            Err(SubmitError::Refused(e)) => (e.code, e.field),
            other => panic!("{other:?}"),
        };
        let invalid = warden_core::types::ErrorCode::InvalidArgument;
        assert_eq!(
            field(Some(Target::User("node.2".into()))),
            (invalid, Some("user".into()))
        );
        assert_eq!(
            field(Some(Target::Serial("xyz".into()))),
            (invalid, Some("serial".into()))
        );
        assert_eq!(field(None), (invalid, Some("target".into())));
    }

    fn header() -> Option<pb::RequestHeader> {
        Some(pb::RequestHeader {
            client_id: 7,
            request_id: 1,
            acked_request_id: 0,
        })
    }

    // "What bad input gets" (docs/semantics.md): a new acquire of a name
    // that looks like another is refused at this edge, naming the field;
    // a release of such a name still goes through, so a lock taken on it
    // before the rule existed can be released.
    #[test]
    fn lookalike_names_are_refused_for_new_acquires_only() {
        for name in ["orders ", "or\u{200b}ders"] {
            let e = acquire(pb::AcquireRequest {
                header: header(),
                resource: name.into(),
                ttl_ms: 10_000,
                ..pb::AcquireRequest::default()
            })
            .expect_err("refused");
            match e {
                SubmitError::Refused(e) => {
                    assert_eq!(e.field.as_deref(), Some("resource"), "{name:?}");
                }
                other => panic!("{name:?}: {other:?}"),
            }
            let released = release(pb::ReleaseRequest {
                header: header(),
                resource: name.into(),
                lease_id: 3,
                ..pb::ReleaseRequest::default()
            })
            .expect("a release keeps the old rule");
            assert!(matches!(released, Command::Release(r) if r.resource.as_deref() == Some(name)));
        }
        assert!(acquire(pb::AcquireRequest {
            header: header(),
            resource: "orders".into(),
            ttl_ms: 10_000,
            ..pb::AcquireRequest::default()
        })
        .is_ok());
    }
}
