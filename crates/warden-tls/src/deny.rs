//! Key revocation on the TLS side: [`DenyList`] (principals and certificate
//! serials that may not connect), the serial form every part of warden uses
//! ([`normalize_serial`], [`serial_of`]), the optional deny file of a certs
//! dir ([`read_deny_file`]) and the lists one [`crate::ServerTls`] enforces.
//!
//! # Serials
//!
//! A serial is written as lowercase hex without separators and without
//! leading zeros (`"0"` for zero): what [`serial_of`] reads from a
//! certificate (x509-parser's raw serial bytes), what `warden cert list`
//! prints ([`crate::inspect::CertInfo::serial`]) and what
//! [`normalize_serial`] makes of what a person types (`1A:2B`, `0x1a2b`,
//! `001a2b` are all `1a2b`). RFC 5280 section 4.1.2.2 caps a serial at 20
//! octets, so a deny entry has at most [`MAX_SERIAL_HEX_DIGITS`] (40) hex
//! digits. A certificate of a non-conforming CA with a longer serial still
//! connects, and is denied by its principal only.
//!
//! # The deny file
//!
//! `deny.toml` ([`DENY_FILE`]) in a node's certs dir, optional (absent: an
//! empty list):
//!
//! ```toml
//! principals = ["mallory"]
//! serials = ["1a2b3c", "0x00:ff"]
//! ```
//!
//! Both keys are optional; any other key is refused. Each principal must
//! pass [`crate::validate_principal`], each serial [`normalize_serial`];
//! at most [`MAX_DENY_FILE_ENTRIES`] entries in all and
//! [`MAX_DENY_FILE_BYTES`] bytes. A bad file is a [`LoadError::DenyFile`]
//! naming the file and the entry (`deny.toml: serials[2]: ...`, indexes
//! from 0), and refuses the load or the reload it is part of.
//!
//! # What is enforced
//!
//! A [`crate::ServerTls`] keeps the file's list and a replicated list (the
//! cluster's revocations, [`crate::ServerTls::set_denied`]); the union is
//! checked at every handshake (a client certificate by serial and
//! principal, a node certificate by serial) and, whenever it changes,
//! against every established connection, which is closed if now denied. A
//! node's peer connector refuses a server whose node certificate's serial
//! is denied ([`crate::NodeTls::set_denied`]).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls_pki_types::CertificateDer;
use x509_parser::certificate::X509Certificate;

use crate::error::LoadError;
use crate::identity::{validate_principal, CertIdentity, IdentityError, PrincipalError};

/// The deny file in a certs dir.
pub const DENY_FILE: &str = "deny.toml";
/// The most hex digits of a serial after leading zeros are stripped: 20
/// octets (RFC 5280 section 4.1.2.2).
pub const MAX_SERIAL_HEX_DIGITS: usize = 40;
/// The most entries of a deny file, principals and serials together.
pub const MAX_DENY_FILE_ENTRIES: usize = 10_000;
/// The principal no deny list names (warden-core's `auth::ROOT`).
const ROOT_PRINCIPAL: &str = "root";
/// The largest deny file, in bytes: 4 MiB (10,000 of the longest entries,
/// written with separators, take under 1 MiB).
pub const MAX_DENY_FILE_BYTES: u64 = 4 << 20;

/// Principals and certificate serials that may not connect. Serials are
/// in the normalized form ([`normalize_serial`]); principals are compared
/// exactly (case included), as identities are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DenyList {
    /// Client principals ([`crate::validate_principal`]).
    pub principals: BTreeSet<String>,
    /// Certificate serials, normalized.
    pub serials: BTreeSet<String>,
}

/// Why a certificate is refused by a [`DenyList`]. The principal and the
/// serial are not secret; no key material is in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// The client certificate's principal is denied.
    #[error("principal {0:?} is on the deny list")]
    Principal(String),
    /// The certificate's serial is denied.
    #[error("certificate serial {0} is on the deny list")]
    Serial(String),
}

impl DenyList {
    /// A list from entries as a person or a config writes them: each
    /// principal checked with [`crate::validate_principal`], each serial
    /// normalized ([`normalize_serial`]). The first bad entry is the error
    /// (indexes from 0). No cap on the count (the deny file's is
    /// [`MAX_DENY_FILE_ENTRIES`]).
    pub fn from_entries<P, S>(principals: P, serials: S) -> Result<DenyList, DenyError>
    where
        P: IntoIterator,
        P::Item: AsRef<str>,
        S: IntoIterator,
        S::Item: AsRef<str>,
    {
        let mut list = DenyList::default();
        for (index, p) in principals.into_iter().enumerate() {
            let p = p.as_ref();
            validate_principal(p).map_err(|source| DenyError::Principal { index, source })?;
            list.principals.insert(p.to_string());
        }
        for (index, s) in serials.into_iter().enumerate() {
            let serial = normalize_serial(s.as_ref())
                .map_err(|source| DenyError::Serial { index, source })?;
            list.serials.insert(serial);
        }
        Ok(list)
    }

    /// Whether it denies nothing.
    pub fn is_empty(&self) -> bool {
        self.principals.is_empty() && self.serials.is_empty()
    }

    /// Everything either list denies.
    pub fn union(&self, other: &DenyList) -> DenyList {
        DenyList {
            principals: self.principals.union(&other.principals).cloned().collect(),
            serials: self.serials.union(&other.serials).cloned().collect(),
        }
    }

    /// Whether a certificate with this principal (`None` for a node's) and
    /// this serial (normalized, as [`serial_of`] returns it) is denied.
    pub fn denies(&self, principal: Option<&str>, serial: &str) -> bool {
        self.check(principal, serial).is_err()
    }

    /// [`DenyList::denies`], saying which entry denies it (the principal
    /// first).
    pub fn check(&self, principal: Option<&str>, serial: &str) -> Result<(), Denied> {
        if let Some(p) = principal.filter(|p| self.principals.contains(*p)) {
            return Err(Denied::Principal(p.to_string()));
        }
        if self.serials.contains(serial) {
            return Err(Denied::Serial(serial.to_string()));
        }
        Ok(())
    }
}

/// Why a text is not a certificate serial ([`normalize_serial`]). Each
/// message names the field `serial`; the text shown is cut to 80
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SerialError {
    /// No hex digit at all (empty, or `0x` alone).
    #[error("serial {0:?} has no hex digits (expected e.g. 1a2b, 1a:2b or 0x1a2b)")]
    Empty(String),
    /// A character that is neither a hex digit nor `:`.
    #[error("serial {serial:?}: {bad:?} is not a hex digit or ':'")]
    NotHex {
        /// The text.
        serial: String,
        /// The first character not allowed.
        bad: char,
    },
    /// Written with `:` separators, but a group is not two hex digits.
    #[error("serial {0:?}: with ':' separators every group must be two hex digits (one byte), as `warden cert list` prints")]
    Group(String),
    /// Longer than [`MAX_SERIAL_HEX_DIGITS`] after leading zeros.
    #[error("serial {serial:?}: {digits} hex digits without leading zeros; at most {MAX_SERIAL_HEX_DIGITS} (20 bytes, RFC 5280 section 4.1.2.2)")]
    TooLong {
        /// The text.
        serial: String,
        /// Its hex digits after leading zeros.
        digits: usize,
    },
}

/// A serial as typed (hex, either case, optional `0x`, optional `:`
/// between bytes: `1A:2B`) in the normalized form: lowercase hex without
/// separators or leading zeros, `"0"` for zero. With `:` every group must
/// be two digits, so `1:2` (bytes 01 02, or 0x12?) is refused rather than
/// guessed at. Surrounding whitespace is not taken.
pub fn normalize_serial(s: &str) -> Result<String, SerialError> {
    let shown = || s.chars().take(80).collect::<String>();
    let body = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if let Some(bad) = body.chars().find(|c| !(c.is_ascii_hexdigit() || *c == ':')) {
        return Err(SerialError::NotHex {
            serial: shown(),
            bad,
        });
    }
    if body.contains(':') && body.split(':').any(|group| group.len() != 2) {
        return Err(SerialError::Group(shown()));
    }
    let digits: String = body
        .chars()
        .filter(|c| *c != ':')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if digits.is_empty() {
        return Err(SerialError::Empty(shown()));
    }
    let stripped = digits.trim_start_matches('0');
    if stripped.len() > MAX_SERIAL_HEX_DIGITS {
        return Err(SerialError::TooLong {
            serial: shown(),
            digits: stripped.len(),
        });
    }
    Ok(if stripped.is_empty() {
        "0".to_string()
    } else {
        stripped.to_string()
    })
}

/// A certificate's serial in the normalized form ([`normalize_serial`]),
/// from x509-parser's raw serial bytes. Errors only when the certificate
/// cannot be parsed.
pub fn serial_of(cert: &CertificateDer<'_>) -> Result<String, IdentityError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert)
        .map_err(|e| IdentityError::Unparsable(e.to_string()))?;
    Ok(serial_of_parsed(&parsed))
}

/// [`serial_of`] of a parsed certificate.
pub(crate) fn serial_of_parsed(cert: &X509Certificate<'_>) -> String {
    let hex: String = cert
        .raw_serial()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    match hex.trim_start_matches('0') {
        "" => "0".to_string(),
        digits => digits.to_string(),
    }
}

/// The rustls error a certificate verifier fails the handshake with when
/// `deny` denies `cert` (of `identity`: a client's principal and serial, a
/// node's serial are checked). The [`Denied`] inside says which entry.
pub(crate) fn check_cert(
    deny: &DenyList,
    identity: &CertIdentity,
    cert: &CertificateDer<'_>,
) -> Result<(), rustls::Error> {
    let other = |e: Arc<dyn std::error::Error + Send + Sync>| {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(e)))
    };
    let serial = serial_of(cert).map_err(|e| other(Arc::new(e)))?;
    let principal = match identity {
        CertIdentity::Client(p) => Some(p.as_str()),
        CertIdentity::Node(_) => None,
    };
    deny.check(principal, &serial)
        .map_err(|denied| other(Arc::new(denied)))
}

/// What is wrong with a deny file (or with entries given to
/// [`DenyList::from_entries`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DenyError {
    /// Larger than [`MAX_DENY_FILE_BYTES`].
    #[error("larger than {MAX_DENY_FILE_BYTES} bytes")]
    TooLarge,
    /// Not UTF-8 (TOML is).
    #[error("not UTF-8 text")]
    NotUtf8,
    /// Not TOML, an unknown key, or a value of the wrong type.
    #[error("line {line}, column {column}: {message} (expected `principals = [\"NAME\", ...]` and `serials = [\"HEX\", ...]`)")]
    Toml {
        /// Line, from 1.
        line: usize,
        /// Column (characters), from 1.
        column: usize,
        /// What the TOML reader said.
        message: String,
    },
    /// More than [`MAX_DENY_FILE_ENTRIES`] entries.
    #[error("{count} entries (principals and serials together); at most {MAX_DENY_FILE_ENTRIES}")]
    TooMany {
        /// Entries in the file.
        count: usize,
    },
    /// A principal that is not one.
    #[error("principals[{index}]: {source}")]
    Principal {
        /// Its index in `principals`, from 0.
        index: usize,
        /// Why.
        source: PrincipalError,
    },
    /// `root`, which no deny list names (it is the one principal nothing
    /// locks out; deny its stolen certificate's serial instead).
    #[error("principals[{index}]: \"root\" cannot be denied; put the serial of its stolen certificate in `serials`")]
    Root {
        /// Its index in `principals`, from 0.
        index: usize,
    },
    /// A serial that is not one.
    #[error("serials[{index}]: {source}")]
    Serial {
        /// Its index in `serials`, from 0.
        index: usize,
        /// Why.
        source: SerialError,
    },
}

/// The deny file's shape.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DenyFile {
    #[serde(default)]
    principals: Vec<String>,
    #[serde(default)]
    serials: Vec<String>,
}

/// Parses a deny file's text (see the module docs).
pub fn parse_deny_file(text: &str) -> Result<DenyList, DenyError> {
    let file: DenyFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |span| span.start);
        let before = &text[..at.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        DenyError::Toml {
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;
    let count = file.principals.len() + file.serials.len();
    if count > MAX_DENY_FILE_ENTRIES {
        return Err(DenyError::TooMany { count });
    }
    if let Some(index) = file.principals.iter().position(|p| p == ROOT_PRINCIPAL) {
        return Err(DenyError::Root { index });
    }
    DenyList::from_entries(&file.principals, &file.serials)
}

/// Reads `dir/deny.toml` ([`DENY_FILE`]); an empty list when there is
/// none. Errors name the file ([`LoadError::DenyFile`], or
/// [`LoadError::Unreadable`]).
pub fn read_deny_file(dir: &Path) -> Result<DenyList, LoadError> {
    use std::io::Read as _;
    let file = dir.join(DENY_FILE);
    let bad = |source| LoadError::DenyFile {
        file: file.clone(),
        source,
    };
    let unreadable = |source| LoadError::Unreadable {
        file: file.clone(),
        source,
    };
    let f = match std::fs::File::open(&file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DenyList::default()),
        Err(e) => return Err(unreadable(e)),
    };
    let mut bytes = Vec::new();
    f.take(MAX_DENY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_DENY_FILE_BYTES {
        return Err(bad(DenyError::TooLarge));
    }
    let text = String::from_utf8(bytes).map_err(|_| bad(DenyError::NotUtf8))?;
    parse_deny_file(&text).map_err(bad)
}

/// The deny lists of one [`crate::ServerTls`] (shared with its node's peer
/// side): the deny file's, the replicated one, and their union, which every
/// handshake reads (a pointer copy under a read lock, no IO).
#[derive(Debug, Default)]
pub(crate) struct DenyState {
    lists: RwLock<Lists>,
}

#[derive(Debug, Default)]
struct Lists {
    file: DenyList,
    replicated: DenyList,
    effective: Arc<DenyList>,
}

impl DenyState {
    /// With the deny file's list and no replicated one.
    pub(crate) fn new(file: DenyList) -> DenyState {
        DenyState {
            lists: RwLock::new(Lists {
                effective: Arc::new(file.clone()),
                file,
                replicated: DenyList::default(),
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Lists> {
        self.lists.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The union in force.
    pub(crate) fn effective(&self) -> Arc<DenyList> {
        self.read().effective.clone()
    }

    /// The deny file's list.
    pub(crate) fn file(&self) -> DenyList {
        self.read().file.clone()
    }

    /// Replaces the deny file's list (`file`) or the replicated one;
    /// returns the new union and whether it differs from the old.
    pub(crate) fn set(&self, list: DenyList, file: bool) -> (Arc<DenyList>, bool) {
        let mut lists = self.lists.write().unwrap_or_else(|e| e.into_inner());
        if file {
            lists.file = list;
        } else {
            lists.replicated = list;
        }
        let effective = Arc::new(lists.file.union(&lists.replicated));
        let changed = effective != lists.effective;
        lists.effective = effective.clone();
        (effective, changed)
    }
}

#[cfg(test)]
mod tests;
