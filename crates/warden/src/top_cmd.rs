//! `warden top [PREFIX] [--limit N] [--watch]`: the most contended locks
//! now, hottest first (queue length, then the oldest waiter's age, then
//! grants in the last minute), over [`Admin::top_locks`](warden_client::Admin::top_locks).
//!
//! Text: a table, one resource per line. `--output json`: one JSON array per
//! answer (with `--watch`, one array per line, every second). `--watch`
//! asks again every [`WATCH_INTERVAL`] until Ctrl-C.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use warden_client::{ClientError, HotLock};

use crate::admin_cmd::admin;
use crate::cli::{ClientArgs, OutputFormat};
use crate::commands::describe_error;
use crate::output::{self, Report};

/// How often `--watch` asks again.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// The most locks one `warden top` may ask for (the server's limit).
pub const MAX_LIMIT: u32 = warden_server::node::top::MAX_TOP_LIMIT;

/// `warden top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Only locks whose name starts with PREFIX (default: all).
    pub prefix: Option<String>,
    /// How many locks to show (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LIMIT)))]
    pub limit: u32,
    /// Ask again every second until Ctrl-C.
    #[arg(long)]
    pub watch: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A listed key as shown: `(true, NAME)` for election NAME, else
/// `(false, RESOURCE)`.
fn shown_name(lock: &HotLock) -> (bool, &str) {
    match lock.election() {
        Some(name) => (true, name),
        None => (false, &lock.resource),
    }
}

/// The JSON contract of `warden top --output json`: an array, hottest first.
pub fn top_json(locks: &[HotLock]) -> Value {
    Value::Array(
        locks
            .iter()
            .map(|l| {
                let (election, name) = shown_name(l);
                json!({
                    "resource": name,
                    "election": election,
                    "queue_length": l.queue_length,
                    "oldest_waiter_age_ms": l.oldest_waiter_age_ms,
                    "grants_last_minute": l.grants_last_minute,
                    "expiries_last_minute": l.expiries_last_minute,
                    // null when no grant of the last minute came from the queue.
                    "wait_p99_ms": l.wait_p99_ms,
                })
            })
            .collect(),
    )
}

/// The text of `warden top`: a header and one row per lock; names are
/// quoted (Rust's `{:?}`), so a control character cannot reach the terminal.
pub fn top_text(locks: &[HotLock]) -> String {
    if locks.is_empty() {
        return "no contended or recently used locks".to_string();
    }
    let rows: Vec<[String; 6]> = locks
        .iter()
        .map(|l| {
            let name = match shown_name(l) {
                (true, name) => format!("election {name:?}"),
                (false, resource) => format!("{resource:?}"),
            };
            [
                name,
                l.queue_length.to_string(),
                if l.queue_length == 0 {
                    "-".to_string()
                } else {
                    output::ms(l.oldest_waiter_age_ms)
                },
                l.grants_last_minute.to_string(),
                l.expiries_last_minute.to_string(),
                l.wait_p99_ms.map_or_else(|| "-".to_string(), output::ms),
            ]
        })
        .collect();
    let header = [
        "RESOURCE",
        "QUEUE",
        "OLDEST WAITER",
        "GRANTS/1m",
        "EXPIRIES/1m",
        "WAIT p99",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![line(header.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

fn rendered(locks: &[HotLock], format: OutputFormat) -> String {
    match format {
        OutputFormat::Json => top_json(locks).to_string(),
        OutputFormat::Text => top_text(locks),
    }
}

/// `warden top [PREFIX]`.
pub async fn run(args: TopArgs) -> Report {
    let prefix = args.prefix.clone().unwrap_or_default();
    if let Err(report) = crate::admin_cmd::check_prefix(&prefix) {
        return report;
    }
    let admin = match admin(&args.client).await {
        Ok(a) => a,
        Err(report) => return report,
    };
    let fail = |e: ClientError| output::error(&describe_error(&e));
    if !args.watch {
        return match admin.top_locks(prefix, args.limit).await {
            Ok(top) => Report {
                stdout: Some(rendered(&top.locks, args.client.output)),
                stderr: None,
                exit_code: output::EXIT_OK,
            },
            Err(e) => fail(e),
        };
    }
    let clear = args.client.output == OutputFormat::Text
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let refresh = async {
        let mut tick = tokio::time::interval(WATCH_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let top = admin.top_locks(prefix.clone(), args.limit).await?;
            let mut text = rendered(&top.locks, args.client.output);
            if clear {
                // Clear the screen and home the cursor, like top(1).
                text = format!("\x1b[2J\x1b[H{text}");
            } else if args.client.output == OutputFormat::Text {
                text.push('\n');
            }
            if let Err(e) = output::line(&text) {
                // The reader closed stdout (`| head`): the watch ends.
                return Ok::<Option<std::io::Error>, ClientError>(Some(e));
            }
        }
    };
    tokio::select! {
        r = refresh => match r {
            Ok(Some(e)) => Report {
                stdout: None,
                stderr: None,
                exit_code: output::stdout_failed(&e, output::EXIT_OK),
            },
            Ok(None) => Report { stdout: None, stderr: None, exit_code: output::EXIT_OK },
            Err(e) => fail(e),
        },
        _ = tokio::signal::ctrl_c() => Report {
            stdout: None,
            stderr: None,
            exit_code: output::EXIT_OK,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hot(resource: &str, queue_length: u64, wait_p99_ms: Option<u64>) -> HotLock {
        HotLock {
            resource: resource.into(),
            queue_length,
            oldest_waiter_age_ms: if queue_length > 0 { 1_500 } else { 0 },
            grants_last_minute: 3,
            expiries_last_minute: 1,
            wait_p99_ms,
        }
    }

    // CLI contract (`warden top --output json`): an array in the server's
    // order with exactly these keys; an election shows by its name.
    #[test]
    fn top_json_has_the_contract_shape() {
        let key = warden_client::election_key("scheduler");
        let v = top_json(&[hot("orders", 8, Some(40)), hot(&key, 0, None)]);
        assert_eq!(
            v,
            json!([
                {"resource": "orders", "election": false, "queue_length": 8,
                 "oldest_waiter_age_ms": 1500, "grants_last_minute": 3,
                 "expiries_last_minute": 1, "wait_p99_ms": 40},
                {"resource": "scheduler", "election": true, "queue_length": 0,
                 "oldest_waiter_age_ms": 0, "grants_last_minute": 3,
                 "expiries_last_minute": 1, "wait_p99_ms": null},
            ])
        );
    }

    // CLI contract (`warden top`): a header and aligned rows; a name with
    // a control character is quoted, never written raw to the terminal.
    #[test]
    fn top_text_is_a_table_with_quoted_names() {
        let text = top_text(&[hot("orders", 8, Some(40)), hot("evil\x1b[2J", 0, None)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("RESOURCE"), "{text}");
        assert!(lines[1].starts_with("\"orders\""), "{text}");
        assert!(
            lines[1].contains("  8  ")
                && lines[1].contains("1s 500ms")
                && lines[1].ends_with("40ms"),
            "{text}"
        );
        assert!(lines[2].starts_with("\"evil\\u{1b}[2J\""), "{text}");
        assert!(!text.contains('\x1b'), "{text}");
        assert_eq!(top_text(&[]), "no contended or recently used locks");
    }
}
