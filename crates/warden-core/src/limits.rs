//! Documented bounds on every duration, name and table that input can grow
//! (docs/semantics.md "What bad input gets"). Each bound is enforced in
//! [`crate::validate`] before a command is proposed and again at apply.

/// Longest resource name, in bytes of UTF-8.
pub const MAX_RESOURCE_BYTES: usize = 512;
/// Shortest lease TTL: 1 s.
pub const MIN_TTL_MS: u64 = 1_000;
/// Longest lease TTL: 1 h.
pub const MAX_TTL_MS: u64 = 3_600_000;
/// Longest wait in the queue: 1 h.
pub const MAX_WAIT_TIMEOUT_MS: u64 = 3_600_000;
/// Longest lock-delay: 1 min.
pub const MAX_LOCK_DELAY_MS: u64 = 60_000;
/// Shortest max-hold of a grant (1 s).
pub const MIN_MAX_HOLD_MS: u64 = 1_000;
/// Longest max-hold of a grant (24 h).
pub const MAX_MAX_HOLD_MS: u64 = 86_400_000;
/// Ids and tokens stay below 2^53 (safe in JSON and JavaScript).
pub const MAX_ID: u64 = (1 << 53) - 1;
/// Outcome records kept per client above its acknowledged watermark (S7).
pub const MAX_OUTCOMES_PER_CLIENT: usize = 64;
/// Client records kept in the outcome table (S7); the least recently used is
/// dropped when a new client would exceed it.
pub const MAX_CLIENTS: usize = 16_384;
/// Waiters per resource.
pub const MAX_WAITERS_PER_RESOURCE: usize = 10_000;
/// Locks and waits attached to one lease.
pub const MAX_LOCKS_PER_LEASE: usize = 10_000;
/// Most permits a semaphore has (`limit` of an acquire of
/// [`crate::types::LockKind::Semaphore`]); at least 1.
pub const MAX_SEMAPHORE_LIMIT: u32 = 10_000;
/// Most resources in one multi-lock ([`crate::types::Acquire::resources`]).
pub const MAX_MULTI_RESOURCES: usize = 64;
/// Live leases (sessions) in the whole cluster; a lease grant or an acquire
/// that would create one more is refused with ResourceExhausted.
pub const MAX_LEASES: usize = 100_000;
/// Forced releases kept in the replicated audit trail (oldest dropped first).
pub const MAX_AUDIT_RECORDS: usize = 1_000;
/// Most commands in one [`crate::types::Command::Batch`] entry. The leader
/// packs at most this many queued client commands into one entry; each is
/// itself bounded by the server's request size, so an entry stays far below
/// the peers' message limit.
pub const MAX_BATCH_COMMANDS: usize = 256;
/// Longest `requested_by` of a forced release, in bytes of UTF-8.
pub const MAX_REQUESTED_BY_BYTES: usize = 256;

/// Prefix of every election's key in the lock table: elections live in their
/// own namespace (docs/semantics.md "Words"). It starts with a control character, which
/// no lock resource may contain, so an election `"x"` never meets a lock `"x"`.
/// The name after the prefix obeys the resource rules (1..=512 bytes).
pub const ELECTION_PREFIX: &str = "\u{1}election/";
/// Largest value a holder or candidate may publish with `Proclaim` (an
/// election's value): 4 KiB of UTF-8.
pub const MAX_VALUE_BYTES: usize = 4_096;
/// Most published values the table keeps at once (one per lease and resource).
pub const MAX_VALUES: usize = 100_000;

// ---------------------------------------------------------------- identities

/// Longest principal (client certificate name) and role name, in bytes: the
/// name becomes a file name (`client.NAME.crt`), see [`crate::auth`].
pub const MAX_PRINCIPAL_BYTES: usize = 64;
/// Longest grant prefix, in bytes (the resource bound). An election prefix
/// `election:NAME` may be as long as `election:` plus this.
pub const MAX_PREFIX_BYTES: usize = MAX_RESOURCE_BYTES;
/// Roles in the auth table.
pub const MAX_ROLES: usize = 1_000;
/// Grants `(prefix, permission)` held by one role.
pub const MAX_GRANTS_PER_ROLE: usize = 100;
/// Principals that hold at least one role.
pub const MAX_USERS: usize = 1_000;
/// Roles held by one principal.
pub const MAX_ROLES_PER_USER: usize = 32;
/// Entries on the replicated deny list (principals and serials together).
pub const MAX_DENIED: usize = 10_000;
/// Hex digits of a certificate serial on the deny list (RFC 5280 section
/// 4.1.2.2: at most 20 bytes).
pub const MAX_SERIAL_HEX_DIGITS: usize = 40;
/// Auth changes kept in the replicated auth audit trail (oldest dropped first).
pub const MAX_AUTH_AUDIT_RECORDS: usize = 1_000;

// ---------------------------------------------------------------- replicated limits and quotas

/// Default cluster-wide `max_leases` (live leases; [`MAX_LEASES`]).
pub const DEFAULT_MAX_LEASES: u64 = MAX_LEASES as u64;
/// Highest `max_leases` an operator may set.
pub const MAX_LEASES_CEILING: u64 = 1_000_000;
/// Default cluster-wide `max_clients`: outcome records (S7) that commands
/// wrapped in `Authorized` may create. Legacy unwrapped commands keep their
/// own bound, [`MAX_CLIENTS`].
pub const DEFAULT_MAX_CLIENTS: u64 = 65_536;
/// Highest `max_clients` an operator may set. A record holds up to
/// [`MAX_OUTCOMES_PER_CLIENT`] outcomes (a few KiB), so this caps the outcome
/// table near a gigabyte in the worst case.
pub const MAX_CLIENTS_CEILING: u64 = 262_144;
/// Default per-principal quota: leases the principal owns.
pub const DEFAULT_QUOTA_LEASES: u64 = 10_000;
/// Default per-principal quota: locks (held grants plus queued waits) on the
/// principal's leases.
pub const DEFAULT_QUOTA_LOCKS: u64 = 100_000;
/// Default per-principal quota: queued waits on the principal's leases.
pub const DEFAULT_QUOTA_WAITERS: u64 = 10_000;
/// Default per-principal quota: outcome records (client ids) of the principal.
pub const DEFAULT_QUOTA_CLIENTS: u64 = 4_096;
/// Highest quota of leases (also [`MAX_LEASES_CEILING`]).
pub const QUOTA_LEASES_CEILING: u64 = MAX_LEASES_CEILING;
/// Highest quota of locks.
pub const QUOTA_LOCKS_CEILING: u64 = 10_000_000;
/// Highest quota of waiters.
pub const QUOTA_WAITERS_CEILING: u64 = 1_000_000;
/// Highest quota of client records (also [`MAX_CLIENTS_CEILING`]).
pub const QUOTA_CLIENTS_CEILING: u64 = MAX_CLIENTS_CEILING;
/// Default per-principal quota: published values of its leases (1 % of
/// [`MAX_VALUES`], so no principal's default fills the table's cap).
pub const DEFAULT_QUOTA_VALUES: u64 = 1_000;
/// Default per-principal quota: bytes of its published values (1 MiB).
pub const DEFAULT_QUOTA_VALUE_BYTES: u64 = 1 << 20;
/// Default per-principal quota: waits of its leases on one resource (a tenth
/// of [`MAX_WAITERS_PER_RESOURCE`]).
pub const DEFAULT_QUOTA_WAITS_PER_RESOURCE: u64 = 1_000;
/// Highest quota of values (also [`MAX_VALUES`]).
pub const QUOTA_VALUES_CEILING: u64 = MAX_VALUES as u64;
/// Highest quota of value bytes: [`MAX_VALUES`] values of
/// [`MAX_VALUE_BYTES`] each.
pub const QUOTA_VALUE_BYTES_CEILING: u64 = (MAX_VALUES * MAX_VALUE_BYTES) as u64;
/// Highest quota of waits on one resource (also
/// [`MAX_WAITERS_PER_RESOURCE`]).
pub const QUOTA_WAITS_PER_RESOURCE_CEILING: u64 = MAX_WAITERS_PER_RESOURCE as u64;
/// Default per-principal quota: watch streams open at once on one node (a
/// principal's share of a node's 16,384 connections' worth of streams).
pub const DEFAULT_QUOTA_WATCHES: u64 = 1_000;
/// Highest quota of watch streams open at once on one node.
pub const QUOTA_WATCHES_CEILING: u64 = 100_000;
/// A grant prefix that starts with this names elections: `election:sched`
/// matches the elections whose name starts with `sched` (see [`crate::auth`]).
pub const ELECTION_GRANT_PREFIX: &str = "election:";
