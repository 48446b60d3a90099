//! Wire messages to commands and answers to wire messages, for the services
//! that share them. A missing or contradictory field is refused naming the
//! field ([`SubmitError::Refused`]); the limits themselves are checked by
//! `warden_core::validate` in [`crate::node::Node::submit`].

use warden_core::types::{
    Acquire, AcquireOutcome, AcquireReply, Command, LeaseSpec, NotGrantedReason, Release,
    RequestHeader,
};
use warden_proto::v1 as pb;

use crate::node::SubmitError;

/// The exactly-once header of a mutating request (S7).
pub fn request_header(h: Option<pb::RequestHeader>) -> Result<RequestHeader, SubmitError> {
    let h = h.ok_or_else(|| SubmitError::invalid("header", "required (client_id, request_id)"))?;
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

/// An `AcquireRequest` as the command it asks for.
pub fn acquire(r: pb::AcquireRequest) -> Result<Command, SubmitError> {
    let header = request_header(r.header)?;
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
    Ok(Command::Acquire(Acquire {
        header,
        resource: r.resource,
        lease,
        wait_timeout_ms: r.wait_timeout_ms,
        lock_delay_ms: r.lock_delay_ms,
        due: None,
    }))
}

/// A `ReleaseRequest` as the command it asks for.
pub fn release(r: pb::ReleaseRequest) -> Result<Command, SubmitError> {
    Ok(Command::Release(Release {
        header: request_header(r.header)?,
        resource: (!r.resource.is_empty()).then_some(r.resource),
        lease_id: r.lease_id,
        fencing_token: nonzero(r.fencing_token),
        due: None,
    }))
}

/// The wire name of a reason an acquire was not granted.
pub fn reason_str(r: NotGrantedReason) -> &'static str {
    match r {
        NotGrantedReason::Held => "held",
        NotGrantedReason::LockDelay => "lock_delay",
        NotGrantedReason::WaitTimeout => "wait_timeout",
        NotGrantedReason::Cancelled => "cancelled",
    }
}

/// A `Granted` acquire answer.
pub fn granted(
    resource: String,
    lease_id: u64,
    fencing_token: u64,
    ttl_ms: u64,
    log_index: u64,
) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::Granted(pb::Granted {
            resource,
            lease_id,
            fencing_token,
            ttl_ms,
            log_index,
        })),
    }
}

/// A `NotGranted` acquire answer.
pub fn not_granted(
    resource: String,
    holder: Option<u64>,
    reason: NotGrantedReason,
) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::NotGranted(pb::NotGranted {
            resource,
            holder_lease_id: holder.unwrap_or(0),
            reason: reason_str(reason).to_string(),
        })),
    }
}

/// A `Queued` acquire answer.
pub fn queued(position: u64, lease_id: u64) -> pb::AcquireResponse {
    pb::AcquireResponse {
        event: Some(pb::acquire_response::Event::Queued(pb::Queued {
            position,
            lease_id,
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
/// lease no longer holds it): `Err(fencing_token, lease_id)`.
pub fn acquire_start(reply: AcquireReply) -> Result<AcquireStart, (u64, u64)> {
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
            AcquireStart::Final(granted(
                resource,
                lease_id,
                fencing_token,
                ttl_ms,
                grant_index,
            ))
        }
        AcquireOutcome::NotGranted {
            resource,
            holder_lease_id,
            reason,
        } => AcquireStart::Final(not_granted(resource, holder_lease_id, reason)),
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
