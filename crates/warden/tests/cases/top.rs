//! `warden top` and the dashboard's permissions, with real processes over
//! mutual TLS (docs/operations.md "Hot locks" and "Dashboard").

use std::time::{Duration, Instant};

use warden_client::ClientError;
use warden_proto::v1 as pb;

use crate::harness::{self, certs, free_port, wait_listening, Cluster};

/// Hot locks: 8 waiters queue on one resource while three others each have
/// a holder and no waiter; `warden top` names the queued resource first with
/// queue length 8 and its oldest waiter's age, the held ones after it with
/// queue 0 and their grant counted; `--watch` answers again every second.
/// Permission (docs/security.md): a principal with `read` on another prefix
/// only is refused, naming the permission and the prefix. Bad input: a limit of 0 or 1,000,000 and a
/// prefix over 512 bytes are refused naming the field and the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_names_the_queued_resource_first() {
    let cluster = Cluster::start(3, &[]).await;
    let client = cluster.client_as("root").await;
    let ttl = Duration::from_secs(60);
    harness::take(&client, "hot/queued", ttl).await;
    for name in ["hot/a", "hot/b", "hot/c"] {
        harness::take(&client, name, ttl).await;
    }
    let api = cluster.api();
    let mut waiters = Vec::new();
    for i in 0..8u64 {
        let api = api.clone();
        waiters.push(tokio::spawn(async move {
            api.acquire_waiting(7_000 + i, 1, "hot/queued", 60_000, 50_000)
                .await
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    let top = loop {
        let (code, top, err) = cluster.cli(&["top", "hot/", "--limit", "10"]);
        assert_eq!(code, 0, "{err}");
        if top[0]["queue_length"] == 8 {
            break top;
        }
        assert!(Instant::now() < deadline, "never 8 waiters: {top}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let rows = top.as_array().expect("an array");
    assert_eq!(rows.len(), 4, "{top}");
    assert_eq!(rows[0]["resource"], "hot/queued", "{top}");
    assert_eq!(rows[0]["election"], false);
    assert!(rows[0]["oldest_waiter_age_ms"].as_u64().is_some(), "{top}");
    assert_eq!(rows[0]["grants_last_minute"], 1, "{top}");
    let rest: Vec<_> = rows[1..]
        .iter()
        .map(|r| {
            (
                r["resource"].as_str().unwrap_or_default().to_string(),
                r["queue_length"].as_u64(),
                r["grants_last_minute"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        rest,
        vec![
            ("hot/a".into(), Some(0), Some(1)),
            ("hot/b".into(), Some(0), Some(1)),
            ("hot/c".into(), Some(0), Some(1)),
        ],
        "{top}"
    );
    // The text table: a header, then the queued resource first.
    let out = cluster
        .cli_command("root", &["top", "hot/", "--output", "text"])
        .arg("--endpoints")
        .arg(cluster.endpoints())
        .output()
        .expect("warden top");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("RESOURCE"), "{text}");
    assert!(
        lines[1].starts_with("\"hot/queued\"") && lines[1].contains(" 8 "),
        "{text}"
    );
    // --watch asks again every second: one JSON array per line, each with
    // the queued resource first, until it is stopped.
    let mut watch = cluster
        .cli_command("root", &["top", "hot/", "--watch", "--output", "json"])
        .arg("--endpoints")
        .arg(cluster.endpoints())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("warden top --watch");
    let stdout = watch.stdout.take().expect("stdout");
    let started = Instant::now();
    let lines = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .take(2)
            .collect::<Result<Vec<String>, _>>()
    });
    let lines = tokio::time::timeout(Duration::from_secs(15), lines)
        .await
        .expect("two refreshes in time")
        .expect("reader")
        .expect("lines");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the second answer waits for the interval: {:?}",
        started.elapsed()
    );
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON array per line");
        assert_eq!(
            (&v[0]["resource"], &v[0]["queue_length"]),
            (&"hot/queued".into(), &8.into()),
            "{line}"
        );
    }
    let _ = watch.kill();
    let _ = watch.wait();
    // --limit 1 keeps only the hottest.
    let (code, one, err) = cluster.cli(&["top", "--limit", "1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(one.as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one[0]["resource"], "hot/queued");

    // Permission: `read` on other/ does not cover hot/.
    let (code, j, err) = cluster.cli(&[
        "role",
        "grant",
        "alice",
        "--prefix",
        "other/",
        "--permission",
        "read",
    ]);
    assert_eq!((code, &j["granted"]), (0, &true.into()), "{err}");
    let (code, _, err) = cluster.cli(&["user", "grant-role", "alice", "alice"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cluster.cli_as("alice", &["top", "hot/"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("alice") && err.contains("read") && err.contains("\"hot/\""),
        "{err}"
    );
    let (code, j, err) = cluster.cli_as("alice", &["top", "other/"]);
    assert_eq!((code, j), (0, serde_json::json!([])), "{err}");

    // Bad input: the CLI refuses a limit of 0 or 1,000,000 naming the flag
    // and the range; the server refuses them naming `limit`.
    for bad in ["0", "1000000"] {
        let (code, _, err) = cluster.cli(&["top", "--limit", bad]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("--limit") && err.contains("1..=1000"), "{err}");
    }
    let e = client
        .admin()
        .top_locks("", 1_001)
        .await
        .expect_err("limit 1001");
    assert!(
        matches!(&e, ClientError::InvalidArgument { field: Some(f), message }
            if f == "limit" && message.contains("must be 1 to 1000; got 1001")),
        "{e:?}"
    );
    let endpoints: Vec<String> = cluster.endpoints().split(',').map(String::from).collect();
    for (prefix, limit, field, needle) in [
        (String::new(), 0u32, "limit", "1 to 1000; got 0"),
        (String::new(), 1_000_000, "limit", "1 to 1000; got 1000000"),
        ("p".repeat(513), 5, "prefix", "at most 512 bytes"),
    ] {
        let e = harness::call_leader(&endpoints, Duration::from_secs(10), |channel| {
            let request = pb::TopLocksRequest {
                prefix: prefix.clone(),
                limit,
            };
            async move {
                pb::admin_client::AdminClient::new(channel)
                    .top_locks(request)
                    .await
                    .map(|r| r.into_inner())
            }
        })
        .await
        .expect_err("refused");
        assert!(
            matches!(&e, ClientError::InvalidArgument { field: Some(f), message }
                if f == field && message.contains(needle)),
            "{e:?}"
        );
    }
    for w in waiters {
        w.abort();
    }
}

/// One `GET path` over TLS on an admin listener, as `user`'s client
/// certificate (None: no certificate, as a probe); (status, head, body).
async fn get_as(addr: &str, path: &str, user: Option<&str>) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = certs().client_dir_with(user.unwrap_or("root"));
    let tls = match user {
        Some(user) => warden_tls::ClientTls::load_client(dir, user),
        None => warden_tls::ClientTls::anonymous(&dir.join("ca.crt")),
    }
    .expect("test certificates");
    let mut config = (*tls.config()).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let mut stream = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
    let mut raw = Vec::new();
    // The server may end TLS without close_notify after `Connection: close`.
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a reply");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// Dashboard permissions (docs/security.md, docs/operations.md
/// "Dashboard"): on a node with certificates `/healthz` stays open to a
/// caller without a certificate while every `/ui` path answers it 401; a
/// principal without `read` on `""` gets 403; `root` gets the page and its
/// JSON; every `/ui` answer, refusals too, carries the
/// Content-Security-Policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_needs_a_certificate_with_read_on_everything() {
    let admin = format!("127.0.0.1:{}", free_port());
    let cluster = Cluster::start(1, &["--admin-listen", &admin]).await;
    wait_listening(&admin);
    let client = cluster.client_as("root").await;
    let (_, token) = harness::take(&client, "ui/held", Duration::from_secs(60)).await;

    let (status, _, _) = get_as(&admin, "/healthz", None).await;
    assert_eq!(status, 200);
    for path in [
        "/ui",
        "/ui/",
        "/ui/app.js",
        "/ui/app.css",
        "/ui/api/locks",
        "/ui/api/top",
        "/ui/api/cluster",
        "/ui/api/events/ui%2Fheld",
    ] {
        let (status, head, body) = get_as(&admin, path, None).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert!(
            head.contains("content-security-policy: default-src 'self'"),
            "{path}: {head}"
        );
        // bob holds no role at all: no read on "".
        let (status, head, body) = get_as(&admin, path, Some("bob")).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.contains("bob") && body.contains("read"),
            "{path}: {body}"
        );
        assert!(
            head.contains("content-security-policy: default-src 'self'"),
            "{path}: {head}"
        );
    }
    let (status, head, body) = get_as(&admin, "/ui", Some("root")).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        head.contains("content-security-policy: default-src 'self'"),
        "{head}"
    );
    assert!(
        body.contains("/ui/app.js") && !body.contains("<script>"),
        "{body}"
    );
    let (status, _, body) = get_as(&admin, "/ui/api/locks", Some("root")).await;
    assert_eq!(status, 200, "{body}");
    let locks: serde_json::Value = serde_json::from_str(&body).expect("json");
    let held = &locks["locks"][0];
    assert_eq!(held["resource"], "ui/held", "{locks}");
    assert_eq!(held["holder"]["fencing_token"], token, "{locks}");
    assert_eq!(held["holder"]["principal"], "root", "{locks}");
    let (status, _, body) = get_as(&admin, "/ui/api/events/ui%2Fheld", Some("root")).await;
    assert_eq!(status, 200, "{body}");
    let events: serde_json::Value = serde_json::from_str(&body).expect("json");
    let last = events["events"]
        .as_array()
        .and_then(|e| e.last())
        .cloned()
        .expect("an event");
    assert_eq!(
        (&last["event"], &last["fencing_token"]),
        (&"granted".into(), &token.into()),
        "{events}"
    );
}

/// Dashboard permissions, finer (docs/operations.md "Dashboard"): `read`
/// on a prefix is not `read` on `""`. carol, who may read `jobs/` only, is
/// refused every `/ui` path with 403 naming her and the permission, while
/// root is served the same paths. And a follower's dashboard never answers
/// the lock table from its own (possibly stale) copy: its `/ui/api/locks`
/// is 503 naming the leader's id and client address, which the page shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_refuses_a_prefix_reader_and_a_follower_names_the_leader() {
    let mut cluster = Cluster::prepare(3, &[]);
    cluster.use_admin_ports();
    for id in 1..=3 {
        cluster.spawn(id);
    }
    let leader = cluster.wait_leader(Duration::from_secs(20)).await;
    for id in 1..=3 {
        wait_listening(&cluster.admin_addr(id));
    }
    let (code, _, err) = cluster.cli(&[
        "role",
        "grant",
        "jobs-reader",
        "--prefix",
        "jobs/",
        "--permission",
        "read",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cluster.cli(&["user", "grant-role", "carol", "jobs-reader"]);
    assert_eq!(code, 0, "{err}");
    let client = cluster.client_as("root").await;
    let (_, token) = harness::take(&client, "jobs/1", Duration::from_secs(60)).await;

    let admin = cluster.admin_addr(leader);
    for path in ["/ui", "/ui/api/locks", "/ui/api/top", "/ui/api/cluster"] {
        let (status, _, body) = get_as(&admin, path, Some("carol")).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.contains("carol") && body.contains("read") && body.contains("\"\""),
            "{path}: {body}"
        );
        let (status, _, body) = get_as(&admin, path, Some("root")).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (_, _, body) = get_as(&admin, "/ui/api/locks", Some("root")).await;
    let locks: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        (
            &locks["locks"][0]["resource"],
            &locks["locks"][0]["holder"]["fencing_token"]
        ),
        (&"jobs/1".into(), &token.into()),
        "{locks}"
    );

    let follower = (1..=3).find(|id| *id != leader).expect("a follower");
    let (status, _, body) =
        get_as(&cluster.admin_addr(follower), "/ui/api/locks", Some("root")).await;
    assert_eq!(status, 503, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        (&answer["leader_id"], &answer["leader_addr"]),
        (&leader.into(), &cluster.addr(leader).into()),
        "{answer}"
    );
}
