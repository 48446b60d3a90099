//! Who a verified certificate names: [`Identity`], the principal rules
//! ([`validate_principal`]) and the one function that reads an identity out
//! of a certificate ([`CertIdentity::of`]).
//!
//! The rules, in the order they are applied to a certificate whose chain
//! rustls/webpki already verified:
//!
//! 1. A SAN URI `warden://node/<N>` makes it a **node** certificate. There
//!    must be exactly one such URI, `N` a decimal node id in
//!    `1..=`[`MAX_NODE_ID`] without sign or leading zero, and the certificate
//!    must carry both extended key usages serverAuth and clientAuth (what
//!    `warden cert create-node` writes; a client certificate carries
//!    clientAuth only, so even a mis-issued client certificate with a node URI
//!    is not a node).
//! 2. Otherwise it is a **client** certificate: the principal is the subject's
//!    common name, which must pass [`validate_principal`] (so `node`,
//!    `node-3`, ... are refused: nothing that reads like a node id can be a
//!    principal). A SAN URI `warden://principal/<NAME>`, if present, must
//!    name the same principal.
//! 3. A SAN URI `warden://cluster/<NAME>` names the cluster the certificate
//!    was minted for (`warden cert create-node | create-client --cluster`,
//!    or the CA's `--cluster`): at most one, NAME by
//!    [`validate_cluster_name`]. It is not part of the identity; it is read
//!    with [`CertIdentity::read`] and checked against the reader's own
//!    cluster with [`check_cluster`].
//! 4. Any other SAN URI whose scheme is `warden` (in any case) is refused:
//!    an identity this code does not understand is not guessed at.
//!
//! An [`Identity`] is only ever built from a certificate the TLS handshake
//! verified; nothing a peer sends after the handshake can set it.

use std::fmt;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// SAN URI prefix naming a node: `warden://node/<id>`.
pub const NODE_URI_PREFIX: &str = "warden://node/";
/// SAN URI prefix naming a client principal: `warden://principal/<name>`.
pub const PRINCIPAL_URI_PREFIX: &str = "warden://principal/";
/// SAN URI prefix naming the cluster a certificate belongs to:
/// `warden://cluster/<name>`.
pub const CLUSTER_URI_PREFIX: &str = "warden://cluster/";
/// Longest cluster name, in bytes (a DNS label's bound).
pub const MAX_CLUSTER_NAME_BYTES: usize = 63;
/// Largest node id: 2^53 - 1, the same bound as `warden_core::limits::MAX_ID`
/// (ids travel as JSON numbers).
pub const MAX_NODE_ID: u64 = (1 << 53) - 1;
/// Longest principal, in bytes.
pub const MAX_PRINCIPAL_BYTES: usize = 64;

/// The verified identity of the peer of a TLS connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Identity {
    /// The peer presented no certificate (health probes, load balancers).
    Anonymous,
    /// A client certificate: the principal from its common name.
    Client {
        /// The principal (see [`validate_principal`]).
        principal: String,
    },
    /// A node certificate (`warden://node/<node_id>`).
    Node {
        /// The node id the certificate was issued for.
        node_id: u64,
    },
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identity::Anonymous => f.write_str("anonymous"),
            Identity::Client { principal } => write!(f, "client {principal}"),
            Identity::Node { node_id } => write!(f, "node {node_id}"),
        }
    }
}

/// The identity a certificate carries (never [`Identity::Anonymous`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertIdentity {
    /// A node certificate.
    Node(u64),
    /// A client certificate of this principal.
    Client(String),
}

impl From<CertIdentity> for Identity {
    fn from(id: CertIdentity) -> Identity {
        match id {
            CertIdentity::Node(node_id) => Identity::Node { node_id },
            CertIdentity::Client(principal) => Identity::Client { principal },
        }
    }
}

/// Why a certificate carries no usable identity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// Not an X.509 certificate x509-parser can read.
    #[error("not a readable X.509 certificate: {0}")]
    Unparsable(String),
    /// More than one `warden://node/` URI.
    #[error("more than one {NODE_URI_PREFIX} URI")]
    SeveralNodeUris,
    /// A `warden://node/` URI whose id is not a node id.
    #[error("{uri:?} does not name a node id in 1..={MAX_NODE_ID}")]
    BadNodeId {
        /// The URI as written.
        uri: String,
    },
    /// A node URI on a certificate that is not for both server and client
    /// auth.
    #[error(
        "a {NODE_URI_PREFIX} certificate must have extended key usages serverAuth and clientAuth"
    )]
    NodeWithoutBothUsages,
    /// A client certificate without a common name.
    #[error("no common name (a client certificate's principal)")]
    NoCommonName,
    /// The common name is not a valid principal.
    #[error("common name: {0}")]
    BadPrincipal(PrincipalError),
    /// A `warden://principal/` URI naming another principal than the CN.
    #[error("{uri:?} does not match the common name {principal:?}")]
    PrincipalMismatch {
        /// The URI as written.
        uri: String,
        /// The common name.
        principal: String,
    },
    /// A `warden:` URI of an unknown form.
    #[error("unknown warden URI {uri:?}")]
    UnknownWardenUri {
        /// The URI as written.
        uri: String,
    },
    /// More than one `warden://cluster/` URI.
    #[error("more than one {CLUSTER_URI_PREFIX} URI")]
    SeveralClusterUris,
    /// A `warden://cluster/` URI whose name is not a cluster name.
    #[error("{uri:?}: {reason}")]
    BadClusterName {
        /// The URI as written.
        uri: String,
        /// Why the name is refused.
        reason: ClusterNameError,
    },
    /// The certificate names another cluster than the reader's own (or
    /// none, where the reader's names one): [`check_cluster`].
    #[error(transparent)]
    OtherCluster(ClusterMismatch),
}

/// Why a name is not a cluster name ([`validate_cluster_name`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterNameError {
    /// Empty or longer than [`MAX_CLUSTER_NAME_BYTES`].
    #[error("cluster name {name:?} must be 1..={MAX_CLUSTER_NAME_BYTES} bytes long (is {len})")]
    Length {
        /// The name (cut to 80 characters).
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A character outside lowercase ASCII letters, digits, `.`, `_`, `-`.
    #[error("cluster name {name:?} contains {bad:?}; allowed are lowercase ASCII letters, digits, '.', '_', '-'")]
    Character {
        /// The name (cut to 80 characters).
        name: String,
        /// The first character not allowed.
        bad: char,
    },
    /// Does not start with a letter or a digit.
    #[error("cluster name {name:?} must start with a lowercase letter or a digit")]
    Start {
        /// The name.
        name: String,
    },
}

/// A certificate of another cluster than the reader's ([`check_cluster`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterMismatch {
    /// The certificate names cluster `found`, the reader's names `expected`.
    #[error("the certificate is for cluster {found:?}, not this cluster {expected:?}")]
    Other {
        /// The reader's own cluster.
        expected: String,
        /// The certificate's.
        found: String,
    },
    /// The certificate names no cluster, the reader's names `expected`.
    #[error(
        "the certificate names no cluster, and this cluster is {expected:?} (mint it with --cluster {expected})"
    )]
    Unnamed {
        /// The reader's own cluster.
        expected: String,
    },
}

/// Checks a cluster name: 1..=63 bytes of lowercase ASCII letters, digits,
/// `.`, `_` and `-`, starting with a letter or a digit (so it sits in a URI
/// as it is, and `Prod` and `prod` are never two clusters).
pub fn validate_cluster_name(name: &str) -> Result<(), ClusterNameError> {
    let shown = || name.chars().take(80).collect::<String>();
    if name.is_empty() || name.len() > MAX_CLUSTER_NAME_BYTES {
        return Err(ClusterNameError::Length {
            name: shown(),
            len: name.len(),
        });
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ClusterNameError::Character { name: shown(), bad });
    }
    if !name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        return Err(ClusterNameError::Start { name: shown() });
    }
    Ok(())
}

/// The SAN URI naming cluster `name`.
pub fn cluster_uri(name: &str) -> String {
    format!("{CLUSTER_URI_PREFIX}{name}")
}

/// Whether a certificate naming cluster `theirs` may talk to a reader whose
/// own certificate names `own`:
///
/// - the reader names a cluster: the certificate must name the same one (a
///   certificate naming none is refused too: it could be any cluster's);
/// - the reader names none (certificates minted before cluster names, or
///   without `--cluster`): anything is accepted, as before cluster names
///   existed; such a reader is bound to no cluster by its certificates.
///
/// # Errors
/// [`ClusterMismatch`], naming both sides.
pub fn check_cluster(own: Option<&str>, theirs: Option<&str>) -> Result<(), ClusterMismatch> {
    match (own, theirs) {
        (None, _) => Ok(()),
        (Some(a), Some(b)) if a == b => Ok(()),
        (Some(a), Some(b)) => Err(ClusterMismatch::Other {
            expected: a.to_string(),
            found: b.to_string(),
        }),
        (Some(a), None) => Err(ClusterMismatch::Unnamed {
            expected: a.to_string(),
        }),
    }
}

/// Why a name is not a principal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalError {
    /// Empty or longer than [`MAX_PRINCIPAL_BYTES`].
    #[error("{name:?} must be 1..={MAX_PRINCIPAL_BYTES} bytes long (is {len})")]
    Length {
        /// The name (cut to 80 characters).
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A character outside ASCII letters, digits, `.`, `_`, `-`, `@`.
    #[error("{name:?} contains {bad:?}; allowed are ASCII letters, digits, '.', '_', '-', '@'")]
    Character {
        /// The name (cut to 80 characters).
        name: String,
        /// The first character not allowed.
        bad: char,
    },
    /// Starts with `.` or `-`.
    #[error("{name:?} must not start with '.' or '-'")]
    Start {
        /// The name.
        name: String,
    },
    /// `node`, `node-3`, `node.3`, ...: could pass for a node.
    #[error("{name:?} is reserved: a principal must not read like a node ('node' optionally followed by separators and digits)")]
    NodeLike {
        /// The name.
        name: String,
    },
}

/// Checks a principal: 1..=64 bytes of ASCII letters, digits, `.`, `_`, `-`,
/// `@`, not starting with `.` or `-`, and not `node` (any case) optionally
/// followed only by separators (`.`, `_`, `-`, `@`) and digits. The last
/// rule keeps a principal from reading like a node id in logs, audit trails
/// and role tables; the identity itself never comes from the name
/// ([`CertIdentity::of`]).
pub fn validate_principal(name: &str) -> Result<(), PrincipalError> {
    let shown = || name.chars().take(80).collect::<String>();
    if name.is_empty() || name.len() > MAX_PRINCIPAL_BYTES {
        return Err(PrincipalError::Length {
            name: shown(),
            len: name.len(),
        });
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@')))
    {
        return Err(PrincipalError::Character { name: shown(), bad });
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err(PrincipalError::Start { name: shown() });
    }
    let lower = name.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("node") {
        if rest
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | '-' | '@'))
        {
            return Err(PrincipalError::NodeLike { name: shown() });
        }
    }
    Ok(())
}

/// Parses a node id as written in a `warden://node/` URI: decimal,
/// `1..=MAX_NODE_ID`, no sign, no leading zero.
pub(crate) fn parse_node_id(text: &str) -> Option<u64> {
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>()
        .ok()
        .filter(|id| (1..=MAX_NODE_ID).contains(id))
}

/// The SAN URI naming node `node_id`.
pub fn node_uri(node_id: u64) -> String {
    format!("{NODE_URI_PREFIX}{node_id}")
}

/// The SAN URI naming `principal`.
pub fn principal_uri(principal: &str) -> String {
    format!("{PRINCIPAL_URI_PREFIX}{principal}")
}

impl CertIdentity {
    /// The identity in a DER certificate, by the rules in this module's
    /// docs. Does not verify the chain: call it on certificates a verifier
    /// accepted (the handshake, or [`crate::certs`] loading).
    pub fn of(der: &[u8]) -> Result<CertIdentity, IdentityError> {
        let (_, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| IdentityError::Unparsable(e.to_string()))?;
        Self::of_parsed(&cert)
    }

    /// The identity and the cluster name (if any) in a DER certificate;
    /// like [`CertIdentity::of`], on certificates a verifier accepted.
    pub fn read(der: &[u8]) -> Result<(CertIdentity, Option<String>), IdentityError> {
        let (_, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| IdentityError::Unparsable(e.to_string()))?;
        Ok((Self::of_parsed(&cert)?, cluster_of_parsed(&cert)?))
    }

    pub(crate) fn of_parsed(cert: &X509Certificate<'_>) -> Result<CertIdentity, IdentityError> {
        // A bad or repeated cluster URI makes the certificate unusable.
        cluster_of_parsed(cert)?;
        let uris = san_uris(cert)?;
        let mut node_ids = Vec::new();
        let mut principal_uris = Vec::new();
        for uri in &uris {
            if let Some(id) = uri.strip_prefix(NODE_URI_PREFIX) {
                node_ids.push(
                    parse_node_id(id)
                        .ok_or_else(|| IdentityError::BadNodeId { uri: uri.clone() })?,
                );
            } else if let Some(name) = uri.strip_prefix(PRINCIPAL_URI_PREFIX) {
                principal_uris.push((uri.clone(), name.to_string()));
            } else if uri.starts_with(CLUSTER_URI_PREFIX) {
                // Read by `cluster_of_parsed`.
            } else if uri.len() >= "warden:".len()
                && uri[.."warden:".len()].eq_ignore_ascii_case("warden:")
            {
                return Err(IdentityError::UnknownWardenUri { uri: uri.clone() });
            }
        }
        match node_ids.as_slice() {
            [] => {}
            [id] => {
                let (server_auth, client_auth) = usages(cert);
                if !(server_auth && client_auth) {
                    return Err(IdentityError::NodeWithoutBothUsages);
                }
                return Ok(CertIdentity::Node(*id));
            }
            _ => return Err(IdentityError::SeveralNodeUris),
        }
        let principal = common_name(cert).ok_or(IdentityError::NoCommonName)?;
        validate_principal(&principal).map_err(IdentityError::BadPrincipal)?;
        if let Some((uri, _)) = principal_uris.iter().find(|(_, name)| *name != principal) {
            return Err(IdentityError::PrincipalMismatch {
                uri: uri.clone(),
                principal,
            });
        }
        Ok(CertIdentity::Client(principal))
    }
}

/// The cluster a certificate names (its `warden://cluster/` URI), if any:
/// at most one, with a valid name. Read on CAs too (`create-ca --cluster`).
pub(crate) fn cluster_of_parsed(
    cert: &X509Certificate<'_>,
) -> Result<Option<String>, IdentityError> {
    let mut found = None;
    for uri in san_uris(cert)? {
        let Some(name) = uri.strip_prefix(CLUSTER_URI_PREFIX) else {
            continue;
        };
        if found.is_some() {
            return Err(IdentityError::SeveralClusterUris);
        }
        validate_cluster_name(name).map_err(|reason| IdentityError::BadClusterName {
            uri: uri.clone(),
            reason,
        })?;
        found = Some(name.to_string());
    }
    Ok(found)
}

/// Every SAN URI of `cert` (an unreadable SAN extension is an error).
fn san_uris(cert: &X509Certificate<'_>) -> Result<Vec<String>, IdentityError> {
    let san = cert
        .subject_alternative_name()
        .map_err(|e| IdentityError::Unparsable(format!("subject alternative names: {e}")))?;
    Ok(san
        .map(|ext| {
            ext.value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::URI(uri) => Some(uri.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default())
}

/// (serverAuth, clientAuth) from the extended key usage extension; a
/// certificate without one (or an unreadable one) has neither here.
pub(crate) fn usages(cert: &X509Certificate<'_>) -> (bool, bool) {
    match cert.extended_key_usage() {
        Ok(Some(eku)) => (eku.value.server_auth, eku.value.client_auth),
        _ => (false, false),
    }
}

/// The subject's first common name, if it is a string.
pub(crate) fn common_name(cert: &X509Certificate<'_>) -> Option<String> {
    cert.subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    // What bad input gets: each principal rule refuses with its own reason.
    #[test]
    fn principal_rules() {
        for ok in [
            "alice",
            "a",
            "svc.orders",
            "bob@example.com",
            "x_1",
            "nodejs",
            "node-admin",
            "Alice-2",
        ] {
            assert_eq!(validate_principal(ok), Ok(()), "{ok}");
        }
        let long = "a".repeat(65);
        assert!(matches!(
            validate_principal(""),
            Err(PrincipalError::Length { len: 0, .. })
        ));
        assert!(matches!(
            validate_principal(&long),
            Err(PrincipalError::Length { len: 65, .. })
        ));
        assert!(validate_principal(&"a".repeat(64)).is_ok());
        assert!(matches!(
            validate_principal("a/b"),
            Err(PrincipalError::Character { bad: '/', .. })
        ));
        assert!(matches!(
            validate_principal("a b"),
            Err(PrincipalError::Character { bad: ' ', .. })
        ));
        assert!(matches!(
            validate_principal("é"),
            Err(PrincipalError::Character { .. })
        ));
        assert!(matches!(
            validate_principal(".."),
            Err(PrincipalError::Start { .. })
        ));
        assert!(matches!(
            validate_principal("-x"),
            Err(PrincipalError::Start { .. })
        ));
        for node_like in [
            "node", "NODE", "Node", "node3", "node-3", "node.3", "node_03", "node@1", "node-",
        ] {
            assert!(
                matches!(
                    validate_principal(node_like),
                    Err(PrincipalError::NodeLike { .. })
                ),
                "{node_like}"
            );
        }
    }

    // What bad input gets: node ids in URIs are canonical decimals in range.
    #[test]
    fn node_ids_in_uris() {
        assert_eq!(parse_node_id("3"), Some(3));
        assert_eq!(parse_node_id("9007199254740991"), Some(MAX_NODE_ID));
        for bad in ["", "0", "03", "+3", "-3", "3a", "9007199254740992", " 3"] {
            assert_eq!(parse_node_id(bad), None, "{bad:?}");
        }
    }

    // docs/security.md "Certificates": cluster names are lowercase and
    // URI-safe, and each bad one is refused with its own reason.
    #[test]
    fn cluster_name_rules() {
        let longest = "x".repeat(63);
        for ok in [
            "prod",
            "a",
            "eu-west.1",
            "team_a",
            "0blue",
            longest.as_str(),
        ] {
            assert_eq!(validate_cluster_name(ok), Ok(()), "{ok}");
        }
        assert!(matches!(
            validate_cluster_name(""),
            Err(ClusterNameError::Length { len: 0, .. })
        ));
        assert!(matches!(
            validate_cluster_name(&"x".repeat(64)),
            Err(ClusterNameError::Length { len: 64, .. })
        ));
        for (bad, c) in [
            ("Prod", 'P'),
            ("a/b", '/'),
            ("a b", ' '),
            ("é", 'é'),
            ("a:1", ':'),
        ] {
            assert_eq!(
                validate_cluster_name(bad),
                Err(ClusterNameError::Character {
                    name: bad.into(),
                    bad: c
                }),
                "{bad}"
            );
        }
        for bad in ["-a", ".a", "_a"] {
            assert!(
                matches!(
                    validate_cluster_name(bad),
                    Err(ClusterNameError::Start { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(cluster_uri("prod"), "warden://cluster/prod");
    }

    // docs/security.md "Certificates": a reader naming a cluster takes only
    // that cluster's certificates (not one naming none); a reader naming
    // none takes any, as before cluster names.
    #[test]
    fn a_named_reader_takes_its_own_cluster_only() {
        assert_eq!(check_cluster(Some("blue"), Some("blue")), Ok(()));
        assert_eq!(
            check_cluster(Some("blue"), Some("green")),
            Err(ClusterMismatch::Other {
                expected: "blue".into(),
                found: "green".into()
            })
        );
        let unnamed = check_cluster(Some("blue"), None).unwrap_err();
        assert_eq!(
            unnamed,
            ClusterMismatch::Unnamed {
                expected: "blue".into()
            }
        );
        assert!(unnamed.to_string().contains("--cluster blue"), "{unnamed}");
        assert_eq!(check_cluster(None, Some("green")), Ok(()));
        assert_eq!(check_cluster(None, None), Ok(()));
    }
}
