//! The replicated outcome table: exactly-once effect for client commands (S7).
//!
//! Records are keyed by `(principal, client id)`: `(None, id)` for unwrapped
//! legacy commands and anonymous wrapped ones, `(Some(p), id)` for commands a
//! principal made ([`crate::types::Command::Authorized`]), so nobody reads or
//! poisons another principal's records. Per key it keeps a [`ClientRecord`]:
//! the outcomes of requests above the client's acknowledged watermark (at
//! most [`MAX_OUTCOMES_PER_CLIENT`]), the highest request id whose outcome
//! was dropped (`floor`) and the index of the last entry that touched it. A
//! retry whose record is gone gets `RequestExpired`, never a second
//! execution.
//!
//! Bounds (see [`crate::auth`], "Quotas and limits"):
//! * a legacy command from a new client, when the table holds
//!   [`MAX_CLIENTS`] records or more, replaces the least recently used
//!   `(None, _)` record (lowest `last_index`, then client id), never a
//!   principal's; with none to replace it is refused;
//! * a wrapped command from a new client is refused when the table holds
//!   `max_clients` records, or its principal its `clients` quota: nothing is
//!   evicted for it;
//! * a leader drops idle records with a `DropClients` entry.
//!
//! Encoding: the `(None, _)` records are the table body's outcome map; the
//! principals' records are a section of their own. The eviction order and the per-index lookup are rebuilt on
//! load.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::limits::{MAX_CLIENTS, MAX_OUTCOMES_PER_CLIENT};
use crate::types::CommandError;
use crate::types::{
    ClientId, Command, ErrorCode, LogIndex, Principal, RequestHeader, RequestId, Response,
};
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

/// The outcome table. Serialized as its `(None, _)` records only (the table
/// body); the principals' records are a snapshot section of their own, and
/// the indexes are rebuilt on load.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct OutcomeTable {
    /// `(None, id)` records, by client id.
    clients: BTreeMap<ClientId, ClientRecord>,
    /// `(Some(p), id)` records, by principal then client id (no empty map).
    named: BTreeMap<Principal, BTreeMap<ClientId, ClientRecord>>,
    /// (last_index, client) for every `(None, _)` record: eviction order.
    lru: BTreeSet<(LogIndex, ClientId)>,
    /// (last_index, client, principal) for every principal's record, for
    /// `DropClients`.
    named_by_index: BTreeSet<(LogIndex, ClientId, Principal)>,
    /// Number of principals' records.
    named_count: usize,
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
        Ok(Self {
            clients,
            lru,
            ..Self::default()
        })
    }
}

/// The principals' records, as the snapshot encodes them.
pub(crate) type NamedRecords = BTreeMap<Principal, BTreeMap<ClientId, ClientRecord>>;

/// A deterministic 64-bit fingerprint of a command's arguments: FNV-1a over
/// the postcard bytes of the command with `acked_request_id` set to 0 and
/// display-only wall-clock stamps set to 0 (a retry may carry a newer
/// watermark and a new stamp, yet it is the same request). A [`Command::Authorized`]'s fingerprint is its
/// inner command's.
pub fn fingerprint(cmd: &Command) -> u64 {
    let mut c = cmd.clone();
    match &mut c {
        Command::Acquire(a) => {
            a.header.acked_request_id = 0;
        }
        Command::Release(r) => {
            r.header.acked_request_id = 0;
        }
        Command::ForceRelease(f) => {
            f.header.acked_request_id = 0;
            // Display-only wall-clock stamp: a retry takes a new one.
            f.at_unix_ms = 0;
        }
        Command::Revoke(r) => {
            r.header.acked_request_id = 0;
            r.at_unix_ms = 0;
        }
        Command::LeaseGrant(g) => g.header.acked_request_id = 0,
        Command::CancelWait(c) => {
            c.header.acked_request_id = 0;
        }
        Command::AuthChange(a) => {
            a.header.acked_request_id = 0;
            a.at_unix_ms = 0;
        }
        // A wrapped command is the same request as its inner command: an
        // unwrapped first attempt and a wrapped retry match (the principal is
        // part of the record's key, not of the fingerprint).
        Command::Authorized(w) => return fingerprint(&w.command),
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

fn expired_record() -> Response {
    Response::Error(error(
        ErrorCode::RequestExpired,
        Some("client_id"),
        "request_expired: this client's outcome record was dropped (idle or evicted); \
         start over with a new client id",
    ))
}

/// The outcome a `CancelWait` stores for an acquire that has not applied
/// yet: when the acquire applies it gets this refusal and queues nothing.
pub(crate) fn preempted(resource: &str) -> Response {
    Response::Acquire(crate::types::AcquireReply {
        outcome: crate::types::AcquireOutcome::NotGranted {
            resource: resource.to_owned(),
            holder_lease_id: None,
            reason: crate::types::NotGrantedReason::Cancelled,
        },
        retried: false,
        lease_live: false,
        current_token: None,
    })
}

fn is_preempted(response: &Response) -> bool {
    matches!(
        response,
        Response::Acquire(crate::types::AcquireReply {
            outcome: crate::types::AcquireOutcome::NotGranted {
                reason: crate::types::NotGrantedReason::Cancelled,
                ..
            },
            ..
        })
    )
}

impl OutcomeTable {
    fn get(&self, principal: Option<&str>, client: ClientId) -> Option<&ClientRecord> {
        match principal {
            None => self.clients.get(&client),
            Some(p) => self.named.get(p).and_then(|m| m.get(&client)),
        }
    }

    /// Looks a request up (S7). Does not change anything.
    pub(crate) fn check(
        &self,
        principal: Option<&str>,
        header: &RequestHeader,
        fingerprint: u64,
    ) -> Check {
        let Some(rec) = self.get(principal, header.client_id) else {
            if header.acked_request_id > 0 {
                return Check::Refuse(expired_record());
            }
            if principal.is_some()
                && self
                    .clients
                    .get(&header.client_id)
                    .is_some_and(|r| r.outcomes.contains_key(&header.request_id))
            {
                // First applied unwrapped (before the upgrade to identities):
                // its outcome belongs to no principal. Never run it twice.
                return Check::Refuse(Response::Error(error(
                    ErrorCode::RequestExpired,
                    Some("request_id"),
                    "request_expired: this request was first applied without a principal \
                     (before the upgrade to identities); start over with a new request",
                )));
            }
            return Check::Execute;
        };
        if let Some(stored) = rec.outcomes.get(&header.request_id) {
            // A preempted acquire (`CancelWait` before it applied) answers
            // its refusal whatever it carries: it never runs.
            if stored.fingerprint == fingerprint || is_preempted(&stored.response) {
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

    /// The outcome stored for `request_id` of `(principal, client)`, if kept.
    pub(crate) fn stored(
        &self,
        principal: Option<&str>,
        client: ClientId,
        request_id: RequestId,
    ) -> Option<&StoredOutcome> {
        self.get(principal, client)?.outcomes.get(&request_id)
    }

    /// True if the outcome of `request_id` of `(principal, client)` is no
    /// longer kept (acknowledged, or dropped to respect the per-client cap).
    pub(crate) fn forgotten(
        &self,
        principal: Option<&str>,
        client: ClientId,
        request_id: RequestId,
    ) -> bool {
        self.get(principal, client)
            .is_some_and(|r| request_id <= r.acked.max(r.floor))
    }

    /// True if the key has a record.
    pub(crate) fn has(&self, principal: Option<&str>, client: ClientId) -> bool {
        self.get(principal, client).is_some()
    }

    /// Room for a legacy (unwrapped) command's new record: refused only when
    /// the table holds [`MAX_CLIENTS`] records or more and none of them is a
    /// `(None, _)` record that [`Self::record`] could replace.
    ///
    /// # Errors
    /// ResourceExhausted, field `client_id`.
    pub(crate) fn legacy_room(&self, client: ClientId) -> Result<(), CommandError> {
        if self.clients.contains_key(&client) || self.len() < MAX_CLIENTS || !self.lru.is_empty() {
            return Ok(());
        }
        Err(error(
            ErrorCode::ResourceExhausted,
            Some("client_id"),
            format!(
                "the outcome table holds {} records (MAX_CLIENTS = {MAX_CLIENTS} for unwrapped commands), none of them an unwrapped client's to replace",
                self.len()
            ),
        ))
    }

    /// [`Self::record_for`] a legacy (unwrapped) command: key `(None, client)`,
    /// with the legacy replacement rule.
    #[cfg(test)]
    pub(crate) fn record(
        &mut self,
        index: LogIndex,
        header: &RequestHeader,
        fingerprint: u64,
        response: Option<&Response>,
    ) {
        self.record_for(index, None, header, fingerprint, response, true);
    }

    /// Touches the record of `(principal, client)` at `index` (creating it if
    /// needed), stores `response` under the request id when given, raises
    /// `acked` and applies the bounds: outcomes <= acked are dropped, at most
    /// [`MAX_OUTCOMES_PER_CLIENT`] are kept (the oldest go first, raising
    /// `floor`). With `legacy`, a new record made while the table holds
    /// [`MAX_CLIENTS`] records or more replaces the least recently used
    /// `(None, _)` record (by `last_index` then client id); a principal's
    /// record is never replaced.
    pub(crate) fn record_for(
        &mut self,
        index: LogIndex,
        principal: Option<&Principal>,
        header: &RequestHeader,
        fingerprint: u64,
        response: Option<&Response>,
        legacy: bool,
    ) {
        let client = header.client_id;
        let before = self.len();
        let rec = match principal {
            None => {
                let rec = self.clients.entry(client).or_default();
                self.lru.remove(&(rec.last_index, client));
                self.lru.insert((index, client));
                rec
            }
            Some(p) => {
                let map = match self.named.get_mut(p.as_str()) {
                    Some(m) => m,
                    None => self.named.entry(p.clone()).or_default(),
                };
                let fresh = !map.contains_key(&client);
                let rec = map.entry(client).or_default();
                if fresh {
                    self.named_count += 1;
                } else {
                    self.named_by_index
                        .remove(&(rec.last_index, client, p.clone()));
                }
                self.named_by_index.insert((index, client, p.clone()));
                rec
            }
        };
        rec.last_index = index;
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
        let created = self.len() > before;
        if legacy && created && before >= MAX_CLIENTS {
            let victim = self.lru.iter().find(|(_, c)| *c != client).copied();
            if let Some(key) = victim {
                self.lru.remove(&key);
                self.clients.remove(&key.1);
            }
        }
    }

    /// Drops every record of `client` whose `last_index` is `last_index`
    /// (`DropClients`: a record touched since the proposal stays). Records of
    /// one client id under several principals with the same `last_index`
    /// were touched by the same entry, so they are equally idle.
    pub(crate) fn drop_client(&mut self, client: ClientId, last_index: LogIndex) {
        if self
            .clients
            .get(&client)
            .is_some_and(|r| r.last_index == last_index)
        {
            self.clients.remove(&client);
            self.lru.remove(&(last_index, client));
        }
        let named: Vec<Principal> = self
            .named_by_index
            .range((last_index, client, Principal::from_checked(String::new()))..)
            .take_while(|(li, c, _)| *li == last_index && *c == client)
            .map(|(_, _, p)| p.clone())
            .collect();
        for p in named {
            self.named_by_index.remove(&(last_index, client, p.clone()));
            if let Some(map) = self.named.get_mut(p.as_str()) {
                if map.remove(&client).is_some() {
                    self.named_count -= 1;
                }
                if map.is_empty() {
                    self.named.remove(p.as_str());
                }
            }
        }
    }

    /// The `(None, client)` record, if kept.
    pub fn client(&self, client: ClientId) -> Option<&ClientRecord> {
        self.clients.get(&client)
    }

    /// The record of `(principal, client)`, if kept.
    pub fn record_of(&self, principal: Option<&str>, client: ClientId) -> Option<&ClientRecord> {
        self.get(principal, client)
    }

    /// Every `(None, _)` record, by client id.
    pub fn clients(&self) -> impl Iterator<Item = (&ClientId, &ClientRecord)> {
        self.clients.iter()
    }

    /// Every record: `(principal, client id, record)`, the `(None, _)`
    /// records first by client id, then each principal's by name and client id.
    pub fn records(&self) -> impl Iterator<Item = (Option<&Principal>, ClientId, &ClientRecord)> {
        self.clients.iter().map(|(c, r)| (None, *c, r)).chain(
            self.named
                .iter()
                .flat_map(|(p, m)| m.iter().map(move |(c, r)| (Some(p), *c, r))),
        )
    }

    /// The records after `after` in [`Self::records`]' order (every record
    /// when None): `after` is `(principal, client id)`, None for the
    /// `(None, _)` records; it need not be a kept record. Costs a lookup per
    /// principal passed, not a walk of the records before it, so a caller
    /// can walk the table a slice at a time.
    pub fn records_after(
        &self,
        after: Option<(Option<&str>, ClientId)>,
    ) -> impl Iterator<Item = (Option<&Principal>, ClientId, &ClientRecord)> {
        use std::ops::Bound::{Excluded, Unbounded};
        // (None, _) records after the cursor: all of them, those above its
        // id, or none once the cursor is in the principals' records.
        let anonymous = match after {
            None => Some(self.clients.range(..)),
            Some((None, c)) => Some(self.clients.range((Excluded(c), Unbounded))),
            Some((Some(_), _)) => None,
        };
        // The cursor's own principal's records above its id.
        let same = match after {
            Some((Some(p), c)) => self.named.get_key_value(p).map(|(p, m)| {
                m.range((Excluded(c), Unbounded))
                    .map(move |(c, r)| (Some(p), *c, r))
            }),
            _ => None,
        };
        // Every later principal's.
        let later = match after {
            Some((Some(p), _)) => self.named.range::<str, _>((Excluded(p), Unbounded)),
            _ => self.named.range::<str, _>(..),
        };
        anonymous
            .into_iter()
            .flatten()
            .map(|(c, r)| (None, *c, r))
            .chain(same.into_iter().flatten())
            .chain(later.flat_map(|(p, m)| m.iter().map(move |(c, r)| (Some(p), *c, r))))
    }

    /// Number of records, of every principal.
    pub fn len(&self) -> usize {
        self.clients.len() + self.named_count
    }

    /// True when no record is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The principals that have records, by name.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> + '_ {
        self.named.keys()
    }

    /// Number of records keyed by `principal`.
    pub fn count_of(&self, principal: &str) -> usize {
        self.named.get(principal).map_or(0, BTreeMap::len)
    }

    /// Number of client records and of stored outcomes.
    pub fn stats(&self) -> (usize, usize) {
        (
            self.len(),
            self.records().map(|(_, _, r)| r.outcomes.len()).sum(),
        )
    }

    /// The principals' records (a snapshot section of their own).
    pub(crate) fn named(&self) -> &NamedRecords {
        &self.named
    }

    /// Installs the principals' records of a loaded snapshot and rebuilds
    /// their indexes.
    pub(crate) fn set_named(&mut self, named: NamedRecords) {
        self.named_by_index = named
            .iter()
            .flat_map(|(p, m)| m.iter().map(move |(c, r)| (r.last_index, *c, p.clone())))
            .collect();
        self.named_count = named.values().map(BTreeMap::len).sum();
        self.named = named;
    }

    /// Checks the derived indexes and the principals' records.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let lru: BTreeSet<(LogIndex, ClientId)> = self
            .clients
            .iter()
            .map(|(c, r)| (r.last_index, *c))
            .collect();
        if lru != self.lru {
            return Err("outcome table: eviction order out of step".into());
        }
        let mut by_index = BTreeSet::new();
        for (p, m) in &self.named {
            crate::validate::principal(p.as_str()).map_err(|e| e.message)?;
            if m.is_empty() {
                return Err(format!("outcome table: empty map of principal {p}"));
            }
            for (c, r) in m {
                by_index.insert((r.last_index, *c, p.clone()));
            }
        }
        if by_index != self.named_by_index || by_index.len() != self.named_count {
            return Err("outcome table: principals' index out of step".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Acquire, LeaseSpec, Release};

    /// FNV-1a over a buffer: the fingerprint's definition before it hashed
    /// postcard's output as it was written.
    fn fnv1a_of(bytes: &[u8]) -> u64 {
        bytes.iter().fold(FNV_OFFSET, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME)
        })
    }

    fn acquire(acked: u64) -> Command {
        Command::Acquire(Acquire::mutex(
            RequestHeader {
                client_id: 7,
                request_id: 12,
                acked_request_id: acked,
            },
            "orders/42",
            LeaseSpec::New { ttl_ms: 10_000 },
            250,
            0,
        ))
    }

    // S7: a fingerprint is FNV-1a of the postcard bytes of the command with
    // its watermark cleared, exactly as before it stopped building the
    // buffer, so outcomes stored in a snapshot still match a retry
    // fingerprinted here.
    #[test]
    fn fingerprint_is_fnv1a_of_the_postcard_bytes() {
        let plain = acquire(0);
        let expected = fnv1a_of(&postcard::to_allocvec(&plain).expect("encode"));
        assert_eq!(fingerprint(&plain), expected);
        // A retry with a newer watermark is the same request.
        assert_eq!(fingerprint(&acquire(11)), expected);
        let release = Command::Release(Release {
            header: RequestHeader {
                client_id: 7,
                request_id: 13,
                acked_request_id: 0,
            },
            resource: Some("orders/42".into()),
            lease_id: 5,
            fencing_token: Some(77),
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

    // The leader's idle-client walk resumes a slice at a time
    // (`LockTable::client_records_after`): from any cursor, kept or not, the
    // records after it are exactly the tail of `records()` past it, across
    // the unwrapped records and each principal's.
    #[test]
    fn records_after_any_cursor_are_the_tail_of_records() {
        let mut t = OutcomeTable::default();
        let header = |client_id| RequestHeader {
            client_id,
            request_id: 1,
            acked_request_id: 0,
        };
        let alice = Principal::new("alice").expect("principal");
        let carol = Principal::new("carol").expect("principal");
        let mut index = 0;
        for client in [2, 4, 6] {
            index += 1;
            t.record(index, &header(client), 1, None);
            for p in [&alice, &carol] {
                index += 1;
                t.record_for(index, Some(p), &header(client + 1), 1, None, false);
            }
        }
        let key = |(p, c, _): (Option<&Principal>, ClientId, &ClientRecord)| {
            (p.map(|p| p.as_str().to_owned()), c)
        };
        let all: Vec<_> = t.records().map(key).collect();
        assert_eq!(all.len(), 9);
        assert_eq!(t.records_after(None).map(key).collect::<Vec<_>>(), all);
        // Cursors: kept records, gaps between them, before and after
        // everything, and a principal with no records ("bob").
        let cursors: [(Option<&str>, ClientId); 9] = [
            (None, 0),
            (None, 4),
            (None, 5),
            (None, u64::MAX),
            (Some("alice"), 5),
            (Some("alice"), 6),
            (Some("bob"), 1),
            (Some("carol"), 7),
            (Some("zed"), 0),
        ];
        for (p, c) in cursors {
            let after = |k: &(Option<String>, ClientId)| {
                (k.0.as_deref().unwrap_or(""), k.1) > (p.unwrap_or(""), c)
            };
            let expected: Vec<_> = all.iter().filter(|k| after(k)).cloned().collect();
            assert_eq!(
                t.records_after(Some((p, c))).map(key).collect::<Vec<_>>(),
                expected,
                "after {p:?}, {c}"
            );
        }
        assert_eq!(t.records_after(Some((Some("carol"), 7))).count(), 0);
        assert_eq!(t.records_after(Some((Some("alice"), 5))).count(), 4);
    }
}
