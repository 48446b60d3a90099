//! Loading a certs dir: [`CaBundle`] (`ca.crt`), [`NodeCerts`] (`ca.crt` +
//! `node.crt` + `node.key`) and [`ClientCerts`] (`ca.crt` +
//! `client.USER.crt` + `client.USER.key`).
//!
//! Loading checks everything a handshake would, up front, so a bad set is
//! refused with a [`LoadError`] naming the file instead of failing every
//! connection later: readable PEM, a certificate and a key, the key matches
//! the certificate (rustls' `CertifiedKey::keys_match`), the chain verifies
//! against `ca.crt` for the right extended key usage at the current time
//! (webpki, the verifier rustls uses), and the identity rules of
//! [`crate::identity`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls::RootCertStore;
use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};

use crate::error::LoadError;
use crate::identity::{cluster_of_parsed, validate_principal, CertIdentity, IdentityError};

/// The CA bundle's file name: one or more CA certificates.
pub const CA_CERT: &str = "ca.crt";
/// A node's certificate.
pub const NODE_CERT: &str = "node.crt";
/// A node's private key.
pub const NODE_KEY: &str = "node.key";

/// `client.USER.crt`.
pub fn client_cert_file(user: &str) -> String {
    format!("client.{user}.crt")
}

/// `client.USER.key`.
pub fn client_key_file(user: &str) -> String {
    format!("client.{user}.key")
}

/// The crypto provider every config in this crate uses: rustls' ring.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a whole file: a missing file and an unreadable one are told apart.
pub(crate) fn read_file(file: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(file).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing {
            file: file.to_path_buf(),
        },
        _ => LoadError::Unreadable {
            file: file.to_path_buf(),
            source,
        },
    })
}

/// Every PEM section of `bytes`; none at all is "not PEM".
fn pem_sections(file: &Path, bytes: &[u8]) -> Result<Vec<(SectionKind, Vec<u8>)>, LoadError> {
    let mut rest = bytes;
    let mut sections = Vec::new();
    loop {
        match rustls_pki_types::pem::from_buf(&mut rest) {
            Ok(Some(section)) => sections.push(section),
            Ok(None) => break,
            Err(e) => {
                return Err(LoadError::NotPem {
                    file: file.to_path_buf(),
                    reason: e.to_string(),
                })
            }
        }
    }
    if sections.is_empty() {
        return Err(LoadError::NotPem {
            file: file.to_path_buf(),
            reason: "no PEM section (-----BEGIN ...-----) found".into(),
        });
    }
    Ok(sections)
}

/// The certificates in a PEM file, in order.
pub(crate) fn read_certs(file: &Path) -> Result<Vec<CertificateDer<'static>>, LoadError> {
    let bytes = read_file(file)?;
    let certs: Vec<CertificateDer<'static>> = pem_sections(file, &bytes)?
        .into_iter()
        .filter(|(kind, _)| *kind == SectionKind::Certificate)
        .map(|(_, der)| CertificateDer::from(der))
        .collect();
    if certs.is_empty() {
        return Err(LoadError::NoCertificate {
            file: file.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The (first) private key in a PEM file.
pub(crate) fn read_key(file: &Path) -> Result<PrivateKeyDer<'static>, LoadError> {
    let bytes = read_file(file)?;
    pem_sections(file, &bytes)?
        .into_iter()
        .find_map(|(kind, der)| PrivateKeyDer::from_pem(kind, der))
        .ok_or_else(|| LoadError::NoKey {
            file: file.to_path_buf(),
        })
}

/// A [`webpki`] time as a [`SystemTime`].
pub(crate) fn system_time(t: UnixTime) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(t.as_secs())
}

/// A certificate's notAfter, from x509-parser (`None` if unparsable).
pub(crate) fn x509_time(t: &x509_parser::time::ASN1Time) -> SystemTime {
    let secs = t.timestamp();
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// The CA certificates of `ca.crt`, as rustls trust anchors.
#[derive(Clone)]
pub struct CaBundle {
    file: PathBuf,
    certs: Vec<CertificateDer<'static>>,
    roots: Arc<RootCertStore>,
}

impl fmt::Debug for CaBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaBundle")
            .field("file", &self.file)
            .field("cas", &self.certs.len())
            .finish()
    }
}

impl CaBundle {
    /// Reads a CA bundle: one or more PEM certificates, each a CA
    /// (basicConstraints CA set) that rustls accepts as a trust anchor.
    pub fn load(file: &Path) -> Result<CaBundle, LoadError> {
        let certs = read_certs(file)?;
        let mut roots = RootCertStore::empty();
        for (i, der) in certs.iter().enumerate() {
            let bad = |reason: String| LoadError::BadCertificate {
                file: file.to_path_buf(),
                reason: format!("certificate {} of {}: {reason}", i + 1, certs.len()),
            };
            let (_, parsed) =
                x509_parser::parse_x509_certificate(der).map_err(|e| bad(e.to_string()))?;
            if !parsed.is_ca() {
                return Err(bad(
                    "not a CA certificate (basicConstraints CA is not set)".into()
                ));
            }
            roots.add(der.clone()).map_err(|e| bad(e.to_string()))?;
        }
        Ok(CaBundle {
            file: file.to_path_buf(),
            certs,
            roots: Arc::new(roots),
        })
    }

    /// The file it was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The CA certificates, in file order.
    pub fn certs(&self) -> &[CertificateDer<'static>] {
        &self.certs
    }

    /// The trust anchors, for rustls' verifiers.
    pub fn roots(&self) -> Arc<RootCertStore> {
        self.roots.clone()
    }
}

/// A verified end-entity certificate chain with its key.
struct Leaf {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// The node id, for [`Expect::Node`].
    node_id: Option<u64>,
    /// The cluster its certificate names, if any.
    cluster: Option<String>,
    not_after: SystemTime,
}

/// What a leaf must be.
#[derive(Clone, Copy)]
enum Expect<'a> {
    /// A node: `warden://node/N`, verified for serverAuth and clientAuth.
    Node,
    /// A client whose principal is this user, verified for clientAuth.
    Client(&'a str),
}

/// Loads and checks a leaf, in this order: its certificate parses, it has
/// the identity `expect` asks for, the key loads and matches it, and the
/// chain verifies against `ca` for each usage.
fn load_leaf(
    ca: &CaBundle,
    cert_file: &Path,
    key_file: &Path,
    expect: Expect<'_>,
) -> Result<Leaf, LoadError> {
    let chain = read_certs(cert_file)?;
    let bad_cert = |reason: String| LoadError::BadCertificate {
        file: cert_file.to_path_buf(),
        reason,
    };
    let (_, parsed) =
        x509_parser::parse_x509_certificate(&chain[0]).map_err(|e| bad_cert(e.to_string()))?;
    let not_after = x509_time(&parsed.validity().not_after);
    let node_id = check_identity(CertIdentity::of_parsed(&parsed), cert_file, expect)?;
    // Checked by `of_parsed` already: a bad cluster URI is a bad identity.
    let cluster = cluster_of_parsed(&parsed).map_err(|source| LoadError::BadIdentity {
        file: cert_file.to_path_buf(),
        source,
    })?;
    let key = read_key(key_file)?;

    let provider = provider();
    let signing_key = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| LoadError::BadKey {
            file: key_file.to_path_buf(),
            reason: e.to_string(),
        })?;
    match CertifiedKey::new(chain.clone(), signing_key).keys_match() {
        // `Unknown`: the provider cannot say (rustls' own `from_der` lets
        // it pass too); a wrong key then fails every handshake instead.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(_)) => {
            return Err(LoadError::KeyMismatch {
                cert: cert_file.to_path_buf(),
                key: key_file.to_path_buf(),
            })
        }
        Err(e) => return Err(bad_cert(e.to_string())),
    }

    let end_entity =
        webpki::EndEntityCert::try_from(&chain[0]).map_err(|e| bad_cert(e.to_string()))?;
    let usages: &[webpki::KeyUsage] = match expect {
        Expect::Node => &[
            webpki::KeyUsage::server_auth(),
            webpki::KeyUsage::client_auth(),
        ],
        Expect::Client(_) => &[webpki::KeyUsage::client_auth()],
    };
    let now = UnixTime::now();
    for usage in usages {
        end_entity
            .verify_for_usage(
                provider.signature_verification_algorithms.all,
                &ca.roots.roots,
                &chain[1..],
                now,
                usage,
                None,
                None,
            )
            .map_err(|e| verify_error(e, cert_file, ca.file()))?;
    }
    Ok(Leaf {
        chain,
        key,
        node_id,
        cluster,
        not_after,
    })
}

/// The identity rules for a file loaded as `expect`; the node id for a node.
fn check_identity(
    identity: Result<CertIdentity, IdentityError>,
    cert_file: &Path,
    expect: Expect<'_>,
) -> Result<Option<u64>, LoadError> {
    let file = cert_file.to_path_buf();
    match (expect, identity) {
        (Expect::Node, Ok(CertIdentity::Node(id))) => Ok(Some(id)),
        (Expect::Node, Ok(CertIdentity::Client(_))) => Err(LoadError::NoNodeId { file }),
        (Expect::Client(user), Ok(CertIdentity::Client(principal))) => {
            if principal == user {
                Ok(None)
            } else {
                Err(LoadError::BadIdentity {
                    file,
                    source: IdentityError::PrincipalMismatch {
                        uri: format!("the file name's user {user:?}"),
                        principal,
                    },
                })
            }
        }
        (
            Expect::Client(_),
            Ok(CertIdentity::Node(_))
            | Err(
                IdentityError::SeveralNodeUris
                | IdentityError::BadNodeId { .. }
                | IdentityError::NodeWithoutBothUsages,
            ),
        ) => Err(LoadError::ClientHasNodeUri { file }),
        (_, Err(source)) => Err(LoadError::BadIdentity { file, source }),
    }
}

fn verify_error(e: webpki::Error, file: &Path, ca_file: &Path) -> LoadError {
    let file = file.to_path_buf();
    match e {
        webpki::Error::CertExpired { not_after, .. } => LoadError::Expired {
            file,
            not_after: system_time(not_after),
        },
        webpki::Error::CertNotValidYet { not_before, .. } => LoadError::NotYetValid {
            file,
            not_before: system_time(not_before),
        },
        webpki::Error::UnknownIssuer => LoadError::NotSignedByCa {
            file,
            ca_file: ca_file.to_path_buf(),
        },
        other => LoadError::Rejected {
            file,
            reason: other.to_string(),
        },
    }
}

/// A node's certs dir, loaded and checked: the CA bundle, the node's
/// certificate chain (verified for serverAuth and clientAuth, carrying
/// `warden://node/N`) and its key. `Debug` never shows the key.
pub struct NodeCerts {
    dir: PathBuf,
    ca: CaBundle,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    node_id: u64,
    cluster: Option<String>,
    not_after: SystemTime,
}

impl fmt::Debug for NodeCerts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeCerts")
            .field("dir", &self.dir)
            .field("node_id", &self.node_id)
            .field("cluster", &self.cluster)
            .field("ca", &self.ca)
            .field(
                "not_after",
                &humantime::format_rfc3339_seconds(self.not_after),
            )
            .finish_non_exhaustive()
    }
}

impl NodeCerts {
    /// Loads `dir/ca.crt`, `dir/node.crt` and `dir/node.key`.
    ///
    /// Errors: [`LoadError::Missing`], `Unreadable`, `NotPem`,
    /// `NoCertificate`, `NoKey`, `BadCertificate`, `BadKey`, `KeyMismatch`,
    /// `NotSignedByCa`, `Expired`, `NotYetValid`, `Rejected` (e.g. no
    /// serverAuth usage), `NoNodeId` (a client certificate in `node.crt`),
    /// `BadIdentity`; each names the file.
    pub fn load(dir: &Path) -> Result<NodeCerts, LoadError> {
        let ca = CaBundle::load(&dir.join(CA_CERT))?;
        let cert_file = dir.join(NODE_CERT);
        let leaf = load_leaf(&ca, &cert_file, &dir.join(NODE_KEY), Expect::Node)?;
        let Some(node_id) = leaf.node_id else {
            return Err(LoadError::NoNodeId { file: cert_file });
        };
        Ok(NodeCerts {
            dir: dir.to_path_buf(),
            ca,
            chain: leaf.chain,
            key: leaf.key,
            node_id,
            cluster: leaf.cluster,
            not_after: leaf.not_after,
        })
    }

    /// Like [`NodeCerts::load`], and `node.crt` must be node `node_id`'s
    /// ([`LoadError::WrongNode`] otherwise).
    pub fn load_for(dir: &Path, node_id: u64) -> Result<NodeCerts, LoadError> {
        let certs = NodeCerts::load(dir)?;
        if certs.node_id != node_id {
            return Err(LoadError::WrongNode {
                file: dir.join(NODE_CERT),
                expected: node_id,
                found: certs.node_id,
            });
        }
        Ok(certs)
    }

    /// The certs dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The node id in `node.crt`.
    pub fn node_id(&self) -> u64 {
        self.node_id
    }

    /// The cluster `node.crt` names (`warden://cluster/NAME`), if any: the
    /// node refuses certificates of another cluster ([`crate::check_cluster`]).
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    /// The CA bundle.
    pub fn ca(&self) -> &CaBundle {
        &self.ca
    }

    /// `node.crt`'s notAfter.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    /// The certificate chain, end entity first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    pub(crate) fn key(&self) -> PrivateKeyDer<'static> {
        self.key.clone_key()
    }
}

/// A client's certs dir, loaded and checked for one user: the CA bundle and
/// `client.USER.crt` (verified for clientAuth; its common name is USER; no
/// node URI) with `client.USER.key`. `Debug` never shows the key.
pub struct ClientCerts {
    dir: PathBuf,
    user: String,
    ca: CaBundle,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cluster: Option<String>,
    not_after: SystemTime,
}

impl fmt::Debug for ClientCerts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCerts")
            .field("dir", &self.dir)
            .field("user", &self.user)
            .field("cluster", &self.cluster)
            .field("ca", &self.ca)
            .field(
                "not_after",
                &humantime::format_rfc3339_seconds(self.not_after),
            )
            .finish_non_exhaustive()
    }
}

impl ClientCerts {
    /// Loads `dir/ca.crt`, `dir/client.USER.crt` and `dir/client.USER.key`.
    ///
    /// Errors: [`LoadError::BadUser`] when `user` is not a principal
    /// ([`validate_principal`]; nothing is read), the file errors of
    /// [`NodeCerts::load`], `ClientHasNodeUri` (a node certificate used as a
    /// client's) and `BadIdentity` (the common name is not `user`).
    pub fn load(dir: &Path, user: &str) -> Result<ClientCerts, LoadError> {
        validate_principal(user).map_err(LoadError::BadUser)?;
        let ca = CaBundle::load(&dir.join(CA_CERT))?;
        let cert_file = dir.join(client_cert_file(user));
        let leaf = load_leaf(
            &ca,
            &cert_file,
            &dir.join(client_key_file(user)),
            Expect::Client(user),
        )?;
        Ok(ClientCerts {
            dir: dir.to_path_buf(),
            user: user.to_string(),
            ca,
            chain: leaf.chain,
            key: leaf.key,
            cluster: leaf.cluster,
            not_after: leaf.not_after,
        })
    }

    /// The certs dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The principal.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The cluster the client certificate names, if any: the client then
    /// refuses a server of another cluster ([`crate::check_cluster`]).
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    /// The CA bundle.
    pub fn ca(&self) -> &CaBundle {
        &self.ca
    }

    /// `client.USER.crt`'s notAfter.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    /// The certificate chain, end entity first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    pub(crate) fn key(&self) -> PrivateKeyDer<'static> {
        self.key.clone_key()
    }
}
