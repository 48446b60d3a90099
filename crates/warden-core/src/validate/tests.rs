//! Tests of the input rules: each names the field and the limit.

use super::*;

// "What bad input gets": a new acquire's name may not look like another
// name (trailing space, bidi override, zero-width space), while the old
// rule, which apply and release keep, still accepts those names.
#[test]
fn new_names_refuse_lookalikes_the_old_rule_still_accepts() {
    for ok in ["orders", "payments/eu-1", "caf\u{e9}", "a b"] {
        assert!(new_resource_name(ok).is_ok(), "{ok:?}");
    }
    let e = new_resource_name(&format!("{}scheduler", crate::limits::ELECTION_PREFIX));
    assert!(e.is_ok(), "an election key's prefix is not the name");
    for (bad, needle) in [
        ("orders ", "whitespace"),
        (" orders", "whitespace"),
        ("orders\u{a0}", "whitespace"),
        ("ord\u{202e}sre", "U+202E at char 3"),
        ("or\u{200b}ders", "U+200B at char 2"),
        ("\u{feff}orders", "U+FEFF at char 0"),
    ] {
        let e = new_resource_name(bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
        assert_eq!(e.field.as_deref(), Some("resource"), "{bad:?}");
        assert!(e.message.contains(needle), "{bad:?}: {}", e.message);
        assert!(resource(bad).is_ok(), "{bad:?}: the old rule accepts it");
    }
    // The old rule's refusals come first.
    assert!(new_resource_name("")
        .unwrap_err()
        .message
        .contains("1..=512"));
}

// "What bad input gets": each bound is exact and the error names the field.
#[test]
fn bounds_are_exact() {
    assert!(resource("a").is_ok());
    assert!(resource(&"x".repeat(512)).is_ok());
    assert_eq!(resource("").unwrap_err().field.as_deref(), Some("resource"));
    let e = resource(&"x".repeat(513)).unwrap_err();
    assert!(e.message.contains("512"), "{}", e.message);
    assert_eq!(
        resource("a\0b").unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert!(resource("a\u{7f}").is_err());
    assert!(resource("a\u{85}").is_err());
    assert!(resource("élan/日本").is_ok());
    assert!(ttl_ms(1_000).is_ok() && ttl_ms(3_600_000).is_ok());
    assert_eq!(ttl_ms(999).unwrap_err().field.as_deref(), Some("ttl_ms"));
    assert!(ttl_ms(3_600_001).unwrap_err().message.contains("3600000"));
    assert!(ttl_ms(u64::MAX).is_err());
    assert!(wait_timeout_ms(0).is_ok() && wait_timeout_ms(3_600_000).is_ok());
    assert_eq!(
        wait_timeout_ms(3_600_001).unwrap_err().field.as_deref(),
        Some("wait_timeout_ms")
    );
    assert!(lock_delay_ms(60_000).is_ok());
    assert_eq!(
        lock_delay_ms(60_001).unwrap_err().field.as_deref(),
        Some("lock_delay_ms")
    );
    let h = RequestHeader {
        client_id: 0,
        request_id: 1,
        acked_request_id: 0,
    };
    assert_eq!(header(&h).unwrap_err().field.as_deref(), Some("client_id"));
    let h = RequestHeader {
        client_id: 1,
        request_id: 0,
        acked_request_id: 0,
    };
    assert_eq!(header(&h).unwrap_err().field.as_deref(), Some("request_id"));
    let h = RequestHeader {
        client_id: 1,
        request_id: 3,
        acked_request_id: 3,
    };
    assert_eq!(
        header(&h).unwrap_err().field.as_deref(),
        Some("acked_request_id")
    );
    assert_eq!(
        lease_id(u64::MAX).unwrap_err().field.as_deref(),
        Some("lease_id")
    );
    assert_eq!(
        fencing_token(0).unwrap_err().field.as_deref(),
        Some("fencing_token")
    );
    assert!(requested_by("ops@host").is_ok());
    assert!(requested_by(&"u".repeat(256)).is_ok());
    let e = requested_by(&"u".repeat(257)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("requested_by"));
    assert!(e.message.contains("256"), "{}", e.message);
    assert!(requested_by("").is_err());
    assert!(requested_by("a\nb").is_err());
}
