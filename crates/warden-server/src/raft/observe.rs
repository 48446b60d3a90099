//! Raft's state in this node's metrics (`crate::metrics::RaftSeries`):
//! leadership and leader changes from openraft's server metrics (which
//! change only with the vote, the state, the leader or the membership, so no
//! change is missed and the task does not wake per entry); the term, the
//! commit and applied index and the per-peer lag from openraft's full
//! metrics, the members' oldest log format (`raft::log_format`) and the
//! peer ids refused as unconfirmed (`raft::member_confirm`), read then and
//! every [`SAMPLE_INTERVAL`].

use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver as _;
use openraft::ServerState;
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::raft::log_format::LogFormats;
use crate::raft::peer_access::PeerAccess;
use crate::raft::Raft;

/// How often the indexes and the lag are sampled.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(250);

/// Keeps `metrics.raft` equal to `raft`'s state until the Raft handle
/// shuts down or `stop` turns true.
pub async fn follow(
    raft: Raft,
    metrics: Arc<Metrics>,
    formats: Arc<LogFormats>,
    access: Arc<PeerAccess>,
    mut stop: watch::Receiver<bool>,
) {
    let mut server = raft.server_metrics();
    let mut last_leader = None;
    let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        {
            let m = server.borrow_watched();
            let series = &metrics.raft;
            series.is_leader.set(if m.state == ServerState::Leader {
                1.0
            } else {
                0.0
            });
            if let Some(leader) = m.current_leader {
                if last_leader != Some(leader) {
                    series.leader_changes.increment(1);
                    last_leader = Some(leader);
                }
            }
        }
        sample(&raft, &metrics);
        metrics
            .raft
            .members_log_format
            .set(f64::from(formats.members_read_format()));
        metrics
            .raft
            .peers_unconfirmed
            .set(access.unconfirmed().len() as f64);
        tokio::select! {
            changed = server.changed() => if changed.is_err() { return },
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// The indexes and, on the leader, each peer's lag (every other member at 0
/// elsewhere).
fn sample(raft: &Raft, metrics: &Metrics) {
    let rx = raft.metrics();
    let m = rx.borrow_watched();
    let series = &metrics.raft;
    series.term.set(m.current_term as f64);
    let index = |l: Option<&crate::types::LogId>| l.map(|l| l.index()).unwrap_or(0) as f64;
    series.commit_index.set(index(m.local_committed.as_ref()));
    series.applied_index.set(index(m.last_applied.as_ref()));
    let last = m.last_log_index.unwrap_or(0);
    let lags: Vec<(u64, u64)> = match &m.replication {
        Some(r) => r
            .iter()
            .filter(|(id, _)| **id != m.id)
            .map(|(id, matched)| {
                let matched = matched.as_ref().map(|l| l.index()).unwrap_or(0);
                (*id, last.saturating_sub(matched))
            })
            .collect(),
        None => m
            .membership_config
            .nodes()
            .map(|(id, _)| *id)
            .filter(|id| *id != m.id)
            .map(|id| (id, 0))
            .collect(),
    };
    metrics.peer_lag(&lags);
}
