//! `warden fenced-store` with the kind headers, as a real process (no
//! cluster): it fences a semaphore permit per (resource, slot) and a reader
//! only by the highest exclusive token (docs/fencing.md "Semaphore permits
//! and read-write locks"), durably across a restart.

use warden_fence::http::client as http;
use warden_fence::Claim;

use super::Piped;

/// Starts the store on `dir` and returns it with its address.
async fn start(dir: &std::path::Path) -> (Piped, String) {
    let mut store = Piped::spawn(&[
        "fenced-store",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        dir.to_str().expect("utf-8 path"),
    ]);
    let first = store.line().await;
    let addr = first
        .strip_prefix("fenced-store listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    (store, addr)
}

async fn put(addr: &str, key: &str, resource: &str, claim: Claim) -> http::Reply {
    http::put_claim(addr, key, resource, claim, format!("{claim:?}").as_bytes())
        .await
        .expect("put")
}

// A permit holder's and a reader's writes are fenced by their own rule:
// two slots' holders both write, the stale slot-3 holder gets 409 naming
// slot 3; readers write together, a reader after a newer writer gets 409
// naming the exclusive bound, a stale writer after a later reader gets the
// plain 409; the 200 says the slot or the mode; and after a restart the
// store still refuses the stale slot-3 holder and the stale reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_store_applies_the_permit_and_shared_rules() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("store");
    let (mut store, addr) = start(&dir).await;

    let ok = put(&addr, "job-a", "pool", Claim::permit(3, 5)).await;
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(
        ok.json(),
        serde_json::json!({"key":"job-a","resource":"pool","fencing_token":5,"slot":3})
    );
    assert_eq!(
        put(&addr, "job-b", "pool", Claim::permit(4, 6))
            .await
            .status,
        200
    );
    assert_eq!(
        put(&addr, "job-a", "pool", Claim::permit(3, 7))
            .await
            .status,
        200
    );
    assert_eq!(
        put(&addr, "job-b", "pool", Claim::permit(4, 6))
            .await
            .status,
        200
    );
    let stale = put(&addr, "job-a", "pool", Claim::permit(3, 5)).await;
    assert_eq!(stale.status, 409);
    assert_eq!(
        stale.json(),
        serde_json::json!({"error":"stale token","resource":"pool","presented":5,
                           "highest":7,"bound":"slot","slot":3})
    );
    assert_eq!(
        http::get(&addr, "job-a").await.expect("get").body,
        format!("{:?}", Claim::permit(3, 7))
    );

    assert_eq!(
        put(&addr, "doc", "docs", Claim::exclusive(8)).await.status,
        200
    );
    let reader = put(&addr, "doc", "docs", Claim::shared(10)).await;
    assert_eq!(reader.json()["lock_mode"], "shared", "{reader:?}");
    assert_eq!(
        put(&addr, "doc", "docs", Claim::shared(9)).await.status,
        200
    );
    let writer = put(&addr, "doc", "docs", Claim::exclusive(8)).await;
    assert_eq!(
        (writer.status, writer.json()),
        (
            409,
            serde_json::json!({"error":"stale token","resource":"docs","presented":8,"highest":10})
        )
    );
    assert_eq!(
        put(&addr, "doc", "docs", Claim::exclusive(11)).await.status,
        200
    );
    let late_reader = put(&addr, "doc", "docs", Claim::shared(10)).await;
    assert_eq!(late_reader.status, 409);
    assert_eq!(late_reader.json()["bound"], "exclusive");

    store.child.kill().await.expect("kill");
    let (_store, addr) = start(&dir).await;
    let stale = put(&addr, "job-a", "pool", Claim::permit(3, 6)).await;
    assert_eq!(
        (stale.status, stale.json()["highest"].as_u64()),
        (409, Some(7))
    );
    let reader = put(&addr, "doc", "docs", Claim::shared(10)).await;
    assert_eq!(
        (reader.status, reader.json()["highest"].as_u64()),
        (409, Some(11))
    );
    assert_eq!(
        put(&addr, "job-b", "pool", Claim::permit(4, 6))
            .await
            .status,
        200
    );
}
