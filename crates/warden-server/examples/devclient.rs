//! Temporary smoke client.
use warden_proto::v1::lock_client::LockClient;
use warden_proto::v1::*;
#[tokio::main]
async fn main() {
    let addr = std::env::args().nth(1).unwrap();
    let mut c = LockClient::connect(format!("http://{addr}")).await.unwrap();
    let h = |r| {
        Some(RequestHeader {
            client_id: 7,
            request_id: r,
            acked_request_id: 0,
        })
    };
    let mut s = c
        .acquire(AcquireRequest {
            header: h(1),
            resource: "db".into(),
            ttl_ms: 2000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    println!("acquire: {:?}", s.message().await);
    let mut s = c
        .acquire(AcquireRequest {
            header: h(2),
            resource: "db".into(),
            ttl_ms: 2000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    println!("acquire2: {:?}", s.message().await);
    println!(
        "status: {:?}",
        c.status(StatusRequest {
            resource: "db".into()
        })
        .await
    );
    println!(
        "renew: {:?}",
        c.renew(RenewRequest {
            lease_id: 1,
            client_id: 7,
            sequence: 5
        })
        .await
    );
    println!(
        "cluster: {:?}",
        c.cluster_status(ClusterStatusRequest {}).await
    );
    let t0 = std::time::Instant::now();
    loop {
        let st = c
            .status(StatusRequest {
                resource: "db".into(),
            })
            .await
            .unwrap()
            .into_inner();
        if st.holder.is_none() {
            println!("expired after {:?} since renew", t0.elapsed());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut s = c
        .acquire(AcquireRequest {
            header: h(3),
            resource: "db".into(),
            ttl_ms: 2000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    println!("acquire3: {:?}", s.message().await);
    println!(
        "release bad token: {:?}",
        c.release(ReleaseRequest {
            header: h(4),
            resource: "db".into(),
            lease_id: 3,
            fencing_token: 1
        })
        .await
    );
    println!(
        "bad ttl: {:?}",
        c.acquire(AcquireRequest {
            header: h(5),
            resource: "x".into(),
            ttl_ms: 5,
            ..Default::default()
        })
        .await
        .err()
    );
}
