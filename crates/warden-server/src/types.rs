//! Warden's openraft type configuration. Every openraft type the server uses is
//! named here, so an openraft upgrade touches this module and its neighbours
//! (`store`, `network`, `peer`) only. Also a member's addresses in the
//! membership, [`MemberAddr`] (openraft's `Node`).

use std::fmt;

use serde::{Deserialize, Serialize};
use warden_core::types::{LeaderId, LogEntry, Response};

/// A member's addresses as the membership holds them (openraft's `Node`):
/// where clients reach it, and where its peers reach its peer (Raft)
/// service when it serves that on a port of its own (`--peer-listen`,
/// docs/security.md "The peer service"). Without a peer address the client
/// address serves both.
///
/// # Encoding
///
/// One string, so that it is byte-compatible with openraft's `BasicNode {
/// addr }` (postcard writes a one-field struct as its field) and every log
/// entry and snapshot written before it decodes unchanged:
///
/// * `"<client_addr>"` when there is no peer address (exactly `BasicNode`'s
///   `addr`);
/// * `"<client_addr> peer=<peer_addr>"` otherwise ([`PEER_ADDR_SEPARATOR`]).
///
/// Neither address may contain whitespace ([`MemberAddr::new`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberAddr {
    client_addr: String,
    peer_addr: Option<String>,
}

/// What separates the client address from the peer address in a
/// [`MemberAddr`]'s encoding.
pub const PEER_ADDR_SEPARATOR: &str = " peer=";

/// Why a string or a pair of addresses is not a [`MemberAddr`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemberAddrError {
    /// An address is empty.
    #[error("{field}: empty address")]
    Empty {
        /// `client_addr` or `peer_addr`.
        field: &'static str,
    },
    /// An address contains whitespace (the encoding separates with a space).
    #[error("{field}: an address may not contain whitespace; got {addr:?}")]
    Whitespace {
        /// `client_addr` or `peer_addr`.
        field: &'static str,
        /// The address.
        addr: String,
    },
    /// The peer address is the client address: give none instead.
    #[error("peer_addr: {addr:?} is the client address; leave the peer address out to serve both on one port")]
    SameAsClient {
        /// The address.
        addr: String,
    },
}

impl MemberAddr {
    /// A member reached by clients and peers at one address (`BasicNode`'s
    /// form). Not checked: any string an older log holds decodes into this.
    pub fn client_only(client_addr: impl Into<String>) -> MemberAddr {
        MemberAddr {
            client_addr: client_addr.into(),
            peer_addr: None,
        }
    }

    /// A member at `client_addr` whose peer service is at `peer_addr` (None:
    /// the client address serves it too).
    ///
    /// # Errors
    /// An empty address, one with whitespace, or a peer address equal to
    /// the client address, naming the field.
    pub fn new(
        client_addr: impl Into<String>,
        peer_addr: Option<String>,
    ) -> Result<MemberAddr, MemberAddrError> {
        let client_addr = client_addr.into();
        check_member_addr("client_addr", &client_addr)?;
        if let Some(p) = &peer_addr {
            check_member_addr("peer_addr", p)?;
            if *p == client_addr {
                return Err(MemberAddrError::SameAsClient { addr: p.clone() });
            }
        }
        Ok(MemberAddr {
            client_addr,
            peer_addr,
        })
    }

    /// Where clients reach this member: what leader hints and `cluster
    /// status` show.
    pub fn client_addr(&self) -> &str {
        &self.client_addr
    }

    /// Its own peer address, if it serves the peer service apart.
    pub fn peer_addr(&self) -> Option<&str> {
        self.peer_addr.as_deref()
    }

    /// Where its peers dial its peer service: the peer address, else the
    /// client address.
    pub fn dial_addr(&self) -> &str {
        self.peer_addr.as_deref().unwrap_or(&self.client_addr)
    }

    /// The encoded form (see the type's docs).
    pub fn encode(&self) -> String {
        match &self.peer_addr {
            None => self.client_addr.clone(),
            Some(p) => format!("{}{PEER_ADDR_SEPARATOR}{p}", self.client_addr),
        }
    }

    /// Parses the encoded form. A string without [`PEER_ADDR_SEPARATOR`] is
    /// a client address alone, taken as it is (an older log's `BasicNode`).
    ///
    /// # Errors
    /// The two-address form with an empty or whitespace-holding part, or the
    /// same address twice.
    pub fn decode(text: &str) -> Result<MemberAddr, MemberAddrError> {
        match text.split_once(PEER_ADDR_SEPARATOR) {
            None => Ok(MemberAddr::client_only(text)),
            Some((client, peer)) => MemberAddr::new(client, Some(peer.to_string())),
        }
    }
}

fn check_member_addr(field: &'static str, addr: &str) -> Result<(), MemberAddrError> {
    if addr.is_empty() {
        return Err(MemberAddrError::Empty { field });
    }
    if addr.chars().any(char::is_whitespace) {
        return Err(MemberAddrError::Whitespace {
            field,
            addr: addr.to_string(),
        });
    }
    Ok(())
}

impl fmt::Display for MemberAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

impl Serialize for MemberAddr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.encode())
    }
}

impl<'de> Deserialize<'de> for MemberAddr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        MemberAddr::decode(&text).map_err(serde::de::Error::custom)
    }
}

/// The application payload of a Raft log entry: the stamp and the command
/// ([`LogEntry`], log format 1).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(transparent)]
pub struct Request(pub LogEntry);

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}ms",
            command_name(&self.0.command),
            self.0.stamp.at_ms
        )
    }
}

/// The log format this binary writes and reads: [`LogEntry`] with its
/// stamp, every [`warden_core::types::Command`] variant there is. A later
/// format appends variants; the leader proposes one only once every member
/// reports it reads that format (`raft::log_format`).
pub const LOG_FORMAT: u32 = 1;

/// The oldest log format that decodes `cmd` (the newest among a batch's
/// or a wrapper's commands): [`LOG_FORMAT`] for every command today. An
/// applied entry of format F shows that this log can no longer be
/// followed by a binary older than F (`raft::log_format`'s applied floor).
pub fn entry_log_format(cmd: &warden_core::types::Command) -> u32 {
    use warden_core::types::Command::*;
    match cmd {
        Batch(cmds) => cmds.iter().map(entry_log_format).fold(LOG_FORMAT, u32::max),
        Authorized(a) => entry_log_format(&a.command),
        _ => LOG_FORMAT,
    }
}

/// A short name for logs.
pub fn command_name(cmd: &warden_core::types::Command) -> &'static str {
    use warden_core::types::Command::*;
    match cmd {
        Acquire(_) => "acquire",
        Release(_) => "release",
        RenewBatch(_) => "renew_batch",
        LeaseGrant(_) => "lease_grant",
        Revoke(_) => "revoke",
        Promote(_) => "promote",
        DropClients(_) => "drop_clients",
        ForceRelease(_) => "force_release",
        Tick => "tick",
        RaiseTokenFloor(_) => "raise_token_floor",
        Proclaim(_) => "proclaim",
        Batch(_) => "batch",
        Authorized(a) => command_name(&a.command),
        AuthChange(_) => "auth_change",
        CancelWait(_) => "cancel_wait",
    }
}

openraft::declare_raft_types!(
    /// Warden's Raft types: u64 node ids, [`MemberAddr`] (a client and an
    /// optional peer address), the advanced leader id (term, node id) so that
    /// every log id names its leader.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = u64,
        Node = MemberAddr,
        AsyncRuntime = Rt,
);

/// openraft's runtime: tokio, with openraft's randomness (election timeouts)
/// drawn from a generator seeded per node (`inject::Injected::rng_seed`), so
/// the simulator replays a run from its seed (DEPENDENCIES.md). Every node
/// runs inside `Rt::scope(seed, ..)` (see `run_injected`).
pub type Rt = openraft_rt::deterministic_rng::DeterministicRng<openraft_rt_tokio::TokioRuntime>;

/// Log id.
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
/// Vote.
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
/// Entry.
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
/// Stored membership.
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
/// Snapshot meta.
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
/// Snapshot with Warden's snapshot bytes.
pub type Snapshot = openraft::alias::SnapshotOf<TypeConfig, Vec<u8>>;

/// The leader id (term, node id) inside a log id.
pub fn leader_of(log_id: &LogId) -> LeaderId {
    let l = log_id.committed_leader_id();
    LeaderId {
        term: l.term,
        node_id: l.node_id,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    // The type configuration of binaries before `MemberAddr`: openraft's
    // `BasicNode`, everything else the same.
    openraft::declare_raft_types!(
        OldTypeConfig:
            D = Request,
            R = Response,
            NodeId = u64,
            Node = openraft::BasicNode,
            AsyncRuntime = Rt,
    );

    fn basic(addr: &str) -> openraft::BasicNode {
        openraft::BasicNode {
            addr: addr.to_string(),
        }
    }

    // On-disk compatibility (docs/operations.md "Upgrades"): every log entry
    // and snapshot written with `BasicNode` decodes unchanged into
    // `MemberAddr`, and a member without a peer address encodes to the very
    // bytes `BasicNode` wrote (postcard is not self-describing: one string).
    #[test]
    fn a_basic_node_decodes_as_a_client_only_member_and_encodes_back_byte_for_byte() {
        let old = postcard::to_allocvec(&basic("10.0.0.1:7001")).expect("encode");
        assert_eq!(old[0], 13, "a varint length, then the bytes");
        assert_eq!(&old[1..], b"10.0.0.1:7001");
        let new: MemberAddr = postcard::from_bytes(&old).expect("decode");
        assert_eq!(new, MemberAddr::client_only("10.0.0.1:7001"));
        assert_eq!(new.client_addr(), "10.0.0.1:7001");
        assert_eq!(new.peer_addr(), None);
        assert_eq!(new.dial_addr(), "10.0.0.1:7001");
        assert_eq!(postcard::to_allocvec(&new).expect("encode"), old);
    }

    // On-disk compatibility: a whole membership log entry (joint configs,
    // voters and learners) and a stored membership (what snapshots and the
    // log store's meta hold) written by a `BasicNode` binary decode into the
    // same membership with client-only members.
    #[test]
    fn an_old_membership_entry_and_stored_membership_decode_unchanged() {
        let old_nodes: BTreeMap<u64, openraft::BasicNode> = [
            (1, basic("a:7001")),
            (2, basic("b:7001")),
            (3, basic("c:7001")),
            (4, basic("d:7001")),
        ]
        .into();
        let configs = vec![BTreeSet::from([1, 2, 3]), BTreeSet::from([1, 2, 4])];
        let old_membership = openraft::Membership::<u64, openraft::BasicNode>::new(
            configs.clone(),
            old_nodes.clone(),
        )
        .expect("membership");
        let log_id = openraft::alias::LogIdOf::<OldTypeConfig>::new(
            openraft::impls::leader_id_adv::LeaderId {
                term: 3,
                node_id: 2,
            },
            17,
        );
        let old_entry = openraft::alias::EntryOf::<OldTypeConfig> {
            log_id,
            payload: openraft::EntryPayload::Membership(old_membership.clone()),
        };
        let bytes = postcard::to_allocvec(&old_entry).expect("encode");
        let entry: Entry = postcard::from_bytes(&bytes).expect("decode");
        let openraft::EntryPayload::Membership(m) = &entry.payload else {
            panic!("not a membership entry: {entry:?}");
        };
        assert_eq!(entry.log_id.index, 17);
        assert_eq!(m.get_joint_config(), &configs);
        let nodes: Vec<(u64, MemberAddr)> = m.nodes().map(|(id, n)| (*id, n.clone())).collect();
        let expected: Vec<(u64, MemberAddr)> = old_nodes
            .iter()
            .map(|(id, n)| (*id, MemberAddr::client_only(&n.addr)))
            .collect();
        assert_eq!(nodes, expected);
        // Encoding it again gives the old bytes: nothing on disk changes.
        assert_eq!(postcard::to_allocvec(&entry).expect("encode"), bytes);

        let old_stored =
            openraft::alias::StoredMembershipOf::<OldTypeConfig>::new(Some(log_id), old_membership);
        let bytes = postcard::to_allocvec(&old_stored).expect("encode");
        let stored: StoredMembership = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(stored.log_id().map(|l| l.index), Some(17));
        assert_eq!(
            stored.membership().get_node(&4),
            Some(&MemberAddr::client_only("d:7001"))
        );
    }

    // The two-address form (`--peer-listen`): round-trips through postcard
    // and its text; the network dials the peer address, clients are shown
    // the client address.
    #[test]
    fn a_member_with_a_peer_address_round_trips() {
        let m = MemberAddr::new("a:7001", Some("a:7101".into())).expect("valid");
        assert_eq!(m.encode(), "a:7001 peer=a:7101");
        assert_eq!(m.to_string(), "a:7001 peer=a:7101");
        assert_eq!(m.client_addr(), "a:7001");
        assert_eq!(m.peer_addr(), Some("a:7101"));
        assert_eq!(m.dial_addr(), "a:7101");
        let bytes = postcard::to_allocvec(&m).expect("encode");
        assert_eq!(&bytes[1..], b"a:7001 peer=a:7101");
        assert_eq!(
            postcard::from_bytes::<MemberAddr>(&bytes).expect("decode"),
            m
        );
        assert_eq!(MemberAddr::decode("a:7001 peer=a:7101"), Ok(m));
        // An older binary reads this as one address: BasicNode's `addr`.
        let old: openraft::BasicNode = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(old.addr, "a:7001 peer=a:7101");
    }

    // What bad input gets: a malformed two-address string is a typed error
    // naming the part (decoding a log entry with it fails rather than
    // guessing an address); a peer address equal to the client address is
    // refused.
    #[test]
    fn a_malformed_member_address_is_a_typed_error() {
        assert_eq!(
            MemberAddr::decode(" peer=a:7101"),
            Err(MemberAddrError::Empty {
                field: "client_addr"
            })
        );
        assert_eq!(
            MemberAddr::decode("a:7001 peer="),
            Err(MemberAddrError::Empty { field: "peer_addr" })
        );
        assert_eq!(
            MemberAddr::decode("a:7001 peer=b:1 peer=c:1"),
            Err(MemberAddrError::Whitespace {
                field: "peer_addr",
                addr: "b:1 peer=c:1".into()
            })
        );
        assert_eq!(
            MemberAddr::new("a:7001", Some("a:7001".into())),
            Err(MemberAddrError::SameAsClient {
                addr: "a:7001".into()
            })
        );
        assert!(matches!(
            MemberAddr::new("a :7001", None),
            Err(MemberAddrError::Whitespace {
                field: "client_addr",
                ..
            })
        ));
        let bytes = postcard::to_allocvec(&"a:7001 peer=").expect("encode");
        let e = postcard::from_bytes::<MemberAddr>(&bytes).expect_err("malformed");
        assert!(!e.to_string().is_empty());
    }
}
