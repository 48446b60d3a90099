//! Warden's wire formats, generated from `proto/` at build time.
//!
//! - [`v1`]: the public API (`warden.v1`): `Lock` service with `Acquire`,
//!   `Renew`, `Release`, `Status`, `ClusterStatus`.
//! - [`peer`]: the internal node-to-node API (`warden.peer.v1`): Raft RPCs as
//!   opaque postcard blobs, and the two-phase bootstrap of the cluster id.
//!
//! No hand-written logic lives here.

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

/// Metadata key carrying the cluster id on every peer RPC.
pub const CLUSTER_ID_METADATA: &str = "warden-cluster-id";
/// Metadata key carrying the leader's client address on an `Unavailable` reply.
pub const LEADER_METADATA: &str = "warden-leader";
/// The smallest request-size limit a node can be given
/// (`--max-request-bytes`, 1 KiB): every valid request fits in it (a
/// resource name is at most 512 bytes). A client sends a `Calls` call larger
/// than this as its unary call, so that a refusal of its size ends that call
/// alone and not the stream all its other calls share.
pub const SMALLEST_MAX_REQUEST_BYTES: usize = 1024;
