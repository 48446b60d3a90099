//! The client subcommands: check the input, make one call, build a [`Report`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use warden_client::{AcquireOptions, Client, ClientError, ClientOptions, TlsOptions};
use warden_core::limits;

use crate::cli::{
    AcquireArgs, ClientArgs, ReleaseArgs, RenewArgs, StatusArgs, TlsArgs, ValidateArgs,
};
use crate::output::{self, Report};

/// Deadline of a non-waiting command: 5 s (a waiting acquire adds its wait).
pub const CLI_DEADLINE: Duration = Duration::from_secs(5);

/// The one line a client command prints when it was told neither how to
/// authenticate nor that the cluster is insecure.
pub const NO_CREDENTIALS: &str = "no credentials: pass --certs-dir DIR (or set WARDEN_CERTS_DIR; `warden dev` writes it into the client profile) to use a secure cluster as --user (default root), or --insecure (or WARDEN_INSECURE=true) for a cluster started with --insecure";

/// The TLS options of a client command: `Some` for `--certs-dir`, `None`
/// for `--insecure`; an error when neither or both are given (a certs dir
/// is never dropped silently for plaintext).
pub(crate) fn tls_options(args: &TlsArgs) -> Result<Option<TlsOptions>, String> {
    let certs_dir = args
        .certs_dir
        .as_ref()
        .filter(|dir| !dir.as_os_str().is_empty());
    match (certs_dir, args.insecure) {
        (Some(dir), false) => Ok(Some(TlsOptions::new(dir, args.user.clone()))),
        (None, true) => Ok(None),
        (Some(dir), true) => Err(format!(
            "--insecure and --certs-dir {} are both given (WARDEN_INSECURE and WARDEN_CERTS_DIR count too): use --certs-dir for a secure cluster, --insecure only for a cluster started with --insecure",
            dir.display()
        )),
        (None, false) => Err(NO_CREDENTIALS.to_string()),
    }
}

/// The client of a one-shot command: its endpoints and TLS options
/// checked, the TLS files loaded (an unusable one is named: exit 1 before
/// anything is sent). It fails fast where no node can be there: when no
/// endpoint's host name resolves (each is named), and, on a call, when
/// every endpoint refused the connection
/// (`ClientOptions::fail_fast_when_refused`).
pub(crate) async fn connect(args: &ClientArgs) -> Result<Client, String> {
    let client = connect_with(args, true).await?;
    let mut unresolved = Vec::new();
    for endpoint in client.endpoints() {
        if let Err(e) = tokio::net::lookup_host(endpoint.as_str()).await {
            unresolved.push(format!("{endpoint}: cannot resolve the host name: {e}"));
        }
    }
    if unresolved.len() == client.endpoints().len() {
        return Err(format!("--endpoints: {}", unresolved.join("; ")));
    }
    Ok(client)
}

/// The client of a command that holds a lease or a stream for long
/// (`lease keep-alive`, `exec`, `elect`, `watch`): as [`connect`], but its
/// calls keep retrying through refused connections and resolver failures
/// until their deadline, as a session's keep-alive must through a restart
/// of the whole cluster.
pub(crate) async fn connect_long_lived(args: &ClientArgs) -> Result<Client, String> {
    connect_with(args, false).await
}

async fn connect_with(args: &ClientArgs, fail_fast: bool) -> Result<Client, String> {
    let args = &crate::profile::fill(args)?;
    let endpoints: Vec<String> = args
        .endpoints
        .iter()
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    if endpoints.is_empty() {
        return Err("no endpoints: pass --endpoints HOST:PORT,... or set WARDEN_ENDPOINTS, or start `warden dev` (it writes the client profile these commands read)".into());
    }
    let options = ClientOptions {
        deadline: CLI_DEADLINE,
        tls: tls_options(&args.tls)?,
        fail_fast_when_refused: fail_fast,
        ..ClientOptions::default()
    };
    Client::connect(endpoints, options)
        .await
        .map_err(|e| match e {
            ClientError::Tls {
                file: None,
                message,
            } => format!(
                "--user {:?}: {}",
                args.tls.user,
                message.strip_prefix("user: ").unwrap_or(&message)
            ),
            ClientError::Tls { message, .. } => format!("--certs-dir: {message}"),
            other => describe_error(&other),
        })
}

pub(crate) fn describe_error(e: &ClientError) -> String {
    match e {
        ClientError::InvalidEndpoint { endpoint, message } => {
            format!("--endpoints: {endpoint:?}: {message}")
        }
        other => other.to_string(),
    }
}

fn fmt_ms(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Checks a resource name as the server will: 1..=512 bytes, no control
/// characters.
pub fn check_resource(resource: &str) -> Result<(), String> {
    if resource.is_empty() {
        return Err("RESOURCE: must not be empty (1..=512 bytes)".into());
    }
    if resource.len() > limits::MAX_RESOURCE_BYTES {
        return Err(format!(
            "RESOURCE: {} bytes is above the limit of {} bytes",
            resource.len(),
            limits::MAX_RESOURCE_BYTES
        ));
    }
    if resource.chars().any(char::is_control) {
        return Err("RESOURCE: must not contain NUL or control characters".into());
    }
    Ok(())
}

/// Checks `--ttl`, `--wait` and `--lock-delay` against the documented bounds
/// before anything is sent.
pub fn check_acquire(args: &AcquireArgs) -> Result<(), String> {
    for resource in &args.resources {
        check_resource(resource)?;
    }
    if args.resources.len() > limits::MAX_MULTI_RESOURCES {
        return Err(format!(
            "RESOURCE: {} resources are above the limit of {} in one multi-lock",
            args.resources.len(),
            limits::MAX_MULTI_RESOURCES
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = args.resources.iter().find(|r| !seen.insert(r.as_str())) {
        return Err(format!("RESOURCE: {dup:?} is named twice"));
    }
    let kind = args.kind.kind()?;
    crate::cli::check_max_hold(args.max_hold, Some(args.wait))?;
    if args.resources.len() > 1 && args.max_hold.is_some() {
        return Err("--max-hold takes one RESOURCE: a multi-lock has no max-hold".into());
    }
    if args.resources.len() > 1 && kind != warden_client::GrantKind::Mutex {
        return Err(
            "--limit, --shared and --exclusive take one RESOURCE: a multi-lock takes mutexes only"
                .into(),
        );
    }
    if let Some(ttl) = args.ttl {
        let ttl_ms = millis(ttl);
        if ttl_ms < limits::MIN_TTL_MS {
            return Err(format!(
                "--ttl: {} is below the minimum TTL of {}",
                fmt_ms(ttl_ms),
                fmt_ms(limits::MIN_TTL_MS)
            ));
        }
        if ttl_ms > limits::MAX_TTL_MS {
            return Err(format!(
                "--ttl: {} is above the maximum TTL of {}",
                fmt_ms(ttl_ms),
                fmt_ms(limits::MAX_TTL_MS)
            ));
        }
    }
    if millis(args.wait) > limits::MAX_WAIT_TIMEOUT_MS {
        return Err(format!(
            "--wait: {} is above the maximum wait of {}",
            fmt_ms(millis(args.wait)),
            fmt_ms(limits::MAX_WAIT_TIMEOUT_MS)
        ));
    }
    if millis(args.lock_delay) > limits::MAX_LOCK_DELAY_MS {
        return Err(format!(
            "--lock-delay: {} is above the maximum lock-delay of {}",
            fmt_ms(millis(args.lock_delay)),
            fmt_ms(limits::MAX_LOCK_DELAY_MS)
        ));
    }
    Ok(())
}

/// `warden acquire`.
pub async fn acquire(args: AcquireArgs) -> Report {
    if let Err(e) = check_acquire(&args) {
        return output::error(&e);
    }
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return output::error(&e),
    };
    let options = AcquireOptions {
        ttl: args.ttl.unwrap_or(Duration::ZERO),
        lease_id: args.lease,
        wait: args.wait,
        lock_delay: args.lock_delay,
        kind: match args.kind.kind() {
            Ok(kind) => kind,
            Err(e) => return output::error(&e),
        },
        max_hold: args.max_hold,
    };
    let max_hold = args.max_hold;
    let sent = std::time::Instant::now();
    let format = args.client.output;
    // The lease of this acquire's wait, once the server has queued it.
    let waiting_lease = Arc::new(AtomicU64::new(0));
    let seen = waiting_lease.clone();
    let progress = move |q: warden_client::Queued| {
        seen.store(q.lease_id, Ordering::SeqCst);
        // Progress goes to stderr in every format: stdout is for the result.
        eprintln!("{}", output::queued(&q));
    };
    let created_lease = args.lease.is_none();
    let mut acquire: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
        if args.resources.len() == 1 {
            let resource = args.resources[0].clone();
            Box::pin(client.acquire_with_progress(resource, options, progress))
        } else {
            Box::pin(client.acquire_all_with_progress(args.resources.clone(), options, progress))
        };
    tokio::select! {
        r = &mut acquire => match r {
            Ok(result) => {
                let valid_for_ms = match &result {
                    warden_client::AcquireResult::Granted { lease_id, .. } => {
                        let lease = valid_after_renew(&client, *lease_id).await;
                        // A max-hold counts from the acquire's send: the
                        // earlier bound wins (docs/semantics.md "Max-hold").
                        match max_hold {
                            Some(d) => {
                                let left = warden_client::validity(d)
                                    .saturating_sub(sent.elapsed());
                                let left = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
                                Some(lease.map_or(left, |l| l.min(left)))
                            }
                            None => lease,
                        }
                    }
                    _ => None,
                };
                output::acquire(&result, valid_for_ms, format)
            }
            Err(e) => output::error(&describe_error(&e)),
        },
        _ = interrupted() => {
            // The server may have queued (or even granted) the wait a moment
            // before its message reached us: keep listening briefly, so the
            // lease to revoke is known rather than left queued (S8).
            let mut lease_id = waiting_lease.load(Ordering::SeqCst);
            if created_lease && lease_id == 0 {
                let learn = async {
                    tokio::select! {
                        r = &mut acquire => match r {
                            Ok(warden_client::AcquireResult::Granted { lease_id, .. }) => lease_id,
                            _ => 0,
                        },
                        id = lease_named(&waiting_lease) => id,
                    }
                };
                lease_id = tokio::time::timeout(LEARN_LEASE_WITHIN, learn).await.unwrap_or(0);
            }
            cancel_wait(&client, created_lease, lease_id).await
        }
    }
}

/// Once granted, the CLI renews the lease once and reports how long the grant
/// can be trusted from that renew's *send* (S5): TTL × (1 − 2ρ) − margin,
/// less the time since the send.
async fn valid_after_renew(client: &Client, lease_id: u64) -> Option<u64> {
    let sent = std::time::Instant::now();
    let ack = client.renew(lease_id).await.ok()?;
    let valid = warden_client::validity(Duration::from_millis(ack.ttl_ms));
    let left = valid.saturating_sub(sent.elapsed());
    Some(u64::try_from(left.as_millis()).unwrap_or(u64::MAX))
}

/// How long an interrupted waiting acquire listens for the message that names
/// its wait's lease.
const LEARN_LEASE_WITHIN: Duration = Duration::from_secs(1);

/// Resolves with the lease id once the progress callback has recorded one.
async fn lease_named(slot: &AtomicU64) -> u64 {
    loop {
        let id = slot.load(Ordering::SeqCst);
        if id != 0 {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Resolves on SIGINT or SIGTERM (never, if the handlers cannot be installed).
async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// An interrupted waiting acquire: a dropped stream is not a cancel (S8), so
/// revoke the lease this acquire created for its wait; otherwise the waiter
/// would stay queued, and could be granted, until that lease expired.
async fn cancel_wait(client: &Client, created_lease: bool, lease_id: u64) -> Report {
    let message = if !created_lease {
        "interrupted; the wait stays queued on the lease you named until that lease ends"
            .to_string()
    } else if lease_id == 0 {
        "interrupted before the server queued the wait; nothing to cancel".to_string()
    } else {
        match client.revoke(lease_id).await {
            Ok(_) => format!("interrupted; cancelled the wait by revoking its lease {lease_id}"),
            Err(ClientError::NotFound { .. }) => {
                format!("interrupted; lease {lease_id} had already ended")
            }
            Err(e) => format!(
                "interrupted; could not revoke lease {lease_id} ({}); its wait ends when it expires",
                describe_error(&e)
            ),
        }
    };
    Report {
        stdout: None,
        stderr: Some(message),
        exit_code: EXIT_INTERRUPTED,
    }
}

/// Exit code of an interrupted command, as a shell reports a SIGINT'd one.
const EXIT_INTERRUPTED: u8 = 130;

/// `warden renew`.
pub async fn renew(args: RenewArgs) -> Report {
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return output::error(&e),
    };
    match client.renew(args.lease_id).await {
        Ok(result) => output::renew(&result, args.client.output),
        Err(e) => output::error(&describe_error(&e)),
    }
}

/// `warden release`.
pub async fn release(args: ReleaseArgs) -> Report {
    if let Some(resource) = &args.resource {
        if let Err(e) = check_resource(resource) {
            return output::error(&e);
        }
    }
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return output::error(&e),
    };
    let Some(lease_id) = args.lease_id else {
        return output::error("LEASE_ID: required (or --force RESOURCE)");
    };
    match client.release(lease_id, args.resource, args.token).await {
        Ok(result) => output::release(&result, args.client.output),
        Err(e) => output::error(&describe_error(&e)),
    }
}

/// `warden status`.
pub async fn status(args: StatusArgs) -> Report {
    if let Err(e) = check_resource(&args.resource) {
        return output::error(&e);
    }
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return output::error(&e),
    };
    match client.status(args.resource).await {
        Ok(result) => output::status(&result, args.client.output),
        Err(e) => output::error(&describe_error(&e)),
    }
}

/// `warden validate` (advisory: the answer may be stale by the time it is
/// used; only the resource-side check closes the window).
pub async fn validate(args: ValidateArgs) -> Report {
    if let Err(e) = check_resource(&args.resource) {
        return output::error(&e);
    }
    let client = match connect(&args.client).await {
        Ok(c) => c,
        Err(e) => return output::error(&e),
    };
    match client.validate(args.resource, args.token).await {
        Ok(result) => output::validate(&result, args.client.output),
        Err(e) => output::error(&describe_error(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command, OutputFormat};
    use clap::Parser;

    fn acquire_args(extra: &[&str]) -> AcquireArgs {
        let args = ["warden", "acquire"].iter().chain(extra.iter()).copied();
        match Cli::try_parse_from(args).unwrap().command {
            Command::Acquire(a) => a,
            other => panic!("{other:?}"),
        }
    }

    // "What bad input gets": TTL, wait and lock-delay outside their bounds name the flag and limit.
    #[test]
    fn acquire_bounds_name_flag_and_limit() {
        assert!(check_acquire(&acquire_args(&["r", "--ttl", "10s"])).is_ok());
        assert!(check_acquire(&acquire_args(&["r", "--lease", "3"])).is_ok());
        for (flags, expected) in [
            (
                &["r", "--ttl", "500ms"][..],
                "--ttl: 500ms is below the minimum TTL of 1s",
            ),
            (
                &["r", "--ttl", "2h"][..],
                "--ttl: 2h is above the maximum TTL of 1h",
            ),
            (
                &["r", "--ttl", "1s", "--wait", "61m"][..],
                "--wait: 1h 1m is above the maximum wait of 1h",
            ),
            (
                &["r", "--ttl", "1s", "--lock-delay", "2m"][..],
                "--lock-delay: 2m is above the maximum lock-delay of 1m",
            ),
        ] {
            assert_eq!(check_acquire(&acquire_args(flags)).unwrap_err(), expected);
        }
    }

    // "What bad input gets": empty, over-512-byte and control-character names are refused locally.
    #[test]
    fn resource_names_are_checked() {
        assert!(check_resource("orders/eu-1").is_ok());
        assert!(check_resource(&"x".repeat(512)).is_ok());
        assert!(check_resource("").unwrap_err().contains("empty"));
        assert!(check_resource(&"x".repeat(513))
            .unwrap_err()
            .contains("513 bytes"));
        assert!(check_resource("a\0b").unwrap_err().contains("control"));
        assert!(check_resource("a\nb").unwrap_err().contains("control"));
    }

    fn tls(certs_dir: Option<&str>, user: &str, insecure: bool) -> TlsArgs {
        TlsArgs {
            certs_dir: certs_dir.map(Into::into),
            user: user.into(),
            insecure,
            profile: None,
        }
    }

    // "What bad input gets": a client command needs --certs-dir (secure) or
    // --insecure; neither is one line naming both ways with their
    // variables, both is refused (a certs dir is never dropped silently for
    // plaintext), and an empty WARDEN_CERTS_DIR counts as none.
    #[test]
    fn exactly_one_of_certs_dir_and_insecure() {
        assert_eq!(
            tls_options(&tls(Some("/c"), "alice", false)).unwrap(),
            Some(TlsOptions::new("/c", "alice"))
        );
        assert_eq!(tls_options(&tls(None, "alice", true)).unwrap(), None);
        let neither = tls_options(&tls(None, "root", false)).unwrap_err();
        assert_eq!(neither, NO_CREDENTIALS);
        for needle in [
            "--certs-dir",
            "WARDEN_CERTS_DIR",
            "--insecure",
            "WARDEN_INSECURE=true",
        ] {
            assert!(neither.contains(needle), "{needle}: {neither}");
        }
        assert!(!neither.contains('\n'));
        assert_eq!(
            tls_options(&tls(Some(""), "root", false)).unwrap_err(),
            NO_CREDENTIALS
        );
        let both = tls_options(&tls(Some("/c"), "root", true)).unwrap_err();
        assert!(
            both.contains("--insecure and --certs-dir /c are both given"),
            "{both}"
        );
    }

    // "What bad input gets": a bad certs dir ends the command before
    // anything is sent, with one line naming the flag and the file; a user
    // name that is no principal names --user.
    #[tokio::test]
    async fn a_bad_certs_dir_is_named_with_the_file() {
        let root = tempfile::tempdir().unwrap();
        let set = warden_tls::mint::loopback_set(root.path(), &[], &["root"]).unwrap();
        let args = |dir: &std::path::Path, user: &str| ClientArgs {
            endpoints: vec!["127.0.0.1:1".into()],
            tls: tls(Some(dir.to_str().unwrap()), user, false),
            output: OutputFormat::Text,
        };
        assert!(connect(&args(&set.client_dir, "root")).await.is_ok());
        let missing = root.path().join("none");
        let e = connect(&args(&missing, "root")).await.unwrap_err();
        assert_eq!(
            e,
            format!(
                "--certs-dir: {}: missing (no such file)",
                missing.join("ca.crt").display()
            )
        );
        let e = connect(&args(&set.client_dir, "alice")).await.unwrap_err();
        assert!(
            e.starts_with("--certs-dir: ") && e.contains("client.alice.crt: missing"),
            "{e}"
        );
        let e = connect(&args(&set.client_dir, "node")).await.unwrap_err();
        assert!(e.starts_with("--user \"node\": "), "{e}");
    }

    // A missing endpoint list is a clear error that names both the flag and the variable.
    #[tokio::test]
    async fn missing_endpoints_name_flag_and_env() {
        // An empty profile: nothing found there either (not the home's).
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("profile.toml");
        std::fs::write(&profile, "").unwrap();
        let args = ClientArgs {
            endpoints: vec![" ".into()],
            tls: TlsArgs {
                profile: Some(profile),
                ..TlsArgs::default()
            },
            output: OutputFormat::Json,
        };
        let err = connect(&args).await.unwrap_err();
        assert!(
            err.contains("--endpoints")
                && err.contains("WARDEN_ENDPOINTS")
                && err.contains("client profile"),
            "{err}"
        );
        let bad = ClientArgs {
            endpoints: vec!["nohost".into()],
            tls: TlsArgs {
                insecure: true,
                ..TlsArgs::default()
            },
            output: OutputFormat::Text,
        };
        assert!(connect(&bad).await.unwrap_err().starts_with("--endpoints"));
    }
}
