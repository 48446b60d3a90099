//! The replicated outcome table: exactly-once effect for client commands (S7).
//!
//! Per client id it keeps a [`ClientRecord`]: the outcomes of requests above
//! the client's acknowledged watermark (at most
//! [`MAX_OUTCOMES_PER_CLIENT`]), the highest request id whose outcome was
//! dropped (`floor`) and the index of the last entry that touched it. At most
//! [`MAX_CLIENTS`] records are kept; the least recently used (lowest
//! `last_index`) is dropped first, and a leader drops idle ones with a
//! `DropClients` entry. A retry whose record is gone gets `RequestExpired`,
//! never a second execution.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::limits::{MAX_CLIENTS, MAX_OUTCOMES_PER_CLIENT};
use crate::types::{ClientId, Command, ErrorCode, LogIndex, RequestHeader, RequestId, Response};
use crate::validate::error;

/// One stored outcome.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StoredOutcome {
    /// [`fingerprint`] of the command that produced it.
    pub fingerprint: u64,
    /// The response it got when it first applied (errors included).
    pub response: Response,
}

/// One client's record.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ClientRecord {
    /// Index of the last entry that executed or answered one of its requests.
    pub last_index: LogIndex,
    /// Highest `acked_request_id` it has sent: outcomes <= this are dropped.
    pub acked: RequestId,
    /// Highest request id whose outcome was dropped to respect
    /// [`MAX_OUTCOMES_PER_CLIENT`].
    pub floor: RequestId,
    /// Outcomes of requests above `acked`, by request id.
    pub outcomes: BTreeMap<RequestId, StoredOutcome>,
}

/// What the outcome table says about an incoming request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    /// New request: execute it, then [`OutcomeTable::record`] the response.
    Execute,
    /// A retry of a request already applied: answer this, do not execute.
    Replay(Response),
    /// Refuse (request expired or id reused with other arguments); record nothing.
    Refuse(Response),
}

/// The outcome table. Serialized as its `clients` map only; the
/// least-recently-used index is rebuilt on load.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct OutcomeTable {
    clients: BTreeMap<ClientId, ClientRecord>,
    /// (last_index, client) for every record: eviction order.
    lru: BTreeSet<(LogIndex, ClientId)>,
}

impl Serialize for OutcomeTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.clients.serialize(s)
    }
}

impl<'de> Deserialize<'de> for OutcomeTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let clients = BTreeMap::<ClientId, ClientRecord>::deserialize(d)?;
        let lru = clients.iter().map(|(id, r)| (r.last_index, *id)).collect();
        Ok(Self { clients, lru })
    }
}

/// A deterministic 64-bit fingerprint of a command's arguments: FNV-1a over
/// the postcard bytes of the command with every due list set to `None` and
/// `acked_request_id` set to 0 (a retry may carry a newer watermark and other
/// due lists, yet it is the same request).
pub fn fingerprint(cmd: &Command) -> u64 {
    let mut c = cmd.clone();
    match &mut c {
        Command::Acquire(a) => {
            a.due = None;
            a.header.acked_request_id = 0;
        }
        Command::Release(r) => {
            r.due = None;
            r.header.acked_request_id = 0;
        }
        Command::Revoke(r) => {
            r.due = None;
            r.header.acked_request_id = 0;
        }
        Command::ForceRelease(f) => {
            f.due = None;
            f.header.acked_request_id = 0;
            // Display-only wall-clock stamp: a retry takes a new one.
            f.at_unix_ms = 0;
        }
        Command::LeaseGrant(g) => g.header.acked_request_id = 0,
        Command::EndLockDelay(e) => e.due = None,
        _ => {}
    }
    // Serializing these types cannot fail (every sequence has a known length);
    // an empty fallback still yields a deterministic value.
    let bytes = postcard::to_allocvec(&c).unwrap_or_default();
    fnv1a(&bytes)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

impl OutcomeTable {
    /// Looks a request up (S7). Does not change anything.
    pub(crate) fn check(&self, header: &RequestHeader, fingerprint: u64) -> Check {
        let Some(rec) = self.clients.get(&header.client_id) else {
            if header.acked_request_id > 0 {
                return Check::Refuse(Response::Error(error(
                    ErrorCode::RequestExpired,
                    Some("client_id"),
                    "request_expired: this client's outcome record was dropped (idle or evicted); \
                     start over with a new client id",
                )));
            }
            return Check::Execute;
        };
        if let Some(stored) = rec.outcomes.get(&header.request_id) {
            if stored.fingerprint == fingerprint {
                return Check::Replay(stored.response.clone());
            }
            return Check::Refuse(Response::Error(error(
                ErrorCode::InvalidArgument,
                Some("request_id"),
                "request id reused with other arguments",
            )));
        }
        if header.request_id <= rec.acked.max(rec.floor) {
            return Check::Refuse(Response::Error(error(
                ErrorCode::RequestExpired,
                Some("request_id"),
                format!(
                    "request_expired: the outcome of request {} is no longer kept (acknowledged up to {}, dropped up to {})",
                    header.request_id, rec.acked, rec.floor
                ),
            )));
        }
        Check::Execute
    }

    /// Touches the client's record at `index` (creating it if needed), stores
    /// `response` under the request id when given, raises `acked` and applies
    /// the bounds: outcomes <= acked are dropped, at most
    /// [`MAX_OUTCOMES_PER_CLIENT`] are kept (the oldest go first, raising
    /// `floor`), and at most [`MAX_CLIENTS`] records (the least recently used go
    /// first, by `last_index` then client id).
    pub(crate) fn record(
        &mut self,
        index: LogIndex,
        header: &RequestHeader,
        fingerprint: u64,
        response: Option<&Response>,
    ) {
        let client = header.client_id;
        let rec = self.clients.entry(client).or_default();
        self.lru.remove(&(rec.last_index, client));
        rec.last_index = index;
        self.lru.insert((index, client));
        if let Some(resp) = response {
            rec.outcomes.insert(
                header.request_id,
                StoredOutcome {
                    fingerprint,
                    response: resp.clone(),
                },
            );
        }
        rec.acked = rec.acked.max(header.acked_request_id);
        rec.outcomes = rec.outcomes.split_off(&rec.acked.saturating_add(1));
        while rec.outcomes.len() > MAX_OUTCOMES_PER_CLIENT {
            if let Some((id, _)) = rec.outcomes.pop_first() {
                rec.floor = rec.floor.max(id);
            }
        }
        while self.clients.len() > MAX_CLIENTS {
            let victim = self.lru.iter().find(|(_, c)| *c != client).copied();
            let Some(key) = victim else { break };
            self.lru.remove(&key);
            self.clients.remove(&key.1);
        }
    }

    /// Drops `client`'s record if its `last_index` is `last_index`
    /// (`DropClients`: a record touched since the proposal stays).
    pub(crate) fn drop_client(&mut self, client: ClientId, last_index: LogIndex) {
        if self
            .clients
            .get(&client)
            .is_some_and(|r| r.last_index == last_index)
        {
            self.clients.remove(&client);
            self.lru.remove(&(last_index, client));
        }
    }

    /// The record of `client`, if kept.
    pub fn client(&self, client: ClientId) -> Option<&ClientRecord> {
        self.clients.get(&client)
    }

    /// Every record, by client id.
    pub fn clients(&self) -> impl Iterator<Item = (&ClientId, &ClientRecord)> {
        self.clients.iter()
    }

    /// Number of client records and of stored outcomes.
    pub fn stats(&self) -> (usize, usize) {
        (
            self.clients.len(),
            self.clients.values().map(|r| r.outcomes.len()).sum(),
        )
    }
}
