//! `warden cert create-ca | create-node | create-client | list`: minting and
//! listing the certificates of a certs dir (`warden_tls::mint`,
//! `warden_tls::inspect`). Offline: no cluster is contacted. Errors are one
//! line naming the file, exit 1. `warden cert revoke | unrevoke` contact
//! the cluster (`crate::deny_cmd`).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use warden_tls::inspect::{self, CertInfo, CertKind};
use warden_tls::mint::{self, CaOptions, CertOptions, Minted, Validity};

use crate::cli::{parse_duration, OutputFormat};
use crate::output::{self, Report, EXIT_ERROR, EXIT_OK};

/// `warden cert`.
#[derive(Debug, Args)]
pub struct CertArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CertCommand,
}

/// `warden cert ...`.
#[derive(Debug, Subcommand)]
pub enum CertCommand {
    /// Create a CA: its key at --ca-key (outside --certs-dir) and
    /// DIR/ca.crt; an existing ca.crt gets the new CA appended (a bundle
    /// trusting old and new, for a rotation one node at a time). With
    /// --cluster NAME, the certificates it signs name that cluster unless
    /// their own --cluster says otherwise.
    CreateCa(CreateCaArgs),
    /// Create DIR/node.crt and DIR/node.key for node --id, valid for each
    /// HOST (DNS names and IP addresses clients and peers dial), of cluster
    /// --cluster (default: the CA's).
    CreateNode(CreateNodeArgs),
    /// Create DIR/client.NAME.crt and DIR/client.NAME.key for principal
    /// NAME, of cluster --cluster (default: the CA's).
    CreateClient(CreateClientArgs),
    /// List every certificate in DIR: file, kind, name, SANs, serial,
    /// expiry.
    List(ListArgs),
    /// Deny one certificate cluster-wide, by SERIAL or --cert FILE (a
    /// stolen key): its handshakes fail and its open connections close.
    /// Needs admin; contacts the cluster.
    Revoke(crate::deny_cmd::RevokeCertArgs),
    /// Take a certificate's serial off the deny list. Needs admin.
    Unrevoke(crate::deny_cmd::RevokeCertArgs),
}

/// Flags every `warden cert` command takes.
#[derive(Debug, Args, Clone)]
pub struct CertsDirArgs {
    /// The certs dir (ca.crt, node.crt/node.key, client.NAME.crt/.key).
    #[arg(long, value_name = "DIR", env = "WARDEN_CERTS_DIR")]
    pub certs_dir: PathBuf,
    /// `json`: stdout carries exactly one JSON value; messages go to stderr.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Flags of the commands that sign.
#[derive(Debug, Args, Clone)]
pub struct SignArgs {
    /// The CA key (never inside --certs-dir).
    #[arg(long, value_name = "FILE")]
    pub ca_key: PathBuf,
    /// Replace existing files.
    #[arg(long)]
    pub overwrite: bool,
    /// How long the certificate is valid (from 1h ago, for clock skew)
    /// [default: 10y for a CA, 5y otherwise; never past the CA's expiry].
    #[arg(long, value_name = "DURATION", value_parser = parse_lifetime)]
    pub lifetime: Option<Duration>,
    /// The cluster the certificate belongs to, written as a SAN URI
    /// `warden://cluster/NAME` (1..=63 of lowercase ASCII letters, digits,
    /// '.', '_', '-'; starting with a letter or digit). A node whose
    /// certificate names a cluster refuses every peer and client
    /// certificate that names another or none. On create-ca: the default
    /// of the certificates it signs [default for create-node and
    /// create-client: the CA's, if it names one].
    #[arg(long, value_name = "NAME", value_parser = parse_cluster_name)]
    pub cluster: Option<String>,
}

/// `warden cert create-ca`.
#[derive(Debug, Args)]
pub struct CreateCaArgs {
    #[command(flatten)]
    pub dir: CertsDirArgs,
    #[command(flatten)]
    pub sign: SignArgs,
}

/// `warden cert create-node`.
#[derive(Debug, Args)]
pub struct CreateNodeArgs {
    /// The node's id (as its `warden server --id`).
    #[arg(long, value_name = "N", value_parser = parse_node_id)]
    pub id: u64,
    /// Hosts the certificate is valid for: DNS names and IP addresses.
    #[arg(value_name = "HOST", required = true)]
    pub hosts: Vec<String>,
    #[command(flatten)]
    pub dir: CertsDirArgs,
    #[command(flatten)]
    pub sign: SignArgs,
}

/// `warden cert create-client`.
#[derive(Debug, Args)]
pub struct CreateClientArgs {
    /// The principal: 1..=64 of ASCII letters, digits, '.', '_', '-', '@'
    /// (not starting with '.' or '-'; not `node` or node-like).
    #[arg(value_name = "NAME")]
    pub name: String,
    #[command(flatten)]
    pub dir: CertsDirArgs,
    #[command(flatten)]
    pub sign: SignArgs,
}

/// `warden cert list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub dir: CertsDirArgs,
}

/// Parses `--lifetime`: a humantime duration (e.g. `10y`, `90d`), > 0.
pub fn parse_lifetime(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(format!("{text:?}: a lifetime must be longer than 0"));
    }
    Ok(d)
}

/// Parses `--cluster`: a cluster name (`warden_tls::validate_cluster_name`).
pub fn parse_cluster_name(text: &str) -> Result<String, String> {
    warden_tls::validate_cluster_name(text)
        .map(|()| text.to_string())
        .map_err(|e| e.to_string())
}

/// Parses `--id`: a node id in 1..=2^53-1.
pub fn parse_node_id(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(id) if (1..=warden_tls::MAX_NODE_ID).contains(&id) => Ok(id),
        _ => Err(format!(
            "{text:?} is not a node id in 1..={}",
            warden_tls::MAX_NODE_ID
        )),
    }
}

/// Runs one `warden cert` command.
pub async fn run(args: CertArgs) -> Report {
    match args.command {
        CertCommand::CreateCa(a) => create_ca(a),
        CertCommand::CreateNode(a) => create_node(a),
        CertCommand::CreateClient(a) => create_client(a),
        CertCommand::List(a) => list(a),
        CertCommand::Revoke(a) => crate::deny_cmd::cert(a, true).await,
        CertCommand::Unrevoke(a) => crate::deny_cmd::cert(a, false).await,
    }
}

fn ok(stdout: String) -> Report {
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: EXIT_OK,
    }
}

fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn validity(lifetime: Option<Duration>) -> Option<Validity> {
    lifetime.map(Validity::lifetime)
}

fn create_ca(a: CreateCaArgs) -> Report {
    let options = CaOptions {
        overwrite: a.sign.overwrite,
        validity: validity(a.sign.lifetime),
        cluster: a.sign.cluster.clone(),
    };
    let ca = match mint::create_ca(&a.dir.certs_dir, &a.sign.ca_key, &options) {
        Ok(ca) => ca,
        Err(e) => return output::error(&e.to_string()),
    };
    match a.dir.output {
        OutputFormat::Json => ok(json!({
            "cert_file": ca.cert_file.display().to_string(),
            "key_file": ca.key_file.display().to_string(),
            "common_name": ca.common_name,
            "cas_in_bundle": ca.cas_in_bundle,
            "cluster": ca.cluster,
            "not_after": time(ca.not_after),
        })
        .to_string()),
        OutputFormat::Text => ok(format!(
            "created CA {:?}{} (valid until {}) in {}{}; its key is {} (keep it off the nodes)",
            ca.common_name,
            match &ca.cluster {
                Some(c) => format!(" for cluster {c:?}"),
                None => String::new(),
            },
            time(ca.not_after),
            ca.cert_file.display(),
            match ca.cas_in_bundle {
                1 => String::new(),
                n => format!(", which now holds {n} CAs"),
            },
            ca.key_file.display(),
        )),
    }
}

fn minted_json(m: &Minted, extra: (&str, Value)) -> Value {
    let mut v = json!({
        "cert_file": m.cert_file.display().to_string(),
        "key_file": m.key_file.display().to_string(),
        "common_name": m.common_name,
        "sans": m.sans,
        "cluster": m.cluster,
        "not_after": time(m.not_after),
        "cut_to_ca": m.cut_to_ca,
    });
    v[extra.0] = extra.1;
    v
}

fn minted_text(what: &str, m: &Minted) -> String {
    format!(
        "created {what}: {} and {} (valid until {}{}); SANs {}",
        m.cert_file.display(),
        m.key_file.display(),
        time(m.not_after),
        if m.cut_to_ca { ", the CA's expiry" } else { "" },
        m.sans.join(", "),
    )
}

fn cert_options(sign: &SignArgs) -> CertOptions {
    CertOptions {
        overwrite: sign.overwrite,
        validity: validity(sign.lifetime),
        cluster: sign.cluster.clone(),
    }
}

fn create_node(a: CreateNodeArgs) -> Report {
    let m = match mint::create_node(
        &a.dir.certs_dir,
        &a.sign.ca_key,
        a.id,
        &a.hosts,
        &cert_options(&a.sign),
    ) {
        Ok(m) => m,
        Err(e) => return output::error(&e.to_string()),
    };
    match a.dir.output {
        OutputFormat::Json => ok(minted_json(&m, ("node_id", json!(a.id))).to_string()),
        OutputFormat::Text => ok(minted_text(&format!("node {}'s certificate", a.id), &m)),
    }
}

fn create_client(a: CreateClientArgs) -> Report {
    let m = match mint::create_client(
        &a.dir.certs_dir,
        &a.sign.ca_key,
        &a.name,
        &cert_options(&a.sign),
    ) {
        Ok(m) => m,
        Err(e) => return output::error(&e.to_string()),
    };
    match a.dir.output {
        OutputFormat::Json => ok(minted_json(&m, ("principal", json!(a.name))).to_string()),
        OutputFormat::Text => ok(minted_text(
            &format!("client {:?}'s certificate", a.name),
            &m,
        )),
    }
}

/// KIND and NAME columns: `ca` + CN, `node` + id, `client` + principal.
fn kind_and_name(c: &CertInfo) -> (&'static str, String) {
    match &c.kind {
        CertKind::Ca => ("ca", c.subject.clone()),
        CertKind::Node(id) => ("node", id.to_string()),
        CertKind::Client(name) => ("client", name.clone()),
        CertKind::Unknown(why) => ("unknown", format!("{} ({why})", c.subject)),
    }
}

fn file_column(c: &CertInfo) -> String {
    let name = c
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if c.kind == CertKind::Ca && c.index > 0 {
        format!("{name}#{}", c.index + 1)
    } else {
        name
    }
}

fn list(a: ListArgs) -> Report {
    let listing = match inspect::list(&a.dir.certs_dir) {
        Ok(l) => l,
        Err(e) => return output::error(&e.to_string()),
    };
    let problems: Vec<String> = listing
        .problems
        .iter()
        .map(|p| format!("error: {}", output::one_line(&p.to_string())))
        .collect();
    let stdout = match a.dir.output {
        OutputFormat::Json => json!({
            "certs_dir": a.dir.certs_dir.display().to_string(),
            "certificates": listing.certs.iter().map(|c| {
                let (kind, name) = kind_and_name(c);
                json!({
                    "file": c.file.display().to_string(),
                    "index": c.index,
                    "kind": kind,
                    "name": name,
                    "node_id": match c.kind { CertKind::Node(id) => Some(id), _ => None },
                    "principal": match &c.kind { CertKind::Client(p) => Some(p.clone()), _ => None },
                    "subject": c.subject,
                    "issuer": c.issuer,
                    "serial": c.serial,
                    "sans": c.sans,
                    "cluster": c.cluster,
                    "not_before": time(c.not_before),
                    "not_after": time(c.not_after),
                    "expired": c.expired,
                })
            }).collect::<Vec<_>>(),
            "problems": listing.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        })
        .to_string(),
        OutputFormat::Text => table(&listing.certs),
    };
    Report {
        stdout: Some(stdout),
        stderr: (!problems.is_empty()).then(|| problems.join("\n")),
        exit_code: if problems.is_empty() {
            EXIT_OK
        } else {
            EXIT_ERROR
        },
    }
}

/// FILE KIND NAME SANS SERIAL EXPIRES, one row per certificate (SERIAL
/// as `warden cert revoke` takes it).
fn table(certs: &[CertInfo]) -> String {
    let mut rows = vec![[
        "FILE".to_string(),
        "KIND".to_string(),
        "NAME".to_string(),
        "SANS".to_string(),
        "SERIAL".to_string(),
        "EXPIRES".to_string(),
    ]];
    for c in certs {
        let (kind, name) = kind_and_name(c);
        rows.push([
            file_column(c),
            kind.to_string(),
            name,
            if c.sans.is_empty() {
                "-".to_string()
            } else {
                c.sans.join(",")
            },
            c.serial.clone(),
            format!(
                "{}{}",
                time(c.not_after),
                if c.expired { " EXPIRED" } else { "" }
            ),
        ]);
    }
    if certs.is_empty() {
        return "no certificates".to_string();
    }
    let widths: Vec<usize> = (0..6)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (i, cell) in r.iter().enumerate() {
                if i == 5 {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn run_args(args: &[&str]) -> Report {
        let cli =
            crate::cli::Cli::try_parse_from(std::iter::once("warden").chain(args.iter().copied()))
                .unwrap();
        match cli.command {
            crate::cli::Command::Cert(a) => tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime")
                .block_on(run(a)),
            other => panic!("not cert: {other:?}"),
        }
    }

    // The whole `warden cert` flow writes a certs dir the TLS layer loads,
    // and `list` shows it; JSON output is one value.
    #[test]
    fn create_and_list_a_certs_dir() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("certs");
        let key = root.path().join("ca.key");
        let (d, k) = (dir.to_str().unwrap(), key.to_str().unwrap());
        let r = run_args(&["cert", "create-ca", "--certs-dir", d, "--ca-key", k]);
        assert_eq!(r.exit_code, 0, "{r:?}");
        assert!(
            r.stdout
                .as_deref()
                .unwrap()
                .starts_with("created CA \"Warden CA "),
            "{r:?}"
        );
        let r = run_args(&[
            "cert",
            "create-node",
            "--certs-dir",
            d,
            "--ca-key",
            k,
            "--id",
            "3",
            "127.0.0.1",
            "node3.example.com",
            "--output",
            "json",
        ]);
        assert_eq!(r.exit_code, 0, "{r:?}");
        let v: Value = serde_json::from_str(r.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["node_id"], 3);
        assert_eq!(
            v["sans"],
            json!([
                "IP:127.0.0.1",
                "DNS:node3.example.com",
                "URI:warden://node/3"
            ])
        );
        let r = run_args(&[
            "cert",
            "create-client",
            "alice",
            "--certs-dir",
            d,
            "--ca-key",
            k,
            "--lifetime",
            "30d",
        ]);
        assert_eq!(r.exit_code, 0, "{r:?}");
        assert_eq!(warden_tls::NodeCerts::load(&dir).unwrap().node_id(), 3);
        assert_eq!(
            warden_tls::ClientCerts::load(&dir, "alice").unwrap().user(),
            "alice"
        );

        let r = run_args(&["cert", "list", "--certs-dir", d]);
        assert_eq!(r.exit_code, 0, "{r:?}");
        let text = r.stdout.unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].starts_with("FILE")
                && lines[0].contains("SERIAL")
                && lines[0].contains("EXPIRES"),
            "{text}"
        );
        assert!(
            lines[1].starts_with("ca.crt") && lines[1].contains("Warden CA"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("client.alice.crt") && lines[2].contains("client  alice"),
            "{text}"
        );
        assert!(
            lines[3].contains("node    3") && lines[3].contains("URI:warden://node/3"),
            "{text}"
        );
        let r = run_args(&["cert", "list", "--certs-dir", d, "--output", "json"]);
        let v: Value = serde_json::from_str(r.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["certificates"].as_array().unwrap().len(), 3);
        assert_eq!(v["certificates"][2]["node_id"], 3);
        assert_eq!(v["certificates"][1]["principal"], "alice");
        assert_eq!(v["certificates"][1]["expired"], false);
    }

    // docs/security.md "Certificates": `--cluster` on create-ca is the
    // default of what the CA signs, `--cluster` on create-node and
    // create-client overrides it, JSON and `list` show it, and a bad name
    // is refused by the parser naming the flag.
    #[test]
    fn cluster_names_go_into_the_certificates() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("certs");
        let key = root.path().join("ca.key");
        let (d, k) = (dir.to_str().unwrap(), key.to_str().unwrap());
        let r = run_args(&[
            "cert",
            "create-ca",
            "--certs-dir",
            d,
            "--ca-key",
            k,
            "--cluster",
            "prod",
        ]);
        assert_eq!(r.exit_code, 0, "{r:?}");
        assert!(
            r.stdout
                .as_deref()
                .unwrap()
                .contains("for cluster \"prod\""),
            "{r:?}"
        );
        let r = run_args(&[
            "cert",
            "create-node",
            "--certs-dir",
            d,
            "--ca-key",
            k,
            "--id",
            "1",
            "127.0.0.1",
            "--output",
            "json",
        ]);
        let v: Value = serde_json::from_str(r.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["cluster"], "prod");
        assert_eq!(
            v["sans"],
            json!([
                "IP:127.0.0.1",
                "URI:warden://node/1",
                "URI:warden://cluster/prod"
            ])
        );
        let r = run_args(&[
            "cert",
            "create-client",
            "alice",
            "--certs-dir",
            d,
            "--ca-key",
            k,
            "--cluster",
            "staging",
            "--output",
            "json",
        ]);
        let v: Value = serde_json::from_str(r.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["cluster"], "staging");
        let r = run_args(&["cert", "list", "--certs-dir", d, "--output", "json"]);
        let v: Value = serde_json::from_str(r.stdout.as_deref().unwrap()).unwrap();
        let clusters: Vec<&Value> = v["certificates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["cluster"])
            .collect();
        assert_eq!(
            clusters,
            [&json!("prod"), &json!("staging"), &json!("prod")]
        );
        let e = crate::cli::Cli::try_parse_from([
            "warden",
            "cert",
            "create-ca",
            "--certs-dir",
            d,
            "--ca-key",
            k,
            "--cluster",
            "Prod",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("--cluster") && e.contains("lowercase"), "{e}");
    }

    // What bad input gets: one line on stderr naming the file, exit 1,
    // nothing on stdout.
    #[test]
    fn errors_are_one_line_naming_the_file() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("certs");
        let d = dir.to_str().unwrap();
        let inside = dir.join("ca.key");
        let r = run_args(&[
            "cert",
            "create-ca",
            "--certs-dir",
            d,
            "--ca-key",
            inside.to_str().unwrap(),
        ]);
        assert_eq!((r.exit_code, r.stdout.as_deref()), (1, None));
        let e = r.stderr.unwrap();
        assert!(
            e.starts_with("error: --ca-key ") && e.contains("inside --certs-dir"),
            "{e}"
        );
        assert!(!e.contains('\n'));

        let missing_key = root.path().join("nope.key");
        let r = run_args(&[
            "cert",
            "create-client",
            "bob",
            "--certs-dir",
            d,
            "--ca-key",
            missing_key.to_str().unwrap(),
        ]);
        assert_eq!(r.exit_code, 1);
        let e = r.stderr.unwrap();
        assert!(
            e.contains(&missing_key.display().to_string()) && e.contains("missing"),
            "{e}"
        );

        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.crt"), "garbage").unwrap();
        let r = run_args(&["cert", "list", "--certs-dir", d]);
        assert_eq!(r.exit_code, 1);
        let e = r.stderr.unwrap();
        assert!(
            e.starts_with("error: ") && e.contains("ca.crt") && e.contains("not PEM"),
            "{e}"
        );
    }
}
