//! Identities in the lock table: principals, roles, permissions, lease
//! owners and quotas, decided at apply so that every replica decides the same.
//!
//! The server learns each call's principal from its client certificate
//! (mutual TLS) and wraps the client command in
//! [`Command::Authorized`](crate::types::Command::Authorized). Permission is
//! decided **when the entry applies**, against the auth table at that log
//! index (as etcd checks its auth revision): a permission revoked at index
//! *i* binds every entry after *i*, even one proposed before.
//!
//! Submodules: `roles` (the auth table: roles, grants, users, limits and
//! the quota that binds a principal), `quota` (usage and the quota check),
//! `checks` (what apply checks of a client command before it runs it, and
//! what a leader may refuse before the log), `narrowed` (ending the waits
//! an auth change no longer permits).
//!
//! # Principals and roles
//!
//! * A [`Principal`] is 1..=64 bytes of ASCII letters, digits, `.`, `_`, `-`,
//!   `@`, not starting with `.` or `-` ([`crate::validate::principal`]).
//!   Role names follow the same syntax.
//! * A [`Permission`] is `read`, `lock` or `admin`; each includes the ones
//!   before it (`admin` ⊇ `lock` ⊇ `read`).
//! * A role holds grants `(prefix, permission)`, at most one per prefix
//!   (granting again on the same prefix replaces the permission), and an
//!   optional [`Quota`]. A principal holds a set of roles.
//! * The principal [`ROOT`] (`root`) holds admin on `""` always, whatever
//!   the table says; nothing revokes it. Giving `root` roles is allowed and
//!   changes nothing for it.
//! * An anonymous caller (`principal: None`: a node in insecure mode) passes
//!   every permission check.
//!
//! # Matching a prefix
//!
//! Let `E` be [`ELECTION_PREFIX`] (the lock table keeps the election `x` under
//! the key `E + "x"`). A grant's prefix `G` matches the table keys that start
//! with its *key prefix* `K(G)`:
//!
//! * `G = ""`: `K = ""`, every lock and every election;
//! * `G = "election:" + N`: `K = E + N`, the elections whose name starts with
//!   `N` (`election:scheduler`, `election:sched` and `election:` all match the
//!   election `scheduler`);
//! * any other `G`: `K = G`, the locks whose name starts with `G`. Such a `G`
//!   is non-empty and has no control character, so it never matches an
//!   election's key (which starts with one). A lock whose own name starts
//!   with `election:` is therefore matched only by lock prefixes shorter than
//!   `election:` (and by `""`).
//!
//! [`AuthTable::allows`] asks for a [`Target`]:
//!
//! * [`Target::Resource`]`(key)`: one lock or election key: some grant with
//!   the permission matches `key`;
//! * [`Target::Election`]`(name)`: the same for the key `E + name`;
//! * [`Target::Prefix`]`(P)` (`list` and `watch`): needs the permission on a
//!   prefix of `P`: some grant `G` with `P` starting with `K(G)`;
//! * [`Target::Any`] (a lease grant): the permission on *some* prefix.
//!
//! Grant prefixes follow the resource rules: at most 512 bytes (after
//! `election:` for an election prefix), no control characters; `""` allowed.
//!
//! # What apply checks, in order, for `Authorized { principal, command }`
//!
//! 1. the entry's sweep, as for every entry (leader duties never depend on
//!    an identity; a leader duty wrapped in `Authorized` is refused);
//! 2. [`crate::validate::authorized`]: the principal's syntax and the inner
//!    command (only `Acquire`, `Release`, `Revoke`, `LeaseGrant`, `Proclaim`,
//!    `ForceRelease`, `CancelWait`, `AuthChange` may be wrapped); refusals are not recorded;
//! 3. the outcome table (S7), keyed by `(principal, client id)`: a request
//!    whose outcome is recorded gets that outcome, **even after a revoke** (a
//!    retried acquire that was granted answers with its grant, so the holder
//!    can release it). A new client id needs room (see quotas); without room
//!    the command is refused ResourceExhausted and nothing is recorded;
//! 4. permission: `Acquire` and `Proclaim` need `lock` on the resource (an
//!    election key: on the election); `LeaseGrant` needs `lock` on some
//!    prefix; `ForceRelease` and every auth change need `admin` on `""`;
//!    `Release` and `Revoke` need only ownership (a principal whose `lock`
//!    was revoked can still release what it holds and revoke its own lease);
//! 5. ownership: a lease belongs to the principal that created it
//!    ([`LeaseRecord::owner`](crate::table::LeaseRecord::owner); None for
//!    leases made by unwrapped legacy commands or by anonymous callers).
//!    `Acquire` on an existing lease, `Release`, `Revoke` and `Proclaim` on a
//!    lease whose owner differs from the caller (as `Option<Principal>`s: a
//!    named principal never acts on an ownerless lease, an anonymous caller
//!    never on an owned one) are refused PermissionDenied naming the lease,
//!    even with the right id and token (etcd PR 8031). `root` is bound by
//!    ownership too. `ForceRelease` ignores ownership;
//! 6. quotas (below);
//! 7. the command itself;
//! 8. the outcome is recorded: refusals of steps 4–7 too, like any other
//!    refusal (`Proclaim` has no request header and records nothing).
//!
//! A waiter's principal is its lease's owner (an acquire on an existing lease
//! requires ownership), so waiters store no principal of their own. At every
//! hand-off (release, expiry, revoke, forced release, lock-delay end: every
//! place the table grants the next waiter) a waiter whose lease's owner no
//! longer has `lock` on the resource at that index is removed
//! ([`WaiterRemovedReason::PermissionRevoked`](crate::effect::WaiterRemovedReason::PermissionRevoked);
//! an acquire-made lease left with nothing dies) and the next live waiter is
//! granted in the same entry. Revoking `lock` stops new acquires and waits;
//! grants already held live until released or expired, and keep-alives go on
//! (`RenewBatch` is not wrapped: the server checks
//! [`LockTable::lease_owner`](crate::table::LockTable::lease_owner) when it
//! batches a renew).
//!
//! # Quotas and limits
//!
//! One replicated mechanism ([`ClusterLimits`], set by `SetLimits`):
//!
//! * cluster-wide `max_leases` (default 100,000 =
//!   [`MAX_LEASES`](crate::limits::MAX_LEASES)): live
//!   leases; binds every command, wrapped or not;
//! * cluster-wide `max_clients` (default 65,536): outcome records; a wrapped
//!   command from a new client id is refused when the table holds this many;
//! * a per-principal quota `{ leases, locks, waiters, clients }`: leases the
//!   principal owns, locks (held grants + queued waits) and waiters (queued
//!   waits) on its leases, outcome records keyed by it. Default 10,000 /
//!   100,000 / 10,000 / 4,096, replaced by the roles' quotas: a principal
//!   with several roles gets, per field, the largest of the quotas its roles
//!   set, or the default quota if none of its roles sets one. `root` and
//!   anonymous callers are bound only by the cluster-wide limits.
//! * Ceilings ([`crate::limits`]): `max_leases` 1..=1,000,000, `max_clients`
//!   1..=262,144; quota fields 0..= 1,000,000 leases, 10,000,000 locks,
//!   1,000,000 waiters, 262,144 clients.
//!
//! A wrapped command that would take its principal over a quota is refused
//! ResourceExhausted naming the quota, the principal and the limit (`quota
//! leases of principal mallory reached: 1000 (raise it per role)`), changes
//! nothing, and every other principal is served as before. Lowering a quota
//! below what a principal holds takes nothing away; it only refuses more.
//!
//! For wrapped commands **no outcome record is ever evicted to make room for
//! a new client** (eviction is how a retry ran twice: a missing record with an
//! acknowledged id of 0 runs the command again). Records leave only through
//! the leader's idle-client entry `DropClients`. Unwrapped legacy commands
//! keep their key `(None, client id)` and their bound
//! [`MAX_CLIENTS`](crate::limits::MAX_CLIENTS) (16,384): a new
//! legacy client, when the table holds that many records, replaces the least
//! recently used `(None, _)` record, never a principal's; if there is none,
//! it is refused ResourceExhausted. A legacy command and a wrapped anonymous
//! command with the same client id share the `(None, id)` record (a request
//! first proposed unwrapped and retried wrapped across the upgrade finds its
//! outcome: the S7 fingerprint of a wrapped command is its inner command's).
//! A principal's retry of a request whose outcome sits in the `(None, id)`
//! record (proposed unwrapped before the upgrade) is refused
//! `request_expired` rather than run again.
//!
//! Lowering `max_clients` below the records in use refuses every new client
//! id (root's too) until idle records are dropped; client ids that have a
//! record go on.
//!
//! # Auth changes
//!
//! [`AuthOp`](crate::types::AuthOp), always inside `Authorized`, each with a
//! request header (S7) and a display-only `at_unix_ms`, each needing admin on
//! `""`:
//!
//! * `GrantPermission { role, prefix, permission }` sets the role's
//!   permission on the prefix, creating the role (at most 1,000 roles, 100
//!   grants per role);
//! * `RevokePermission { role, prefix }` removes that grant (NotFound if the
//!   role or the grant is missing);
//! * `DeleteRole { role }` removes the role and takes it from every
//!   principal (a principal left with no role is dropped);
//! * `GrantRole { user, role }` (the role must exist; at most 1,000
//!   principals with roles, 32 roles each; granting a held role again
//!   changes nothing) and `RevokeRole { user, role }` (NotFound if not held);
//! * `SetRoleQuota { role, quota }`: `Some` sets it (creating the role),
//!   `None` clears it (NotFound for an unknown role);
//! * `SetLimits(limits)`: `max_leases`, `max_clients` and the default quota,
//!   all at once;
//! * `Deny(target)` / `Undeny(target)`: puts a principal or a certificate
//!   serial on the deny list (below) or takes it off (NotFound if absent).
//!
//! A change that may take permission away (`GrantPermission` replacing
//! `lock` with `read`, `RevokePermission`, `DeleteRole`, `RevokeRole`,
//! denying a principal) also ends, in the same entry, every
//! queued wait of the principals it narrows that they may no longer make
//! (reason `PermissionRevoked`), and grants whoever is due behind them.
//! Grants already held stay until released, expired or revoked by an
//! admin.
//!
//! # The deny list
//!
//! Principals and certificate serials (at most
//! [`MAX_DENIED`](crate::limits::MAX_DENIED) together), the answer to a
//! stolen key (docs/security.md). The table refuses every wrapped command
//! of a denied principal (PermissionDenied) and it passes no permission
//! check, so its waiters are never granted. The servers enforce the rest
//! outside the table: a handshake with a denied principal's or serial's
//! certificate fails, and open connections are closed. `root` cannot be
//! denied (deny its certificate's serial); a serial is lowercase hex
//! without separators or leading zeros.
//!
//! Each applied change (no-ops included) is kept in the replicated auth audit
//! trail ([`AuthAuditRecord`](crate::types::AuthAuditRecord): index,
//! principal, change, `at_unix_ms`; the last 1,000) and reported as
//! [`Effect::AuthChanged`](crate::effect::Effect::AuthChanged). A forced
//! release by a principal is audited with `requested_by` = the principal's
//! name, followed by the request's free text in parentheses when that
//! differs (`root (ops console 10.0.0.7)`).
//!
//! # Errors
//!
//! * PermissionDenied, field `resource` for a lock or election
//!   (`principal alice has no lock permission on "orders/1"`,
//!   `... on election "scheduler"`), none for a lease grant
//!   (`... on any prefix`) or an admin command (`principal alice has no
//!   admin permission on prefix ""`);
//! * NotFound, field `lease_id`, for another principal's lease: the same
//!   answer as for a lease that does not exist (no liveness oracle);
//! * ResourceExhausted, field `quota.leases` / `quota.locks` /
//!   `quota.waiters` / `quota.clients` for a quota, `lease_id` for
//!   `max_leases`, `client_id` for `max_clients` and the legacy bound;
//! * InvalidArgument, field `principal`, `command` (a wrapped command that is
//!   not a client command, a bare auth change), `role`, `user`, `prefix`,
//!   `quota.*`, `max_leases`, `max_clients`, `default_quota.*`, `serial`;
//! * PermissionDenied, no field, for any command of a denied principal;
//! * NotFound, field `role`, `prefix`, `user` or `serial`, for an auth
//!   change naming what is not there.
//!
//! # Unwrapped commands
//!
//! A client command that is not wrapped (the simulator's and the tests'
//! direct commands; a server always wraps) applies with no permission,
//! ownership or quota check, an ownerless lease and the key
//! `(None, client id)` under the legacy outcome-table bound. A hand-off
//! made by any entry checks the waiter's lease owner (an ownerless lease
//! always passes).

mod checks;
mod narrowed;
pub(crate) mod quota;
mod roles;

pub use quota::{QuotaField, Usage};
pub use roles::{AuthTable, Role, RoleView};

use crate::limits::{ELECTION_GRANT_PREFIX, ELECTION_PREFIX};
pub use crate::types::{ClusterLimits, Permission, Principal, Quota};

/// The principal that holds admin on `""` always.
pub const ROOT: &str = "root";

/// What a permission is asked for (see the module docs, "Matching a prefix").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// One lock-table key: a lock's resource name, or an election's key
    /// ([`ELECTION_PREFIX`] + its name), detected by the prefix.
    Resource(&'a str),
    /// One election, by name (without [`ELECTION_PREFIX`]).
    Election(&'a str),
    /// Every key that starts with this table-key prefix (`list`, `watch`):
    /// covered by a grant whose key prefix is a prefix of it.
    Prefix(&'a str),
    /// Some prefix, any (a lease grant).
    Any,
}

impl std::fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Resource(key) => match key.strip_prefix(ELECTION_PREFIX) {
                Some(name) => write!(f, "election {name:?}"),
                None => write!(f, "{key:?}"),
            },
            Target::Election(name) => write!(f, "election {name:?}"),
            Target::Prefix(p) => match p.strip_prefix(ELECTION_PREFIX) {
                Some(name) => write!(f, "election prefix {name:?}"),
                None => write!(f, "prefix {p:?}"),
            },
            Target::Any => f.write_str("any prefix"),
        }
    }
}

/// True when the grant prefix `grant` matches the table key (or covers the
/// table-key prefix) `key`: `key` starts with the grant's key prefix.
pub fn grant_covers(grant: &str, key: &str) -> bool {
    match grant.strip_prefix(ELECTION_GRANT_PREFIX) {
        Some(name_prefix) => key
            .strip_prefix(ELECTION_PREFIX)
            .is_some_and(|name| name.starts_with(name_prefix)),
        None => key.starts_with(grant),
    }
}

/// True when the grant prefix `grant` matches the election `name`.
fn grant_covers_election(grant: &str, name: &str) -> bool {
    match grant.strip_prefix(ELECTION_GRANT_PREFIX) {
        Some(name_prefix) => name.starts_with(name_prefix),
        // A lock prefix matches no election; "" matches everything.
        None => grant.is_empty(),
    }
}

/// True when a grant on `grant` serves `target`.
pub(crate) fn grant_serves(grant: &str, target: Target<'_>) -> bool {
    match target {
        Target::Resource(key) | Target::Prefix(key) => grant_covers(grant, key),
        Target::Election(name) => grant_covers_election(grant, name),
        Target::Any => true,
    }
}
