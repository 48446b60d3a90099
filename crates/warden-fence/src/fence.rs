//! The fence: the comparison, the store trait and the typed errors.

/// What an accepted check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// No token had been accepted for this resource.
    First,
    /// The same token as the highest accepted: the same grant continuing.
    Same,
    /// A higher token: a newer grant; `previous` was the highest before it.
    Newer {
        /// The highest token accepted before this one.
        previous: u64,
    },
}

/// Why a check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenceError {
    /// The presented token is lower than one already accepted for the
    /// resource: its holder's grant has been superseded (S2). Nothing was
    /// recorded or written.
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
    /// The request itself is unusable (empty resource name, token 0 or above
    /// 2^53 - 1). Nothing was recorded.
    #[error("{0}")]
    Invalid(String),
    /// The store failed; nothing was recorded (the transaction was dropped).
    #[error("fence store: {0}")]
    Store(String),
}

/// The one comparison every store makes: accept `presented` when it is at
/// least the highest token accepted so far, reject it when lower.
pub fn decide(
    resource: &str,
    highest: Option<u64>,
    presented: u64,
) -> Result<Accepted, FenceError> {
    match highest {
        None => Ok(Accepted::First),
        Some(h) if presented == h => Ok(Accepted::Same),
        Some(h) if presented > h => Ok(Accepted::Newer { previous: h }),
        Some(h) => Err(FenceError::Stale {
            resource: resource.to_string(),
            presented,
            highest: h,
        }),
    }
}

/// Where the highest accepted token per resource lives.
///
/// `check_and_record` must be atomic (no other check of the same resource
/// between its read and its write) and, for a durable store, durable before
/// it returns `Ok`: a restart must never forget an accepted token, or a stale
/// holder could write after it.
pub trait FenceStore: Send + Sync {
    /// Compares `token` with the highest accepted for `resource` ([`decide`])
    /// and, when accepted, records it as the highest.
    fn check_and_record(&self, resource: &str, token: u64) -> Result<Accepted, FenceError>;
    /// The highest token accepted for `resource`, if any.
    fn highest(&self, resource: &str) -> Result<Option<u64>, FenceError>;
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
    pub fn check(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        validate(resource, token)?;
        self.store.check_and_record(resource, token)
    }

    /// The highest token accepted for `resource`.
    pub fn highest(&self, resource: &str) -> Result<Option<u64>, FenceError> {
        self.store.highest(resource)
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
}
