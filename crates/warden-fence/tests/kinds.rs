//! The rules for semaphore permits and read-write grants (docs/fencing.md
//! "Semaphore permits and read-write locks"), on both stores: permits fenced
//! per (resource, slot), shared grants only by the highest exclusive token,
//! exclusive grants (and a mutex's) by the highest token of any kind; a redb
//! file of the first version (mutex highs only) opening with its highs kept;
//! and the HTTP layer applying the rule a request's headers ask for.

use std::time::Duration;

use axum::routing::put;
use axum::Router;
use proptest::prelude::*;
use redb::{Database, ReadableDatabase, TableDefinition};
use warden_fence::http::{client, enforce, Enforcer};
use warden_fence::{
    Accepted, Bound, Claim, ClaimHeaders, Fence, FenceError, FenceStore, FencingHeaders, Highs,
    MemoryStore, RedbStore,
};

/// Runs `test` on a fresh memory store and a fresh redb store.
fn on_both_stores(test: impl Fn(&dyn Checks)) {
    test(&Fence::new(MemoryStore::default()));
    let dir = tempfile::tempdir().unwrap();
    test(&Fence::new(
        RedbStore::open(dir.path().join("f.redb")).unwrap(),
    ));
}

/// The fence's methods, so one test body runs on either store.
trait Checks {
    fn claim(&self, resource: &str, claim: Claim) -> Result<Accepted, FenceError>;
    fn plain(&self, resource: &str, token: u64) -> Result<Accepted, FenceError>;
    fn highs(&self, resource: &str, slot: Option<u32>) -> Highs;
    fn highest(&self, resource: &str) -> Option<u64>;
}

impl<S: FenceStore> Checks for Fence<S> {
    fn claim(&self, resource: &str, claim: Claim) -> Result<Accepted, FenceError> {
        self.check_claim(resource, claim)
    }
    fn plain(&self, resource: &str, token: u64) -> Result<Accepted, FenceError> {
        self.check(resource, token)
    }
    fn highs(&self, resource: &str, slot: Option<u32>) -> Highs {
        Fence::highs(self, resource, slot).unwrap()
    }
    fn highest(&self, resource: &str) -> Option<u64> {
        Fence::highest(self, resource).unwrap()
    }
}

fn stale_at(resource: &str, bound: Bound, presented: u64, highest: u64) -> FenceError {
    FenceError::StaleAt {
        resource: resource.into(),
        bound,
        presented,
        highest,
    }
}

// Permits: ten live holders in ten different slots never fence each other
// out, whatever order their writes arrive in (tokens 11..=20 for slots
// 0..=9, written highest first, then again lowest first).
#[test]
fn ten_slots_do_not_fence_each_other() {
    on_both_stores(|fence| {
        let holders: Vec<(u32, u64)> = (0..10).map(|slot| (slot, 11 + u64::from(slot))).collect();
        for &(slot, token) in holders.iter().rev() {
            assert_eq!(
                fence.claim("pool", Claim::permit(slot, token)),
                Ok(Accepted::First),
                "slot {slot}"
            );
        }
        for &(slot, token) in &holders {
            assert_eq!(
                fence.claim("pool", Claim::permit(slot, token)),
                Ok(Accepted::Same),
                "slot {slot}"
            );
        }
        for &(slot, token) in &holders {
            assert_eq!(fence.highs("pool", Some(slot)).slot, Some(token));
        }
        assert_eq!(fence.highest("pool"), Some(20));
    });
}

// Permits: a stale holder of slot 3 is refused once a newer slot-3 token
// has been accepted, naming slot 3 as the bound; nothing is recorded, and
// the same token in another slot is still that slot's first.
#[test]
fn stale_slot_3_holder_is_refused_after_a_newer_slot_3_token() {
    on_both_stores(|fence| {
        assert_eq!(
            fence.claim("pool", Claim::permit(3, 5)),
            Ok(Accepted::First)
        );
        assert_eq!(
            fence.claim("pool", Claim::permit(3, 8)),
            Ok(Accepted::Newer { previous: 5 })
        );
        assert_eq!(
            fence.claim("pool", Claim::permit(3, 5)),
            Err(stale_at("pool", Bound::Slot(3), 5, 8))
        );
        assert_eq!(fence.highs("pool", Some(3)).slot, Some(8));
        assert_eq!(fence.claim("pool", Claim::permit(3, 8)), Ok(Accepted::Same));
        assert_eq!(
            fence.claim("pool", Claim::permit(4, 5)),
            Ok(Accepted::First)
        );
    });
}

// Read-write: readers never fence each other. A reader granted earlier (6)
// writes after one granted later (9), and both keep writing; none raises the
// bound readers are checked against (the highest exclusive, 4).
#[test]
fn readers_do_not_fence_each_other() {
    on_both_stores(|fence| {
        fence.claim("doc", Claim::exclusive(4)).unwrap();
        for token in [9, 6, 7, 9, 6] {
            assert_eq!(
                fence.claim("doc", Claim::shared(token)),
                Ok(Accepted::Newer { previous: 4 }),
                "reader {token}"
            );
        }
        assert_eq!(
            fence.highs("doc", None),
            Highs {
                exclusive: Some(4),
                shared: Some(9),
                slot: None
            }
        );
        assert_eq!(fence.highest("doc"), Some(9));
    });
}

// Read-write: a stale writer is refused after a later reader. Writer 5
// writes, reader 7 is granted after it and writes; writer 5 wakes up and
// is refused by the resource's highest (7), as a mutex's stale holder is.
#[test]
fn stale_writer_is_refused_after_a_later_reader() {
    on_both_stores(|fence| {
        fence.claim("doc", Claim::exclusive(5)).unwrap();
        fence.claim("doc", Claim::shared(7)).unwrap();
        let refused = FenceError::Stale {
            resource: "doc".into(),
            presented: 5,
            highest: 7,
        };
        assert_eq!(
            fence.claim("doc", Claim::exclusive(5)),
            Err(refused.clone())
        );
        assert_eq!(fence.plain("doc", 5), Err(refused), "a plain token too");
        assert_eq!(fence.highs("doc", None).exclusive, Some(5));
        assert_eq!(
            fence.claim("doc", Claim::exclusive(8)),
            Ok(Accepted::Newer { previous: 7 })
        );
    });
}

// Read-write: a reader is refused after a newer writer, naming the
// exclusive bound; a reader granted after that writer is accepted.
#[test]
fn reader_is_refused_after_a_newer_writer() {
    on_both_stores(|fence| {
        fence.claim("doc", Claim::shared(5)).unwrap();
        fence.claim("doc", Claim::exclusive(8)).unwrap();
        assert_eq!(
            fence.claim("doc", Claim::shared(5)),
            Err(stale_at("doc", Bound::Exclusive, 5, 8))
        );
        assert_eq!(fence.highs("doc", None).shared, Some(5));
        assert_eq!(
            fence.claim("doc", Claim::shared(9)),
            Ok(Accepted::Newer { previous: 8 })
        );
    });
}

// S2 (one counter per resource, whatever the kind): a name that changes
// kind is still fenced. A permit holder is refused after a newer exclusive
// grant; a mutex's holder is refused after a newer permit.
#[test]
fn kinds_fence_each_other_on_one_name() {
    on_both_stores(|fence| {
        fence.claim("n", Claim::permit(0, 3)).unwrap();
        fence.plain("n", 6).unwrap();
        assert_eq!(
            fence.claim("n", Claim::permit(0, 3)),
            Err(stale_at("n", Bound::Exclusive, 3, 6))
        );
        fence.claim("n", Claim::permit(1, 9)).unwrap();
        assert!(matches!(
            fence.plain("n", 6),
            Err(FenceError::Stale {
                presented: 6,
                highest: 9,
                ..
            })
        ));
    });
}

/// The first version's only table, as it wrote it: resource → the highest
/// token, every one a mutex's.
const FIRST_VERSION: TableDefinition<&str, u64> = TableDefinition::new("warden_fence_highest");

// Durability across an upgrade: a redb file written by the first version
// (mutex highs only, in its one table) still opens, its mutex highs are kept
// and still refuse a stale token, they bound shared grants and permits as
// the exclusive tokens they were, and that table keeps its encoding (the
// first version could still read it).
#[test]
fn old_redb_file_opens_and_keeps_its_mutex_highs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.redb");
    {
        let db = Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut t = tx.open_table(FIRST_VERSION).unwrap();
            t.insert("orders", 11).unwrap();
            t.insert("jobs", 4).unwrap();
        }
        tx.commit().unwrap();
    }
    {
        let fence = Fence::new(RedbStore::open(&path).unwrap());
        assert_eq!(fence.highest("orders"), Ok(Some(11)));
        assert_eq!(fence.highest("jobs"), Ok(Some(4)));
        assert!(matches!(
            fence.check("orders", 10),
            Err(FenceError::Stale {
                presented: 10,
                highest: 11,
                ..
            })
        ));
        assert_eq!(fence.check("orders", 11), Ok(Accepted::Same));
        assert_eq!(
            fence.check_shared("orders", 10),
            Err(stale_at("orders", Bound::Exclusive, 10, 11))
        );
        assert_eq!(
            fence.check_permit("orders", 0, 10),
            Err(stale_at("orders", Bound::Exclusive, 10, 11))
        );
        fence.check("jobs", 12).unwrap();
        fence.check_shared("orders", 13).unwrap();
    }
    let db = Database::create(&path).unwrap();
    let tx = db.begin_read().unwrap();
    let t = tx.open_table(FIRST_VERSION).unwrap();
    assert_eq!(t.get("orders").unwrap().map(|v| v.value()), Some(11));
    assert_eq!(t.get("jobs").unwrap().map(|v| v.value()), Some(12));
}

// Durably: after a restart of the store, a permit below its slot's highest
// and a reader below the highest exclusive are still refused.
#[test]
fn redb_store_remembers_slots_and_modes_across_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.redb");
    {
        let fence = Fence::new(RedbStore::open(&path).unwrap());
        fence.check_permit("pool", 3, 8).unwrap();
        fence.check_shared("doc", 5).unwrap();
        fence.check("doc", 9).unwrap();
        fence.check_shared("doc", 10).unwrap();
    }
    let fence = Fence::new(RedbStore::open(&path).unwrap());
    assert_eq!(
        fence.check_permit("pool", 3, 7),
        Err(stale_at("pool", Bound::Slot(3), 7, 8))
    );
    assert_eq!(
        fence.check_shared("doc", 6),
        Err(stale_at("doc", Bound::Exclusive, 6, 9))
    );
    assert_eq!(
        fence.highs("doc", None),
        Ok(Highs {
            exclusive: Some(9),
            shared: Some(10),
            slot: None
        })
    );
}

// A failed write records nothing, for a permit as for a plain token: the
// claim and the write commit together or not at all.
#[test]
fn failed_claim_write_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("f.redb")).unwrap();
    store
        .check_claim_and_record("pool", Claim::permit(2, 4))
        .unwrap();
    let r: Result<(), FenceError> =
        store.check_claim_and_write("pool", Claim::permit(2, 7), |_, _| {
            Err(FenceError::Store("disk full".into()))
        });
    assert!(r.is_err());
    assert_eq!(
        store.highs("pool", Some(2)),
        Ok(Highs {
            exclusive: None,
            shared: Some(4),
            slot: Some(4)
        })
    );
}

/// A small claim: exclusive, shared, or a permit in slot 0 or 1.
fn claim_of(kind: u8, token: u64) -> Claim {
    match kind {
        0 => Claim::exclusive(token),
        1 => Claim::shared(token),
        k => Claim::permit(u32::from(k - 2), token),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    // The two stores are one rule: over any sequence of claims, the redb
    // store gives the memory store's verdicts and keeps its highs.
    #[test]
    fn redb_store_decides_as_the_memory_store(
        claims in proptest::collection::vec((0u8..4, 1u64..20), 0..30)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let redb = Fence::new(RedbStore::open(dir.path().join("p.redb")).unwrap());
        let memory = Fence::new(MemoryStore::default());
        for (kind, token) in claims {
            let claim = claim_of(kind, token);
            prop_assert_eq!(redb.check_claim("r", claim), memory.check_claim("r", claim));
            for slot in [None, Some(0), Some(1)] {
                prop_assert_eq!(redb.highs("r", slot), memory.highs("r", slot));
            }
        }
    }
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

// The HTTP layer applies the rule the headers ask for, on a real loopback
// socket: permits in two slots both pass and a stale slot-3 holder gets 409
// naming the slot; readers pass together, a stale writer after a reader gets
// the plain 409, a reader after a newer writer gets 409 naming the exclusive
// bound; a malformed slot and a slot with a mode get 400 naming the header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforce_applies_the_rule_the_headers_ask_for() {
    let enforcer = Enforcer::new(Fence::new(MemoryStore::default()));
    let addr = serve(
        Router::new()
            .route("/kv/{key}", put(|| async { "written" }))
            .layer(axum::middleware::from_fn_with_state(
                enforcer.clone(),
                enforce::<MemoryStore>,
            )),
    )
    .await;
    let put = |resource: &'static str, claim: Claim| {
        let addr = addr.clone();
        async move {
            client::put_claim(&addr, "k", resource, claim, b"v")
                .await
                .unwrap()
        }
    };

    assert_eq!(put("pool", Claim::permit(3, 5)).await.status, 200);
    assert_eq!(put("pool", Claim::permit(4, 6)).await.status, 200);
    assert_eq!(put("pool", Claim::permit(3, 7)).await.status, 200);
    assert_eq!(put("pool", Claim::permit(4, 6)).await.status, 200);
    let stale = put("pool", Claim::permit(3, 5)).await;
    assert_eq!(stale.status, 409);
    assert_eq!(
        stale.json(),
        serde_json::json!({"error":"stale token","resource":"pool","presented":5,
                           "highest":7,"bound":"slot","slot":3})
    );

    assert_eq!(put("doc", Claim::exclusive(5)).await.status, 200);
    assert_eq!(put("doc", Claim::shared(9)).await.status, 200);
    assert_eq!(put("doc", Claim::shared(7)).await.status, 200);
    let writer = put("doc", Claim::exclusive(5)).await;
    assert_eq!(writer.status, 409);
    assert_eq!(
        writer.json(),
        serde_json::json!({"error":"stale token","resource":"doc","presented":5,"highest":9})
    );
    assert_eq!(put("doc", Claim::exclusive(10)).await.status, 200);
    let reader = put("doc", Claim::shared(9)).await;
    assert_eq!(reader.status, 409);
    assert_eq!(
        reader.json(),
        serde_json::json!({"error":"stale token","resource":"doc","presented":9,
                           "highest":10,"bound":"exclusive"})
    );

    let mut bad_slot = client::claim_headers("pool", Claim::permit(1, 30));
    bad_slot.retain(|(name, _)| *name != "warden-slot");
    bad_slot.push(("warden-slot", "three".into()));
    let mut slot_and_mode = client::claim_headers("pool", Claim::permit(1, 30));
    slot_and_mode.push(("warden-lock-mode", "shared".into()));
    for (headers, header) in [
        (bad_slot, "warden-slot"),
        (slot_and_mode, "warden-lock-mode"),
    ] {
        let r = client::request(
            &addr,
            "PUT",
            "/kv/k",
            &headers,
            b"x",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 400, "{headers:?}");
        assert_eq!(r.json()["header"], header, "{headers:?}");
    }
    assert_eq!(
        enforcer.fence().highs("pool", Some(1)),
        Ok(Highs {
            exclusive: None,
            shared: Some(7),
            slot: None
        })
    );
}

// A handler written for plain tokens (the FencingHeaders extractor) is
// never handed a permit or a shared grant to fence by the mutex rule: 400
// naming the header; `ClaimHeaders` hands it the claim instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_extractor_refuses_a_claim_it_would_misfence() {
    let addr = serve(
        Router::new()
            .route(
                "/plain/{key}",
                put(|h: FencingHeaders| async move { format!("{} {}", h.resource, h.token) }),
            )
            .route(
                "/claim/{key}",
                put(|h: ClaimHeaders| async move { format!("{:?}", h.claim.kind) }),
            ),
    )
    .await;
    let send = |path: &'static str, claim: Claim| {
        let addr = addr.clone();
        async move {
            client::request(
                &addr,
                "PUT",
                path,
                &client::claim_headers("doc", claim),
                b"",
                Duration::from_secs(5),
            )
            .await
            .unwrap()
        }
    };
    let plain = send("/plain/k", Claim::exclusive(4)).await;
    assert_eq!((plain.status, plain.body.as_str()), (200, "doc 4"));
    for (claim, header) in [
        (Claim::shared(4), "warden-lock-mode"),
        (Claim::permit(2, 4), "warden-slot"),
    ] {
        let r = send("/plain/k", claim).await;
        assert_eq!(r.status, 400, "{claim:?}");
        assert_eq!(r.json()["header"], header);
    }
    let claim = send("/claim/k", Claim::permit(2, 4)).await;
    assert_eq!(
        (claim.status, claim.body.as_str()),
        (200, "Permit { slot: 2 }")
    );
}
