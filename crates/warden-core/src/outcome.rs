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
    // The postcard bytes go straight into the hash (no buffer): the same
    // bytes as `postcard::to_allocvec`, so the same fingerprint as before
    // (stored outcomes and snapshots keep matching across versions).
    // Serializing these types cannot fail (every sequence has a known
    // length); a failure still yields a deterministic value.
    postcard::serialize_with_flavor(&c, Fnv1a(FNV_OFFSET)).unwrap_or(FNV_OFFSET)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A postcard flavor that hashes the bytes (FNV-1a) instead of storing them.
struct Fnv1a(u64);

impl postcard::ser_flavors::Flavor for Fnv1a {
    type Output = u64;

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<u64> {
        Ok(self.0)
    }
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
        // Drop outcomes <= acked in place (a `split_off` built a new map
        // on every entry).
        while rec
            .outcomes
            .first_key_value()
            .is_some_and(|(id, _)| *id <= rec.acked)
        {
            rec.outcomes.pop_first();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Acquire, DueLease, DueList, LeaderId, LeaseSpec, Release};

    /// FNV-1a over a buffer: the fingerprint's definition before it hashed
    /// postcard's output as it was written.
    fn fnv1a_of(bytes: &[u8]) -> u64 {
        bytes.iter().fold(FNV_OFFSET, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME)
        })
    }

    fn acquire(acked: u64, due: Option<DueList>) -> Command {
        Command::Acquire(Acquire {
            header: RequestHeader {
                client_id: 7,
                request_id: 12,
                acked_request_id: acked,
            },
            resource: "orders/42".into(),
            lease: LeaseSpec::New { ttl_ms: 10_000 },
            wait_timeout_ms: 250,
            lock_delay_ms: 0,
            due,
        })
    }

    // S7 across versions: a fingerprint is FNV-1a of the postcard bytes of
    // the command with its due list and watermark cleared, exactly as before
    // it stopped building the buffer, so outcomes stored by an older node (or
    // in a snapshot it built) still match a retry fingerprinted here.
    #[test]
    fn fingerprint_is_fnv1a_of_the_postcard_bytes() {
        let due = DueList {
            leader: LeaderId {
                term: 3,
                node_id: 1,
            },
            leases: vec![DueLease {
                lease_id: 9,
                last_index: 40,
            }],
            waiters: vec![],
        };
        let plain = acquire(0, None);
        let expected = fnv1a_of(&postcard::to_allocvec(&plain).expect("encode"));
        assert_eq!(fingerprint(&plain), expected);
        // A retry with a newer watermark and a due list is the same request.
        assert_eq!(fingerprint(&acquire(11, Some(due))), expected);
        let release = Command::Release(Release {
            header: RequestHeader {
                client_id: 7,
                request_id: 13,
                acked_request_id: 0,
            },
            resource: Some("orders/42".into()),
            lease_id: 5,
            fencing_token: Some(77),
            due: None,
        });
        assert_eq!(
            fingerprint(&release),
            fnv1a_of(&postcard::to_allocvec(&release).expect("encode"))
        );
        assert_ne!(fingerprint(&release), expected);
    }

    // S7: outcomes at or below the client's acknowledged watermark are
    // dropped when a newer request records, and the ones above stay.
    #[test]
    fn acknowledged_outcomes_are_dropped_and_newer_ones_kept() {
        let mut t = OutcomeTable::default();
        let header = |request_id, acked_request_id| RequestHeader {
            client_id: 1,
            request_id,
            acked_request_id,
        };
        for id in 1..=5 {
            t.record(id, &header(id, 0), id, Some(&Response::Done));
        }
        t.record(6, &header(6, 3), 6, Some(&Response::Done));
        let rec = t.client(1).expect("record");
        assert_eq!(rec.acked, 3);
        assert_eq!(
            rec.outcomes.keys().copied().collect::<Vec<_>>(),
            vec![4, 5, 6]
        );
        assert_eq!(rec.last_index, 6);
    }
}
