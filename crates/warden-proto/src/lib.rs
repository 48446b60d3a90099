//! Warden's wire formats, generated from `proto/` at build time.
//!
//! - [`v1`]: the public API (`warden.v1`): `Lock` service with `Acquire`,
//!   `Renew`, `Release`, `Status`, `ClusterStatus`.
//! - [`FILE_DESCRIPTOR_SET`]: the public API's descriptors, for gRPC
//!   server reflection.
//! - [`peer`]: the internal node-to-node API (`warden.peer.v1`): Raft RPCs as
//!   opaque postcard blobs, and the two-phase bootstrap of the cluster id.
//!
//! No hand-written logic lives here, besides the one mapping between a
//! failed `Calls` call ([`v1::CallError`]) and the gRPC status the unary call
//! would have returned ([`call_error`], [`call_error_status`]): the server,
//! the client and test fakes share it.

/// The public API, `warden.v1`.
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("warden.v1");
}

/// The internal peer API, `warden.peer.v1`.
#[allow(clippy::all, missing_docs)]
pub mod peer {
    tonic::include_proto!("warden.peer.v1");
}

/// The public API's `.proto` files (`warden.v1`, with their imports) as an
/// encoded `google.protobuf.FileDescriptorSet`, for gRPC server reflection.
/// The internal peer API is not in it.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/warden_v1_descriptor.bin"));

/// Metadata key carrying the cluster id on every peer RPC.
pub const CLUSTER_ID_METADATA: &str = "warden-cluster-id";
/// Metadata key on every answer of a peer Raft RPC: the newest log format the
/// answering node reads, in decimal ASCII ("2": it decodes packed entries).
/// A node from before packing sends none (read as 0). The leader packs
/// queued commands only once every member reported at least 2.
pub const LOG_FORMAT_METADATA: &str = "warden-log-format";
/// Metadata key on a peer's Raft requests (AppendEntries, the AppendStream's
/// opening): the log format each member reads as the sender knows it
/// (reported to it, or heard from a leader), `ID=FORMAT` items joined by
/// commas (`1=5,2=5,3=5`); absent when it knows of none. A node that takes
/// over as leader counts a member that has not answered it yet as what it
/// heard of it.
pub const MEMBERS_LOG_FORMAT_METADATA: &str = "warden-members-log-format";
/// Metadata key carrying the leader's client address on an `Unavailable` reply.
pub const LEADER_METADATA: &str = "warden-leader";
/// The smallest request-size limit a node can be given
/// (`--max-request-bytes`, 1 KiB): every valid request fits in it (a
/// resource name is at most 512 bytes). A client sends a `Calls` call larger
/// than this as its unary call, so that a refusal of its size ends that call
/// alone and not the stream all its other calls share.
pub const SMALLEST_MAX_REQUEST_BYTES: usize = 1024;

/// A failed `Calls` call as the stream carries it: the status's code,
/// message, details and `warden-leader` entry ("" if none).
pub fn call_error(status: &tonic::Status) -> v1::CallError {
    v1::CallError {
        code: status.code() as i32,
        message: status.message().to_string(),
        leader: status
            .metadata()
            .get(LEADER_METADATA)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        details: status.details().to_vec(),
    }
}

/// The status a failed `Calls` call stands for (code, message, structured
/// details, and the `warden-leader` entry when the node named the leader):
/// what the unary call would have returned.
pub fn call_error_status(e: v1::CallError) -> tonic::Status {
    let mut status =
        tonic::Status::with_details(tonic::Code::from_i32(e.code), e.message, e.details.into());
    if !e.leader.is_empty() {
        if let Ok(value) = e.leader.parse() {
            status.metadata_mut().insert(LEADER_METADATA, value);
        }
    }
    status
}
