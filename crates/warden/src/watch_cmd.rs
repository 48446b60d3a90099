//! `warden watch RESOURCE | --prefix P`: stream lock events until Ctrl-C.
//!
//! With `--output json`, stdout carries one JSON object per event and line:
//! `{"index","resource","event","lease_id","fencing_token"}`. When the node
//! serving the watch goes away, the watch moves to another endpoint and
//! resumes after the last event it printed (no gap, no duplicate).

use clap::{ArgGroup, Args};
use serde_json::json;
use warden_client::{WatchError, WatchEvent, WatchTarget};

use crate::cli::{ClientArgs, OutputFormat};
use crate::commands::{check_resource, connect_long_lived, describe_error};
use crate::output::{Report, EXIT_OK};

/// `warden watch`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["resource", "prefix"])))]
pub struct WatchArgs {
    /// The resource to watch (exact name).
    pub resource: Option<String>,
    /// Watch every resource whose name starts with P ("" = all).
    #[arg(long, value_name = "P")]
    pub prefix: Option<String>,
    /// First log index to show (resume with the last index seen + 1);
    /// 0 = only events from now on. Older than the node's window (the last
    /// 100,000 events) → error "compacted" naming the oldest index kept.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub start_index: u64,
    /// Stop after this many events (default: until Ctrl-C).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// One event as a line of output.
pub fn event_line(e: &WatchEvent, format: OutputFormat) -> String {
    match format {
        OutputFormat::Json => json!({
            "index": e.index,
            "resource": e.resource,
            "event": e.event,
            "lease_id": e.lease_id,
            "fencing_token": e.fencing_token,
        })
        .to_string(),
        OutputFormat::Text => {
            let mut line = format!("{} {:?} {}", e.index, e.resource, e.event);
            if e.lease_id != 0 {
                line.push_str(&format!(" lease {}", e.lease_id));
            }
            if e.fencing_token != 0 {
                line.push_str(&format!(" fencing token {}", e.fencing_token));
            }
            line
        }
    }
}

fn done() -> Report {
    Report {
        stdout: None,
        stderr: None,
        exit_code: EXIT_OK,
    }
}

/// Runs the watch; events are printed as they come, the report is the end.
pub async fn run(args: WatchArgs) -> Report {
    let target = match (&args.resource, &args.prefix) {
        (Some(r), None) => {
            if let Err(e) = check_resource(r) {
                return crate::output::error(&e);
            }
            WatchTarget::Resource(r.clone())
        }
        (None, Some(p)) => WatchTarget::Prefix(p.clone()),
        _ => return crate::output::error("pass exactly one of RESOURCE and --prefix"),
    };
    let client = match connect_long_lived(&args.client).await {
        Ok(c) => c,
        Err(e) => return crate::output::error(&e),
    };
    let failed = |e: WatchError| match e {
        WatchError::Client(c) => crate::output::error(&describe_error(&c)),
        compacted => crate::output::error(&compacted.to_string()),
    };
    let watch = async {
        let mut watcher = client.watch(target, args.start_index).await?;
        let mut printed = 0u64;
        while args.count.is_none_or(|n| printed < n) {
            let e = watcher.next().await?;
            if let Err(e) = crate::output::line(&event_line(&e, args.client.output)) {
                // The reader closed stdout (`| head -1`): the stream ends.
                return Ok(Some(e));
            }
            printed += 1;
        }
        Ok::<Option<std::io::Error>, WatchError>(None)
    };
    tokio::select! {
        r = watch => match r {
            Ok(None) => done(),
            Ok(Some(e)) => Report {
                stdout: None,
                stderr: None,
                exit_code: crate::output::stdout_failed(&e, EXIT_OK),
            },
            Err(e) => failed(e),
        },
        _ = tokio::signal::ctrl_c() => done(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // CLI contract: one JSON object per event with exactly
    // these keys; text mode is one readable line.
    #[test]
    fn event_lines_follow_the_contract() {
        let e = WatchEvent {
            index: 42,
            resource: "db".into(),
            event: "granted".into(),
            lease_id: 7,
            fencing_token: 3,
        };
        let v: serde_json::Value =
            serde_json::from_str(&event_line(&e, OutputFormat::Json)).expect("json");
        assert_eq!(
            v,
            json!({"index": 42, "resource": "db", "event": "granted", "lease_id": 7, "fencing_token": 3})
        );
        assert_eq!(
            event_line(&e, OutputFormat::Text),
            "42 \"db\" granted lease 7 fencing token 3"
        );
    }
}
