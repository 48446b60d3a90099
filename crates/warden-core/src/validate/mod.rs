//! Input validation: every bound from [`crate::limits`], checked with a typed
//! error that names the field and the limit (docs/semantics.md "What bad input gets").
//!
//! The server calls [`command`] before proposing a client command, and
//! [`crate::table::LockTable::apply`] calls it again at apply time, so a
//! command that slipped past a buggy or older server is still refused there,
//! with nothing changed. Leader-duty commands (`Promote`, `Tick`,
//! `DropClients`) and `RenewBatch` carry no
//! client-chosen durations that need bounds: apply treats their contents
//! defensively (unknown ids are skipped, arithmetic is checked) and they always
//! pass here.
//!
//! Identities ([`crate::auth`]): [`principal`] (also [`Principal::new`]),
//! [`role`], [`prefix`], [`quota`] and [`limits`]. A
//! [`Command::Authorized`] passes when its principal is valid and it wraps a
//! client command that passes; a bare [`Command::AuthChange`] never passes.

use crate::limits::{
    MAX_BATCH_COMMANDS, MAX_CLIENTS_CEILING, MAX_ID, MAX_LEASES_CEILING, MAX_LOCK_DELAY_MS,
    MAX_MAX_HOLD_MS, MAX_MULTI_RESOURCES, MAX_PREFIX_BYTES, MAX_PRINCIPAL_BYTES,
    MAX_REQUESTED_BY_BYTES, MAX_RESOURCE_BYTES, MAX_SEMAPHORE_LIMIT, MAX_SERIAL_HEX_DIGITS,
    MAX_TTL_MS, MAX_WAIT_TIMEOUT_MS, MIN_MAX_HOLD_MS, MIN_TTL_MS, QUOTA_CLIENTS_CEILING,
    QUOTA_LEASES_CEILING, QUOTA_LOCKS_CEILING, QUOTA_VALUES_CEILING, QUOTA_VALUE_BYTES_CEILING,
    QUOTA_WAITERS_CEILING, QUOTA_WAITS_PER_RESOURCE_CEILING, QUOTA_WATCHES_CEILING,
};
use crate::types::{
    Acquire, AuthChange, AuthOp, Authorized, ClusterLimits, Command, CommandError, DenyTarget,
    ErrorCode, LeaseSpec, LockKind, Mode, Principal, Quota, RequestHeader,
};

/// Builds a [`CommandError`] for `field`.
pub(crate) fn error(
    code: ErrorCode,
    field: Option<&str>,
    message: impl Into<String>,
) -> CommandError {
    CommandError {
        code,
        field: field.map(str::to_owned),
        message: message.into(),
    }
}

fn invalid(field: &str, message: impl Into<String>) -> CommandError {
    error(ErrorCode::InvalidArgument, Some(field), message)
}

/// A resource name: 1..=[`MAX_RESOURCE_BYTES`] bytes of UTF-8 without NUL or
/// any other control character (`char::is_control`).
///
/// # Errors
/// `InvalidArgument`, field `"resource"`, naming the limit.
pub fn resource(name: &str) -> Result<(), CommandError> {
    // An election key is the election prefix + a name that obeys the rules.
    let name = name
        .strip_prefix(crate::limits::ELECTION_PREFIX)
        .unwrap_or(name);
    if name.is_empty() || name.len() > MAX_RESOURCE_BYTES {
        return Err(invalid(
            "resource",
            format!(
                "resource must be 1..={MAX_RESOURCE_BYTES} bytes of UTF-8; got {} bytes",
                name.len()
            ),
        ));
    }
    if let Some(pos) = name.chars().position(char::is_control) {
        return Err(invalid(
            "resource",
            format!(
                "resource must not contain NUL or control characters (found one at char {pos})"
            ),
        ));
    }
    Ok(())
}

/// The stricter rule for the name of a *new* acquire, checked at the
/// service edge only (never at apply): [`resource`], and no leading or
/// trailing whitespace and no Unicode format character (general category
/// Cf: bidi controls such as U+202E, zero-width spaces and joiners, U+FEFF),
/// which make two names look alike in a list or a dashboard ("orders" and
/// "orders " or "or\u{200B}ders"). Apply, release, forced release and
/// status keep the old rule, so entries written before this one replay the
/// same on every version and a lock already held on such a name can still
/// be released.
///
/// # Errors
/// `InvalidArgument`, field `"resource"`, naming the character and where.
pub fn new_resource_name(name: &str) -> Result<(), CommandError> {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory as _};
    resource(name)?;
    let bare = name
        .strip_prefix(crate::limits::ELECTION_PREFIX)
        .unwrap_or(name);
    if bare.trim() != bare {
        return Err(invalid(
            "resource",
            "resource must not start or end with whitespace (it would look like the name without it)",
        ));
    }
    if let Some((pos, c)) = bare
        .chars()
        .enumerate()
        .find(|(_, c)| c.general_category() == GeneralCategory::Format)
    {
        return Err(invalid(
            "resource",
            format!(
                "resource must not contain Unicode format characters such as bidi controls or zero-width spaces (found U+{:04X} at char {pos})",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

/// A published value: at most [`crate::limits::MAX_VALUE_BYTES`] bytes.
///
/// # Errors
/// `InvalidArgument`, field `"value"`.
pub fn value(value: &str) -> Result<(), CommandError> {
    let max = crate::limits::MAX_VALUE_BYTES;
    if value.len() > max {
        return Err(invalid(
            "value",
            format!("value must be at most {max} bytes; got {}", value.len()),
        ));
    }
    Ok(())
}

/// A lease TTL in milliseconds: [`MIN_TTL_MS`]..=[`MAX_TTL_MS`] (1 s ..= 1 h).
///
/// # Errors
/// `InvalidArgument`, field `"ttl_ms"`.
pub fn ttl_ms(ttl_ms: u64) -> Result<(), CommandError> {
    if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(invalid(
            "ttl_ms",
            format!("ttl_ms must be within {MIN_TTL_MS}..={MAX_TTL_MS} ms; got {ttl_ms}"),
        ));
    }
    Ok(())
}

/// A wait timeout in milliseconds: 0 (try-lock) ..= [`MAX_WAIT_TIMEOUT_MS`].
///
/// # Errors
/// `InvalidArgument`, field `"wait_timeout_ms"`.
pub fn wait_timeout_ms(wait_ms: u64) -> Result<(), CommandError> {
    if wait_ms > MAX_WAIT_TIMEOUT_MS {
        return Err(invalid(
            "wait_timeout_ms",
            format!("wait_timeout_ms must be at most {MAX_WAIT_TIMEOUT_MS} ms; got {wait_ms}"),
        ));
    }
    Ok(())
}

/// A lock-delay in milliseconds: 0 ..= [`MAX_LOCK_DELAY_MS`].
///
/// # Errors
/// `InvalidArgument`, field `"lock_delay_ms"`.
pub fn lock_delay_ms(delay_ms: u64) -> Result<(), CommandError> {
    if delay_ms > MAX_LOCK_DELAY_MS {
        return Err(invalid(
            "lock_delay_ms",
            format!("lock_delay_ms must be at most {MAX_LOCK_DELAY_MS} ms; got {delay_ms}"),
        ));
    }
    Ok(())
}

/// A lease id named by a client: 1..=[`MAX_ID`].
///
/// # Errors
/// `InvalidArgument`, field `"lease_id"`.
pub fn lease_id(id: u64) -> Result<(), CommandError> {
    if id == 0 || id > MAX_ID {
        return Err(invalid(
            "lease_id",
            format!("lease_id must be within 1..={MAX_ID}; got {id}"),
        ));
    }
    Ok(())
}

/// A fencing token named by a client: 1..=[`MAX_ID`].
///
/// # Errors
/// `InvalidArgument`, field `"fencing_token"`.
pub fn fencing_token(token: u64) -> Result<(), CommandError> {
    if token == 0 || token > MAX_ID {
        return Err(invalid(
            "fencing_token",
            format!("fencing_token must be within 1..={MAX_ID}; got {token}"),
        ));
    }
    Ok(())
}

/// Who asked for a forced release: 1..=[`MAX_REQUESTED_BY_BYTES`] bytes of
/// UTF-8 without control characters.
///
/// # Errors
/// `InvalidArgument`, field `"requested_by"`, naming the limit.
pub fn requested_by(who: &str) -> Result<(), CommandError> {
    if who.is_empty() || who.len() > MAX_REQUESTED_BY_BYTES {
        return Err(invalid(
            "requested_by",
            format!(
                "requested_by must be 1..={MAX_REQUESTED_BY_BYTES} bytes of UTF-8; got {} bytes",
                who.len()
            ),
        ));
    }
    if who.chars().any(char::is_control) {
        return Err(invalid(
            "requested_by",
            "requested_by must not contain NUL or control characters",
        ));
    }
    Ok(())
}

/// An exactly-once header (S7): `client_id != 0`, `request_id != 0`, and
/// `acked_request_id < request_id` (a client only acknowledges requests it
/// has been answered, which are older than the one it sends).
///
/// # Errors
/// `InvalidArgument`, field `"client_id"`, `"request_id"` or `"acked_request_id"`.
pub fn header(header: &RequestHeader) -> Result<(), CommandError> {
    if header.client_id == 0 {
        return Err(invalid("client_id", "client_id must not be 0"));
    }
    if header.request_id == 0 {
        return Err(invalid("request_id", "request_id must not be 0"));
    }
    if header.acked_request_id >= header.request_id {
        return Err(invalid(
            "acked_request_id",
            format!(
                "acked_request_id must be below request_id ({}); got {}",
                header.request_id, header.acked_request_id
            ),
        ));
    }
    Ok(())
}

/// A token floor: 0..[`MAX_ID`] (the next token, `floor + 1`, must be a valid id).
///
/// # Errors
/// `InvalidArgument`, field `"floor"`, naming the limit.
pub fn token_floor(floor: u64) -> Result<(), CommandError> {
    if floor >= MAX_ID {
        return Err(invalid(
            "floor",
            format!("floor must be within 0..={}; got {floor}", MAX_ID - 1),
        ));
    }
    Ok(())
}

/// A batch's shape: 1..=[`MAX_BATCH_COMMANDS`] commands, none of them a
/// `Batch`. Each command is validated when it applies (its own refusal is
/// its own response; it does not refuse the batch).
///
/// # Errors
/// `InvalidArgument`, field `"commands"`, naming the limit.
pub fn batch(cmds: &[Command]) -> Result<(), CommandError> {
    if cmds.is_empty() || cmds.len() > MAX_BATCH_COMMANDS {
        return Err(invalid(
            "commands",
            format!(
                "a batch holds 1..={MAX_BATCH_COMMANDS} commands (MAX_BATCH_COMMANDS); got {}",
                cmds.len()
            ),
        ));
    }
    if let Some(pos) = cmds.iter().position(|c| matches!(c, Command::Batch(_))) {
        return Err(invalid(
            "commands",
            format!("a batch must not hold a batch (command {pos} is one)"),
        ));
    }
    Ok(())
}

/// A principal name (the `field` named in the error): 1..=[`MAX_PRINCIPAL_BYTES`]
/// bytes of ASCII letters, digits, `.`, `_`, `-`, `@`, not starting with `.`
/// or `-` (it becomes a file name, `client.NAME.crt`).
fn name_in(name: &str, field: &str) -> Result<(), CommandError> {
    if name.is_empty() || name.len() > MAX_PRINCIPAL_BYTES {
        return Err(invalid(
            field,
            format!(
                "{field} must be 1..={MAX_PRINCIPAL_BYTES} bytes; got {} bytes",
                name.len()
            ),
        ));
    }
    if let Some(pos) = name
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@')))
    {
        return Err(invalid(
            field,
            format!(
                "{field} may hold only ASCII letters, digits, '.', '_', '-' and '@' (byte {pos} is not one)"
            ),
        ));
    }
    if name.starts_with(['.', '-']) {
        return Err(invalid(
            field,
            format!("{field} must not start with '.' or '-'"),
        ));
    }
    Ok(())
}

/// A principal: see [`Principal`] for the syntax.
///
/// # Errors
/// `InvalidArgument`, field `"principal"`, naming the limit.
pub fn principal(name: &str) -> Result<Principal, CommandError> {
    name_in(name, "principal")?;
    Ok(Principal::from_checked(name.to_owned()))
}

impl Principal {
    /// A checked principal: see the type's docs for the syntax.
    ///
    /// # Errors
    /// `InvalidArgument`, field `"principal"`, naming the limit.
    pub fn new(name: &str) -> Result<Principal, CommandError> {
        principal(name)
    }
}

/// A role name: the principal syntax ([`Principal`]).
///
/// # Errors
/// `InvalidArgument`, field `"role"`, naming the limit.
pub fn role(name: &str) -> Result<(), CommandError> {
    name_in(name, "role")
}

/// A grant prefix: `""` (everything), `election:NAME-PREFIX` (elections whose
/// name starts with `NAME-PREFIX`), or a lock prefix. The prefix (for an
/// election prefix, the part after `election:`) is at most
/// [`MAX_PREFIX_BYTES`] bytes of UTF-8 without control characters.
///
/// # Errors
/// `InvalidArgument`, field `"prefix"`, naming the limit.
pub fn prefix(prefix: &str) -> Result<(), CommandError> {
    let rest = prefix
        .strip_prefix(crate::limits::ELECTION_GRANT_PREFIX)
        .unwrap_or(prefix);
    if rest.len() > MAX_PREFIX_BYTES {
        return Err(invalid(
            "prefix",
            format!(
                "prefix must be at most {MAX_PREFIX_BYTES} bytes of UTF-8 (after `election:` for an election prefix); got {} bytes",
                rest.len()
            ),
        ));
    }
    if rest.chars().any(char::is_control) {
        return Err(invalid(
            "prefix",
            "prefix must not contain NUL or control characters",
        ));
    }
    Ok(())
}

fn at_most(field: &str, value: u64, min: u64, max: u64) -> Result<(), CommandError> {
    if !(min..=max).contains(&value) {
        return Err(invalid(
            field,
            format!("{field} must be within {min}..={max}; got {value}"),
        ));
    }
    Ok(())
}

/// A quota: each field at most its ceiling
/// ([`QUOTA_LEASES_CEILING`], [`QUOTA_LOCKS_CEILING`],
/// [`QUOTA_WAITERS_CEILING`], [`QUOTA_CLIENTS_CEILING`],
/// [`QUOTA_VALUES_CEILING`], [`QUOTA_VALUE_BYTES_CEILING`],
/// [`QUOTA_WAITS_PER_RESOURCE_CEILING`]); 0 is allowed (the principal may
/// hold none).
///
/// # Errors
/// `InvalidArgument`, field `"quota.leases"` (or `.locks`, `.waiters`,
/// `.clients`), naming the limit.
pub fn quota(q: &Quota) -> Result<(), CommandError> {
    quota_in(q, "quota")
}

fn quota_in(q: &Quota, name: &str) -> Result<(), CommandError> {
    at_most(&format!("{name}.leases"), q.leases, 0, QUOTA_LEASES_CEILING)?;
    at_most(&format!("{name}.locks"), q.locks, 0, QUOTA_LOCKS_CEILING)?;
    at_most(
        &format!("{name}.waiters"),
        q.waiters,
        0,
        QUOTA_WAITERS_CEILING,
    )?;
    at_most(
        &format!("{name}.clients"),
        q.clients,
        0,
        QUOTA_CLIENTS_CEILING,
    )?;
    at_most(&format!("{name}.values"), q.values, 0, QUOTA_VALUES_CEILING)?;
    at_most(
        &format!("{name}.value_bytes"),
        q.value_bytes,
        0,
        QUOTA_VALUE_BYTES_CEILING,
    )?;
    at_most(
        &format!("{name}.waits_per_resource"),
        q.waits_per_resource,
        0,
        QUOTA_WAITS_PER_RESOURCE_CEILING,
    )?;
    at_most(
        &format!("{name}.watches"),
        q.watches,
        0,
        QUOTA_WATCHES_CEILING,
    )
}

/// Cluster-wide limits: `max_leases` 1..=[`MAX_LEASES_CEILING`],
/// `max_clients` 1..=[`MAX_CLIENTS_CEILING`], and a valid default quota.
///
/// # Errors
/// `InvalidArgument`, field `"max_leases"`, `"max_clients"` or
/// `"default_quota.leases"` (…), naming the limit.
pub fn limits(l: &ClusterLimits) -> Result<(), CommandError> {
    at_most("max_leases", l.max_leases, 1, MAX_LEASES_CEILING)?;
    at_most("max_clients", l.max_clients, 1, MAX_CLIENTS_CEILING)?;
    quota_in(&l.default_quota, "default_quota")
}

/// An auth change: its header and every name, prefix and number in it.
///
/// # Errors
/// The first failing check's `InvalidArgument`, naming the field.
pub fn auth_change(c: &AuthChange) -> Result<(), CommandError> {
    header(&c.header)?;
    match &c.op {
        AuthOp::GrantPermission {
            role: r, prefix: p, ..
        }
        | AuthOp::RevokePermission { role: r, prefix: p } => {
            role(r)?;
            prefix(p)
        }
        AuthOp::DeleteRole { role: r } => role(r),
        AuthOp::GrantRole { user, role: r } | AuthOp::RevokeRole { user, role: r } => {
            name_in(user.as_str(), "user")?;
            role(r)
        }
        AuthOp::SetRoleQuota { role: r, quota: q } => {
            role(r)?;
            q.as_ref().map_or(Ok(()), quota)
        }
        AuthOp::SetLimits(l) => limits(l),
        AuthOp::Deny(t) | AuthOp::Undeny(t) => deny_target(t),
    }
}

/// A deny-list entry: a principal other than `root` (field `user`), or a
/// serial in its canonical form (field `serial`: 1..=40 lowercase hex
/// digits, no leading zero but in `0`).
///
/// # Errors
/// `InvalidArgument` naming the field and the rule.
pub fn deny_target(t: &DenyTarget) -> Result<(), CommandError> {
    match t {
        DenyTarget::Principal(p) => {
            name_in(p.as_str(), "user")?;
            if p.as_str() == crate::auth::ROOT {
                return Err(invalid(
                    "user",
                    "root cannot be denied (it is the only principal nothing can lock out); deny the serial of its stolen certificate instead",
                ));
            }
            Ok(())
        }
        DenyTarget::Serial(s) => {
            let canonical = !s.is_empty()
                && s.len() <= MAX_SERIAL_HEX_DIGITS
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && (s == "0" || !s.starts_with('0'));
            if canonical {
                Ok(())
            } else {
                Err(invalid(
                    "serial",
                    format!(
                        "a certificate serial is 1..={MAX_SERIAL_HEX_DIGITS} lowercase hex digits without separators or leading zeros, got {s:?}"
                    ),
                ))
            }
        }
    }
}

fn acquire(a: &Acquire) -> Result<(), CommandError> {
    header(&a.header)?;
    resource(&a.resource)?;
    match a.lease {
        LeaseSpec::New { ttl_ms: ttl } => ttl_ms(ttl)?,
        LeaseSpec::Existing { lease_id: id } => lease_id(id)?,
    }
    wait_timeout_ms(a.wait_timeout_ms)?;
    lock_delay_ms(a.lock_delay_ms)?;
    kind_and_mode(a.kind, a.mode)?;
    if a.is_multi() {
        // docs/semantics.md "Multi-locks": mutexes only, no max-hold.
        multi_resources(&a.resource, &a.resources)?;
        if (a.kind, a.mode) != (LockKind::Mutex, Mode::Exclusive) {
            return Err(invalid(
                "mode",
                "a multi-lock takes mutexes only: kind mutex, mode exclusive",
            ));
        }
        if a.max_hold_ms != 0 {
            return Err(invalid(
                "max_hold_ms",
                "a multi-lock takes no max-hold: leave max_hold_ms 0, or take the locks one by one",
            ));
        }
    }
    if a.max_hold_ms != 0 {
        max_hold_ms(a.max_hold_ms, a.wait_timeout_ms)?;
    }
    Ok(())
}

/// A max-hold in milliseconds: [`MIN_MAX_HOLD_MS`]..=[`MAX_MAX_HOLD_MS`],
/// and above the acquire's wait timeout (so no grant arrives already past
/// its cap: docs/semantics.md "Max-hold").
///
/// # Errors
/// `InvalidArgument`, field `"max_hold_ms"` (out of range) or
/// `"wait_timeout_ms"` (a wait of the max-hold or more).
pub fn max_hold_ms(max_hold_ms: u64, wait_timeout_ms: u64) -> Result<(), CommandError> {
    if !(MIN_MAX_HOLD_MS..=MAX_MAX_HOLD_MS).contains(&max_hold_ms) {
        return Err(invalid(
            "max_hold_ms",
            format!(
                "max_hold_ms must be within {MIN_MAX_HOLD_MS}..={MAX_MAX_HOLD_MS} ms; got {max_hold_ms}"
            ),
        ));
    }
    if wait_timeout_ms >= max_hold_ms {
        return Err(invalid(
            "wait_timeout_ms",
            format!(
                "wait_timeout_ms must be below max_hold_ms ({max_hold_ms} ms); got {wait_timeout_ms}"
            ),
        ));
    }
    Ok(())
}

/// The resources of a multi-lock: 1..=[`MAX_MULTI_RESOURCES`] valid names,
/// no duplicates, the first being the acquire's own `resource`.
///
/// # Errors
/// `InvalidArgument`, field `"resources"`, naming the limit.
pub fn multi_resources(first: &str, names: &[String]) -> Result<(), CommandError> {
    if names.is_empty() || names.len() > MAX_MULTI_RESOURCES {
        return Err(invalid(
            "resources",
            format!(
                "a multi-lock names 1..={MAX_MULTI_RESOURCES} resources; got {}",
                names.len()
            ),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        resource(name).map_err(|e| invalid("resources", e.message))?;
        if !seen.insert(name.as_str()) {
            return Err(invalid(
                "resources",
                format!("a multi-lock names each resource once; {name:?} appears twice"),
            ));
        }
    }
    if names[0] != first {
        return Err(invalid(
            "resources",
            format!(
                "the acquire's resource {first:?} must be the first of resources; got {:?}",
                names[0]
            ),
        ));
    }
    Ok(())
}

/// A lock kind and a mode that go together: a mutex is exclusive, a
/// semaphore permit is shared, a read-write lock is either; a semaphore's
/// limit is 1..=[`MAX_SEMAPHORE_LIMIT`].
///
/// # Errors
/// `InvalidArgument`, field `"limit"` or `"mode"`.
pub fn kind_and_mode(kind: LockKind, mode: Mode) -> Result<(), CommandError> {
    match (kind, mode) {
        (LockKind::Semaphore { limit }, _) if limit == 0 || limit > MAX_SEMAPHORE_LIMIT => {
            Err(invalid(
                "limit",
                format!("a semaphore has 1..={MAX_SEMAPHORE_LIMIT} permits; got {limit}"),
            ))
        }
        (LockKind::Mutex, Mode::Shared) => Err(invalid(
            "mode",
            "a mutex is held exclusively; ask for a read-write lock to share it",
        )),
        (LockKind::Semaphore { .. }, Mode::Exclusive) => Err(invalid(
            "mode",
            "a semaphore permit is shared with the other permits; mode must be shared",
        )),
        _ => Ok(()),
    }
}

/// The name of a command's kind, for messages.
pub(crate) fn kind(cmd: &Command) -> &'static str {
    match cmd {
        Command::Acquire(_) => "acquire",
        Command::Release(_) => "release",
        Command::RenewBatch(_) => "renew batch",
        Command::LeaseGrant(_) => "lease grant",
        Command::Revoke(_) => "revoke",
        Command::Promote(_) => "promote",
        Command::DropClients(_) => "drop clients",
        Command::ForceRelease(_) => "force release",
        Command::Tick => "tick",
        Command::RaiseTokenFloor(_) => "raise token floor",
        Command::Proclaim(_) => "proclaim",
        Command::Batch(_) => "batch",
        Command::Authorized(_) => "authorized",
        Command::AuthChange(_) => "auth change",
        Command::CancelWait(_) => "cancel wait",
    }
}

/// An authorized command: a valid principal (or none) and a client command
/// (acquire, release, revoke, lease grant, proclaim, force release, auth
/// change) that passes [`command`]; anything else inside is refused.
///
/// # Errors
/// `InvalidArgument`, field `"principal"`, `"command"` or the inner
/// command's field.
pub fn authorized(w: &Authorized) -> Result<(), CommandError> {
    if let Some(p) = &w.principal {
        name_in(p.as_str(), "principal")?;
    }
    match &*w.command {
        inner @ (Command::Acquire(_)
        | Command::Release(_)
        | Command::Revoke(_)
        | Command::LeaseGrant(_)
        | Command::Proclaim(_)
        | Command::ForceRelease(_)
        | Command::CancelWait(_)) => command(inner),
        Command::AuthChange(c) => auth_change(c),
        other => Err(invalid(
            "command",
            format!(
                "Authorized wraps only a client command (acquire, release, revoke, lease grant, proclaim, force release, cancel wait, auth change); got {}",
                kind(other)
            ),
        )),
    }
}

/// Validates any command. Client commands get every check above; leader-duty
/// commands, `RenewBatch` and `Noop` always pass (see the module docs).
///
/// # Errors
/// The first failing check's `InvalidArgument`, naming the field.
pub fn command(cmd: &Command) -> Result<(), CommandError> {
    match cmd {
        Command::Acquire(a) => acquire(a),
        Command::Release(r) => {
            header(&r.header)?;
            if let Some(name) = &r.resource {
                resource(name)?;
            }
            lease_id(r.lease_id)?;
            r.fencing_token.map_or(Ok(()), fencing_token)
        }
        Command::LeaseGrant(g) => {
            header(&g.header)?;
            ttl_ms(g.ttl_ms)
        }
        Command::Revoke(r) => {
            header(&r.header)?;
            lease_id(r.lease_id)
        }
        Command::CancelWait(c) => {
            header(&c.header)?;
            resource(&c.resource)?;
            if c.acquire_request_id == 0 || c.acquire_request_id >= c.header.request_id {
                return Err(invalid(
                    "acquire_request_id",
                    format!(
                        "acquire_request_id must be within 1..{} (the cancel's own request id; the cancel follows the acquire); got {}",
                        c.header.request_id, c.acquire_request_id
                    ),
                ));
            }
            Ok(())
        }
        Command::ForceRelease(f) => {
            header(&f.header)?;
            resource(&f.resource)?;
            requested_by(&f.requested_by)?;
            f.fencing_token.map_or(Ok(()), fencing_token)
        }
        Command::RaiseTokenFloor(r) => token_floor(r.floor),
        Command::Proclaim(p) => {
            resource(&p.resource)?;
            lease_id(p.lease_id)?;
            p.fencing_token.map_or(Ok(()), fencing_token)?;
            value(&p.value)
        }
        Command::Batch(cmds) => batch(cmds),
        Command::Authorized(w) => authorized(w),
        Command::AuthChange(_) => Err(invalid(
            "command",
            "an auth change must come wrapped in Authorized (the principal must be known)",
        )),
        Command::RenewBatch(_) | Command::Promote(_) | Command::DropClients(_) | Command::Tick => {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
