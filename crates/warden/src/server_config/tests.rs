use super::*;
use crate::cli::parse_peer_addrs;

// docs/semantics.md "Membership and data loss": the token floor comes from the
// flag or the file, defaults to 0 and is bounded below MAX_ID.
#[test]
fn token_floor_is_resolved_and_bounded() {
    let config = resolve(&base_args(), FileConfig::default()).unwrap();
    assert_eq!(config.token_floor, 0);
    let file = parse_config_file("token-floor = 77").unwrap();
    assert_eq!(resolve(&base_args(), file).unwrap().token_floor, 77);
    let args = ServerArgs {
        token_floor: Some(warden_core::limits::MAX_ID - 1),
        ..base_args()
    };
    let file = parse_config_file("token-floor = 77").unwrap();
    assert_eq!(
        resolve(&args, file).unwrap().token_floor,
        warden_core::limits::MAX_ID - 1
    );
    let args = ServerArgs {
        token_floor: Some(warden_core::limits::MAX_ID),
        ..base_args()
    };
    let e = resolve(&args, FileConfig::default()).unwrap_err();
    assert!(e.starts_with("--token-floor:"), "{e}");
}

fn base_args() -> ServerArgs {
    ServerArgs {
        id: Some(2),
        listen: Some("127.0.0.1:7002".into()),
        peers: Some(parse_peers("1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003").unwrap()),
        data_dir: Some("/tmp/w2".into()),
        insecure: true,
        ..ServerArgs::default()
    }
}

// The documented defaults (heartbeat 50 ms, election 250–500 ms, ...) are what a bare command gets.
#[test]
fn defaults_apply_when_nothing_is_given() {
    let config = resolve(&base_args(), FileConfig::default()).unwrap();
    assert_eq!(config.node_id, 2);
    assert_eq!(config.timing, Timing::default());
    assert_eq!(config.timing.heartbeat_ms, 50);
    assert_eq!(config.timing.bound_e_ms(), 1_600);
    assert_eq!(config.timing.grpc_keepalive_interval_ms, 5_000);
    assert_eq!(config.timing.grpc_keepalive_timeout_ms, 5_000);
    assert!(!config.initial_cluster_state_new);
}

// docs/operations.md "Latency between nodes": `--timing wan` (or
// `timing = "wan"` in the file) starts from the wan preset, E and the
// call floor follow from it, and an explicit flag (or file key)
// overrides its own field only; the flag's preset wins over the file's.
#[test]
fn timing_preset_with_overrides() {
    let args = ServerArgs {
        timing: Some(TimingPreset::Wan),
        ..base_args()
    };
    let config = resolve(&args, FileConfig::default()).unwrap();
    assert_eq!(config.timing, Timing::wan());
    assert_eq!(config.timing.heartbeat_ms, 250);
    assert_eq!(config.timing.call_timeout_floor_ms(), 500);
    assert_eq!(config.timing.bound_e_ms(), 4_300);

    let args = ServerArgs {
        timing: Some(TimingPreset::Wan),
        heartbeat: Some(Duration::from_millis(300)),
        election_timeout_max: Some(Duration::from_secs(3)),
        ..base_args()
    };
    let t = resolve(&args, FileConfig::default()).unwrap().timing;
    assert_eq!(t.preset, warden_server::TimingPreset::Wan);
    assert_eq!(t.heartbeat_ms, 300);
    assert_eq!(t.election_timeout_min_ms, 1_000);
    assert_eq!(t.election_timeout_max_ms, 3_000);
    assert_eq!(t.promotion_grace_ms, 2_000);
    // E = G + max election timeout + duty interval + heartbeat, from
    // the values in effect.
    assert_eq!(t.bound_e_ms(), 2_000 + 3_000 + 50 + 300);

    let file = parse_config_file("timing = \"wan\"\npromotion-grace = \"1500ms\"").unwrap();
    let t = resolve(&base_args(), file).unwrap().timing;
    assert_eq!(t.preset, warden_server::TimingPreset::Wan);
    assert_eq!((t.heartbeat_ms, t.promotion_grace_ms), (250, 1_500));
    assert_eq!(t.bound_e_ms(), 1_500 + 2_000 + 50 + 250);

    let file = parse_config_file("timing = \"wan\"").unwrap();
    let args = ServerArgs {
        timing: Some(TimingPreset::Lan),
        ..base_args()
    };
    assert_eq!(resolve(&args, file).unwrap().timing, Timing::default());
}

// "What bad input gets": an override that contradicts the preset's
// other values is refused naming both flags, and an unknown preset in
// the file names the key and the known ones.
#[test]
fn timing_preset_overrides_are_checked() {
    let args = ServerArgs {
        timing: Some(TimingPreset::Wan),
        election_timeout_max: Some(Duration::from_millis(800)),
        ..base_args()
    };
    let e = resolve(&args, FileConfig::default()).unwrap_err();
    assert_eq!(
        e,
        "--election-timeout-max: 800ms must be above --election-timeout-min 1s"
    );
    let e = parse_config_file("timing = \"moon\"").unwrap_err();
    assert!(e.contains("timing"), "{e}");
    assert!(
        e.contains("`lan`, `wan`") || e.contains("`lan` or `wan`"),
        "{e}"
    );
}

// "What bad input gets": a config file over 1 MiB (a log or a binary
// given by mistake; 50 MB ones were read whole) is refused naming the
// flag and the limit; one at the limit is read (and parsed).
#[test]
fn an_oversized_config_file_is_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    std::fs::write(&big, "#".repeat(MAX_CONFIG_FILE_BYTES as usize + 1)).unwrap();
    let e = read_config_file(&big).unwrap_err();
    assert!(
        e.starts_with(&format!(
            "--config {}: larger than the limit of 1048576 bytes",
            big.display()
        )),
        "{e}"
    );
    let at_limit = dir.path().join("at-limit.toml");
    std::fs::write(&at_limit, "#".repeat(MAX_CONFIG_FILE_BYTES as usize)).unwrap();
    assert!(read_config_file(&at_limit).is_ok());
}

// The HTTP/2 keep-alive (docs/operations.md) comes from the flag or the
// file, flags first.
#[test]
fn grpc_keepalive_from_flags_and_file() {
    let file =
        parse_config_file("grpc-keepalive-interval = \"2s\"\ngrpc-keepalive-timeout = \"3s\"")
            .unwrap();
    let config = resolve(&base_args(), file).unwrap();
    assert_eq!(config.timing.grpc_keepalive_interval_ms, 2_000);
    assert_eq!(config.timing.grpc_keepalive_timeout_ms, 3_000);
    let args = ServerArgs {
        grpc_keepalive_timeout: Some(Duration::from_millis(500)),
        ..base_args()
    };
    let file = parse_config_file("grpc-keepalive-timeout = \"3s\"").unwrap();
    assert_eq!(
        resolve(&args, file)
            .unwrap()
            .timing
            .grpc_keepalive_timeout_ms,
        500
    );
}

// Flags override the config file, which overrides the defaults.
#[test]
fn flags_override_the_file() {
    let file = parse_config_file(
        r#"
        id = 1
        listen = "127.0.0.1:7001"
        data-dir = "/var/lib/warden"
        initial-cluster-state = "new"
        heartbeat = "20ms"
        promotion-grace = "2s"
        snapshot-threshold = 20
        [peers]
        1 = "127.0.0.1:7001"
        2 = "127.0.0.1:7002"
        "#,
    )
    .unwrap();
    let args = ServerArgs {
        heartbeat: Some(Duration::from_millis(40)),
        id: Some(2),
        insecure: true,
        ..ServerArgs::default()
    };
    let config = resolve(&args, file).unwrap();
    assert_eq!(config.node_id, 2);
    assert_eq!(config.peers.len(), 2);
    assert_eq!(config.timing.heartbeat_ms, 40);
    assert_eq!(config.timing.promotion_grace_ms, 2_000);
    assert_eq!(config.timing.snapshot_threshold, 20);
    assert!(config.initial_cluster_state_new);
    assert_eq!(config.data_dir, PathBuf::from("/var/lib/warden"));
}

// docs/operations.md: admin calls on an insecure node are off unless
// --allow-admin; the request size bound defaults to 64 KiB, is
// configurable, and out-of-range values name the flag and the limit.
#[test]
fn allow_admin_and_max_request_bytes() {
    let config = resolve(&base_args(), FileConfig::default()).unwrap();
    assert!(!config.allow_admin);
    assert_eq!(config.max_request_bytes, 65_536);
    let file = parse_config_file("max-request-bytes = 8192").unwrap();
    let args = ServerArgs {
        allow_admin: true,
        ..base_args()
    };
    let config = resolve(&args, file).unwrap();
    assert!(config.allow_admin);
    assert_eq!(config.certs_dir, None);
    assert_eq!(config.max_request_bytes, 8_192);
    let mut args = base_args();
    args.allow_admin = true;
    args.max_request_bytes = Some(100);
    let err = resolve(&args, FileConfig::default()).unwrap_err();
    assert!(
        err.starts_with("--max-request-bytes") && err.contains("1024"),
        "{err}"
    );
}

// docs/security.md "Insecure mode": a node serves TLS with --certs-dir
// (flag or file) or plaintext with --insecure; neither or both is
// refused naming both flags, and --allow-admin needs --insecure.
#[test]
fn certs_dir_or_insecure_exactly_one() {
    let secure = ServerArgs {
        insecure: false,
        certs_dir: Some("/etc/warden/certs".into()),
        ..base_args()
    };
    let config = resolve(&secure, FileConfig::default()).unwrap();
    assert_eq!(config.certs_dir, Some(PathBuf::from("/etc/warden/certs")));
    assert!(!config.allow_admin);
    let from_file = ServerArgs {
        insecure: false,
        ..base_args()
    };
    let file = parse_config_file("certs-dir = \"/srv/certs\"").unwrap();
    assert_eq!(
        resolve(&from_file, file).unwrap().certs_dir,
        Some(PathBuf::from("/srv/certs"))
    );
    // The flag wins over the file.
    let file = parse_config_file("certs-dir = \"/srv/certs\"").unwrap();
    assert_eq!(
        resolve(&secure, file).unwrap().certs_dir,
        Some(PathBuf::from("/etc/warden/certs"))
    );

    let err = resolve(&from_file, FileConfig::default()).unwrap_err();
    assert!(err.starts_with("no --certs-dir"), "{err}");
    assert!(err.contains("--insecure"), "{err}");
    let both = ServerArgs {
        insecure: true,
        ..secure.clone()
    };
    let err = resolve(&both, FileConfig::default()).unwrap_err();
    assert!(
        err.starts_with("--insecure and --certs-dir /etc/warden/certs"),
        "{err}"
    );
    let file = parse_config_file("certs-dir = \"/srv/certs\"").unwrap();
    let err = resolve(&base_args(), file).unwrap_err();
    assert!(
        err.starts_with("--insecure and --certs-dir /srv/certs"),
        "{err}"
    );

    let admin = ServerArgs {
        allow_admin: true,
        ..secure
    };
    let err = resolve(&admin, FileConfig::default()).unwrap_err();
    assert!(
        err.starts_with("--allow-admin: only with --insecure"),
        "{err}"
    );
}

// docs/security.md "Insecure mode": turning security off is read from
// the command line only; the config file's keys are refused by name.
#[test]
fn insecure_and_allow_admin_are_not_read_from_the_file() {
    for (text, key) in [
        ("insecure = true", "insecure:"),
        ("insecure = false", "insecure:"),
        ("allow-admin = true", "allow-admin:"),
    ] {
        let err = resolve(&base_args(), parse_config_file(text).unwrap()).unwrap_err();
        assert!(err.starts_with(key), "{text}: {err}");
        assert!(err.contains("command line"), "{text}: {err}");
    }
}

// docs/operations.md: `--join` and `--admin-listen` come from the flag or the file;
// a bad or clashing admin address names the flag.
#[test]
fn join_and_admin_listen() {
    let config = resolve(&base_args(), FileConfig::default()).unwrap();
    assert!(!config.join);
    assert_eq!(config.admin_listen, None);
    let file = parse_config_file("join = true\nadmin-listen = \"127.0.0.1:7080\"").unwrap();
    let config = resolve(&base_args(), file).unwrap();
    assert!(config.join);
    assert_eq!(config.admin_listen, Some("127.0.0.1:7080".parse().unwrap()));
    let mut args = base_args();
    args.admin_listen = Some("not an address".into());
    let err = resolve(&args, FileConfig::default()).unwrap_err();
    assert!(err.starts_with("--admin-listen"), "{err}");
    args.admin_listen = args.listen.clone();
    let err = resolve(&args, FileConfig::default()).unwrap_err();
    assert!(
        err.starts_with("--admin-listen") && err.contains("own port"),
        "{err}"
    );
}

// `--metrics-groups` from the flag or the file; a bad list is refused
// at start naming the flag and the limit ("What bad input gets").
#[test]
fn metrics_groups_from_flag_or_file() {
    let file = parse_config_file("metrics-groups = [\"payments/\", \"inventory/\"]").unwrap();
    let config = resolve(&base_args(), file).unwrap();
    assert_eq!(config.metrics_groups, ["payments/", "inventory/"]);
    let mut args = base_args();
    args.metrics_groups = Some(vec!["a/".into(), "a/".into()]);
    let err = resolve(&args, FileConfig::default()).unwrap_err();
    assert_eq!(err, "--metrics-groups: \"a/\" is given twice");
    args.metrics_groups = Some((0..65).map(|i| format!("g{i}/")).collect());
    let err = resolve(&args, FileConfig::default()).unwrap_err();
    assert_eq!(err, "--metrics-groups: at most 64 prefixes; got 65");
}

// What bad input gets (`--peer-listen`, docs/operations.md): the split
// resolves from flags or the file; a peer port that is --listen or
// --admin-listen, a --peer-addrs id not in --peers, a peer address that
// is a client address, and a --peer-listen without this node's peer
// address (or the reverse) are refused naming the flag.
#[test]
fn peer_listen_and_peer_addrs() {
    let config = resolve(&base_args(), FileConfig::default()).unwrap();
    assert_eq!(config.peer_listen, None);
    assert!(config.peer_addrs.is_empty());
    let split = || ServerArgs {
        peer_listen: Some("127.0.0.1:7102".into()),
        peer_addrs: Some(parse_peer_addrs("1=127.0.0.1:7101,2=127.0.0.1:7102").unwrap()),
        ..base_args()
    };
    let config = resolve(&split(), FileConfig::default()).unwrap();
    assert_eq!(config.peer_listen, Some("127.0.0.1:7102".parse().unwrap()));
    assert_eq!(config.peer_dial_addr(1), Some("127.0.0.1:7101"));
    assert_eq!(config.peer_dial_addr(3), Some("127.0.0.1:7003"));
    let file =
        parse_config_file("peer-listen = \"127.0.0.1:7102\"\n[peer-addrs]\n2 = \"127.0.0.1:7102\"")
            .unwrap();
    let config = resolve(&base_args(), file).unwrap();
    assert_eq!(config.peer_listen, Some("127.0.0.1:7102".parse().unwrap()));
    assert_eq!(
        config.peer_addrs.get(&2).map(String::as_str),
        Some("127.0.0.1:7102")
    );

    let err = |args: ServerArgs| resolve(&args, FileConfig::default()).unwrap_err();
    assert_eq!(
        err(ServerArgs {
            peer_listen: Some("127.0.0.1:7002".into()),
            ..split()
        }),
        "--peer-listen: 127.0.0.1:7002 is the --listen address; the peer port must be a port of its own"
    );
    assert_eq!(
        err(ServerArgs {
            admin_listen: Some("127.0.0.1:7102".into()),
            ..split()
        }),
        "--peer-listen: 127.0.0.1:7102 is the --admin-listen address; the peer port must be a port of its own"
    );
    assert!(err(ServerArgs {
        peer_listen: Some("nowhere".into()),
        ..split()
    })
    .starts_with("--peer-listen \"nowhere\""));
    assert_eq!(
        err(ServerArgs {
            peer_addrs: Some(parse_peer_addrs("2=127.0.0.1:7102,4=127.0.0.1:7104").unwrap()),
            ..split()
        }),
        "--peer-addrs: node 4 is not one of the --peers ids (1, 2, 3)"
    );
    assert_eq!(
        err(ServerArgs {
            peer_addrs: Some(parse_peer_addrs("2=127.0.0.1:7102,3=127.0.0.1:7001").unwrap()),
            ..split()
        }),
        "--peer-addrs: 127.0.0.1:7001 (node 3) is the --peers address of node 1; a peer port serves the peer service only"
    );
    assert_eq!(
        err(ServerArgs {
            peer_addrs: Some(parse_peer_addrs("1=127.0.0.1:7101").unwrap()),
            ..split()
        }),
        "--peer-addrs: --peer-listen is given, so this node (2) needs its entry in --peer-addrs (where its peers reach it)"
    );
    assert_eq!(
        err(ServerArgs {
            peer_listen: None,
            ..split()
        }),
        "--peer-listen: --peer-addrs gives this node (2) a peer address; serve it with --peer-listen HOST:PORT"
    );
    let e = parse_peer_addrs("2=nowhere").unwrap_err();
    assert!(e.starts_with("--peer-addrs: address of node 2"), "{e}");
}

// docs/operations.md "Logs": `--log-format` comes from the flag or the
// file (flag first), text by default; a bad value in the file names the
// key and the choices.
#[test]
fn log_format_from_flag_and_file() {
    assert_eq!(
        log_format(&base_args(), &FileConfig::default()),
        LogFormat::Text
    );
    let file = parse_config_file("log-format = \"json\"").unwrap();
    assert_eq!(log_format(&base_args(), &file), LogFormat::Json);
    let args = ServerArgs {
        log_format: Some(LogFormat::Text),
        ..base_args()
    };
    assert_eq!(log_format(&args, &file), LogFormat::Text);
    let err = parse_config_file("log-format = \"xml\"").unwrap_err();
    assert!(
        err.contains("log-format") && err.contains("xml") && err.contains("json"),
        "{err}"
    );
}

// Bad input names the field: unknown keys and bad values in the file are refused.
#[test]
fn config_file_errors_name_the_key() {
    let err = parse_config_file("hearbeat = \"50ms\"").unwrap_err();
    assert!(err.contains("hearbeat"), "{err}");
    let err = resolve(
        &base_args(),
        parse_config_file("election-timeout-min = \"fast\"").unwrap(),
    )
    .unwrap_err();
    assert!(err.starts_with("--election-timeout-min"), "{err}");
}

// Bad input names the field: `checkpoint-interval` is gone with the
// checkpoints (cluster time, log format 1, docs/semantics.md "Time").
// A config file that still names it is refused like any unknown key,
// naming it, and so is the flag; nothing is silently dropped.
#[test]
fn a_removed_checkpoint_interval_is_refused_naming_the_key() {
    let err = parse_config_file("heartbeat = \"50ms\"\ncheckpoint-interval = \"1s\"").unwrap_err();
    assert!(err.contains("unknown field `checkpoint-interval`"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.toml");
    std::fs::write(&old, "checkpoint-interval = \"2s\"\n").unwrap();
    let err = read_config_file(&old).unwrap_err();
    assert!(
        err.starts_with("--config ") && err.contains("`checkpoint-interval`"),
        "{err}"
    );
    use clap::Parser as _;
    let err = crate::cli::Cli::try_parse_from(["warden", "server", "--checkpoint-interval", "1s"])
        .expect_err("--checkpoint-interval is refused");
    assert!(err.to_string().contains("--checkpoint-interval"), "{err}");
}

// Bad input names the field and the limit, and never panics.
#[test]
fn out_of_bounds_timing_names_field_and_limit() {
    type Change = Box<dyn Fn(&mut ServerArgs)>;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|a| a.heartbeat = Some(Duration::ZERO)),
            "--heartbeat: 0s is below the minimum 1ms",
        ),
        (
            Box::new(|a| a.heartbeat = Some(Duration::from_secs(11))),
            "--heartbeat: 11s is above the maximum 10s",
        ),
        (
            Box::new(|a| a.election_timeout_min = Some(Duration::from_millis(60))),
            "--election-timeout-min: 60ms is below the minimum 100ms",
        ),
        (
            Box::new(|a| a.election_timeout_max = Some(Duration::from_millis(200))),
            "--election-timeout-max: 200ms must be above --election-timeout-min 250ms",
        ),
        (
            Box::new(|a| a.promotion_grace = Some(Duration::from_secs(61))),
            "--promotion-grace: 1m 1s is above the maximum 1m",
        ),
        (
            Box::new(|a| a.snapshot_threshold = Some(0)),
            "--snapshot-threshold: 0 entries is below the minimum 1 entries",
        ),
        (
            Box::new(|a| a.leader_transfer_timeout = Some(Duration::MAX)),
            "--leader-transfer-timeout",
        ),
        (
            Box::new(|a| a.grpc_keepalive_interval = Some(Duration::from_millis(50))),
            "--grpc-keepalive-interval: 50ms is below the minimum 100ms",
        ),
        (
            Box::new(|a| a.grpc_keepalive_interval = Some(Duration::from_secs(3 * 3600))),
            "--grpc-keepalive-interval: 3h is above the maximum 2h",
        ),
        (
            Box::new(|a| a.grpc_keepalive_timeout = Some(Duration::ZERO)),
            "--grpc-keepalive-timeout: 0s is below the minimum 100ms",
        ),
        (
            Box::new(|a| a.grpc_keepalive_timeout = Some(Duration::from_secs(601))),
            "--grpc-keepalive-timeout: 10m 1s is above the maximum 10m",
        ),
    ];
    for (change, expected) in cases {
        let mut args = base_args();
        change(&mut args);
        let err = resolve(&args, FileConfig::default()).unwrap_err();
        assert!(
            err.starts_with(expected),
            "got {err:?}, expected {expected:?}"
        );
    }
}

// Identity errors are clear: a missing flag, an id outside --peers, a bad --listen.
#[test]
fn identity_errors_are_clear() {
    let mut args = base_args();
    args.id = Some(4);
    let err = resolve(&args, FileConfig::default()).unwrap_err();
    assert!(
        err.contains("not one of the --peers ids (1, 2, 3)"),
        "{err}"
    );
    let mut args = base_args();
    args.id = None;
    assert!(resolve(&args, FileConfig::default())
        .unwrap_err()
        .contains("missing --id"));
    let mut args = base_args();
    args.listen = Some("nowhere".into());
    assert!(resolve(&args, FileConfig::default())
        .unwrap_err()
        .starts_with("--listen"));
    let mut args = base_args();
    args.data_dir = None;
    assert!(resolve(&args, FileConfig::default())
        .unwrap_err()
        .contains("--data-dir"));
}

// docs/security.md "Connection limits": the defaults, each limit from its
// flag or its file key (flags first), and a value outside its bounds
// refused naming the flag, the value and the bounds.
#[test]
fn connection_limits_from_flags_and_file_with_their_bounds() {
    let config = resolve(&base_args(), FileConfig::default()).unwrap();
    assert_eq!(
        config.conn_limits,
        warden_server::config::ConnLimits::default()
    );
    let a = config.conn_limits.accept;
    assert_eq!(a.handshake_timeout, Duration::from_secs(5));
    assert_eq!((a.max_handshakes, a.max_handshakes_per_source), (1024, 64));
    assert_eq!(
        (a.max_connections, a.max_connections_per_principal),
        (16_384, 1024)
    );
    assert_eq!(a.idle_timeout, Duration::from_secs(300));
    assert_eq!(
        config.conn_limits.admin_header_read_timeout,
        Duration::from_secs(10)
    );
    let file = parse_config_file(
        "handshake-timeout = \"2s\"\nmax-handshakes = 256\nmax-handshakes-per-source = 8\n\
         max-connections = 1000\nmax-connections-per-principal = 10\n\
         connection-idle-timeout = \"1m\"\nadmin-header-read-timeout = \"3s\"\n\
         refused-requests-per-sec = 50",
    )
    .unwrap();
    let args = ServerArgs {
        max_connections_per_principal: Some(20),
        ..base_args()
    };
    let limits = resolve(&args, file).unwrap().conn_limits;
    assert_eq!(limits.accept.handshake_timeout, Duration::from_secs(2));
    assert_eq!(limits.accept.max_handshakes, 256);
    assert_eq!(limits.accept.max_handshakes_per_source, 8);
    assert_eq!(limits.accept.max_connections, 1000);
    assert_eq!(limits.accept.max_connections_per_principal, 20);
    assert_eq!(limits.accept.idle_timeout, Duration::from_secs(60));
    assert_eq!(limits.admin_header_read_timeout, Duration::from_secs(3));
    assert_eq!(limits.refused_requests_per_sec, 50);
    assert_eq!(
        resolve(&base_args(), FileConfig::default())
            .unwrap()
            .conn_limits
            .refused_requests_per_sec,
        100
    );
    let refused = |change: fn(&mut ServerArgs)| {
        let mut args = base_args();
        change(&mut args);
        resolve(&args, FileConfig::default()).unwrap_err()
    };
    assert_eq!(
        refused(|a| a.max_connections = Some(0)),
        "--max-connections: 0 is outside 1..=1048576"
    );
    assert_eq!(
        refused(|a| a.max_handshakes_per_source = Some(1025)),
        "--max-handshakes-per-source: 1025 is outside 1..=1024"
    );
    assert_eq!(
        refused(|a| a.handshake_timeout = Some(Duration::from_secs(61))),
        "--handshake-timeout: 1m 1s is outside 100ms..=1m"
    );
    assert_eq!(
        refused(|a| a.connection_idle_timeout = Some(Duration::from_millis(500))),
        "--connection-idle-timeout: 500ms is outside 1s..=1day"
    );
    assert_eq!(
        refused(|a| a.admin_header_read_timeout = Some(Duration::ZERO)),
        "--admin-header-read-timeout: 0s is outside 100ms..=5m"
    );
    assert_eq!(
        refused(|a| a.refused_requests_per_sec = Some(0)),
        "--refused-requests-per-sec: 0 is outside 1..=1000000"
    );
    let e = resolve(
        &base_args(),
        parse_config_file("max-connections-per-principal = 0").unwrap(),
    )
    .unwrap_err();
    assert!(
        e.starts_with("--max-connections-per-principal: 0 is outside"),
        "{e}"
    );
}
