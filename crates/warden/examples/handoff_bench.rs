//! Benchmark: handoff under contention. C clients contend for one
//! resource with waiting acquires on their own sessions; each releases as soon
//! as it is granted. Handoff latency = the next grant's arrival − the previous
//! holder's release send (both measured in this process). Reports grants per
//! second, median / p99 handoff, and per-client grant counts (fairness).
//!
//! ```sh
//! cargo build -p warden --examples
//! target/debug/examples/handoff_bench --clients 16 --seconds 10
//! ```

#[path = "bench_common/mod.rs"]
mod bench_common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bench_common::{arg, leader, start_cluster};
use warden_proto::v1 as pb;
use warden_proto::v1::lease_client::LeaseClient;
use warden_proto::v1::lock_client::LockClient;

fn header(client_id: u64, request_id: u64) -> Option<pb::RequestHeader> {
    Some(pb::RequestHeader {
        client_id,
        request_id,
        acked_request_id: request_id - 1,
    })
}

#[tokio::main]
async fn main() {
    let clients = arg("--clients", 16);
    let seconds = arg("--seconds", 10);
    let cluster = start_cluster();
    let url = format!("http://{}", leader(&cluster.addrs).await);
    // When the last release was sent, for the handoff measurement.
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let handoffs: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::new()));
    let stop_at = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (url, last_release, handoffs) = (url.clone(), last_release.clone(), handoffs.clone());
        tasks.push(tokio::spawn(async move {
            let client_id = 0xbe_0000 + c;
            let mut lock = LockClient::connect(url.clone()).await.expect("connect");
            let mut lease_client = LeaseClient::connect(url).await.expect("connect");
            let lease = lease_client
                .lease_grant(pb::LeaseGrantRequest {
                    header: header(client_id, 1),
                    ttl_ms: 30_000,
                })
                .await
                .expect("session")
                .into_inner()
                .lease_id;
            let mut request_id = 1;
            let mut grants = 0u64;
            while Instant::now() < stop_at {
                request_id += 1;
                let mut stream = lock
                    .acquire(pb::AcquireRequest {
                        header: header(client_id, request_id),
                        resource: "contended".into(),
                        lease_id: lease,
                        wait_timeout_ms: 20_000,
                        ..Default::default()
                    })
                    .await
                    .expect("acquire")
                    .into_inner();
                let token = loop {
                    match stream
                        .message()
                        .await
                        .expect("stream")
                        .and_then(|m| m.event)
                    {
                        Some(pb::acquire_response::Event::Granted(g)) => {
                            break Some(g.fencing_token)
                        }
                        Some(pb::acquire_response::Event::NotGranted(_)) | None => break None,
                        Some(pb::acquire_response::Event::Queued(_)) => continue,
                    }
                };
                let Some(token) = token else { continue };
                let granted_at = Instant::now();
                if let Some(sent) = *last_release.lock().expect("lock") {
                    handoffs.lock().expect("lock").push(granted_at - sent);
                }
                grants += 1;
                request_id += 1;
                *last_release.lock().expect("lock") = Some(Instant::now());
                lock.release(pb::ReleaseRequest {
                    header: header(client_id, request_id),
                    resource: "contended".into(),
                    lease_id: lease,
                    fencing_token: token,
                })
                .await
                .expect("release");
            }
            grants
        }));
    }
    let started = Instant::now();
    let mut per_client = Vec::new();
    for t in tasks {
        per_client.push(t.await.unwrap_or(0));
    }
    let wall = started.elapsed().as_secs_f64();
    let mut h = handoffs.lock().expect("lock").clone();
    h.sort_unstable();
    let pct = |p: f64| {
        h.get(((h.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    let total: u64 = per_client.iter().sum();
    println!("clients {clients}, one resource, {wall:.1} s");
    println!(
        "grants {total} ({:.0}/s); handoff p50 {:.2} ms, p99 {:.2} ms (n = {})",
        total as f64 / wall,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        h.len()
    );
    println!("grants per client: {per_client:?}");
}
