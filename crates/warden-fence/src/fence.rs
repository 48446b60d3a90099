//! The fence: the rules, the store trait and the typed errors.
//!
//! Three kinds of grant, three rules (docs/fencing.md "Semaphore permits and
//! read-write locks"), all over tokens that grow per resource whatever the
//! kind (docs/semantics.md S2: one counter for the whole table):
//!
//! - [`Kind::Exclusive`]: a mutex grant, or a read-write lock's exclusive
//!   one. Refused below the highest token accepted for the resource, of any
//!   kind ([`decide`]).
//! - [`Kind::Shared`]: a read-write lock's shared grant. Refused below the
//!   highest *exclusive* token only ([`decide_shared`]), so readers never
//!   fence each other.
//! - [`Kind::Permit`]: a counting semaphore's permit in a slot. Refused
//!   below the highest token accepted for that slot, and, like a shared
//!   grant, below the highest exclusive token ([`decide_permit`]), so
//!   permits in different slots never fence each other.
//!
//! [`decide_claim`] picks the rule and says what to record.

use std::fmt;

/// What an accepted check found, compared with the bound its rule checks:
/// the resource's highest for an exclusive claim, the highest exclusive
/// token for a shared one, the slot's highest for a permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// No token had been accepted for this resource (for this bound).
    First,
    /// The same token as the highest accepted: the same grant continuing.
    Same,
    /// A higher token: a newer grant; `previous` was the highest before it.
    Newer {
        /// The highest token accepted before this one.
        previous: u64,
    },
}

/// The kind of grant a token came from; it picks the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A mutex's grant or a read-write lock's exclusive grant (one rule: a
    /// mutex is a read-write lock that has no readers). Accepted when not
    /// below the highest token accepted for the resource, shared, permit or
    /// exclusive; raises the highest exclusive token. A plain token (no slot,
    /// no mode) is this kind.
    Exclusive,
    /// A read-write lock's shared grant. Accepted when not below the highest
    /// exclusive token; raises the resource's highest (which exclusive claims
    /// are checked against) but not the highest exclusive (which shared
    /// claims are checked against), so readers never fence each other.
    Shared,
    /// A counting semaphore's permit in `slot` (0..N-1). Accepted when not
    /// below the highest permit accepted for that slot nor the highest
    /// exclusive token; raises the slot's highest and, like a shared grant,
    /// the resource's highest.
    Permit {
        /// The permit's slot.
        slot: u32,
    },
}

/// A presented token with the kind of its grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Claim {
    /// The grant's fencing token, 1..=2^53-1.
    pub token: u64,
    /// Which rule checks it.
    pub kind: Kind,
}

impl Claim {
    /// A mutex's token, or a read-write lock's exclusive one.
    pub const fn exclusive(token: u64) -> Self {
        Claim {
            token,
            kind: Kind::Exclusive,
        }
    }

    /// A read-write lock's shared token.
    pub const fn shared(token: u64) -> Self {
        Claim {
            token,
            kind: Kind::Shared,
        }
    }

    /// A semaphore permit's token in `slot`.
    pub const fn permit(slot: u32, token: u64) -> Self {
        Claim {
            token,
            kind: Kind::Permit { slot },
        }
    }

    /// The permit's slot; `None` for an exclusive or shared claim.
    pub const fn slot(&self) -> Option<u32> {
        match self.kind {
            Kind::Permit { slot } => Some(slot),
            Kind::Exclusive | Kind::Shared => None,
        }
    }
}

/// A bound narrower than the resource's highest that refused a token
/// ([`FenceError::StaleAt`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// The highest permit accepted for this slot of the resource.
    Slot(u32),
    /// The highest exclusive token accepted for the resource.
    Exclusive,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Slot(slot) => write!(f, "slot {slot}"),
            Bound::Exclusive => f.write_str("exclusive grants"),
        }
    }
}

/// Why a check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenceError {
    /// The presented token is lower than one already accepted for the
    /// resource: its holder's grant has been superseded (S2). Nothing was
    /// recorded or written. This is the refusal of an exclusive claim (and
    /// of a plain token): its bound is the resource's highest, of any kind.
    #[error(
        "stale fencing token for {resource:?}: presented {presented}, highest accepted {highest}"
    )]
    Stale {
        /// The resource named by the request.
        resource: String,
        /// The token the request carried.
        presented: u64,
        /// The highest token accepted for the resource.
        highest: u64,
    },
    /// The presented token is lower than the highest of `bound`: a permit's
    /// slot has a newer permit, or a shared claim (or a permit) was
    /// superseded by a newer exclusive grant. Nothing was recorded or
    /// written.
    #[error(
        "stale fencing token for {resource:?}: presented {presented}, highest accepted for {bound} is {highest}"
    )]
    StaleAt {
        /// The resource named by the request.
        resource: String,
        /// Which bound refused it.
        bound: Bound,
        /// The token the request carried.
        presented: u64,
        /// The highest token of `bound`.
        highest: u64,
    },
    /// The request itself is unusable (empty resource name, token 0 or above
    /// 2^53 - 1). Nothing was recorded.
    #[error("{0}")]
    Invalid(String),
    /// The store failed; nothing was recorded (the transaction was dropped).
    #[error("fence store: {0}")]
    Store(String),
}

/// `Ok` when `presented` is not below `highest`; `Err(highest)` otherwise.
fn compare(highest: Option<u64>, presented: u64) -> Result<Accepted, u64> {
    match highest {
        None => Ok(Accepted::First),
        Some(h) if presented == h => Ok(Accepted::Same),
        Some(h) if presented > h => Ok(Accepted::Newer { previous: h }),
        Some(h) => Err(h),
    }
}

/// The exclusive rule (a mutex's, and a read-write lock's exclusive grant):
/// accept `presented` when it is at least the highest token accepted so far
/// for the resource, of any kind; reject it when lower.
pub fn decide(
    resource: &str,
    highest: Option<u64>,
    presented: u64,
) -> Result<Accepted, FenceError> {
    compare(highest, presented).map_err(|highest| FenceError::Stale {
        resource: resource.to_string(),
        presented,
        highest,
    })
}

/// The shared rule: accept `presented` when it is at least the highest
/// *exclusive* token accepted for the resource; other shared tokens play no
/// part. Refused: [`FenceError::StaleAt`] with [`Bound::Exclusive`].
pub fn decide_shared(
    resource: &str,
    highest_exclusive: Option<u64>,
    presented: u64,
) -> Result<Accepted, FenceError> {
    compare(highest_exclusive, presented).map_err(|highest| FenceError::StaleAt {
        resource: resource.to_string(),
        bound: Bound::Exclusive,
        presented,
        highest,
    })
}

/// The permit rule: accept `presented` when it is at least the highest
/// permit accepted for `slot` of the resource and the highest exclusive
/// token; permits in other slots play no part. What was found is compared
/// with the slot's highest. Refused: [`FenceError::StaleAt`] with
/// [`Bound::Slot`] (checked first) or [`Bound::Exclusive`].
pub fn decide_permit(
    resource: &str,
    slot: u32,
    highest_in_slot: Option<u64>,
    highest_exclusive: Option<u64>,
    presented: u64,
) -> Result<Accepted, FenceError> {
    let accepted = compare(highest_in_slot, presented).map_err(|highest| FenceError::StaleAt {
        resource: resource.to_string(),
        bound: Bound::Slot(slot),
        presented,
        highest,
    })?;
    decide_shared(resource, highest_exclusive, presented)?;
    Ok(accepted)
}

/// The highest tokens a store keeps that one claim is checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Highs {
    /// The highest exclusive token (a mutex's or a read-write lock's
    /// exclusive grant) accepted for the resource.
    pub exclusive: Option<u64>,
    /// The highest shared token or permit accepted for the resource.
    pub shared: Option<u64>,
    /// The highest permit accepted for the claim's slot; `None` when the
    /// claim is not a permit.
    pub slot: Option<u64>,
}

impl Highs {
    /// The highest token accepted for the resource, of any kind: the bound
    /// of an exclusive claim, and what [`FenceStore::highest`] reports.
    pub fn any(&self) -> Option<u64> {
        self.exclusive.max(self.shared)
    }
}

/// The one decision every store makes: checks `claim` against `highs` by
/// its kind's rule and, when accepted, returns what was found and the highs
/// to record (a store writes the fields that changed; `slot` under the
/// claim's slot).
pub fn decide_claim(
    resource: &str,
    claim: Claim,
    highs: Highs,
) -> Result<(Accepted, Highs), FenceError> {
    let token = Some(claim.token);
    match claim.kind {
        Kind::Exclusive => {
            let accepted = decide(resource, highs.any(), claim.token)?;
            Ok((
                accepted,
                Highs {
                    exclusive: token,
                    ..highs
                },
            ))
        }
        Kind::Shared => {
            let accepted = decide_shared(resource, highs.exclusive, claim.token)?;
            Ok((
                accepted,
                Highs {
                    shared: highs.shared.max(token),
                    ..highs
                },
            ))
        }
        Kind::Permit { slot } => {
            let accepted = decide_permit(resource, slot, highs.slot, highs.exclusive, claim.token)?;
            Ok((
                accepted,
                Highs {
                    shared: highs.shared.max(token),
                    slot: token,
                    ..highs
                },
            ))
        }
    }
}

/// Where the highest accepted tokens live: per resource, the highest
/// exclusive and the highest shared-or-permit token; per (resource, slot),
/// the highest permit.
///
/// `check_claim_and_record` must be atomic (no other check of the same
/// resource between its read and its write) and, for a durable store,
/// durable before it returns `Ok`: a restart must never forget an accepted
/// token, or a stale holder could write after it.
pub trait FenceStore: Send + Sync {
    /// Checks `claim` for `resource` ([`decide_claim`]) and, when accepted,
    /// records the highs it returns.
    fn check_claim_and_record(&self, resource: &str, claim: Claim) -> Result<Accepted, FenceError>;
    /// The highs kept for `resource` (and for `slot`, when given).
    fn highs(&self, resource: &str, slot: Option<u32>) -> Result<Highs, FenceError>;
    /// Compares `token` with the highest accepted for `resource` ([`decide`])
    /// and, when accepted, records it: an exclusive claim.
    fn check_and_record(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        self.check_claim_and_record(resource, Claim::exclusive(token))
    }
    /// The highest token accepted for `resource`, of any kind, if any.
    fn highest(&self, resource: &str) -> Result<Option<u64>, FenceError> {
        Ok(self.highs(resource, None)?.any())
    }
}

/// A fence over a store: checks the request, then the store.
#[derive(Debug, Default)]
pub struct Fence<S> {
    store: S,
}

impl<S: FenceStore> Fence<S> {
    /// A fence over `store`.
    pub fn new(store: S) -> Self {
        Fence { store }
    }

    /// Accepts `token` for `resource` if it is not lower than the highest
    /// accepted so far, and records it; otherwise [`FenceError::Stale`].
    /// The rule of a mutex's token and of a read-write lock's exclusive one.
    pub fn check(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        validate(resource, token)?;
        self.store.check_and_record(resource, token)
    }

    /// Checks `claim` by its kind's rule ([`Kind`]) and records it.
    pub fn check_claim(&self, resource: &str, claim: Claim) -> Result<Accepted, FenceError> {
        validate(resource, claim.token)?;
        self.store.check_claim_and_record(resource, claim)
    }

    /// A semaphore permit's check: refused below the highest permit of
    /// `slot` ([`Bound::Slot`]) or the highest exclusive token.
    pub fn check_permit(
        &self,
        resource: &str,
        slot: u32,
        token: u64,
    ) -> Result<Accepted, FenceError> {
        self.check_claim(resource, Claim::permit(slot, token))
    }

    /// A read-write lock's shared check: refused below the highest exclusive
    /// token only ([`Bound::Exclusive`]).
    pub fn check_shared(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        self.check_claim(resource, Claim::shared(token))
    }

    /// The highest token accepted for `resource`, of any kind.
    pub fn highest(&self, resource: &str) -> Result<Option<u64>, FenceError> {
        self.store.highest(resource)
    }

    /// The highs kept for `resource` (and `slot`, when given).
    pub fn highs(&self, resource: &str, slot: Option<u32>) -> Result<Highs, FenceError> {
        self.store.highs(resource, slot)
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }
}

/// A resource name is non-empty; a token is in 1..=2^53-1 (Warden never
/// issues 0 and stays below 2^53).
pub(crate) fn validate(resource: &str, token: u64) -> Result<(), FenceError> {
    if resource.is_empty() {
        return Err(FenceError::Invalid("resource: must not be empty".into()));
    }
    if token == 0 || token > crate::MAX_TOKEN {
        return Err(FenceError::Invalid(format!(
            "fencing token: {token} is not in 1..={}",
            crate::MAX_TOKEN
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // S2 / the fencing story: equal is the same grant, higher a newer one, lower is stale.
    #[test]
    fn decide_accepts_equal_and_higher_rejects_lower() {
        assert_eq!(decide("r", None, 5), Ok(Accepted::First));
        assert_eq!(decide("r", Some(5), 5), Ok(Accepted::Same));
        assert_eq!(decide("r", Some(5), 8), Ok(Accepted::Newer { previous: 5 }));
        assert_eq!(
            decide("r", Some(5), 4),
            Err(FenceError::Stale {
                resource: "r".into(),
                presented: 4,
                highest: 5
            })
        );
    }

    proptest! {
        // The fencing story: over any sequence of presented tokens, the accepted
        // ones are non-decreasing and each rejected one is below the highest
        // accepted before it.
        #[test]
        fn accepted_tokens_never_decrease(tokens in proptest::collection::vec(1u64..50, 0..60)) {
            let fence = Fence::new(crate::MemoryStore::default());
            let mut highest: Option<u64> = None;
            for t in tokens {
                match fence.check("r", t) {
                    Ok(_) => {
                        prop_assert!(highest.is_none_or(|h| t >= h));
                        highest = Some(t);
                    }
                    Err(FenceError::Stale { presented, highest: h, .. }) => {
                        prop_assert_eq!(presented, t);
                        prop_assert_eq!(Some(h), highest);
                        prop_assert!(t < h);
                    }
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
                prop_assert_eq!(fence.highest("r").unwrap(), highest);
            }
        }
    }

    // Bad input is refused before the store is touched.
    #[test]
    fn empty_resource_and_token_zero_are_invalid() {
        let fence = Fence::new(crate::MemoryStore::default());
        assert!(
            matches!(fence.check("", 1), Err(FenceError::Invalid(m)) if m.contains("resource"))
        );
        assert!(matches!(fence.check("r", 0), Err(FenceError::Invalid(m)) if m.contains("token")));
        assert!(matches!(
            fence.check("r", 1 << 53),
            Err(FenceError::Invalid(_))
        ));
        assert_eq!(fence.highest("r").unwrap(), None);
    }

    // docs/fencing.md "Semaphore permits and read-write locks": each rule
    // compares with its own bound, and a refusal names that bound.
    #[test]
    fn each_rule_compares_with_its_own_bound() {
        // Shared: only the highest exclusive token counts.
        assert_eq!(decide_shared("r", None, 3), Ok(Accepted::First));
        assert_eq!(
            decide_shared("r", Some(3), 9),
            Ok(Accepted::Newer { previous: 3 })
        );
        assert_eq!(
            decide_shared("r", Some(8), 5),
            Err(FenceError::StaleAt {
                resource: "r".into(),
                bound: Bound::Exclusive,
                presented: 5,
                highest: 8
            })
        );
        // Permit: the slot's highest, then the highest exclusive.
        assert_eq!(decide_permit("r", 3, Some(5), None, 5), Ok(Accepted::Same));
        assert_eq!(
            decide_permit("r", 3, Some(8), Some(2), 5),
            Err(FenceError::StaleAt {
                resource: "r".into(),
                bound: Bound::Slot(3),
                presented: 5,
                highest: 8
            })
        );
        assert_eq!(
            decide_permit("r", 3, Some(4), Some(7), 5),
            Err(FenceError::StaleAt {
                resource: "r".into(),
                bound: Bound::Exclusive,
                presented: 5,
                highest: 7
            })
        );
        let refused = decide_permit("r", 3, Some(8), None, 5).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "stale fencing token for \"r\": presented 5, highest accepted for slot 3 is 8"
        );
        assert_eq!(
            decide_shared("r", Some(8), 5).unwrap_err().to_string(),
            "stale fencing token for \"r\": presented 5, highest accepted for exclusive grants is 8"
        );
    }

    // What decide_claim records: an exclusive claim raises the highest
    // exclusive; a shared claim raises only the shared highest, never lowers
    // it; a permit raises its slot and the shared highest.
    #[test]
    fn decide_claim_raises_only_what_its_rule_says() {
        let highs = Highs {
            exclusive: Some(4),
            shared: Some(9),
            slot: None,
        };
        assert_eq!(highs.any(), Some(9));
        assert_eq!(
            decide_claim("r", Claim::shared(6), highs),
            Ok((Accepted::Newer { previous: 4 }, highs))
        );
        assert_eq!(
            decide_claim("r", Claim::exclusive(10), highs),
            Ok((
                Accepted::Newer { previous: 9 },
                Highs {
                    exclusive: Some(10),
                    ..highs
                }
            ))
        );
        assert_eq!(
            decide_claim("r", Claim::permit(2, 12), highs),
            Ok((
                Accepted::First,
                Highs {
                    exclusive: Some(4),
                    shared: Some(12),
                    slot: Some(12)
                }
            ))
        );
        assert!(matches!(
            decide_claim("r", Claim::exclusive(8), highs),
            Err(FenceError::Stale {
                presented: 8,
                highest: 9,
                ..
            })
        ));
    }

    /// A claim for the history model: its kind from a small number.
    fn claim_of(kind: u8, token: u64) -> Claim {
        match kind {
            0 => Claim::exclusive(token),
            1 => Claim::shared(token),
            k => Claim::permit(u32::from(k - 2), token),
        }
    }

    /// Whether two kinds of grant cannot hold the resource together, so a
    /// higher token of one supersedes a lower one of the other: an exclusive
    /// grant conflicts with every grant, a shared one with exclusive grants,
    /// a permit with exclusive grants and permits of its own slot.
    fn conflicts(a: Kind, b: Kind) -> bool {
        match (a, b) {
            (Kind::Exclusive, _) | (_, Kind::Exclusive) => true,
            (Kind::Permit { slot: x }, Kind::Permit { slot: y }) => x == y,
            _ => false,
        }
    }

    proptest! {
        // docs/fencing.md "Semaphore permits and read-write locks", stated
        // over the history: a claim is refused exactly when a higher token of
        // a conflicting grant has been accepted before it (S2: tokens grow
        // per resource whatever the kind), and a refusal records nothing.
        #[test]
        fn verdicts_match_the_conflict_history(
            claims in proptest::collection::vec((0u8..5, 1u64..30), 0..80)
        ) {
            let fence = Fence::new(crate::MemoryStore::default());
            let mut accepted: Vec<Claim> = Vec::new();
            for (kind, token) in claims {
                let claim = claim_of(kind, token);
                let superseded = accepted
                    .iter()
                    .any(|a| a.token > token && conflicts(a.kind, claim.kind));
                let before = fence.highs("r", claim.slot()).unwrap();
                match fence.check_claim("r", claim) {
                    Ok(_) => {
                        prop_assert!(!superseded, "{claim:?} accepted after {accepted:?}");
                        accepted.push(claim);
                    }
                    Err(FenceError::Stale { presented, highest, .. })
                    | Err(FenceError::StaleAt { presented, highest, .. }) => {
                        prop_assert!(superseded, "{claim:?} refused after {accepted:?}");
                        prop_assert_eq!(presented, token);
                        prop_assert!(highest > token);
                        prop_assert_eq!(fence.highs("r", claim.slot()).unwrap(), before);
                    }
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
                let any = accepted.iter().map(|a| a.token).max();
                prop_assert_eq!(fence.highest("r").unwrap(), any);
            }
        }
    }
}
