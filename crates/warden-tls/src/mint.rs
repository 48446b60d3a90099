//! Minting certificates with rcgen (feature `mint`): a CA, node
//! certificates, client certificates, and a whole loopback set for tests
//! ([`loopback_set`]). The shapes follow CockroachDB's `cockroach cert`:
//! a certs dir holds `ca.crt`, `node.crt`/`node.key` and
//! `client.NAME.crt`/`client.NAME.key`; the CA key lives elsewhere.
//!
//! - Keys: ECDSA P-256, written with mode 0600 (the file is created with
//!   that mode, never chmod-ed after), certificates 0644 (both less any bits
//!   the umask removes). Every file is written to a temporary file in the
//!   same dir, fsync-ed and renamed over the target, so a reader never sees
//!   half a file.
//! - Validity: from one hour before now (clock skew between machines) for
//!   [`DEFAULT_CA_LIFETIME`] (10 years) for a CA and
//!   [`DEFAULT_CERT_LIFETIME`] (5 years) for node and client certificates,
//!   or any [`Validity`] (tests mint expired ones). A certificate never
//!   outlives its CA: its notAfter is cut to the CA's.
//! - The CA's common name is `Warden CA <key id>` (8 hex digits of its key
//!   identifier), so two CAs in one bundle are told apart.
//! - Cluster names: a node or client certificate names its cluster in a SAN
//!   URI `warden://cluster/NAME` ([`CertOptions::cluster`]), and a node
//!   whose certificate names one refuses every certificate of another
//!   cluster or of none ([`crate::check_cluster`]). A CA made with
//!   [`CaOptions::cluster`] carries the same URI as the default of the
//!   certificates it signs; [`CertOptions::cluster`] overrides it, so one
//!   CA (made with or without a name) can sign for several clusters.
//!
//! # Rotating the CA, one node at a time
//!
//! `create_ca` with an existing `ca.crt` *appends* the new CA to it (with
//! `overwrite` when the old CA key is at the same path), so `ca.crt` holds
//! old and new CA and trusts certificates of both:
//!
//! 1. `warden cert create-ca --certs-dir DIR --ca-key NEW_KEY` (or the same
//!    key path with `--overwrite`): `DIR/ca.crt` now has both CAs.
//! 2. Copy that `ca.crt` into every node's and client's certs dir and
//!    SIGHUP each node: all now trust both CAs.
//! 3. For each node in turn, `warden cert create-node ... --overwrite` with
//!    the new key, and SIGHUP it; then the clients' certificates.
//! 4. When nothing uses the old CA, remove it from `ca.crt` everywhere (and
//!    SIGHUP), or leave it until it expires.
//!
//! Node and client certificates are signed by the CA in `ca.crt` whose
//! public key is the CA key's, wherever it sits in the bundle.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::certs::{
    client_cert_file, client_key_file, read_certs, read_file, CA_CERT, NODE_CERT, NODE_KEY,
};
use crate::error::LoadError;
use crate::identity::{
    cluster_of_parsed, cluster_uri, node_uri, principal_uri, validate_cluster_name,
    validate_principal, ClusterNameError, PrincipalError, MAX_NODE_ID,
};

/// A CA's default lifetime: 10 years (3650 days, as CockroachDB).
pub const DEFAULT_CA_LIFETIME: Duration = Duration::from_secs(3650 * 24 * 3600);
/// A node or client certificate's default lifetime: 5 years (1825 days).
pub const DEFAULT_CERT_LIFETIME: Duration = Duration::from_secs(1825 * 24 * 3600);
/// notBefore is this much before now.
pub const BACKDATE: Duration = Duration::from_secs(3600);

/// Mode of key files.
pub const KEY_MODE: u32 = 0o600;
/// Mode of certificate files.
pub const CERT_MODE: u32 = 0o644;

/// A certificate's validity period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// notBefore.
    pub not_before: SystemTime,
    /// notAfter (may be in the past: an expired certificate, for tests).
    pub not_after: SystemTime,
}

impl Validity {
    /// From [`BACKDATE`] before now to `lifetime` after now.
    pub fn lifetime(lifetime: Duration) -> Validity {
        let now = SystemTime::now();
        Validity {
            not_before: now.checked_sub(BACKDATE).unwrap_or(now),
            not_after: now.checked_add(lifetime).unwrap_or(now),
        }
    }
}

/// Options of [`create_ca`].
#[derive(Debug, Clone, Default)]
pub struct CaOptions {
    /// Replace an existing CA key file (the old CA stays in `ca.crt`).
    pub overwrite: bool,
    /// Default: [`DEFAULT_CA_LIFETIME`] from now.
    pub validity: Option<Validity>,
    /// The cluster the certificates this CA signs belong to unless
    /// [`CertOptions::cluster`] says otherwise (a `warden://cluster/NAME`
    /// URI on the CA). None: they name none unless told.
    pub cluster: Option<String>,
}

/// Options of [`create_node`] and [`create_client`].
#[derive(Debug, Clone, Default)]
pub struct CertOptions {
    /// Replace existing certificate and key files.
    pub overwrite: bool,
    /// Default: [`DEFAULT_CERT_LIFETIME`] from now (cut to the CA's notAfter).
    pub validity: Option<Validity>,
    /// The cluster the certificate belongs to (`warden://cluster/NAME`).
    /// None: the signing CA's cluster, if it names one.
    pub cluster: Option<String>,
}

/// What [`create_ca`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintedCa {
    /// `ca.crt`.
    pub cert_file: PathBuf,
    /// The CA key.
    pub key_file: PathBuf,
    /// The new CA's subject common name.
    pub common_name: String,
    /// CA certificates in `ca.crt` now (more than 1: a bundle).
    pub cas_in_bundle: usize,
    /// The cluster it names as its certificates' default.
    pub cluster: Option<String>,
    /// The new CA's notAfter.
    pub not_after: SystemTime,
}

/// What [`create_node`] or [`create_client`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    /// The certificate.
    pub cert_file: PathBuf,
    /// Its key.
    pub key_file: PathBuf,
    /// The subject common name.
    pub common_name: String,
    /// `DNS:...`, `IP:...`, `URI:...`.
    pub sans: Vec<String>,
    /// The cluster it names, if any.
    pub cluster: Option<String>,
    /// notAfter.
    pub not_after: SystemTime,
    /// notAfter was cut to the signing CA's.
    pub cut_to_ca: bool,
}

/// Why minting failed; nothing was written unless the variant says so.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// The CA key would be inside the certs dir.
    #[error("--ca-key {} is inside --certs-dir {}: keep the CA key elsewhere (the certs dir is copied to every machine)", key.display(), certs_dir.display())]
    KeyInsideCertsDir {
        /// The CA key path.
        key: PathBuf,
        /// The certs dir.
        certs_dir: PathBuf,
    },
    /// The CA key file exists and `overwrite` is not set.
    #[error("{}: a CA key already exists; pass --overwrite to replace it (the old CA stays in ca.crt)", file.display())]
    CaKeyExists {
        /// The key file.
        file: PathBuf,
    },
    /// A certificate or key file exists and `overwrite` is not set.
    #[error("{}: already exists; pass --overwrite to replace it", file.display())]
    Exists {
        /// The file.
        file: PathBuf,
    },
    /// The CA key matches no certificate in `ca.crt`.
    #[error("{}: matches no CA certificate in {}", key.display(), ca_file.display())]
    KeyNotInBundle {
        /// The CA key.
        key: PathBuf,
        /// The CA bundle.
        ca_file: PathBuf,
    },
    /// The CA key file is not a key rcgen can sign with.
    #[error("{}: not a usable CA key: {reason}", file.display())]
    BadCaKey {
        /// The key file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// A file could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A file or dir could not be written.
    #[error("{}: cannot write: {source}", file.display())]
    Write {
        /// The file.
        file: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// The node id is out of range.
    #[error("--id: {id} is not a node id in 1..={MAX_NODE_ID}")]
    BadNodeId {
        /// The id given.
        id: u64,
    },
    /// No host for a node certificate.
    #[error("a node certificate needs at least one HOST (DNS name or IP address clients and peers dial)")]
    NoHosts,
    /// A host that is neither an IP address nor a DNS name.
    #[error("host {host:?}: not an IP address or DNS name ({reason})")]
    BadHost {
        /// The host given.
        host: String,
        /// Why.
        reason: String,
    },
    /// The client name is not a principal.
    #[error("client name: {0}")]
    BadName(PrincipalError),
    /// The cluster name is not one.
    #[error("--cluster: {0}")]
    BadCluster(ClusterNameError),
    /// The signing CA's certificate carries a bad cluster URI.
    #[error("{}: the CA's cluster name is unusable: {reason}", ca_file.display())]
    BadCaCluster {
        /// The CA bundle.
        ca_file: PathBuf,
        /// Why.
        reason: String,
    },
    /// notAfter not after notBefore.
    #[error("validity: notAfter {} is not after notBefore {}", humantime::format_rfc3339_seconds(*not_after), humantime::format_rfc3339_seconds(*not_before))]
    BadValidity {
        /// notBefore.
        not_before: SystemTime,
        /// notAfter.
        not_after: SystemTime,
    },
    /// rcgen refused (should not happen with validated input).
    #[error("cannot build the certificate: {0}")]
    Rcgen(String),
}

fn rcgen_error(e: rcgen::Error) -> MintError {
    MintError::Rcgen(e.to_string())
}

/// `path` made absolute with symlinks resolved as far as it exists; the
/// rest (not yet created) is applied lexically.
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let components: Vec<Component<'_>> = abs.components().collect();
    for split in (1..=components.len()).rev() {
        let head: PathBuf = components[..split].iter().collect();
        if let Ok(mut resolved) = head.canonicalize() {
            for c in &components[split..] {
                match c {
                    Component::ParentDir => {
                        resolved.pop();
                    }
                    Component::Normal(n) => resolved.push(n),
                    _ => {}
                }
            }
            return Ok(resolved);
        }
    }
    Ok(abs)
}

/// Refuses a CA key path inside the certs dir (or naming it).
fn check_key_outside(certs_dir: &Path, ca_key: &Path) -> Result<(), MintError> {
    let err = |file: &Path, source| MintError::Write {
        file: file.to_path_buf(),
        source,
    };
    let dir = resolve(certs_dir).map_err(|e| err(certs_dir, e))?;
    let key = resolve(ca_key).map_err(|e| err(ca_key, e))?;
    if key.starts_with(&dir) {
        return Err(MintError::KeyInsideCertsDir {
            key: ca_key.to_path_buf(),
            certs_dir: certs_dir.to_path_buf(),
        });
    }
    Ok(())
}

fn refuse_existing(files: &[&Path], overwrite: bool) -> Result<(), MintError> {
    if overwrite {
        return Ok(());
    }
    match files.iter().find(|f| f.exists()) {
        Some(file) => Err(MintError::Exists {
            file: file.to_path_buf(),
        }),
        None => Ok(()),
    }
}

fn create_dir(dir: &Path) -> Result<(), MintError> {
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|source| MintError::Write {
        file: dir.to_path_buf(),
        source,
    })
}

/// Writes `bytes` to `path` atomically, the new file created with `mode`.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), MintError> {
    let err = |source| MintError::Write {
        file: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_dir(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

fn validity_or(validity: Option<Validity>, lifetime: Duration) -> Result<Validity, MintError> {
    let v = validity.unwrap_or_else(|| Validity::lifetime(lifetime));
    if v.not_after <= v.not_before {
        return Err(MintError::BadValidity {
            not_before: v.not_before,
            not_after: v.not_after,
        });
    }
    Ok(v)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates a CA: its key at `ca_key` (mode 0600) and its certificate in
/// `certs_dir/ca.crt`, appended when that file exists (a bundle, for
/// rotation; see the module docs). Both dirs are created if missing.
///
/// Errors: [`MintError::KeyInsideCertsDir`] (nothing written),
/// `CaKeyExists` without `overwrite`, `Load` for an unreadable existing
/// `ca.crt`, `BadValidity`, `Write`.
pub fn create_ca(
    certs_dir: &Path,
    ca_key: &Path,
    options: &CaOptions,
) -> Result<MintedCa, MintError> {
    check_key_outside(certs_dir, ca_key)?;
    if ca_key.exists() && !options.overwrite {
        return Err(MintError::CaKeyExists {
            file: ca_key.to_path_buf(),
        });
    }
    if let Some(name) = &options.cluster {
        validate_cluster_name(name).map_err(MintError::BadCluster)?;
    }
    let validity = validity_or(options.validity, DEFAULT_CA_LIFETIME)?;
    let ca_file = certs_dir.join(CA_CERT);
    let (mut bundle, old_cas) = match std::fs::metadata(&ca_file) {
        Ok(_) => (read_file(&ca_file)?, read_certs(&ca_file)?.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), 0),
        Err(source) => {
            return Err(LoadError::Unreadable {
                file: ca_file,
                source,
            }
            .into())
        }
    };

    let key = KeyPair::generate().map_err(rcgen_error)?;
    let mut params = CertificateParams::default();
    let key_id = params.key_identifier(&key);
    let common_name = format!("Warden CA {}", hex(&key_id[..4.min(key_id.len())]));
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "Warden");
    name.push(DnType::CommonName, common_name.clone());
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = validity.not_before.into();
    params.not_after = validity.not_after.into();
    if let Some(name) = &options.cluster {
        params.subject_alt_names = vec![cluster_san(name)?];
    }
    let cert = params.self_signed(&key).map_err(rcgen_error)?;

    create_dir(certs_dir)?;
    write_file(ca_key, key.serialize_pem().as_bytes(), KEY_MODE)?;
    if !bundle.is_empty() && !bundle.ends_with(b"\n") {
        bundle.push(b'\n');
    }
    bundle.extend_from_slice(cert.pem().as_bytes());
    write_file(&ca_file, &bundle, CERT_MODE)?;
    Ok(MintedCa {
        cert_file: ca_file,
        key_file: ca_key.to_path_buf(),
        common_name,
        cas_in_bundle: old_cas + 1,
        cluster: options.cluster.clone(),
        not_after: validity.not_after,
    })
}

fn cluster_san(name: &str) -> Result<SanType, MintError> {
    Ok(SanType::URI(
        rcgen::string::Ia5String::try_from(cluster_uri(name)).map_err(rcgen_error)?,
    ))
}

/// The cluster a leaf names: `options.cluster` (checked), else the CA's.
fn leaf_cluster(options: &CertOptions, signer: &Signer) -> Result<Option<String>, MintError> {
    match &options.cluster {
        Some(name) => {
            validate_cluster_name(name).map_err(MintError::BadCluster)?;
            Ok(Some(name.clone()))
        }
        None => Ok(signer.cluster.clone()),
    }
}

/// The CA key and the certificate of it in `ca.crt`, ready to sign.
struct Signer {
    issuer: Issuer<'static, KeyPair>,
    not_after: SystemTime,
    /// The cluster the CA names as its certificates' default.
    cluster: Option<String>,
}

fn load_signer(certs_dir: &Path, ca_key: &Path) -> Result<Signer, MintError> {
    check_key_outside(certs_dir, ca_key)?;
    let pem = read_file(ca_key)?;
    let bad_key = |reason: String| MintError::BadCaKey {
        file: ca_key.to_path_buf(),
        reason,
    };
    let pem = String::from_utf8(pem).map_err(|_| bad_key("not PEM text".into()))?;
    let key = KeyPair::from_pem(&pem).map_err(|e| bad_key(e.to_string()))?;
    let ca_file = certs_dir.join(CA_CERT);
    for der in read_certs(&ca_file)? {
        let Ok((_, parsed)) = x509_parser::parse_x509_certificate(&der) else {
            continue;
        };
        if parsed.is_ca()
            && parsed.public_key().subject_public_key.data.as_ref() == key.public_key_raw()
        {
            let not_after = crate::certs::x509_time(&parsed.validity().not_after);
            let cluster = cluster_of_parsed(&parsed).map_err(|e| MintError::BadCaCluster {
                ca_file: ca_file.clone(),
                reason: e.to_string(),
            })?;
            let issuer = Issuer::from_ca_cert_der(&der, key).map_err(rcgen_error)?;
            return Ok(Signer {
                issuer,
                not_after,
                cluster,
            });
        }
    }
    Err(MintError::KeyNotInBundle {
        key: ca_key.to_path_buf(),
        ca_file,
    })
}

fn san_texts(sans: &[SanType]) -> Vec<String> {
    sans.iter()
        .map(|s| match s {
            SanType::DnsName(d) => format!("DNS:{}", d.as_str()),
            SanType::IpAddress(ip) => format!("IP:{ip}"),
            SanType::URI(u) => format!("URI:{}", u.as_str()),
            other => format!("{other:?}"),
        })
        .collect()
}

/// One leaf: key, certificate signed by the CA, written as `cert_file` and
/// `key_file` (key first, so a reload in between sees a mismatch and
/// refuses, and the old set stays in use).
fn mint_leaf(
    signer: &Signer,
    common_name: &str,
    mut sans: Vec<SanType>,
    cluster: Option<String>,
    usages: Vec<ExtendedKeyUsagePurpose>,
    validity: Validity,
    (cert_file, key_file): (PathBuf, PathBuf),
) -> Result<Minted, MintError> {
    let cut_to_ca = validity.not_after > signer.not_after;
    let not_after = validity.not_after.min(signer.not_after);
    if not_after <= validity.not_before {
        return Err(MintError::BadValidity {
            not_before: validity.not_before,
            not_after,
        });
    }
    if let Some(name) = &cluster {
        sans.push(cluster_san(name)?);
    }
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    params.distinguished_name = name;
    params.subject_alt_names = sans.clone();
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = usages;
    params.use_authority_key_identifier_extension = true;
    params.not_before = validity.not_before.into();
    params.not_after = not_after.into();
    let key = KeyPair::generate().map_err(rcgen_error)?;
    let cert = params
        .signed_by(&key, &signer.issuer)
        .map_err(rcgen_error)?;
    write_file(&key_file, key.serialize_pem().as_bytes(), KEY_MODE)?;
    write_file(&cert_file, cert.pem().as_bytes(), CERT_MODE)?;
    Ok(Minted {
        cert_file,
        key_file,
        common_name: common_name.to_string(),
        sans: san_texts(&sans),
        cluster,
        not_after,
        cut_to_ca,
    })
}

/// Parses one host of a node certificate: an IP literal (IPv6 with or
/// without brackets) becomes an IP SAN, anything else must be a DNS name.
fn host_san(host: &str) -> Result<SanType, MintError> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    let bad = |reason: String| MintError::BadHost {
        host: host.to_string(),
        reason,
    };
    rustls_pki_types::DnsName::try_from(host).map_err(|e| bad(e.to_string()))?;
    Ok(SanType::DnsName(
        rcgen::string::Ia5String::try_from(host).map_err(|e| bad(e.to_string()))?,
    ))
}

/// Creates `certs_dir/node.crt` and `node.key` for node `node_id`, signed
/// by the CA key `ca_key` (its certificate must be in `certs_dir/ca.crt`):
/// common name `node`, SANs each of `hosts` (DNS names and IP addresses),
/// `warden://node/<node_id>` and, when it has one (`options.cluster`, else
/// the CA's), `warden://cluster/<name>`; extended key usages serverAuth and
/// clientAuth.
///
/// Errors: `BadNodeId`, `NoHosts`, `BadHost`, `BadCluster`,
/// `KeyInsideCertsDir`, `Exists` without `overwrite`, `Load` (missing CA key
/// or `ca.crt`), `KeyNotInBundle`, `BadCaCluster`, `BadValidity`, `Write`.
pub fn create_node<H: AsRef<str>>(
    certs_dir: &Path,
    ca_key: &Path,
    node_id: u64,
    hosts: &[H],
    options: &CertOptions,
) -> Result<Minted, MintError> {
    if !(1..=MAX_NODE_ID).contains(&node_id) {
        return Err(MintError::BadNodeId { id: node_id });
    }
    if hosts.is_empty() {
        return Err(MintError::NoHosts);
    }
    let mut sans: Vec<SanType> = Vec::new();
    for host in hosts {
        let san = host_san(host.as_ref())?;
        if !sans.contains(&san) {
            sans.push(san);
        }
    }
    sans.push(SanType::URI(
        rcgen::string::Ia5String::try_from(node_uri(node_id)).map_err(rcgen_error)?,
    ));
    if let Some(name) = &options.cluster {
        validate_cluster_name(name).map_err(MintError::BadCluster)?;
    }
    let validity = validity_or(options.validity, DEFAULT_CERT_LIFETIME)?;
    let cert_file = certs_dir.join(NODE_CERT);
    let key_file = certs_dir.join(NODE_KEY);
    check_key_outside(certs_dir, ca_key)?;
    refuse_existing(&[&cert_file, &key_file], options.overwrite)?;
    let signer = load_signer(certs_dir, ca_key)?;
    let cluster = leaf_cluster(options, &signer)?;
    mint_leaf(
        &signer,
        "node",
        sans,
        cluster,
        vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
        validity,
        (cert_file, key_file),
    )
}

/// Creates `certs_dir/client.NAME.crt` and `client.NAME.key`: common name
/// NAME (checked by [`validate_principal`]: `node` and node-like names are
/// refused), SAN `warden://principal/NAME` (and `warden://cluster/<name>`
/// as for [`create_node`]), extended key usage clientAuth only, and never a
/// `warden://node/` URI.
///
/// Errors: `BadName`, then as [`create_node`].
pub fn create_client(
    certs_dir: &Path,
    ca_key: &Path,
    name: &str,
    options: &CertOptions,
) -> Result<Minted, MintError> {
    validate_principal(name).map_err(MintError::BadName)?;
    let sans = vec![SanType::URI(
        rcgen::string::Ia5String::try_from(principal_uri(name)).map_err(rcgen_error)?,
    )];
    if let Some(cluster) = &options.cluster {
        validate_cluster_name(cluster).map_err(MintError::BadCluster)?;
    }
    let validity = validity_or(options.validity, DEFAULT_CERT_LIFETIME)?;
    let cert_file = certs_dir.join(client_cert_file(name));
    let key_file = certs_dir.join(client_key_file(name));
    check_key_outside(certs_dir, ca_key)?;
    refuse_existing(&[&cert_file, &key_file], options.overwrite)?;
    let signer = load_signer(certs_dir, ca_key)?;
    let cluster = leaf_cluster(options, &signer)?;
    mint_leaf(
        &signer,
        name,
        sans,
        cluster,
        vec![ExtendedKeyUsagePurpose::ClientAuth],
        validity,
        (cert_file, key_file),
    )
}

/// Hosts of every node certificate in a [`loopback_set`].
pub const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// What [`loopback_set`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopbackSet {
    /// The CA key: `ROOT/ca.key`.
    pub ca_key: PathBuf,
    /// Each node's certs dir, `ROOT/node-N` (`ca.crt`, `node.crt`, `node.key`).
    pub node_dirs: BTreeMap<u64, PathBuf>,
    /// The clients' certs dir, `ROOT/clients` (`ca.crt` and every
    /// `client.NAME.crt` / `.key`).
    pub client_dir: PathBuf,
}

/// Mints a whole set under `root` in one call (tests, `warden dev`): one CA,
/// a node certificate for each of `node_ids` with [`LOOPBACK_HOSTS`], and a
/// client certificate for each of `principals`; none names a cluster.
pub fn loopback_set(
    root: &Path,
    node_ids: &[u64],
    principals: &[&str],
) -> Result<LoopbackSet, MintError> {
    loopback_set_in(root, None, node_ids, principals)
}

/// [`loopback_set`] whose CA names `cluster` (so every certificate of the
/// set, and every one its CA key signs later without a cluster of its own,
/// names it).
pub fn loopback_set_in(
    root: &Path,
    cluster: Option<&str>,
    node_ids: &[u64],
    principals: &[&str],
) -> Result<LoopbackSet, MintError> {
    let ca_key = root.join("ca.key");
    let client_dir = root.join("clients");
    create_ca(
        &client_dir,
        &ca_key,
        &CaOptions {
            cluster: cluster.map(str::to_string),
            ..CaOptions::default()
        },
    )?;
    let ca_pem = read_file(&client_dir.join(CA_CERT))?;
    for principal in principals {
        create_client(&client_dir, &ca_key, principal, &CertOptions::default())?;
    }
    let mut node_dirs = BTreeMap::new();
    for &id in node_ids {
        let dir = root.join(format!("node-{id}"));
        write_file(&dir.join(CA_CERT), &ca_pem, CERT_MODE)?;
        create_node(&dir, &ca_key, id, &LOOPBACK_HOSTS, &CertOptions::default())?;
        node_dirs.insert(id, dir);
    }
    Ok(LoopbackSet {
        ca_key,
        node_dirs,
        client_dir,
    })
}
