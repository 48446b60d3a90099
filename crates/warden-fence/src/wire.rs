//! The wire convention: every fenced request carries the lock's name and the
//! grant's token, as HTTP headers or gRPC metadata with the same names; a
//! semaphore permit's or a read-write lock's grant also says its slot or its
//! mode.
//!
//! ```text
//! warden-resource: orders
//! warden-fencing-token: 42
//! warden-slot: 3               (a semaphore permit: its slot, 0..=2^32-1)
//! warden-lock-mode: shared     (a read-write grant: shared | exclusive)
//! ```
//!
//! The token is a decimal whole number in 1..=2^53-1. The resource is the
//! lock's name as UTF-8 bytes; gRPC metadata (and most HTTP tooling) carries
//! visible ASCII only, so prefer ASCII lock names for fenced resources.
//! Without `warden-slot` and `warden-lock-mode` the token is checked by the
//! mutex rule, which is also the rule of `warden-lock-mode: exclusive`; a
//! request carrying both is refused (a permit has no mode).

use axum::http::{HeaderMap, HeaderValue};
use tonic::metadata::{AsciiMetadataValue, MetadataMap};

use crate::fence::{Claim, Kind};

/// Header / metadata key naming the lock (the resource the token belongs to).
pub const RESOURCE_HEADER: &str = "warden-resource";
/// Header / metadata key carrying the fencing token (decimal).
pub const TOKEN_HEADER: &str = "warden-fencing-token";
/// Header / metadata key carrying a semaphore permit's slot (decimal u32).
pub const SLOT_HEADER: &str = "warden-slot";
/// Header / metadata key carrying a read-write grant's mode: `shared` or
/// `exclusive`.
pub const MODE_HEADER: &str = "warden-lock-mode";
/// The largest token Warden issues (tokens stay below 2^53, docs/semantics.md "Words").
pub const MAX_TOKEN: u64 = (1 << 53) - 1;
/// The longest resource name Warden accepts, in bytes.
const MAX_RESOURCE_BYTES: usize = 512;

/// The two values of a fenced request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencingHeaders {
    /// The lock's name.
    pub resource: String,
    /// The grant's fencing token.
    pub token: u64,
}

/// The fencing headers of a request that may carry a slot or a mode: the
/// resource and the [`Claim`] to check by its kind's rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimHeaders {
    /// The lock's name.
    pub resource: String,
    /// The grant's token and kind.
    pub claim: Claim,
}

/// A missing or malformed fencing header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The header is absent.
    #[error("missing header {header}")]
    Missing {
        /// Which header.
        header: &'static str,
    },
    /// The header is present but unusable.
    #[error("malformed header {header}: {reason}")]
    Malformed {
        /// Which header.
        header: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

fn malformed(header: &'static str, reason: impl Into<String>) -> HeaderError {
    HeaderError::Malformed {
        header,
        reason: reason.into(),
    }
}

/// Parses the two raw values (as bytes, from whichever transport).
pub fn parse(resource: Option<&[u8]>, token: Option<&[u8]>) -> Result<FencingHeaders, HeaderError> {
    let resource = resource.ok_or(HeaderError::Missing {
        header: RESOURCE_HEADER,
    })?;
    let token = token.ok_or(HeaderError::Missing {
        header: TOKEN_HEADER,
    })?;
    let resource = std::str::from_utf8(resource)
        .map_err(|_| malformed(RESOURCE_HEADER, "not UTF-8"))?
        .to_string();
    if resource.is_empty() {
        return Err(malformed(RESOURCE_HEADER, "empty (1..=512 bytes)"));
    }
    if resource.len() > MAX_RESOURCE_BYTES {
        return Err(malformed(
            RESOURCE_HEADER,
            format!("{} bytes is above the limit of 512", resource.len()),
        ));
    }
    if resource.chars().any(char::is_control) {
        return Err(malformed(RESOURCE_HEADER, "contains a control character"));
    }
    let text = std::str::from_utf8(token).map_err(|_| malformed(TOKEN_HEADER, "not UTF-8"))?;
    let token = match text.trim().parse::<u64>() {
        Ok(t) if (1..=MAX_TOKEN).contains(&t) => t,
        _ => {
            return Err(malformed(
                TOKEN_HEADER,
                format!("{text:?} is not a whole number in 1..={MAX_TOKEN}"),
            ))
        }
    };
    Ok(FencingHeaders { resource, token })
}

/// Parses the four raw values: [`parse`] for the resource and the token, then
/// the optional slot and mode. Neither: an exclusive claim (the mutex
/// rule); both: refused, naming [`MODE_HEADER`].
pub fn parse_claim(
    resource: Option<&[u8]>,
    token: Option<&[u8]>,
    slot: Option<&[u8]>,
    mode: Option<&[u8]>,
) -> Result<ClaimHeaders, HeaderError> {
    let FencingHeaders { resource, token } = parse(resource, token)?;
    let slot = slot
        .map(|raw| {
            let text = std::str::from_utf8(raw).map_err(|_| malformed(SLOT_HEADER, "not UTF-8"))?;
            text.trim().parse::<u32>().map_err(|_| {
                malformed(
                    SLOT_HEADER,
                    format!("{text:?} is not a whole number in 0..={}", u32::MAX),
                )
            })
        })
        .transpose()?;
    let mode = mode
        .map(|raw| {
            let text = std::str::from_utf8(raw).map_err(|_| malformed(MODE_HEADER, "not UTF-8"))?;
            match text.trim() {
                "shared" => Ok(Kind::Shared),
                "exclusive" => Ok(Kind::Exclusive),
                _ => Err(malformed(
                    MODE_HEADER,
                    format!("{text:?} is neither shared nor exclusive"),
                )),
            }
        })
        .transpose()?;
    let kind = match (slot, mode) {
        (Some(_), Some(_)) => {
            return Err(malformed(
                MODE_HEADER,
                format!("a semaphore permit ({SLOT_HEADER}) has no lock mode: send one of the two"),
            ))
        }
        (Some(slot), None) => Kind::Permit { slot },
        (None, Some(kind)) => kind,
        (None, None) => Kind::Exclusive,
    };
    Ok(ClaimHeaders {
        resource,
        claim: Claim { token, kind },
    })
}

/// Reads the fencing headers of an HTTP request.
pub fn from_http(headers: &HeaderMap) -> Result<FencingHeaders, HeaderError> {
    parse(
        headers.get(RESOURCE_HEADER).map(HeaderValue::as_bytes),
        headers.get(TOKEN_HEADER).map(HeaderValue::as_bytes),
    )
}

/// Reads the fencing metadata of a gRPC request (server side:
/// `from_metadata(request.metadata())`).
pub fn from_metadata(metadata: &MetadataMap) -> Result<FencingHeaders, HeaderError> {
    parse(
        metadata.get(RESOURCE_HEADER).map(|v| v.as_bytes()),
        metadata.get(TOKEN_HEADER).map(|v| v.as_bytes()),
    )
}

/// Reads the fencing headers of an HTTP request, slot and mode included.
pub fn from_http_claim(headers: &HeaderMap) -> Result<ClaimHeaders, HeaderError> {
    let get = |name: &str| headers.get(name).map(HeaderValue::as_bytes);
    parse_claim(
        get(RESOURCE_HEADER),
        get(TOKEN_HEADER),
        get(SLOT_HEADER),
        get(MODE_HEADER),
    )
}

/// Reads the fencing metadata of a gRPC request, slot and mode included.
pub fn from_metadata_claim(metadata: &MetadataMap) -> Result<ClaimHeaders, HeaderError> {
    let get = |name: &str| metadata.get(name).map(|v| v.as_bytes());
    parse_claim(
        get(RESOURCE_HEADER),
        get(TOKEN_HEADER),
        get(SLOT_HEADER),
        get(MODE_HEADER),
    )
}

/// Sets the fencing headers on an HTTP header map (client side): a plain
/// token (the mutex rule). Removes any slot or mode header already there.
pub fn insert_http(headers: &mut HeaderMap, resource: &str, token: u64) -> Result<(), HeaderError> {
    insert_http_claim(headers, resource, Claim::exclusive(token))
}

/// Sets the fencing headers of `claim` on an HTTP header map (client side):
/// `warden-slot` for a permit, `warden-lock-mode: shared` for a shared grant,
/// neither for an exclusive one; a header the claim does not use is removed.
pub fn insert_http_claim(
    headers: &mut HeaderMap,
    resource: &str,
    claim: Claim,
) -> Result<(), HeaderError> {
    let value = HeaderValue::from_str(resource)
        .map_err(|_| malformed(RESOURCE_HEADER, "not a valid header value"))?;
    headers.insert(RESOURCE_HEADER, value);
    headers.insert(TOKEN_HEADER, HeaderValue::from(claim.token));
    headers.remove(SLOT_HEADER);
    headers.remove(MODE_HEADER);
    match claim.kind {
        Kind::Exclusive => {}
        Kind::Shared => {
            headers.insert(MODE_HEADER, HeaderValue::from_static("shared"));
        }
        Kind::Permit { slot } => {
            headers.insert(SLOT_HEADER, HeaderValue::from(slot));
        }
    }
    Ok(())
}

/// Sets the fencing metadata on an outgoing tonic request (client side): a
/// plain token (the mutex rule). Refuses a resource name that is not visible
/// ASCII (gRPC's ASCII metadata). Removes any slot or mode entry already
/// there.
pub fn attach<T>(
    request: &mut tonic::Request<T>,
    resource: &str,
    token: u64,
) -> Result<(), HeaderError> {
    attach_claim(request, resource, Claim::exclusive(token))
}

/// Sets the fencing metadata of `claim` on an outgoing tonic request
/// (client side), as [`insert_http_claim`] does on a header map.
pub fn attach_claim<T>(
    request: &mut tonic::Request<T>,
    resource: &str,
    claim: Claim,
) -> Result<(), HeaderError> {
    let not_ascii = || malformed(RESOURCE_HEADER, "gRPC metadata carries visible ASCII only");
    if !resource.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(not_ascii());
    }
    let value: AsciiMetadataValue = resource.parse().map_err(|_| not_ascii())?;
    let md = request.metadata_mut();
    md.insert(RESOURCE_HEADER, value);
    md.insert(TOKEN_HEADER, AsciiMetadataValue::from(claim.token));
    md.remove(SLOT_HEADER);
    md.remove(MODE_HEADER);
    match claim.kind {
        Kind::Exclusive => {}
        Kind::Shared => {
            md.insert(MODE_HEADER, AsciiMetadataValue::from_static("shared"));
        }
        Kind::Permit { slot } => {
            md.insert(SLOT_HEADER, AsciiMetadataValue::from(slot));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The wire convention round-trips through tonic metadata and HTTP headers.
    #[test]
    fn tonic_and_http_round_trip() {
        let mut req = tonic::Request::new(());
        attach(&mut req, "orders", 42).unwrap();
        assert_eq!(
            from_metadata(req.metadata()).unwrap(),
            FencingHeaders {
                resource: "orders".into(),
                token: 42
            }
        );
        let mut h = HeaderMap::new();
        insert_http(&mut h, "orders/eu-1", 9).unwrap();
        assert_eq!(h.get(TOKEN_HEADER).unwrap(), "9");
        assert_eq!(from_http(&h).unwrap().resource, "orders/eu-1");
        assert!(attach(&mut req, "café", 1).is_err());
    }

    // Bad input names the header: missing, empty, zero, negative, over 2^53-1.
    #[test]
    fn bad_headers_name_the_header() {
        assert_eq!(
            parse(None, Some(b"1")),
            Err(HeaderError::Missing {
                header: RESOURCE_HEADER
            })
        );
        assert_eq!(
            parse(Some(b"r"), None),
            Err(HeaderError::Missing {
                header: TOKEN_HEADER
            })
        );
        for (r, t, header) in [
            (&b""[..], &b"1"[..], RESOURCE_HEADER),
            (b"a\x01b", b"1", RESOURCE_HEADER),
            (b"r", b"0", TOKEN_HEADER),
            (b"r", b"-3", TOKEN_HEADER),
            (b"r", b"x", TOKEN_HEADER),
            (b"r", b"9007199254740992", TOKEN_HEADER),
        ] {
            match parse(Some(r), Some(t)) {
                Err(HeaderError::Malformed { header: h, .. }) => assert_eq!(h, header),
                other => panic!("{r:?} {t:?}: {other:?}"),
            }
        }
        assert_eq!(parse(Some(b"r"), Some(b" 7 ")).unwrap().token, 7);
    }

    // The kind headers round-trip through tonic metadata and HTTP headers:
    // a permit carries its slot, a shared grant its mode, an exclusive one
    // neither (the mutex rule); a reused request or map keeps no header of an
    // earlier claim's kind.
    #[test]
    fn claims_round_trip_and_leave_no_earlier_kind_behind() {
        let mut req = tonic::Request::new(());
        let mut h = HeaderMap::new();
        for claim in [
            Claim::permit(3, 12),
            Claim::shared(13),
            Claim::permit(u32::MAX, 14),
            Claim::exclusive(15),
        ] {
            attach_claim(&mut req, "jobs", claim).unwrap();
            insert_http_claim(&mut h, "jobs", claim).unwrap();
            let want = ClaimHeaders {
                resource: "jobs".into(),
                claim,
            };
            assert_eq!(from_metadata_claim(req.metadata()).unwrap(), want);
            assert_eq!(from_http_claim(&h).unwrap(), want);
        }
        assert_eq!(h.len(), 2, "an exclusive claim sends the two plain headers");
        insert_http_claim(&mut h, "jobs", Claim::shared(16)).unwrap();
        assert_eq!(h.get(MODE_HEADER).unwrap(), "shared");
        insert_http(&mut h, "jobs", 17).unwrap();
        assert_eq!(h.get(MODE_HEADER), None, "a plain token drops the mode");
        attach(&mut req, "jobs", 18).unwrap();
        assert_eq!(
            from_metadata_claim(req.metadata()).unwrap().claim,
            Claim::exclusive(18)
        );
        // "exclusive" said explicitly is the same claim as no mode at all.
        assert_eq!(
            parse_claim(Some(b"r"), Some(b"4"), None, Some(b" exclusive ")).unwrap(),
            ClaimHeaders {
                resource: "r".into(),
                claim: Claim::exclusive(4)
            }
        );
    }

    // Bad kind headers name the header and what is wrong; the plain headers
    // are checked first, as before.
    #[test]
    fn bad_kind_headers_name_the_header() {
        for (slot, mode, header, says) in [
            (Some(&b"-1"[..]), None, SLOT_HEADER, "0..=4294967295"),
            (Some(b"4294967296"), None, SLOT_HEADER, "0..=4294967295"),
            (Some(b""), None, SLOT_HEADER, "0..=4294967295"),
            (Some(b"\xff"), None, SLOT_HEADER, "not UTF-8"),
            (
                None,
                Some(&b"Shared"[..]),
                MODE_HEADER,
                "neither shared nor exclusive",
            ),
            (
                None,
                Some(b"read"),
                MODE_HEADER,
                "neither shared nor exclusive",
            ),
            (None, Some(b""), MODE_HEADER, "neither shared nor exclusive"),
            (Some(b"2"), Some(b"shared"), MODE_HEADER, "has no lock mode"),
            (
                Some(b"2"),
                Some(b"exclusive"),
                MODE_HEADER,
                "has no lock mode",
            ),
        ] {
            match parse_claim(Some(b"r"), Some(b"1"), slot, mode) {
                Err(HeaderError::Malformed { header: h, reason }) => {
                    assert_eq!(h, header, "{slot:?} {mode:?}");
                    assert!(reason.contains(says), "{slot:?} {mode:?}: {reason}");
                }
                other => panic!("{slot:?} {mode:?}: {other:?}"),
            }
        }
        assert_eq!(
            parse_claim(Some(b"r"), Some(b"0"), Some(b"x"), None),
            Err(malformed(
                TOKEN_HEADER,
                format!("\"0\" is not a whole number in 1..={MAX_TOKEN}")
            ))
        );
        assert_eq!(
            parse_claim(Some(b"r"), Some(b"5"), Some(b" 7 "), None)
                .unwrap()
                .claim,
            Claim::permit(7, 5)
        );
    }
}
