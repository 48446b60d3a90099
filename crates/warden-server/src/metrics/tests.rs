//! The metrics apply reports, on a real lock table. Each test names what it
//! defends.

use std::time::Duration;

use warden_core::table::LockTable;
use warden_core::types::{Acquire, Command, LeaderId, LeaseSpec, Release, RequestHeader, Stamp};

use super::*;

const LEADER: LeaderId = LeaderId {
    term: 1,
    node_id: 1,
};

/// A table fed to metrics the way the state machine feeds them.
struct Node {
    table: LockTable,
    metrics: Metrics,
    index: u64,
    request: u64,
}

impl Node {
    fn new(groups: &[&str]) -> Self {
        let list: Vec<String> = groups.iter().map(|s| s.to_string()).collect();
        Node {
            table: LockTable::new(),
            metrics: Metrics::new(Groups::new(&list).unwrap()),
            index: 0,
            request: 0,
        }
    }

    /// Applies `cmd` as the next entry, stamped at cluster time `at_ms`.
    fn apply(&mut self, cmd: Command, at_ms: u64) {
        self.index += 1;
        let stamp = Stamp {
            leader: LEADER,
            at_ms,
        };
        let applied = self.table.apply(self.index, LEADER, stamp, &cmd);
        let now_ms = self.table.now_ms();
        for effect in &applied.effects {
            self.metrics.on_effect(effect, now_ms);
        }
        self.metrics.after_entry(&self.table);
    }

    fn header(&mut self) -> RequestHeader {
        self.request += 1;
        RequestHeader {
            client_id: 7,
            request_id: self.request,
            acked_request_id: 0,
        }
    }

    fn acquire(&mut self, resource: &str, lease: LeaseSpec, wait_ms: u64, at_ms: u64) {
        let header = self.header();
        self.apply(
            Command::Acquire(Acquire::mutex(header, resource, lease, wait_ms, 0)),
            at_ms,
        );
    }

    fn release(&mut self, resource: &str, at_ms: u64) {
        let holder = self.table.holder(resource).expect("held");
        let header = self.header();
        self.apply(
            Command::Release(Release {
                header,
                resource: Some(resource.into()),
                lease_id: holder.lease_id,
                fencing_token: Some(holder.fencing_token),
            }),
            at_ms,
        );
    }

    fn value(&self, series: &str) -> f64 {
        value(&self.metrics.render(), series)
    }
}

/// The value of the exposition line for exactly `series` (name and labels
/// as rendered), or a panic naming what was there.
fn value(text: &str, series: &str) -> f64 {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(series) {
            if let Some(v) = rest.strip_prefix(' ') {
                return v.trim().parse().unwrap_or_else(|e| panic!("{line}: {e}"));
            }
        }
    }
    panic!("no series {series} in:\n{text}")
}

fn new_lease() -> LeaseSpec {
    LeaseSpec::New { ttl_ms: 10_000 }
}

// Gauges follow apply's effects: grants held and frees by reason, by group,
// without scanning the table (the issue's "after 5 acquires ... 5").
#[test]
fn held_and_frees_follow_the_effects() {
    let mut n = Node::new(&["payments/"]);
    for i in 0..5 {
        n.acquire(&format!("payments/{i}"), new_lease(), 0, 10 * i);
    }
    n.acquire("orders/1", new_lease(), 0, 60);
    assert_eq!(n.value(r#"warden_locks_held{group="payments/"}"#), 5.0);
    assert_eq!(n.value(r#"warden_locks_held{group="other"}"#), 1.0);
    assert_eq!(n.value(r#"warden_grants_total{group="payments/"}"#), 5.0);
    assert_eq!(n.value("warden_leases_live"), 6.0);

    n.release("payments/0", 100);
    // payments/1's lease (granted at 10 ms, TTL 10 s) ends at 10,010 ms;
    // the others later.
    n.apply(Command::Tick, 10_010);
    assert_eq!(n.value(r#"warden_locks_held{group="payments/"}"#), 3.0);
    assert_eq!(
        n.value(r#"warden_lock_frees_total{group="payments/",reason="release"}"#),
        1.0
    );
    assert_eq!(
        n.value(r#"warden_lock_frees_total{group="payments/",reason="expire"}"#),
        1.0
    );
    assert_eq!(
        n.value(r#"warden_lock_frees_total{group="other",reason="expire"}"#),
        0.0
    );
    assert_eq!(n.value("warden_leases_live"), 4.0);
    // Hold durations in cluster time: 100 − 0 ms, and 10,010 − 10 ms (an
    // expired grant is held until its lease's end).
    assert_eq!(
        n.value(r#"warden_hold_duration_seconds_count{group="payments/"}"#),
        2.0
    );
    let sum = n.value(r#"warden_hold_duration_seconds_sum{group="payments/"}"#);
    assert!((sum - 10.1).abs() < 1e-9, "{sum}");
}

// A queued waiter's grant adds a wait sample as long as it waited (from its
// enqueue's cluster time to the handing-off entry's), and the handoff from
// the free to that grant (in the same entry: 0).
#[test]
fn wait_and_handoff_durations_in_cluster_time() {
    let mut n = Node::new(&[]);
    n.acquire("r", new_lease(), 0, 1_000);
    n.acquire("r", new_lease(), 30_000, 1_250);
    assert_eq!(n.value(r#"warden_waiters{group="other"}"#), 1.0);
    n.release("r", 3_750);
    assert_eq!(n.value(r#"warden_waiters{group="other"}"#), 0.0);
    assert_eq!(n.value(r#"warden_locks_held{group="other"}"#), 1.0);
    assert_eq!(
        n.value(r#"warden_wait_duration_seconds_count{group="other"}"#),
        1.0
    );
    assert_eq!(
        n.value(r#"warden_wait_duration_seconds_sum{group="other"}"#),
        2.5
    );
    assert_eq!(
        n.value(r#"warden_handoff_duration_seconds_count{group="other"}"#),
        1.0
    );
    assert_eq!(
        n.value(r#"warden_handoff_duration_seconds_sum{group="other"}"#),
        0.0
    );
    // A free with no waiter, then a later acquire: handoff 0.4 s.
    n.release("r", 4_000);
    n.acquire("r", new_lease(), 0, 4_400);
    assert_eq!(
        n.value(r#"warden_handoff_duration_seconds_count{group="other"}"#),
        2.0
    );
    let sum = n.value(r#"warden_handoff_duration_seconds_sum{group="other"}"#);
    assert!((sum - 0.4).abs() < 1e-9, "{sum}");
}

// Cluster time is replicated: a node that loaded the table (snapshot,
// restart) times what it holds from the table's instants like any other,
// and counts the gauges from the loaded table.
#[test]
fn loaded_grants_are_counted_and_timed() {
    let mut n = Node::new(&[]);
    n.acquire("a", new_lease(), 0, 0);
    n.acquire("b", new_lease(), 0, 1_000);
    n.acquire("b", new_lease(), 60_000, 2_000);
    let snapshot = n.table.to_snapshot();
    let table = LockTable::from_snapshot(&snapshot).unwrap();
    assert_eq!(table.now_ms(), 2_000);
    let mut m = Node::new(&[]);
    m.index = n.index;
    // The loaded outcome table holds this client's earlier request ids.
    m.request = n.request;
    m.metrics.load_table(&table);
    m.table = table;
    assert_eq!(m.value(r#"warden_locks_held{group="other"}"#), 2.0);
    assert_eq!(m.value(r#"warden_waiters{group="other"}"#), 1.0);
    assert_eq!(m.value("warden_leases_live"), 3.0);
    m.release("b", 5_000);
    // The waiter was granted in the release's entry; both durations come
    // from instants made before the load: held 5,000 − 1,000 ms, waited
    // 5,000 − 2,000 ms.
    assert_eq!(m.value(r#"warden_grants_total{group="other"}"#), 1.0);
    assert_eq!(
        m.value(r#"warden_hold_duration_seconds_sum{group="other"}"#),
        4.0
    );
    assert_eq!(
        m.value(r#"warden_wait_duration_seconds_sum{group="other"}"#),
        3.0
    );
    assert_eq!(m.value(r#"warden_locks_held{group="other"}"#), 2.0);
    // No free before the load was seen here: that handoff is not timed.
    assert_eq!(
        m.value(r#"warden_handoff_duration_seconds_count{group="other"}"#),
        1.0,
        "the release's own handoff (0 s) only"
    );
}

// Bounded cardinality: 1,000 resources in 1,000 prefixes, with the most
// groups configured, make at most MAX_METRICS_GROUPS + 1 `group` values.
#[test]
fn a_thousand_prefixes_make_a_bounded_label_set() {
    let configured: Vec<String> = (0..MAX_METRICS_GROUPS).map(|i| format!("p{i}/")).collect();
    let refs: Vec<&str> = configured.iter().map(String::as_str).collect();
    let mut n = Node::new(&refs);
    for i in 0..1_000 {
        n.acquire(&format!("p{i}/x"), new_lease(), 0, i);
    }
    let text = n.metrics.render();
    let groups: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("warden_locks_held{"))
        .filter(|l| !l.ends_with(" 0"))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    assert_eq!(groups.len(), MAX_METRICS_GROUPS + 1, "{groups:?}");
    assert_eq!(
        n.value(r#"warden_locks_held{group="other"}"#),
        (1_000 - MAX_METRICS_GROUPS) as f64
    );
    let all: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("warden_grants_total{"))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    // Every series the node has: the configured groups, other, election.
    assert_eq!(all.len(), MAX_METRICS_GROUPS + 2);
}

// Every name in DESCRIPTIONS is exported from the start, with its help, and
// a call to a method that does not exist is counted under `unknown`.
#[test]
fn every_series_is_exported_from_the_start() {
    let m = Metrics::default();
    m.peer_lag(&[(2, 0), (3, 0)]);
    let text = m.render();
    for (name, _, help) in DESCRIPTIONS {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing from:\n{text}"
        );
        assert!(text.contains(help), "help of {name}");
    }
    m.grpc_request(
        "unknown",
        tonic::Code::Unimplemented,
        Some(Duration::from_millis(2)),
    );
    assert_eq!(
        value(
            &text,
            r#"warden_grpc_requests_total{method="unknown",code="Unimplemented"}"#
        ),
        0.0
    );
    assert_eq!(
        value(
            &m.render(),
            r#"warden_grpc_requests_total{method="unknown",code="Unimplemented"}"#
        ),
        1.0
    );
    let build = format!(
        "warden_build_info{{version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(value(&text, &build), 1.0);
}

// deploy/: every series the Grafana dashboard and the alerts may name
// (deploy/metrics.txt, which deploy/check.sh holds them to) is exported by
// a node from the start, and every series a node exports is listed there.
#[test]
fn deploy_metrics_list_is_what_a_node_exports() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/metrics.txt");
    let text = std::fs::read_to_string(path).expect("deploy/metrics.txt");
    // One name per line, nothing else (as deploy/check_metric_names.py reads it).
    let listed: std::collections::BTreeSet<&str> = text.lines().collect();
    let m = Metrics::default();
    m.peer_lag(&[(2, 0)]);
    let rendered = m.render();
    for name in &listed {
        assert!(
            rendered.lines().any(|l| l.starts_with(&format!("{name}{{"))
                || l.starts_with(&format!("{name} "))
                || l.starts_with(&format!("{name}_bucket"))),
            "{name} is in deploy/metrics.txt but not exported"
        );
    }
    let exported: std::collections::BTreeSet<&str> =
        DESCRIPTIONS.iter().map(|(name, _, _)| *name).collect();
    assert_eq!(listed, exported);
}

// A node nobody scrapes keeps bounded memory: its histograms' samples are
// folded into their buckets every UPKEEP_INTERVAL (the exporter keeps each
// sample until a render or an upkeep), and the fold loses none of them.
#[tokio::test(start_paused = true)]
async fn upkeep_runs_every_interval_and_keeps_every_sample() {
    let metrics = std::sync::Arc::new(Metrics::default());
    let task = tokio::spawn(keep_up(std::sync::Arc::downgrade(&metrics)));
    for _ in 0..3 {
        metrics.acquire(AcquireOutcome::Granted, Duration::from_millis(2));
    }
    tokio::time::sleep(UPKEEP_INTERVAL * 3 + Duration::from_millis(1)).await;
    assert_eq!(metrics.upkeeps(), 3);
    metrics.acquire(AcquireOutcome::Granted, Duration::from_millis(2));
    metrics.upkeep();
    let text = metrics.render();
    assert_eq!(
        value(
            &text,
            "warden_acquire_duration_seconds_count{outcome=\"granted\"}"
        ),
        4.0,
        "{text}"
    );
    // Gone with the node's metrics.
    drop(metrics);
    tokio::time::timeout(UPKEEP_INTERVAL * 2, task)
        .await
        .expect("the upkeep task ends once the metrics are dropped")
        .expect("no panic");
}

// The handoff starts are bounded (MAX_HANDOFF_STARTS) and, full of recent
// frees, cost no pass per free: a free that finds the map full of frees
// younger than HANDOFF_HORIZON is not timed, and the map is pruned again a
// second later at the soonest; frees past the horizon make room.
#[test]
fn handoff_starts_are_bounded_and_pruned_at_most_once_a_second() {
    let mut freed = FreedAt::default();
    let s = |secs: u64| secs * 1_000;
    for i in 0..MAX_HANDOFF_STARTS {
        freed.remember(&format!("r{i}"), s(100));
    }
    assert_eq!(freed.at.len(), MAX_HANDOFF_STARTS);
    freed.remember("r0", s(101));
    assert_eq!(
        freed.at["r0"],
        s(101),
        "a known resource is updated in place"
    );
    freed.remember("x", 100_500);
    assert!(!freed.at.contains_key("x"));
    assert_eq!(freed.pruned_at, Some(100_500));
    freed.remember("z", 100_900);
    assert_eq!(
        freed.pruned_at,
        Some(100_500),
        "no second pass within a second"
    );
    // Past the horizon, every free at 100 s goes; r0's (101 s) stays.
    let later = 160_500;
    freed.remember("y", later);
    assert_eq!(freed.at.len(), 2);
    assert_eq!(freed.at.get("y"), Some(&later));
    assert_eq!(freed.at.get("r0"), Some(&s(101)));
}
