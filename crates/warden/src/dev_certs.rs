//! The certificates of a local cluster (`warden dev`, `warden demo
//! split-brain`): minted under its data dir with warden-tls' `mint` on the
//! first run, reused (and checked) on later runs.
//!
//! - `DIR/ca.key`: the CA key (mode 0600), outside every certs dir.
//! - `DIR/certs/`: `ca.crt`, `client.root.crt`, `client.root.key`: the
//!   clients' certs dir (`export WARDEN_CERTS_DIR=DIR/certs`).
//! - `DIR/certs/node-N/`: `ca.crt`, `node.crt`, `node.key`: node N's
//!   `--certs-dir`; SANs `127.0.0.1`, `::1`, `localhost` and
//!   `warden://node/N`.
//!
//! Add a principal with `warden cert create-client NAME --certs-dir
//! DIR/certs --ca-key DIR/ca.key`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use warden_tls::mint::{self, CaOptions, CertOptions, LOOPBACK_HOSTS};
use warden_tls::{ClientCerts, NodeCerts, CA_CERT, NODE_CERT};

/// The principal whose certificate a local cluster mints: `root`.
pub const ROOT: &str = warden_client::DEFAULT_USER;

/// Where a local cluster's certificates are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevCerts {
    /// `DIR/ca.key`.
    pub ca_key: PathBuf,
    /// `DIR/certs`: the clients' certs dir, with `root`'s certificate.
    pub client_dir: PathBuf,
    /// `DIR/certs/node-N` by node id.
    pub node_dirs: BTreeMap<u64, PathBuf>,
}

/// Mints what is missing of the layout above for `node_ids` under `dir`,
/// then loads every certs dir as its user will (the CA bundle, chains,
/// keys, validity, identities), so a broken, expired or mismatched file is
/// named now rather than by a node's refusal to start.
pub fn ensure(dir: &Path, node_ids: &[u64]) -> anyhow::Result<DevCerts> {
    let certs = DevCerts {
        ca_key: dir.join("ca.key"),
        client_dir: dir.join("certs"),
        node_dirs: node_ids
            .iter()
            .map(|&id| (id, dir.join("certs").join(format!("node-{id}"))))
            .collect(),
    };
    let ca_file = certs.client_dir.join(CA_CERT);
    if !ca_file.exists() {
        mint::create_ca(&certs.client_dir, &certs.ca_key, &CaOptions::default())
            .with_context(|| format!("cannot mint the dev CA in {}", dir.display()))?;
    }
    if !certs
        .client_dir
        .join(warden_tls::client_cert_file(ROOT))
        .exists()
    {
        mint::create_client(
            &certs.client_dir,
            &certs.ca_key,
            ROOT,
            &CertOptions::default(),
        )
        .with_context(|| format!("cannot mint {ROOT}'s client certificate"))?;
    }
    for (&id, node_dir) in &certs.node_dirs {
        if !node_dir.join(NODE_CERT).exists() {
            std::fs::create_dir_all(node_dir)
                .with_context(|| format!("cannot create {}", node_dir.display()))?;
            std::fs::copy(&ca_file, node_dir.join(CA_CERT)).with_context(|| {
                format!(
                    "cannot copy {} into {}",
                    ca_file.display(),
                    node_dir.display()
                )
            })?;
            mint::create_node(
                node_dir,
                &certs.ca_key,
                id,
                &LOOPBACK_HOSTS,
                &CertOptions::default(),
            )
            .with_context(|| format!("cannot mint node {id}'s certificate"))?;
        }
    }
    ClientCerts::load(&certs.client_dir, ROOT)?;
    for (&id, node_dir) in &certs.node_dirs {
        NodeCerts::load_for(node_dir, id)?;
    }
    Ok(certs)
}

/// `text` as one shell word: unchanged when it is made of characters no
/// shell treats specially, else in single quotes.
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `warden dev` is secure by default: the first run mints a CA (its key
    // 0600 outside every certs dir), node certificates naming each node
    // and root's client certificate; a second run reuses them unchanged; a
    // node added later gets its own.
    #[test]
    fn mints_once_and_reuses() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let certs = ensure(tmp.path(), &[1, 2, 3]).unwrap();
        assert_eq!(certs.client_dir, tmp.path().join("certs"));
        assert_eq!(certs.ca_key, tmp.path().join("ca.key"));
        let mode = std::fs::metadata(&certs.ca_key)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        for dir in std::iter::once(&certs.client_dir).chain(certs.node_dirs.values()) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let name = entry.unwrap().file_name();
                assert_ne!(name, "ca.key", "CA key inside {}", dir.display());
            }
        }
        assert_eq!(
            NodeCerts::load_for(&certs.node_dirs[&2], 2)
                .unwrap()
                .node_id(),
            2
        );
        let root_cert = std::fs::read(certs.client_dir.join("client.root.crt")).unwrap();

        let again = ensure(tmp.path(), &[1, 2, 3, 4]).unwrap();
        assert_eq!(
            std::fs::read(again.client_dir.join("client.root.crt")).unwrap(),
            root_cert
        );
        assert_eq!(
            NodeCerts::load_for(&again.node_dirs[&4], 4)
                .unwrap()
                .node_id(),
            4
        );
    }

    // "What bad input gets": a damaged certs dir is named, never patched
    // over or a panic.
    #[test]
    fn a_damaged_set_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let certs = ensure(tmp.path(), &[1]).unwrap();
        let key = certs.client_dir.join("client.root.key");
        std::fs::write(&key, "garbage").unwrap();
        let e = format!("{:#}", ensure(tmp.path(), &[1]).unwrap_err());
        assert!(e.contains(&key.display().to_string()), "{e}");
    }

    // The printed export line pastes into a shell as one word.
    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("/tmp/warden-dev/certs"), "/tmp/warden-dev/certs");
        assert_eq!(shell_word("/tmp/my dev"), "'/tmp/my dev'");
        assert_eq!(shell_word("/tmp/it's"), r"'/tmp/it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
