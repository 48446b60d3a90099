//! Documented bounds on every duration, name and table that input can grow
//! (SEMANTICS "What bad input gets"). Each bound is enforced in
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
/// own namespace (SEMANTICS "Words"). It starts with a control character, which
/// no lock resource may contain, so an election `"x"` never meets a lock `"x"`.
/// The name after the prefix obeys the resource rules (1..=512 bytes).
pub const ELECTION_PREFIX: &str = "\u{1}election/";
/// Largest value a holder or candidate may publish with `Proclaim` (an
/// election's value): 4 KiB of UTF-8.
pub const MAX_VALUE_BYTES: usize = 4_096;
/// Most published values the table keeps at once (one per lease and resource).
pub const MAX_VALUES: usize = 100_000;
