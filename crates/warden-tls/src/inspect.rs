//! Reading certificates for people: [`list`] describes every certificate in
//! a certs dir (for `warden cert list`): its file, kind, subject, SANs,
//! validity and whether it has expired. It does not verify chains
//! ([`crate::certs`] does); it reports what the files say.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use x509_parser::extensions::GeneralName;

use crate::certs::{read_certs, x509_time};
use crate::deny::serial_of_parsed;
use crate::error::LoadError;
use crate::identity::{cluster_of_parsed, CertIdentity};

/// What a certificate is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertKind {
    /// A CA (basicConstraints CA set).
    Ca,
    /// A node certificate for this node id.
    Node(u64),
    /// A client certificate for this principal.
    Client(String),
    /// Neither: why it carries no identity.
    Unknown(String),
}

impl std::fmt::Display for CertKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CertKind::Ca => f.write_str("ca"),
            CertKind::Node(id) => write!(f, "node {id}"),
            CertKind::Client(name) => write!(f, "client {name}"),
            CertKind::Unknown(_) => f.write_str("unknown"),
        }
    }
}

/// One certificate of a certs dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// The file it is in.
    pub file: PathBuf,
    /// Its position in the file (0 for the first; a CA bundle has several).
    pub index: usize,
    /// What it is.
    pub kind: CertKind,
    /// The subject, e.g. `CN=node`.
    pub subject: String,
    /// The issuer's subject.
    pub issuer: String,
    /// The serial number, normalized ([`crate::deny::normalize_serial`]:
    /// lowercase hex, no separators or leading zeros), as
    /// `warden cert revoke` and the deny file take it.
    pub serial: String,
    /// Subject alternative names: `DNS:...`, `IP:...`, `URI:...`.
    pub sans: Vec<String>,
    /// The cluster it names (`warden://cluster/NAME`): a node's or client's
    /// cluster, a CA's default for what it signs. None when it names none
    /// or the name is unusable (then a leaf's kind says why).
    pub cluster: Option<String>,
    /// notBefore.
    pub not_before: SystemTime,
    /// notAfter.
    pub not_after: SystemTime,
    /// notAfter is in the past.
    pub expired: bool,
}

/// Everything [`list`] found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Certificates, by file name then position in the file.
    pub certs: Vec<CertInfo>,
    /// Files that could not be read, and key files readable by group or
    /// others.
    pub problems: Vec<LoadError>,
}

/// Describes every certificate in the `*.crt` files of `dir` (sorted by
/// file name), and reports `*.crt` files it cannot read and `*.key` files
/// whose mode lets group or others read them. Errors only when `dir`
/// itself cannot be read.
pub fn list(dir: &Path) -> Result<Listing, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing {
            file: dir.to_path_buf(),
        },
        _ => LoadError::Unreadable {
            file: dir.to_path_buf(),
            source,
        },
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let now = SystemTime::now();
    let mut listing = Listing::default();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".key") {
            if let Some(problem) = loose_key_mode(&file) {
                listing.problems.push(problem);
            }
            continue;
        }
        if !name.ends_with(".crt") {
            continue;
        }
        match read_certs(&file) {
            Ok(certs) => {
                for (index, der) in certs.iter().enumerate() {
                    match describe(&file, index, der, now) {
                        Ok(info) => listing.certs.push(info),
                        Err(e) => listing.problems.push(e),
                    }
                }
            }
            Err(e) => listing.problems.push(e),
        }
    }
    Ok(listing)
}

#[cfg(unix)]
fn loose_key_mode(file: &Path) -> Option<LoadError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| LoadError::Rejected {
        file: file.to_path_buf(),
        reason: format!("private key readable by group or others (mode {mode:04o}); chmod 600 it"),
    })
}

#[cfg(not(unix))]
fn loose_key_mode(_file: &Path) -> Option<LoadError> {
    None
}

/// Describes one DER certificate of `file`.
pub fn describe(
    file: &Path,
    index: usize,
    der: &[u8],
    now: SystemTime,
) -> Result<CertInfo, LoadError> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|e| LoadError::BadCertificate {
            file: file.to_path_buf(),
            reason: format!("certificate {}: {e}", index + 1),
        })?;
    let kind = if cert.is_ca() {
        CertKind::Ca
    } else {
        match CertIdentity::of_parsed(&cert) {
            Ok(CertIdentity::Node(id)) => CertKind::Node(id),
            Ok(CertIdentity::Client(name)) => CertKind::Client(name),
            Err(e) => CertKind::Unknown(e.to_string()),
        }
    };
    let sans = match cert.subject_alternative_name() {
        Ok(Some(ext)) => ext.value.general_names.iter().map(san_text).collect(),
        Ok(None) => Vec::new(),
        Err(e) => vec![format!("(unreadable: {e})")],
    };
    let not_after = x509_time(&cert.validity().not_after);
    Ok(CertInfo {
        file: file.to_path_buf(),
        index,
        kind,
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        serial: serial_of_parsed(&cert),
        sans,
        cluster: cluster_of_parsed(&cert).ok().flatten(),
        not_before: x509_time(&cert.validity().not_before),
        not_after,
        expired: not_after < now,
    })
}

fn san_text(name: &GeneralName<'_>) -> String {
    match name {
        GeneralName::DNSName(d) => format!("DNS:{d}"),
        GeneralName::URI(u) => format!("URI:{u}"),
        GeneralName::RFC822Name(e) => format!("email:{e}"),
        GeneralName::IPAddress(bytes) => match bytes.len() {
            4 => {
                let b: [u8; 4] = [bytes[0], bytes[1], bytes[2], bytes[3]];
                format!("IP:{}", IpAddr::from(b))
            }
            16 => {
                let mut b = [0u8; 16];
                b.copy_from_slice(bytes);
                format!("IP:{}", IpAddr::from(b))
            }
            _ => format!("IP:(invalid, {} bytes)", bytes.len()),
        },
        other => format!("{other:?}"),
    }
}
