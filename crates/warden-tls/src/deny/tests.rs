use super::*;

// One serial, however it is typed (colons, case, 0x, leading zeros), is
// one deny entry: `warden cert revoke` takes what `cert list` prints and
// what openssl prints.
#[test]
fn normalize_serial_accepts_the_usual_spellings() {
    let cases = [
        ("1a2b", "1a2b"),
        ("1A2B", "1a2b"),
        ("1a:2B", "1a2b"),
        ("0x1a2b", "1a2b"),
        ("0X1A2B", "1a2b"),
        ("0x00:1a:2b", "1a2b"),
        ("00:00:1a", "1a"),
        ("0001a2b", "1a2b"),
        ("0", "0"),
        ("00:00", "0"),
        ("0x0", "0"),
        // 40 digits, the most (20 bytes), with and without leading zeros.
        (
            "7fffffffffffffffffffffffffffffffffffffff",
            "7fffffffffffffffffffffffffffffffffffffff",
        ),
        (
            "00:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff:ff",
            "ffffffffffffffffffffffffffffffffffffffff",
        ),
    ];
    for (typed, want) in cases {
        assert_eq!(normalize_serial(typed).as_deref(), Ok(want), "{typed}");
    }
}

// What is not a serial is refused with a typed error naming the field,
// never guessed at (a 1-digit group could be 0x01 or half of a byte).
#[test]
fn normalize_serial_refuses_what_is_not_a_serial() {
    let long = "1".repeat(41);
    let cases: Vec<(&str, SerialError)> = vec![
        ("", SerialError::Empty(String::new())),
        ("0x", SerialError::Empty("0x".into())),
        (
            "1a2g",
            SerialError::NotHex {
                serial: "1a2g".into(),
                bad: 'g',
            },
        ),
        (
            " 1a",
            SerialError::NotHex {
                serial: " 1a".into(),
                bad: ' ',
            },
        ),
        (
            "0x-1",
            SerialError::NotHex {
                serial: "0x-1".into(),
                bad: '-',
            },
        ),
        ("1:2", SerialError::Group("1:2".into())),
        ("1a::2b", SerialError::Group("1a::2b".into())),
        (":1a", SerialError::Group(":1a".into())),
        ("1a:", SerialError::Group("1a:".into())),
        (
            &long,
            SerialError::TooLong {
                serial: long.clone(),
                digits: 41,
            },
        ),
    ];
    for (typed, want) in cases {
        assert_eq!(normalize_serial(typed), Err(want), "{typed:?}");
    }
    let e = normalize_serial(&long).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "serial {long:?}: 41 hex digits without leading zeros; at most 40 \
             (20 bytes, RFC 5280 section 4.1.2.2)"
        )
    );
    assert!(normalize_serial("zz")
        .unwrap_err()
        .to_string()
        .starts_with("serial \"zz\""));
}

// The deny list's rules: a principal denies a client whatever its serial,
// a serial denies any certificate; a node (no principal) only by serial.
#[test]
fn deny_list_checks_principal_then_serial() {
    let list = DenyList::from_entries(["mallory"], ["0x0A:0B"]).unwrap();
    assert_eq!(list.serials.iter().collect::<Vec<_>>(), ["a0b"]);
    assert!(list.denies(Some("mallory"), "1"));
    assert!(list.denies(Some("alice"), "a0b"));
    assert!(list.denies(None, "a0b"));
    assert!(!list.denies(Some("alice"), "1"));
    assert!(!list.denies(Some("Mallory"), "1"));
    assert!(!list.denies(None, "1"));
    assert_eq!(
        list.check(Some("mallory"), "a0b"),
        Err(Denied::Principal("mallory".into()))
    );
    assert_eq!(list.check(None, "a0b"), Err(Denied::Serial("a0b".into())));
    let other = DenyList::from_entries(["eve"], ["1"]).unwrap();
    let both = list.union(&other);
    assert_eq!(both.principals.len(), 2);
    assert_eq!(both.serials.len(), 2);
    assert!(DenyList::default().is_empty() && !both.is_empty());
}

// The deny file: both keys optional, unknown keys and bad entries refused
// naming the entry, and a cap on the entries.
#[test]
fn deny_file_parsing() {
    assert_eq!(parse_deny_file(""), Ok(DenyList::default()));
    let list =
        parse_deny_file("principals = [\"mallory\"]\nserials = [\"00:1A\", \"0x1a\"]\n").unwrap();
    assert_eq!(list.principals.iter().collect::<Vec<_>>(), ["mallory"]);
    assert_eq!(list.serials.iter().collect::<Vec<_>>(), ["1a"]);

    let e = parse_deny_file("serials = [\"1\", \"2\", \"xyz\"]").unwrap_err();
    assert!(matches!(e, DenyError::Serial { index: 2, .. }), "{e:?}");
    assert!(
        e.to_string().starts_with("serials[2]: serial \"xyz\""),
        "{e}"
    );

    let e = parse_deny_file("principals = [\"ok\", \"node-3\"]").unwrap_err();
    assert!(matches!(e, DenyError::Principal { index: 1, .. }), "{e:?}");
    assert!(e.to_string().starts_with("principals[1]: "), "{e}");

    // root is never denied by name (found by attack: a deny file naming
    // it locked root out of a node).
    let e = parse_deny_file("principals = [\"ok\", \"root\"]").unwrap_err();
    assert_eq!(e, DenyError::Root { index: 1 });
    assert!(
        e.to_string()
            .starts_with("principals[1]: \"root\" cannot be denied"),
        "{e}"
    );

    let e = parse_deny_file("principals = []\nserial = [\"1\"]\n").unwrap_err();
    match &e {
        DenyError::Toml { line, message, .. } => {
            assert_eq!(*line, 2);
            assert!(message.contains("unknown field `serial`"), "{message}");
        }
        other => panic!("expected Toml, got {other:?}"),
    }
    assert!(matches!(
        parse_deny_file("serials = [1]"),
        Err(DenyError::Toml { line: 1, .. })
    ));

    let too_many = format!(
        "serials = [{}]",
        (0..=MAX_DENY_FILE_ENTRIES)
            .map(|i| format!("\"{i:x}\""))
            .collect::<Vec<_>>()
            .join(",")
    );
    let e = parse_deny_file(&too_many).unwrap_err();
    assert_eq!(e, DenyError::TooMany { count: 10_001 });
    assert!(e.to_string().contains("at most 10000"), "{e}");
}

// The replicated list replaces the previous one; the file's stays; the
// union is what is in force, and a change is reported as one.
#[test]
fn deny_state_keeps_two_lists() {
    let state = DenyState::new(DenyList::from_entries(["a"], [] as [&str; 0]).unwrap());
    let (eff, changed) = state.set(DenyList::from_entries(["b"], ["1"]).unwrap(), false);
    assert!(changed);
    assert_eq!(eff.principals.len(), 2);
    let (eff, changed) = state.set(DenyList::from_entries(["c"], ["1"]).unwrap(), false);
    assert!(changed);
    assert_eq!(eff.principals.iter().collect::<Vec<_>>(), ["a", "c"]);
    let (_, changed) = state.set(DenyList::from_entries(["c"], ["1"]).unwrap(), false);
    assert!(!changed);
    assert_eq!(state.file().principals.iter().collect::<Vec<_>>(), ["a"]);
    let (eff, _) = state.set(DenyList::default(), true);
    assert_eq!(*eff, *state.effective());
    assert_eq!(eff.principals.iter().collect::<Vec<_>>(), ["c"]);
}
