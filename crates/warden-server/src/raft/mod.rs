//! Consensus glue: the Raft handle, the peer network (both sides), who may
//! call the peer service (`peer_access`: checked before a body is read;
//! `member_confirm`: ids its membership does not name, confirmed with its
//! voters),
//! a snapshot cut into chunks and put back together (`snapshot_chunks`),
//! the two-phase cluster id, the log-format gate, backups, and when this
//! node takes a snapshot (`snapshot_schedule`).

pub mod backup;
pub mod bootstrap;
#[cfg(test)]
mod cluster_time_tests;
pub mod cluster_time_wire;
mod leader_contact;
pub mod log_format;
pub mod member_confirm;
pub mod network;
pub mod observe;
pub mod peer_access;
pub mod peer_service;
pub mod snapshot_chunks;
pub mod snapshot_schedule;
#[cfg(test)]
mod tls_cluster_tests;

/// The Raft handle.
pub type Raft = openraft::Raft<crate::types::TypeConfig, crate::store::StateMachineStore>;

pub use leader_contact::LeaderContact;
