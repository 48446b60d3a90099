//! What a client says when there is no Warden node where it was pointed
//! (docs/operations.md "Exit codes"): a refused connection fails a one-shot
//! call at once when asked to (`ClientOptions::fail_fast_when_refused`),
//! naming every endpoint; a port that answers, but not as a Warden node
//! would, is named as such. Loopback only, ports from :0.

use std::time::Duration;

use warden_client::{Client, ClientError, ClientOptions, TlsOptions};

/// A loopback port nothing listens on (bound, then closed).
fn refused_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A loopback HTTP/1.1 server that answers every connection with a 400.
async fn http_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    addr
}

fn unavailable(e: ClientError) -> (Vec<String>, String) {
    match e {
        ClientError::Unavailable {
            tried, last_error, ..
        } => (tried, last_error),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

// A wrong port fails fast and says "refused" for each endpoint, instead of
// retrying for the whole deadline (60 s here: the 20 s wait below would
// fire first).
#[tokio::test]
async fn every_endpoint_refused_fails_at_once_naming_each() {
    let (a, b) = (refused_port(), refused_port());
    let client = Client::connect(
        vec![a.clone(), b.clone()],
        ClientOptions {
            deadline: Duration::from_secs(60),
            fail_fast_when_refused: true,
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(20), client.status("orders"))
        .await
        .expect("failed fast, not after the deadline")
        .unwrap_err();
    let (tried, last_error) = unavailable(e);
    assert_eq!(tried.len(), 2, "{tried:?}");
    for endpoint in [&a, &b] {
        assert!(
            last_error.contains(&format!("{endpoint}: ")),
            "{endpoint} named: {last_error}"
        );
    }
    assert_eq!(
        last_error.matches("Connection refused").count(),
        2,
        "{last_error}"
    );
}

// A port that speaks HTTP/1.1 (another service) reached over TLS, as the
// CLI does by default, is named as not TLS, with what to do; a one-shot
// call fails at once (60 s deadline: the 20 s wait below would fire first).
#[tokio::test]
async fn a_port_that_is_not_a_warden_node_is_named_as_such() {
    let http = http_server().await;
    let options = ClientOptions {
        deadline: Duration::from_secs(60),
        fail_fast_when_refused: true,
        ..ClientOptions::default()
    };

    let root = tempfile::tempdir().unwrap();
    let set = warden_tls::mint::loopback_set(root.path(), &[1], &["root"]).unwrap();
    let tls = Client::connect(
        vec![http],
        ClientOptions {
            tls: Some(TlsOptions {
                certs_dir: set.client_dir.clone(),
                user: "root".into(),
            }),
            ..options
        },
    )
    .await
    .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(20), tls.status("orders"))
        .await
        .expect("failed fast, not after the deadline")
        .unwrap_err();
    let (_, last_error) = unavailable(e);
    assert!(last_error.contains("does not speak TLS"), "{last_error}");
    assert!(last_error.contains("--insecure"), "{last_error}");
}

// The same port reached in plaintext (`--insecure`): it answers, but not
// with HTTP/2, and is named as not a Warden node by what it answered
// (probed once), instead of tonic's "broken pipe" or "operation was
// canceled" alone.
#[tokio::test]
async fn a_plaintext_port_that_is_not_http2_is_named_as_such() {
    let http = http_server().await;
    let client = Client::connect(
        vec![http],
        ClientOptions {
            deadline: Duration::from_secs(1),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let (_, last_error) = unavailable(client.status("orders").await.unwrap_err());
    assert!(
        last_error.contains("the port answers HTTP/1, not HTTP/2: not a Warden node"),
        "{last_error}"
    );
}
