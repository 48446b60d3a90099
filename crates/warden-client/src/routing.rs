//! Where the next attempt goes: endpoint parsing, the `warden-leader` hint,
//! and the per-call plan of targets and backoff (pure; no IO, no clock).

use std::time::Duration;

use tonic::metadata::MetadataMap;

/// First backoff after a full round of endpoints failed; doubles each round
/// up to [`crate::ClientOptions::backoff_cap`].
pub(crate) const BACKOFF_BASE: Duration = Duration::from_millis(25);

/// Parses `host:port` (an `http://` prefix is accepted and dropped) into the
/// canonical `host:port` form used as the key of the channel cache.
pub fn parse_endpoint(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim();
    let without_scheme = if let Some(rest) = trimmed.strip_prefix("http://") {
        rest
    } else if trimmed.contains("://") {
        return Err("only plain `host:port` (or `http://host:port`) is supported".into());
    } else {
        trimmed
    };
    let without_scheme = without_scheme.trim_end_matches('/');
    if without_scheme.is_empty() {
        return Err("empty address; expected host:port".into());
    }
    let Some((host, port)) = without_scheme.rsplit_once(':') else {
        return Err("missing port; expected host:port".into());
    };
    if host.is_empty() || host == "[]" {
        return Err("missing host; expected host:port".into());
    }
    if host.contains(['/', '?', '#', '@', ' ']) {
        return Err("host contains a character that is not allowed in host:port".into());
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err("an IPv6 host must be in brackets, e.g. [::1]:7001".into());
    }
    match port.parse::<u16>() {
        Ok(0) => Err("port 0 is not a reachable port; expected 1..=65535".into()),
        Ok(_) => Ok(without_scheme.to_string()),
        Err(_) => Err(format!("port {port:?} is not a number in 1..=65535")),
    }
}

/// Reads the leader's address from the `warden-leader` metadata entry of an
/// `Unavailable` reply. Returns `None` when the entry is absent, empty or not
/// a valid `host:port` (a bad hint is ignored, never followed).
pub fn leader_hint(metadata: &MetadataMap) -> Option<String> {
    let value = metadata.get(warden_proto::LEADER_METADATA)?;
    let text = value.to_str().ok()?;
    parse_endpoint(text).ok()
}

/// The targets and pauses of one call, from first attempt to deadline.
///
/// Rules: start at the cached leader (or the first endpoint); on a failure
/// that names a leader, go there at once (at most `endpoints` hops in a
/// row, so two confused nodes cannot bounce the call forever); otherwise move
/// to the next endpoint at once, and after a whole round of endpoints failed,
/// pause with exponential backoff capped at `backoff_cap`.
#[derive(Debug)]
pub(crate) struct CallPlan {
    endpoints: Vec<String>,
    backoff_cap: Duration,
    /// Index of the endpoint to try when no hint is followed.
    cursor: usize,
    /// Failures since the last backoff pause (or the start).
    failures_in_round: usize,
    /// Completed rounds: the exponent of the next backoff.
    rounds: u32,
    /// Hints followed in a row without success.
    hops_in_a_row: usize,
    /// Distinct addresses tried, in order of first attempt.
    tried: Vec<String>,
    /// Addresses that failed this call without an answer (timeout, refused):
    /// a hint naming one is not followed (a frozen ex-leader that still
    /// accepts connections would cost an attempt timeout per hint); they are
    /// still tried in turn with the other endpoints.
    silent: Vec<String>,
}

impl CallPlan {
    /// A plan over `endpoints` (non-empty), starting at `cached_leader` when
    /// known. Returns the plan and the first target.
    pub(crate) fn new(
        endpoints: &[String],
        cached_leader: Option<String>,
        backoff_cap: Duration,
    ) -> (CallPlan, String) {
        let mut plan = CallPlan {
            endpoints: endpoints.to_vec(),
            backoff_cap,
            cursor: 0,
            failures_in_round: 0,
            rounds: 0,
            hops_in_a_row: 0,
            tried: Vec::new(),
            silent: Vec::new(),
        };
        let first = match cached_leader {
            Some(leader) => {
                if let Some(i) = plan.endpoints.iter().position(|e| *e == leader) {
                    plan.cursor = (i + 1) % plan.endpoints.len();
                }
                leader
            }
            None => {
                plan.cursor = 1 % plan.endpoints.len();
                plan.endpoints[0].clone()
            }
        };
        plan.note_tried(&first);
        (plan, first)
    }

    fn note_tried(&mut self, target: &str) {
        if !self.tried.iter().any(|t| t == target) {
            self.tried.push(target.to_string());
        }
    }

    /// After `failed` failed (with `hint` naming the leader, if it did;
    /// `answered`: the node itself replied, e.g. "not the leader"): how long
    /// to pause and where to go next.
    pub(crate) fn after_failure(
        &mut self,
        failed: &str,
        hint: Option<String>,
        answered: bool,
    ) -> (Duration, String) {
        self.failures_in_round += 1;
        if answered {
            self.silent.retain(|s| s != failed);
        } else if !self.silent.iter().any(|s| s == failed) {
            self.silent.push(failed.to_string());
        }
        if let Some(leader) = hint.filter(|h| h != failed && !self.silent.contains(h)) {
            if self.hops_in_a_row < self.endpoints.len() {
                self.hops_in_a_row += 1;
                self.note_tried(&leader);
                return (Duration::ZERO, leader);
            }
        }
        self.hops_in_a_row = 0;
        let mut next = self.endpoints[self.cursor].clone();
        self.cursor = (self.cursor + 1) % self.endpoints.len();
        if next == failed && self.endpoints.len() > 1 {
            next = self.endpoints[self.cursor].clone();
            self.cursor = (self.cursor + 1) % self.endpoints.len();
        }
        let pause = if self.failures_in_round >= self.endpoints.len() {
            self.failures_in_round = 0;
            let pause = backoff(self.rounds, self.backoff_cap);
            self.rounds = self.rounds.saturating_add(1);
            pause
        } else {
            Duration::ZERO
        };
        self.note_tried(&next);
        (pause, next)
    }

    /// Distinct addresses tried so far, in order.
    pub(crate) fn tried(&self) -> &[String] {
        &self.tried
    }
}

/// Backoff after `round` completed rounds: 25 ms doubling, at most `cap`.
pub(crate) fn backoff(round: u32, cap: Duration) -> Duration {
    let factor = 1u32.checked_shl(round.min(16)).unwrap_or(u32::MAX);
    BACKOFF_BASE.saturating_mul(factor).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::metadata::MetadataValue;

    fn eps() -> Vec<String> {
        vec!["a:1".into(), "b:2".into(), "c:3".into()]
    }

    // Bad input never panics: malformed endpoints get a reason naming what is wrong.
    #[test]
    fn endpoints_are_parsed_or_refused_with_a_reason() {
        assert_eq!(parse_endpoint("127.0.0.1:7001").unwrap(), "127.0.0.1:7001");
        assert_eq!(
            parse_endpoint(" http://node1:7001/ ").unwrap(),
            "node1:7001"
        );
        assert_eq!(parse_endpoint("[::1]:7001").unwrap(), "[::1]:7001");
        assert!(parse_endpoint("").unwrap_err().contains("empty"));
        assert!(parse_endpoint("node1").unwrap_err().contains("port"));
        assert!(parse_endpoint(":7001").unwrap_err().contains("host"));
        assert!(parse_endpoint("node1:0").unwrap_err().contains("1..=65535"));
        assert!(parse_endpoint("node1:99999")
            .unwrap_err()
            .contains("1..=65535"));
        assert!(parse_endpoint("https://node1:7001").is_err());
        assert!(parse_endpoint("::1:7001").unwrap_err().contains("brackets"));
    }

    // Leader following: a valid `warden-leader` entry is followed; a bad one is ignored.
    #[test]
    fn leader_hint_is_read_from_metadata() {
        let mut md = MetadataMap::new();
        assert_eq!(leader_hint(&md), None);
        md.insert(
            warden_proto::LEADER_METADATA,
            MetadataValue::from_static("10.0.0.2:7001"),
        );
        assert_eq!(leader_hint(&md).as_deref(), Some("10.0.0.2:7001"));
        md.insert(
            warden_proto::LEADER_METADATA,
            MetadataValue::from_static("garbage"),
        );
        assert_eq!(leader_hint(&md), None);
        md.insert(
            warden_proto::LEADER_METADATA,
            MetadataValue::from_static(""),
        );
        assert_eq!(leader_hint(&md), None);
    }

    // Leader following: a hint is followed at once, and the cached leader is tried first.
    #[test]
    fn plan_starts_at_cached_leader_and_follows_hints_immediately() {
        let (mut plan, first) =
            CallPlan::new(&eps(), Some("b:2".into()), Duration::from_millis(200));
        assert_eq!(first, "b:2");
        let (pause, next) = plan.after_failure("b:2", Some("c:3".into()), true);
        assert_eq!((pause, next.as_str()), (Duration::ZERO, "c:3"));
        // A hint naming the node that just failed is not followed.
        let (_, next) = plan.after_failure("c:3", Some("c:3".into()), true);
        assert_ne!(next, "c:3");
    }

    // L4 retry path: next endpoint at once; after a full round, backoff doubling and capped at 200 ms.
    #[test]
    fn plan_rotates_then_backs_off_with_a_cap() {
        let cap = Duration::from_millis(200);
        let (mut plan, mut target) = CallPlan::new(&eps(), None, cap);
        assert_eq!(target, "a:1");
        let mut pauses = Vec::new();
        let mut targets = vec![target.clone()];
        for _ in 0..12 {
            let (pause, next) = plan.after_failure(&target, None, false);
            pauses.push(pause.as_millis() as u64);
            targets.push(next.clone());
            target = next;
        }
        assert_eq!(&targets[..4], &["a:1", "b:2", "c:3", "a:1"]);
        assert_eq!(pauses, vec![0, 0, 25, 0, 0, 50, 0, 0, 100, 0, 0, 200]);
        assert!(pauses.iter().all(|&p| p <= 200));
        assert_eq!(plan.tried(), &["a:1", "b:2", "c:3"]);
    }

    // L4 with a frozen (SIGSTOPped) leader: it accepts connections but never
    // answers; followers that have not yet noticed still name it. Their hint
    // is not followed back to it (each visit would cost an attempt timeout);
    // the plan rotates on, and follows hints again once the node answers.
    #[test]
    fn a_hint_to_a_silent_node_is_not_followed() {
        let (mut plan, first) =
            CallPlan::new(&eps(), Some("a:1".into()), Duration::from_millis(200));
        assert_eq!(first, "a:1");
        let (_, next) = plan.after_failure("a:1", None, false);
        assert_eq!(next, "b:2");
        let (_, next) = plan.after_failure("b:2", Some("a:1".into()), true);
        assert_eq!(next, "c:3", "rotation, not the silent node");
        // The new leader is known: hints to it are followed.
        let (_, next) = plan.after_failure("c:3", Some("b:2".into()), true);
        assert_eq!(next, "b:2");
        // a:1 answers again later: hints to it count again.
        let (_, next) = plan.after_failure("a:1", None, true);
        let (_, next2) = plan.after_failure(&next, Some("a:1".into()), true);
        assert_eq!(next2, "a:1");
    }

    // L3: two nodes naming each other as leader cannot bounce a call forever.
    #[test]
    fn hint_ping_pong_falls_back_to_rotation() {
        let (mut plan, mut target) = CallPlan::new(&eps(), None, Duration::from_millis(200));
        let mut rotated = false;
        for _ in 0..20 {
            let hint = if target == "a:1" { "b:2" } else { "a:1" };
            let (_, next) = plan.after_failure(&target, Some(hint.into()), true);
            if next == "c:3" {
                rotated = true;
                break;
            }
            target = next;
        }
        assert!(rotated);
    }

    // Backoff arithmetic never overflows, whatever the round.
    #[test]
    fn backoff_is_capped_for_any_round() {
        let cap = Duration::from_millis(200);
        assert_eq!(backoff(0, cap), Duration::from_millis(25));
        assert_eq!(backoff(u32::MAX, cap), cap);
    }
}
