//! `warden fenced-store`: the reference protected resource. A small
//! key-value service over HTTP that enforces fencing tokens per key, durably,
//! through `warden-fence` (docs/semantics.md S2, "The fencing story").
//!
//! - `PUT /kv/{key}` with `warden-resource` and `warden-fencing-token`
//!   headers and the value as the body: 200 when accepted; 409
//!   `{"error":"stale token","presented":T,"highest":H,...}` when the token is
//!   lower than the highest accepted for that resource; with `warden-slot`
//!   (a semaphore permit) or `warden-lock-mode: shared` (a reader) the
//!   token is checked by that kind's rule instead (docs/fencing.md
//!   "Semaphore permits and read-write locks": a permit against its slot's
//!   highest, a reader against the highest exclusive token; the 409 names
//!   the bound, `"bound":"slot","slot":N` or `"bound":"exclusive"`); 409
//!   `{"error":"resource mismatch",...}` when the key is bound to another
//!   resource (a key is bound to the resource of its first accepted write);
//!   400 when a header is missing or malformed. The highest token, the binding
//!   and the value are written in one redb transaction, fsync'd before the 200.
//! - `GET /kv/{key}`: 200 with the value, 404 when absent.
//!
//! Every accepted and rejected write is logged to stderr, one line each. The
//! first line on stdout is `fenced-store listening on HOST:PORT` (so
//! `--listen 127.0.0.1:0` works).
//!
//! Plain HTTP, and nobody is authenticated: anyone who reaches the port can
//! write with any token they have seen. So it serves loopback only (as the
//! demo runs it) unless started with `--insecure`, which allows any
//! `--listen` address and says so on stderr.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use warden_fence::http::json;
use warden_fence::{Accepted, ClaimHeaders, FenceError, HeaderError, Kind, RedbStore};

use crate::cli::FencedStoreArgs;

/// key → value.
const VALUES: TableDefinition<&str, &[u8]> = TableDefinition::new("kv_values");
/// key → the resource of its first accepted write.
const BINDINGS: TableDefinition<&str, &str> = TableDefinition::new("kv_bindings");
/// Longest key, in bytes.
const MAX_KEY_BYTES: usize = 1024;

/// Why a PUT was refused.
#[derive(Debug)]
enum PutError {
    Fence(FenceError),
    Mismatch { bound: String },
}

impl From<FenceError> for PutError {
    fn from(e: FenceError) -> Self {
        PutError::Fence(e)
    }
}

fn store_err(e: impl std::fmt::Display) -> PutError {
    PutError::Fence(FenceError::Store(e.to_string()))
}

/// Runs the store until SIGTERM or SIGINT.
pub async fn run(args: FencedStoreArgs) -> anyhow::Result<()> {
    check_listen(&args).await?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create --data-dir {}", args.data_dir.display()))?;
    let path: PathBuf = args.data_dir.join("fenced-store.redb");
    let store = RedbStore::open(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
    {
        let tx = store.database().begin_write()?;
        tx.open_table(VALUES)?;
        tx.open_table(BINDINGS)?;
        tx.commit()?;
    }
    let store = Arc::new(store);
    let app = Router::new()
        .route("/kv/{key}", get(get_value).put(put_value))
        .with_state(store);
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("--listen {}: cannot bind", args.listen))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "fenced-store: warning: serving plain, unauthenticated HTTP on {addr} (--insecure)"
        );
    }
    // A closed stdout does not stop the store (stderr says the same).
    let _ = crate::output::line(&format!("fenced-store listening on {addr}"));
    eprintln!(
        "fenced-store: serving on {addr}, data in {}",
        path.display()
    );
    let shutdown = crate::shutdown_signal()?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving HTTP")?;
    Ok(())
}

/// Refuses a `--listen` that is not loopback unless `--insecure`, before
/// anything is bound: the store authenticates no writer.
async fn check_listen(args: &FencedStoreArgs) -> anyhow::Result<()> {
    if args.insecure {
        return Ok(());
    }
    let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(&args.listen)
        .await
        .with_context(|| format!("--listen {}: not a HOST:PORT", args.listen))?
        .collect();
    if let Some(open) = addrs.iter().find(|a| !a.ip().is_loopback()) {
        anyhow::bail!(
            "--listen {}: {} is not a loopback address; the store speaks plain HTTP and authenticates no writer: add --insecure to serve it there anyway",
            args.listen,
            open.ip()
        );
    }
    Ok(())
}

/// A 400 for a key that is empty or too long; `None` for a usable key.
fn bad_key(key: &str) -> Option<Response> {
    (key.is_empty() || key.len() > MAX_KEY_BYTES).then(|| {
        json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": format!("key: must be 1..={MAX_KEY_BYTES} bytes")}),
        )
    })
}

async fn put_value(
    State(store): State<Arc<RedbStore>>,
    Path(key): Path<String>,
    headers: Result<ClaimHeaders, HeaderError>,
    body: Bytes,
) -> Response {
    if let Some(r) = bad_key(&key) {
        return r;
    }
    let headers = match headers {
        Ok(h) => h,
        Err(e) => {
            eprintln!("fenced-store: rejected PUT {key:?}: {e}");
            return e.into_response();
        }
    };
    let ClaimHeaders { resource, claim } = headers;
    let token = claim.token;
    // How the log lines and the reply name the grant's kind; a plain token
    // (the mutex rule) adds nothing, as before.
    let (kind_log, kind_json) = match claim.kind {
        Kind::Exclusive => (String::new(), None),
        Kind::Shared => (
            " mode=shared".to_string(),
            Some(("lock_mode", "shared".into())),
        ),
        Kind::Permit { slot } => (format!(" slot={slot}"), Some(("slot", slot.into()))),
    };
    let result = {
        let (store, key, resource) = (store.clone(), key.clone(), resource.clone());
        tokio::task::spawn_blocking(move || {
            store.check_claim_and_write(&resource, claim, |tx, accepted| {
                let mut bindings = tx.open_table(BINDINGS).map_err(store_err)?;
                let bound = bindings
                    .get(key.as_str())
                    .map_err(store_err)?
                    .map(|v| v.value().to_string());
                match bound {
                    Some(b) if b != resource => return Err(PutError::Mismatch { bound: b }),
                    Some(_) => {}
                    None => {
                        bindings
                            .insert(key.as_str(), resource.as_str())
                            .map_err(store_err)?;
                    }
                }
                let mut values = tx.open_table(VALUES).map_err(store_err)?;
                values
                    .insert(key.as_str(), body.as_ref())
                    .map_err(store_err)?;
                Ok(accepted)
            })
        })
        .await
        .unwrap_or_else(|e| Err(store_err(format!("write task failed: {e}"))))
    };
    match result {
        Ok(accepted) => {
            // What the check found, against the bound of the claim's rule.
            let how = match (claim.kind, accepted) {
                (Kind::Exclusive, Accepted::First) => "first token for this resource".to_string(),
                (Kind::Exclusive, Accepted::Same) => "same grant continuing".to_string(),
                (Kind::Exclusive, Accepted::Newer { previous }) => {
                    format!("newer grant (previous {previous})")
                }
                (Kind::Shared, Accepted::First) => "no exclusive token yet".to_string(),
                (Kind::Shared, Accepted::Same | Accepted::Newer { .. }) => {
                    "not below the highest exclusive token".to_string()
                }
                (Kind::Permit { slot }, Accepted::First) => format!("first token for slot {slot}"),
                (Kind::Permit { slot }, Accepted::Same) => {
                    format!("same grant continuing in slot {slot}")
                }
                (Kind::Permit { slot }, Accepted::Newer { previous }) => {
                    format!("newer grant in slot {slot} (previous {previous})")
                }
            };
            eprintln!(
                "fenced-store: accepted PUT {key:?} resource={resource:?} token={token}{kind_log}: {how}"
            );
            let mut body =
                serde_json::json!({"key": key, "resource": resource, "fencing_token": token});
            if let Some((name, value)) = kind_json {
                body[name] = value;
            }
            json(StatusCode::OK, body)
        }
        Err(PutError::Fence(e)) => {
            eprintln!(
                "fenced-store: rejected PUT {key:?} resource={resource:?} token={token}{kind_log}: {e}"
            );
            e.into_response()
        }
        Err(PutError::Mismatch { bound }) => {
            eprintln!(
                "fenced-store: rejected PUT {key:?} resource={resource:?} token={token}{kind_log}: key is bound to resource {bound:?}"
            );
            json(
                StatusCode::CONFLICT,
                serde_json::json!({
                    "error": "resource mismatch",
                    "key": key,
                    "bound_to": bound,
                    "presented_resource": resource,
                }),
            )
        }
    }
}

async fn get_value(State(store): State<Arc<RedbStore>>, Path(key): Path<String>) -> Response {
    if let Some(r) = bad_key(&key) {
        return r;
    }
    let read = tokio::task::spawn_blocking(move || -> Result<Option<Vec<u8>>, String> {
        let tx = store.database().begin_read().map_err(|e| e.to_string())?;
        let values = tx.open_table(VALUES).map_err(|e| e.to_string())?;
        let value = values
            .get(key.as_str())
            .map_err(|e| e.to_string())?
            .map(|v| v.value().to_vec());
        Ok(value)
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()));
    match read {
        Ok(Some(value)) => (StatusCode::OK, value).into_response(),
        Ok(None) => json(
            StatusCode::NOT_FOUND,
            serde_json::json!({"error": "not found"}),
        ),
        Err(e) => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            serde_json::json!({"error": "store failure", "detail": e}),
        ),
    }
}
