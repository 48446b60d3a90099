//! The test binary's certificates, minted once (on first use) with
//! warden-tls' `mint` under the target's tmp dir, for every cluster of the
//! binary:
//!
//! - `ca.key`: the CA key, outside every certs dir (for tests that mint
//!   more with `warden cert ... --ca-key` or `warden_tls::mint`).
//! - `clients/`: `ca.crt` and `client.NAME.crt` / `.key` for each of
//!   [`PRINCIPALS`]; more with [`TestCerts::client_dir_with`].
//! - `node-N/`: `ca.crt`, `node.crt`, `node.key` for node N (SANs
//!   `127.0.0.1`, `::1`, `localhost`, `warden://node/N`), minted when a
//!   test first asks for node N ([`TestCerts::node_dir`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use warden_tls::mint::{self, CertOptions, LOOPBACK_HOSTS};

/// The principals every test binary has certificates for. `root` holds
/// `admin` on everything from the start; the others hold nothing until a
/// test grants them a role.
pub const PRINCIPALS: [&str; 5] = ["root", "alice", "bob", "carol", "mallory"];

/// One CA and its certificates; see the module docs.
#[derive(Debug)]
pub struct TestCerts {
    /// The dir holding it all.
    pub root: PathBuf,
    /// The CA key.
    pub ca_key: PathBuf,
    /// The clients' certs dir: what `--certs-dir` of a CLI call names.
    pub client_dir: PathBuf,
    /// What has been minted since start: node ids and extra principals.
    minted: Mutex<(BTreeSet<u64>, BTreeSet<String>)>,
}

/// The binary's certificates (minted on the first call).
pub fn certs() -> &'static TestCerts {
    static CERTS: OnceLock<TestCerts> = OnceLock::new();
    CERTS.get_or_init(|| {
        // Kept for the whole process (statics are never dropped); under
        // the target dir, which `cargo clean` empties.
        let root = tempfile::Builder::new()
            .prefix("warden-test-certs-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("certs tempdir")
            .keep();
        let set = mint::loopback_set(&root, &[], &PRINCIPALS).expect("mint the test CA");
        TestCerts {
            root,
            ca_key: set.ca_key,
            client_dir: set.client_dir,
            minted: Mutex::new((BTreeSet::new(), BTreeSet::new())),
        }
    })
}

impl TestCerts {
    /// Node `id`'s certs dir (its `--certs-dir`), minted on first use.
    pub fn node_dir(&self, id: u64) -> PathBuf {
        let dir = self.root.join(format!("node-{id}"));
        let mut minted = self.minted.lock().unwrap_or_else(|e| e.into_inner());
        if minted.0.insert(id) {
            std::fs::create_dir_all(&dir).expect("node certs dir");
            std::fs::copy(self.client_dir.join("ca.crt"), dir.join("ca.crt")).expect("ca.crt");
            mint::create_node(
                &dir,
                &self.ca_key,
                id,
                &LOOPBACK_HOSTS,
                &CertOptions::default(),
            )
            .expect("mint a node certificate");
        }
        dir
    }

    /// The clients' certs dir, with a certificate for `principal` (minted on
    /// first use when it is not one of [`PRINCIPALS`]).
    pub fn client_dir_with(&self, principal: &str) -> &Path {
        if !PRINCIPALS.contains(&principal) {
            let mut minted = self.minted.lock().unwrap_or_else(|e| e.into_inner());
            if minted.1.insert(principal.to_string()) {
                mint::create_client(
                    &self.client_dir,
                    &self.ca_key,
                    principal,
                    &CertOptions::default(),
                )
                .expect("mint a client certificate");
            }
        }
        &self.client_dir
    }
}
