//! Benchmark: N sessions kept alive at one heartbeat per second each, on a
//! three-node cluster on this machine. Reports acknowledged
//! keep-alives per second, Raft entries per second (renewals are batched: S4),
//! and each node's CPU and resident memory.
//!
//! ```sh
//! cargo build -p warden --release --examples   # or the dev profile
//! target/release/examples/sessions_bench --sessions 10000 --seconds 20
//! ```
//!
//! It starts its own cluster from the `warden` binary next to it (in a temp
//! dir, loopback ports from :0) and stops it at the end. Linux only (/proc).

#[path = "bench_common/mod.rs"]
mod bench_common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bench_common::{arg, leader, proc_usage, start_cluster};

use futures::StreamExt;
use warden_proto::v1 as pb;
use warden_proto::v1::lease_client::LeaseClient;
use warden_proto::v1::lock_client::LockClient;

async fn commit_index(addr: &str) -> u64 {
    let mut c = LockClient::connect(format!("http://{addr}"))
        .await
        .expect("connect");
    c.cluster_status(pb::ClusterStatusRequest {})
        .await
        .map(|r| r.into_inner().commit_index)
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let sessions = arg("--sessions", 10_000);
    let seconds = arg("--seconds", 20);
    let streams = arg("--streams", 16).max(1);
    let cluster = start_cluster();
    let leader = leader(&cluster.addrs).await;
    let url = format!("http://{leader}");
    eprintln!("cluster up, leader {leader}; granting {sessions} sessions");

    let client_id = 0x5e55_1045;
    let grants = futures::stream::iter(0..sessions).map(|i| {
        let url = url.clone();
        async move {
            let mut client = LeaseClient::connect(url).await.expect("connect");
            client
                .lease_grant(pb::LeaseGrantRequest {
                    header: Some(pb::RequestHeader {
                        client_id: client_id + i,
                        request_id: 1,
                        acked_request_id: 0,
                    }),
                    ttl_ms: 60_000,
                })
                .await
                .expect("lease grant")
                .into_inner()
                .lease_id
        }
    });
    let granting = Instant::now();
    let leases: Vec<u64> = grants.buffer_unordered(64).collect().await;
    eprintln!(
        "granted {} sessions in {:.1} s",
        leases.len(),
        granting.elapsed().as_secs_f64()
    );

    eprintln!("keeping them alive: one heartbeat per session per second for {seconds} s");
    let per_stream: Vec<Vec<u64>> = (0..streams)
        .map(|s| {
            leases
                .iter()
                .copied()
                .skip(s as usize)
                .step_by(streams as usize)
                .collect()
        })
        .collect();
    let pids: Vec<u32> = cluster.children.iter().map(|c| c.id()).collect();
    let before: BTreeMap<u32, (u64, u64)> = pids.iter().map(|p| (*p, proc_usage(*p))).collect();
    let commit_before = commit_index(&leader).await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for ids in per_stream {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = LeaseClient::connect(url).await.expect("connect");
            let (tx, rx) = tokio::sync::mpsc::channel(ids.len().max(1) * 2);
            let mut replies = c
                .lease_keep_alive(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .expect("stream")
                .into_inner();
            let n = ids.len().max(1) as u32;
            let send = tokio::spawn(async move {
                let mut seq = 0u64;
                for _ in 0..seconds {
                    let round = Instant::now();
                    for (i, id) in ids.iter().enumerate() {
                        seq += 1;
                        // Spread each second's heartbeats evenly.
                        let at = round + Duration::from_secs(1) * i as u32 / n;
                        tokio::time::sleep_until(at.into()).await;
                        if tx
                            .send(pb::LeaseKeepAliveRequest {
                                lease_id: *id,
                                sequence: seq,
                            })
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    tokio::time::sleep_until((round + Duration::from_secs(1)).into()).await;
                }
            });
            let mut acked = 0u64;
            let mut lost = 0u64;
            while let Some(Ok(r)) = replies.next().await {
                if r.live {
                    acked += 1;
                } else {
                    lost += 1;
                }
                if send.is_finished() && acked + lost >= seconds * n as u64 {
                    break;
                }
            }
            (acked, lost)
        }));
    }
    let mut acked = 0;
    let mut lost = 0;
    for t in tasks {
        if let Ok(Ok((a, l))) = tokio::time::timeout(Duration::from_secs(seconds + 30), t).await {
            acked += a;
            lost += l;
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let commit_after = commit_index(&leader).await;
    let ticks_per_s = 100.0; // USER_HZ on Linux
    println!("sessions {sessions}, {seconds} s, {streams} streams, wall {wall:.1} s");
    println!(
        "keep-alives acknowledged {acked} ({:.0}/s), not live {lost}; raft entries {} ({:.1}/s, {:.0} renewals per entry)",
        acked as f64 / wall,
        commit_after.saturating_sub(commit_before),
        commit_after.saturating_sub(commit_before) as f64 / wall,
        acked as f64 / commit_after.saturating_sub(commit_before).max(1) as f64
    );
    for (i, p) in pids.iter().enumerate() {
        let (t0, _) = before[p];
        let (t1, rss) = proc_usage(*p);
        println!(
            "node {}: CPU {:.1} % of one core, RSS {:.1} MiB",
            i + 1,
            (t1.saturating_sub(t0)) as f64 / ticks_per_s / wall * 100.0,
            rss as f64 / 1024.0
        );
    }
}
