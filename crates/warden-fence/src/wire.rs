//! The wire convention: every fenced request carries the lock's name and the
//! grant's token, as HTTP headers or gRPC metadata with the same names.
//!
//! ```text
//! warden-resource: orders
//! warden-fencing-token: 42
//! ```
//!
//! The token is a decimal whole number in 1..=2^53-1. The resource is the
//! lock's name as UTF-8 bytes; gRPC metadata (and most HTTP tooling) carries
//! visible ASCII only, so prefer ASCII lock names for fenced resources.

use axum::http::{HeaderMap, HeaderValue};
use tonic::metadata::{AsciiMetadataValue, MetadataMap};

/// Header / metadata key naming the lock (the resource the token belongs to).
pub const RESOURCE_HEADER: &str = "warden-resource";
/// Header / metadata key carrying the fencing token (decimal).
pub const TOKEN_HEADER: &str = "warden-fencing-token";
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

/// Sets the fencing headers on an HTTP header map (client side).
pub fn insert_http(headers: &mut HeaderMap, resource: &str, token: u64) -> Result<(), HeaderError> {
    let value = HeaderValue::from_str(resource)
        .map_err(|_| malformed(RESOURCE_HEADER, "not a valid header value"))?;
    headers.insert(RESOURCE_HEADER, value);
    headers.insert(TOKEN_HEADER, HeaderValue::from(token));
    Ok(())
}

/// Sets the fencing metadata on an outgoing tonic request (client side).
/// Refuses a resource name that is not visible ASCII (gRPC's ASCII metadata).
pub fn attach<T>(
    request: &mut tonic::Request<T>,
    resource: &str,
    token: u64,
) -> Result<(), HeaderError> {
    let not_ascii = || malformed(RESOURCE_HEADER, "gRPC metadata carries visible ASCII only");
    if !resource.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(not_ascii());
    }
    let value: AsciiMetadataValue = resource.parse().map_err(|_| not_ascii())?;
    let md = request.metadata_mut();
    md.insert(RESOURCE_HEADER, value);
    md.insert(TOKEN_HEADER, AsciiMetadataValue::from(token));
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
}
