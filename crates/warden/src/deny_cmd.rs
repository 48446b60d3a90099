//! The deny list (docs/security.md "A key was stolen"): `warden user deny |
//! undeny | denied` and `warden cert revoke | unrevoke`, over the client's
//! [`Admin`](warden_client::Admin) deny calls.
//!
//! Each needs `admin` on `""`. `user deny NAME` denies every certificate of
//! a principal; `cert revoke` denies one certificate, by its serial (as
//! `warden cert list` prints it) or by its file (`--cert FILE`, whose
//! serial is read here). Once the change applies on a node, that node
//! refuses the certificate's handshakes and closes its open connections.
//! A denied principal's commands are refused and its queued waits end; its
//! grants stay until they expire or an admin revokes its leases (`warden
//! lease revoke`). Bad input names the argument and sends nothing. Each
//! change carries one request id for every retry (S7).

use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use warden_client::{DenyList, DenyTarget};

use crate::admin_cmd::admin;
use crate::cli::{ClientArgs, OutputFormat};
use crate::commands::describe_error;
use crate::output::{self, Report};

/// `warden user deny | undeny PRINCIPAL`.
#[derive(Debug, Args)]
pub struct DenyUserArgs {
    /// The principal (the name in its client certificates).
    pub principal: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `warden cert revoke | unrevoke (SERIAL | --cert FILE)`.
#[derive(Debug, Args)]
pub struct RevokeCertArgs {
    /// The certificate's serial, hex as `warden cert list` or `openssl
    /// x509 -serial` print it (colons, case and leading zeros are ignored).
    #[arg(required_unless_present = "cert", conflicts_with = "cert")]
    pub serial: Option<String>,
    /// The certificate file (PEM) whose serial to use.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Just the client flags (`warden user denied`).
#[derive(Debug, Args)]
pub struct DeniedArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

fn ok(stdout: String) -> Report {
    Report {
        stdout: Some(stdout),
        stderr: None,
        exit_code: output::EXIT_OK,
    }
}

/// `warden user deny` (`deny` true) or `undeny`.
pub async fn user(a: DenyUserArgs, deny: bool) -> Report {
    if let Err(e) = warden_core::validate::principal(&a.principal) {
        return output::error(&format!("PRINCIPAL: {}", e.message));
    }
    if let Err(e) = warden_tls::validate_principal(&a.principal) {
        return output::error(&format!(
            "PRINCIPAL: {e}; a node's certificate is denied by its serial (warden cert revoke --cert node.crt)"
        ));
    }
    if deny && a.principal == warden_core::auth::ROOT {
        return output::error(
            "PRINCIPAL: root cannot be denied; revoke the serial of its stolen certificate (warden cert revoke --cert FILE) and issue a new one",
        );
    }
    let target = DenyTarget::User(a.principal.clone());
    change(
        &a.client,
        target,
        deny,
        json!({"user": a.principal}),
        &format!("principal {}", a.principal),
    )
    .await
}

/// `warden cert revoke` (`deny` true) or `unrevoke`.
pub async fn cert(a: RevokeCertArgs, deny: bool) -> Report {
    let serial = match (&a.serial, &a.cert) {
        (Some(s), _) => warden_tls::normalize_serial(s).map_err(|e| format!("SERIAL: {e}")),
        (None, Some(file)) => {
            serial_of_file(file).map_err(|e| format!("--cert {}: {e}", file.display()))
        }
        (None, None) => Err("give SERIAL or --cert FILE".to_owned()),
    };
    let serial = match serial {
        Ok(s) => s,
        Err(e) => return output::error(&e),
    };
    let target = DenyTarget::Serial(serial.clone());
    change(
        &a.client,
        target,
        deny,
        json!({"serial": serial}),
        &format!("certificate serial {serial}"),
    )
    .await
}

/// The serial of the first certificate in a PEM file.
fn serial_of_file(file: &std::path::Path) -> Result<String, String> {
    use rustls_pki_types::pem::PemObject;
    let der = rustls_pki_types::CertificateDer::from_pem_file(file).map_err(|e| e.to_string())?;
    warden_tls::serial_of(&der).map_err(|e| e.to_string())
}

async fn change(
    client: &ClientArgs,
    target: DenyTarget,
    deny: bool,
    mut json: serde_json::Value,
    what: &str,
) -> Report {
    let admin = match admin(client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let result = if deny {
        admin.deny(target).await
    } else {
        admin.undeny(target).await
    };
    if let Err(e) = result {
        return output::error(&describe_error(&e));
    }
    json["denied"] = json!(deny);
    ok(match client.output {
        OutputFormat::Json => json.to_string(),
        OutputFormat::Text if deny => format!(
            "{what} denied: its handshakes fail and its open connections close on each node as the change applies there"
        ),
        OutputFormat::Text => format!("{what} no longer denied (a node's deny file may still deny it)"),
    })
}

/// `warden user denied`: the replicated deny list and the serving node's
/// deny file.
pub async fn list(a: DeniedArgs) -> Report {
    let admin = match admin(&a.client).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    match admin.denied().await {
        Ok(d) => ok(match a.client.output {
            OutputFormat::Json => json!({
                "users": d.users,
                "serials": d.serials,
                "file_users": d.file_users,
                "file_serials": d.file_serials,
                "read_index": d.read_index,
            })
            .to_string(),
            OutputFormat::Text => list_text(&d),
        }),
        Err(e) => output::error(&describe_error(&e)),
    }
}

fn list_text(d: &DenyList) -> String {
    let mut lines = Vec::new();
    let mut section = |title: &str, items: &[String]| {
        if !items.is_empty() {
            lines.push(format!("{title}: {}", items.join(", ")));
        }
    };
    section("denied principals", &d.users);
    section("denied serials", &d.serials);
    section("this node's deny file: principals", &d.file_users);
    section("this node's deny file: serials", &d.file_serials);
    if lines.is_empty() {
        return "nothing is denied".to_owned();
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    // The text form names each part and says when the list is empty.
    #[test]
    fn the_deny_list_text_names_each_part() {
        assert_eq!(list_text(&DenyList::default()), "nothing is denied");
        let d = DenyList {
            users: vec!["mallory".into()],
            serials: vec!["1f".into(), "2a".into()],
            file_users: vec![],
            file_serials: vec!["3b".into()],
            read_index: 9,
        };
        assert_eq!(
            list_text(&d),
            "denied principals: mallory\ndenied serials: 1f, 2a\nthis node's deny file: serials: 3b"
        );
    }
}
