use std::net::Ipv4Addr;

use futures::StreamExt as _;

use super::*;

fn v4(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

fn client(name: &str) -> Identity {
    Identity::Client {
        principal: name.to_string(),
    }
}

fn options() -> AcceptOptions {
    AcceptOptions::default()
}

// The defaults are within their bounds, and a value outside them is a
// typed error naming the field (as the flag) and the limit.
#[test]
fn defaults_validate_and_bad_values_name_the_field_and_the_limit() {
    assert_eq!(options().validate(), Ok(()));
    let bad = |o: AcceptOptions| o.validate().unwrap_err().to_string();
    assert_eq!(
        bad(AcceptOptions {
            handshake_timeout: Duration::from_millis(10),
            ..options()
        }),
        "handshake-timeout: 10ms is outside 100ms..=1m"
    );
    assert_eq!(
        bad(AcceptOptions {
            max_handshakes: 0,
            ..options()
        }),
        "max-handshakes: 0 is outside 1..=65536"
    );
    assert_eq!(
        bad(AcceptOptions {
            max_handshakes_per_source: 2000,
            ..options()
        }),
        "max-handshakes-per-source: 2000 is outside 1..=1024"
    );
    assert_eq!(
        bad(AcceptOptions {
            max_connections_per_principal: 20_000,
            ..options()
        }),
        "max-connections-per-principal: 20000 is outside 1..=16384"
    );
    assert_eq!(
        bad(AcceptOptions {
            idle_timeout: Duration::ZERO,
            ..options()
        }),
        "connection-idle-timeout: 0s is outside 1s..=1day"
    );
    assert!(matches!(
        AcceptOptions {
            max_connections: 0,
            ..options()
        }
        .validate(),
        Err(LimitError::Count {
            field: "max-connections",
            value: 0,
            ..
        })
    ));
}

// A source is an IPv4 address or an IPv6 /64; a mapped IPv4 address is the
// IPv4 address.
#[test]
fn sources_are_ipv4_addresses_and_ipv6_slash_64s() {
    let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
    let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
    let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(source_of(a), source_of(b));
    assert_ne!(source_of(a), source_of(c));
    let mapped: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
    assert_eq!(source_of(mapped), v4(7));
}

// Finding: silent sockets from one source held every handshake slot. A
// source over its budget loses its own oldest pending handshake; when the
// slots are full, a newcomer takes the oldest slot of the busiest source
// if that source holds more than the newcomer's; never one of its own
// equals.
#[test]
fn one_source_never_holds_the_slots_another_needs() {
    let options = AcceptOptions {
        max_handshakes: 4,
        max_handshakes_per_source: 3,
        ..options()
    };
    let mut p: Pending<&str> = Pending::default();
    for (id, name) in [(1, "a1"), (2, "a2"), (3, "a3")] {
        assert_eq!(p.admit(v4(1), &options), Admit::Yes);
        p.insert(v4(1), id, name);
    }
    // Over its budget: its own oldest goes.
    assert_eq!(
        p.admit(v4(1), &options),
        Admit::Evicting("a1", HandshakeFailure::SourceBudget)
    );
    p.insert(v4(1), 4, "a4");
    assert_eq!(p.admit(v4(2), &options), Admit::Yes);
    p.insert(v4(2), 5, "b1");
    assert_eq!(p.len(), 4);
    // Full: source 3 (none pending) takes source 1's oldest.
    assert_eq!(
        p.admit(v4(3), &options),
        Admit::Evicting("a2", HandshakeFailure::TooMany)
    );
    p.insert(v4(3), 6, "c1");
    // Now 1 holds 2, 2 and 3 one each: source 2 may take one of 1's.
    assert_eq!(
        p.admit(v4(2), &options),
        Admit::Evicting("a3", HandshakeFailure::TooMany)
    );
    p.insert(v4(2), 7, "b2");
    // Sources 1 and 3 hold one each, 2 holds two: 3 is no richer than 1,
    // so a third from 2 finds none poorer than itself and is refused.
    assert_eq!(p.admit(v4(2), &options), Admit::No);
    // Ended handshakes free their slots; an evicted one is gone already.
    p.remove(v4(1), 4);
    p.remove(v4(1), 1);
    assert_eq!(p.len(), 3);
    assert_eq!(p.admit(v4(9), &options), Admit::Yes);
}

fn registry(options: AcceptOptions) -> Arc<Registry> {
    Registry::start(options, Arc::new(FailureLog::default()))
}

// Finding: anonymous HTTP/2 connections that answer pings stayed open for
// ever. A connection with no open stream is closed at the idle timeout,
// and the task reading it is woken; one with a stream is not, until its
// last stream ended that long ago.
#[tokio::test(start_paused = true)]
async fn a_connection_without_a_stream_is_closed_at_the_idle_timeout() {
    let registry = registry(AcceptOptions {
        idle_timeout: Duration::from_secs(10),
        ..options()
    });
    let idle = registry.admit(&Identity::Anonymous, None, v4(1)).unwrap();
    let busy = registry.admit(&client("alice"), None, v4(2)).unwrap();
    let stream = busy.stream();
    let reader = {
        let idle = idle.clone();
        tokio::spawn(async move {
            std::future::poll_fn(|cx| {
                if idle.poll_closed(cx) {
                    Poll::Ready(Instant::now())
                } else {
                    Poll::Pending
                }
            })
            .await
        })
    };
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert!(!idle.is_closed());
    let closed_at = reader.await.unwrap();
    let after = closed_at - start;
    assert!(
        after >= Duration::from_secs(10) && after <= Duration::from_millis(11_000),
        "{after:?}"
    );
    assert!(!busy.is_closed());
    assert_eq!(registry.len(), 1);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!busy.is_closed(), "a stream keeps it open");
    drop(stream);
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert!(!busy.is_closed(), "idle since its stream ended, 9 s ago");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(busy.is_closed());
    assert_eq!(registry.len(), 0);
}

// Finding: no connection cap. At the cap a new connection takes the place
// of the oldest idle one; with none idle it is refused. Per principal
// likewise, counting connections without a certificate by source.
#[tokio::test(start_paused = true)]
async fn at_a_cap_the_oldest_idle_connection_is_closed_first() {
    let registry = registry(AcceptOptions {
        max_connections: 3,
        max_connections_per_principal: 2,
        ..options()
    });
    let a = registry.admit(&client("alice"), None, v4(1)).unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let b = registry.admit(&client("bob"), None, v4(1)).unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let c = registry.admit(&Identity::Anonymous, None, v4(1)).unwrap();
    let _a_stream = a.stream();
    // Full: b is the oldest idle (a has a stream).
    let d = registry.admit(&Identity::Anonymous, None, v4(2)).unwrap();
    assert!(b.is_closed() && !a.is_closed() && !c.is_closed());
    let _c_stream = c.stream();
    let _d_stream = d.stream();
    assert_eq!(
        registry.admit(&client("bob"), None, v4(1)).unwrap_err(),
        Refused::Total(3)
    );
    drop(_d_stream);
    // alice's second: d, idle, is the oldest idle of all.
    let e = registry.admit(&client("alice"), None, v4(1)).unwrap();
    assert!(d.is_closed(), "d was the oldest idle");
    // alice at her cap of 2, both with a stream: refused.
    let e_stream = e.stream();
    assert_eq!(
        registry.admit(&client("alice"), None, v4(3)).unwrap_err(),
        Refused::Principal(2)
    );
    // She replaces only her own idle connections, never c (idle too).
    drop(_c_stream);
    drop(e_stream);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let _f = registry.admit(&client("alice"), None, v4(3)).unwrap();
    assert!(e.is_closed() && !c.is_closed() && !a.is_closed());
}

// Finding: at the open-file limit the accept loop spun at 100 % CPU. An
// EMFILE or ENFILE is not yielded; the next accept waits 10 ms, doubling
// to 1 s, and a success resets the pause. Other errors pass at once.
#[tokio::test(start_paused = true)]
async fn accept_errors_at_the_file_limit_back_off() {
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = polls.clone();
    let inner = futures::stream::poll_fn(move |_| {
        let n = counted.fetch_add(1, Ordering::Relaxed);
        Poll::Ready(Some(match n {
            0..100 if n.is_multiple_of(2) => Err(io::Error::from_raw_os_error(24)), // EMFILE
            0..100 => Err(io::Error::from_raw_os_error(23)),                        // ENFILE
            100 => Ok(n),
            101 => Err(io::Error::from(io::ErrorKind::ConnectionAborted)),
            102 => Err(io::Error::from_raw_os_error(24)),
            _ => Ok(n),
        }))
    });
    let mut accepted = AcceptBackoff::new(inner);
    let start = Instant::now();
    // Within the first 2 s: 10 + 20 + ... + 640 ms = 1.27 s, then 1 s
    // pauses: at most 9 accepts, not thousands.
    assert!(
        tokio::time::timeout(Duration::from_secs(2), accepted.next())
            .await
            .is_err()
    );
    assert!(polls.load(Ordering::Relaxed) <= 9, "{polls:?}");
    assert_eq!(accepted.next().await.unwrap().unwrap(), 100);
    // 100 errors: 1.27 s, then 93 pauses of 1 s.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(94) && took <= Duration::from_secs(95),
        "{took:?}"
    );
    // A connection error passes at once; after a success the pause
    // starts at 10 ms again.
    let at = Instant::now();
    assert!(accepted.next().await.unwrap().is_err());
    assert_eq!(at.elapsed(), Duration::ZERO);
    assert_eq!(accepted.next().await.unwrap().unwrap(), 103);
    let paused = at.elapsed();
    assert!(
        paused >= ACCEPT_BACKOFF_MIN && paused < ACCEPT_BACKOFF_MIN * 2,
        "{paused:?}"
    );
}

// Revocation reaches live connections: closing by deny list closes (and
// forgets) exactly the connections it denies, on every live listener of
// one server: a client's by principal or serial, a node's by serial only,
// never one without a certificate; a stopped listener's registry is
// dropped from the set.
#[tokio::test(start_paused = true)]
async fn close_denied_closes_exactly_the_denied_connections_of_every_listener() {
    let node = Identity::Node { node_id: 2 };
    let first = registry(options());
    let second = registry(options());
    let registries = Registries::default();
    registries.add(&first);
    registries.add(&second);
    let mallory = first
        .admit(&client("mallory"), Some("1".into()), v4(1))
        .unwrap();
    let alice = first
        .admit(&client("alice"), Some("2".into()), v4(1))
        .unwrap();
    let stolen = second
        .admit(&client("bob"), Some("3".into()), v4(2))
        .unwrap();
    let peer = second.admit(&node, Some("4".into()), v4(3)).unwrap();
    let anonymous = second.admit(&Identity::Anonymous, None, v4(4)).unwrap();
    // A node is not matched by a principal, even one spelled like its id.
    let by_name = DenyList {
        principals: ["mallory".to_string(), "2".to_string()].into(),
        serials: Default::default(),
    };
    assert_eq!(registries.close_denied(&by_name), 1);
    assert!(mallory.is_closed() && !alice.is_closed() && !peer.is_closed());
    assert_eq!(first.len(), 1);
    let by_serial = DenyList {
        principals: Default::default(),
        serials: ["3".to_string(), "4".to_string()].into(),
    };
    assert_eq!(registries.close_denied(&by_serial), 2);
    assert!(stolen.is_closed() && peer.is_closed());
    assert!(!alice.is_closed() && !anonymous.is_closed());
    assert_eq!(second.len(), 1);
    // Nothing left to close: the count is of this call only.
    assert_eq!(registries.close_denied(&by_serial), 0);
    drop(second);
    assert_eq!(registries.len(), 1);
}
