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
