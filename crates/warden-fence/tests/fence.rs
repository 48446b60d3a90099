//! The resource-side check (docs/semantics.md S2, "The fencing story"): stores,
//! durability across a restart, racing holders, and the HTTP layer on a real
//! loopback socket.

use std::sync::Arc;
use std::time::Duration;

use axum::routing::put;
use axum::Router;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use warden_fence::http::{client, enforce, Enforcer};
use warden_fence::{Accepted, Fence, FenceError, FenceStore, MemoryStore, RedbStore};

fn exercise(fence: &Fence<impl FenceStore>) {
    assert_eq!(fence.check("a", 5), Ok(Accepted::First));
    assert_eq!(fence.check("a", 5), Ok(Accepted::Same));
    assert_eq!(fence.check("a", 9), Ok(Accepted::Newer { previous: 5 }));
    assert_eq!(
        fence.check("a", 5),
        Err(FenceError::Stale {
            resource: "a".into(),
            presented: 5,
            highest: 9
        })
    );
    // Per resource: a low token on another resource is its first.
    assert_eq!(fence.check("b", 1), Ok(Accepted::First));
    assert_eq!(fence.highest("a"), Ok(Some(9)));
    assert_eq!(fence.highest("b"), Ok(Some(1)));
    assert_eq!(fence.highest("c"), Ok(None));
}

// The fencing story: both stores accept equal and higher tokens and reject lower ones, per resource.
#[test]
fn stores_accept_equal_and_higher_reject_lower_per_resource() {
    exercise(&Fence::new(MemoryStore::default()));
    let dir = tempfile::tempdir().unwrap();
    exercise(&Fence::new(
        RedbStore::open(dir.path().join("f.redb")).unwrap(),
    ));
}

// The fencing story, durably: after a restart of the store, a token below the
// highest accepted before it is still rejected.
#[test]
fn redb_store_remembers_across_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.redb");
    {
        let fence = Fence::new(RedbStore::open(&path).unwrap());
        fence.check("orders", 3).unwrap();
        fence.check("orders", 11).unwrap();
        fence.check("jobs", 4).unwrap();
    }
    let fence = Fence::new(RedbStore::open(&path).unwrap());
    assert_eq!(fence.highest("orders"), Ok(Some(11)));
    assert!(matches!(
        fence.check("orders", 10),
        Err(FenceError::Stale {
            presented: 10,
            highest: 11,
            ..
        })
    ));
    assert_eq!(fence.check("orders", 11), Ok(Accepted::Same));
    assert_eq!(fence.check("jobs", 4), Ok(Accepted::Same));
}

const VALUE: TableDefinition<&str, u64> = TableDefinition::new("value");
const HISTORY: TableDefinition<u64, u64> = TableDefinition::new("history");

// The fencing story under a race: two holders write with interleaved tokens
// from two threads; every write goes through check_and_write, which records
// the token and the write in one transaction. The history of committed writes
// is non-decreasing, the final value carries the highest token, and every
// rejection named a token below the one already accepted.
#[test]
fn racing_holders_leave_only_non_decreasing_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::open(dir.path().join("race.redb")).unwrap());
    let rejected = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let handles: Vec<_> = [(1u64..=40).step_by(2).collect::<Vec<_>>(), {
        // The second holder presents its tokens out of order, as a holder
        // that pauses and resumes would.
        let mut v: Vec<u64> = (2u64..=40).step_by(2).collect();
        v.reverse();
        v.rotate_left(7);
        v
    }]
    .into_iter()
    .map(|tokens| {
        let store = store.clone();
        let rejected = rejected.clone();
        std::thread::spawn(move || {
            for t in tokens {
                let r = store.check_and_write("doc", t, |tx, _| {
                    let store_err = |e: redb::Error| FenceError::Store(e.to_string());
                    tx.open_table(VALUE)
                        .map_err(|e| store_err(e.into()))?
                        .insert("doc", t)
                        .map_err(|e| store_err(e.into()))?;
                    let mut h = tx.open_table(HISTORY).map_err(|e| store_err(e.into()))?;
                    let next = h
                        .last()
                        .map_err(|e| store_err(e.into()))?
                        .map(|(k, _)| k.value() + 1)
                        .unwrap_or(0);
                    h.insert(next, t).map_err(|e| store_err(e.into()))?;
                    Ok::<_, FenceError>(())
                });
                match r {
                    Ok(()) => {}
                    Err(FenceError::Stale {
                        presented, highest, ..
                    }) => {
                        assert!(presented < highest);
                        rejected.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        })
    })
    .collect();
    for h in handles {
        h.join().unwrap();
    }
    let tx = store.database().begin_read().unwrap();
    let history: Vec<u64> = tx
        .open_table(HISTORY)
        .unwrap()
        .iter()
        .unwrap()
        .map(|e| e.unwrap().1.value())
        .collect();
    assert!(!history.is_empty());
    assert!(
        history.windows(2).all(|w| w[0] <= w[1]),
        "history decreased: {history:?}"
    );
    let value = tx
        .open_table(VALUE)
        .unwrap()
        .get("doc")
        .unwrap()
        .unwrap()
        .value();
    assert_eq!(value, *history.last().unwrap());
    assert_eq!(value, 40, "the highest token is always accepted");
    assert_eq!(store.highest("doc"), Ok(Some(40)));
    assert_eq!(
        history.len() as u64 + rejected.load(std::sync::atomic::Ordering::Relaxed),
        40
    );
}

// A failed write records nothing: the token and the write commit together or not at all.
#[test]
fn failed_write_records_no_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("f.redb")).unwrap();
    store.check_and_record("r", 2).unwrap();
    let r: Result<(), FenceError> =
        store.check_and_write("r", 7, |_, _| Err(FenceError::Store("disk full".into())));
    assert!(r.is_err());
    assert_eq!(store.highest("r"), Ok(Some(2)));
}

// The HTTP layer on a real loopback socket: 200 for current tokens, 409 with
// the documented JSON body for a stale one, 400 naming the missing header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_layer_rejects_stale_with_409() {
    let enforcer = Enforcer::new(Fence::new(MemoryStore::default()));
    let app = Router::new()
        .route("/kv/{key}", put(|| async { "written" }))
        .layer(axum::middleware::from_fn_with_state(
            enforcer.clone(),
            enforce::<MemoryStore>,
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let ok = client::put(&addr, "k", "orders", 4, b"v1").await.unwrap();
    assert_eq!((ok.status, ok.body.as_str()), (200, "written"));
    let newer = client::put(&addr, "k", "orders", 6, b"v2").await.unwrap();
    assert_eq!(newer.status, 200);
    let stale = client::put(&addr, "k", "orders", 4, b"v3").await.unwrap();
    assert_eq!(stale.status, 409);
    assert_eq!(
        stale.json(),
        serde_json::json!({"error":"stale token","resource":"orders","presented":4,"highest":6})
    );
    let missing = client::request(
        &addr,
        "PUT",
        "/kv/k",
        &[("warden-resource", "orders".into())],
        b"x",
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(missing.status, 400);
    assert_eq!(missing.json()["header"], "warden-fencing-token");
    assert_eq!(enforcer.fence().highest("orders"), Ok(Some(6)));
}
