//! Backups: the snapshot file `warden snapshot save` writes, and
//! `warden snapshot restore`, which seeds the data dir of one member of a NEW
//! cluster from it.
//!
//! # The file
//!
//! ```text
//! "WDNSNAP\n"            8 bytes, magic
//! version                2 bytes, big-endian (FILE_VERSION = 1)
//! body                   postcard SnapshotFile (cluster id, applied index,
//!                        term and node id of that entry, the lock table's
//!                        warden-core snapshot bytes)
//! SHA-256                32 bytes, over everything before it
//! ```
//!
//! Reading checks the magic, the version, the checksum, that the body decodes
//! with nothing left over, and that the table loads and passes its
//! invariants; each failure is a [`BackupError`] variant.
//!
//! # Restore
//!
//! [`restore_data_dir`] refuses a data dir that holds any node data. It
//! transforms the table with [`warden_core::restore::for_new_cluster`] (token
//! counter above every old token plus a gap, full TTLs, lock-delay on every
//! held resource) and writes: the node id, the new cluster id (given, or
//! minted and reported so the other members' restores can pass it), a Raft
//! snapshot at the backup's log id (same index, same term) whose membership is
//! `--peers`, all voters, and a vote for that term, so the new cluster's first
//! election is for a later term. Every member is restored from the same file
//! with the same peers and cluster id, so all start from identical snapshots.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openraft::impls::leader_id_adv::LeaderId as RaftLeaderId;
use openraft::Membership;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use warden_core::restore::{for_new_cluster, RestoreOptions, RestoreSummary};
use warden_core::table::LockTable;
use warden_core::SnapshotError;

use crate::store::{Db, KEY_CLUSTER_ID, KEY_NODE_ID};
use crate::types::{LogId, MemberAddr, SnapshotMeta, StoredMembership, Vote};

/// The file's first 8 bytes.
pub const FILE_MAGIC: &[u8; 8] = b"WDNSNAP\n";
/// The file format version this build writes and reads.
pub const FILE_VERSION: u16 = 1;
const CHECKSUM_BYTES: usize = 32;
const HEADER_BYTES: usize = FILE_MAGIC.len() + 2;

/// What a snapshot file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// The cluster it was taken from.
    pub cluster_id: String,
    /// The log index it covers (the leader's applied index).
    pub applied_index: u64,
    /// Term of the entry at `applied_index`.
    pub term: u64,
    /// Node id in the log id of the entry at `applied_index`.
    pub leader_node_id: u64,
    /// The node that served it.
    pub saved_by_node_id: u64,
    /// The lock table (warden-core snapshot format).
    pub table: Vec<u8>,
}

/// Why a snapshot file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackupError {
    /// Shorter than header + checksum.
    #[error("snapshot file: truncated: {len} bytes, a snapshot file has at least {min}")]
    Truncated {
        /// Its length.
        len: usize,
        /// The minimum.
        min: usize,
    },
    /// The magic bytes are missing.
    #[error("snapshot file: not a Warden snapshot (bad magic bytes)")]
    NotASnapshot,
    /// A format this build does not read.
    #[error("snapshot file: unsupported version {0} (this build reads version {FILE_VERSION})")]
    UnsupportedVersion(u16),
    /// The SHA-256 does not match: corrupt or truncated.
    #[error("snapshot file: checksum mismatch (corrupt or truncated file)")]
    Checksum,
    /// The body does not decode.
    #[error("snapshot file: body does not decode: {0}")]
    Decode(String),
    /// The lock table inside does not load.
    #[error("snapshot file: lock table: {0}")]
    Table(#[from] SnapshotError),
}

impl SnapshotFile {
    /// Encodes the file (header, body, checksum).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.table.len() + 128);
        out.extend_from_slice(FILE_MAGIC);
        out.extend_from_slice(&FILE_VERSION.to_be_bytes());
        // postcard cannot fail on this type (strings and byte vectors only).
        out = postcard::to_extend(self, out).unwrap_or_default();
        let sum = Sha256::digest(&out);
        out.extend_from_slice(&sum);
        out
    }

    /// Decodes and checks a file (see the module docs).
    ///
    /// # Errors
    /// [`BackupError`] naming what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<SnapshotFile, BackupError> {
        let min = HEADER_BYTES + CHECKSUM_BYTES;
        // The magic first, on as many bytes as there are: a short file that
        // is not a cut-off snapshot is "not a Warden snapshot", not "truncated".
        let head = bytes.len().min(FILE_MAGIC.len());
        if bytes[..head] != FILE_MAGIC[..head] {
            return Err(BackupError::NotASnapshot);
        }
        if bytes.len() < min {
            return Err(BackupError::Truncated {
                len: bytes.len(),
                min,
            });
        }
        let version = u16::from_be_bytes([bytes[8], bytes[9]]);
        if version != FILE_VERSION {
            return Err(BackupError::UnsupportedVersion(version));
        }
        let (content, sum) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
        if Sha256::digest(content).as_slice() != sum {
            return Err(BackupError::Checksum);
        }
        let (file, rest): (SnapshotFile, &[u8]) =
            postcard::take_from_bytes(&content[HEADER_BYTES..])
                .map_err(|e| BackupError::Decode(e.to_string()))?;
        if !rest.is_empty() {
            return Err(BackupError::Decode(format!(
                "{} trailing bytes",
                rest.len()
            )));
        }
        LockTable::from_snapshot(&file.table)?;
        Ok(file)
    }
}

/// A restore's parameters.
#[derive(Clone, Debug)]
pub struct RestoreTarget {
    /// The (empty) data dir to seed.
    pub data_dir: PathBuf,
    /// This member's id.
    pub node_id: u64,
    /// Every member of the new cluster (all voters), this one included:
    /// id → client address.
    pub peers: BTreeMap<u64, String>,
    /// The peer address of each member that serves its peer service apart
    /// (`--peer-addrs`, as for `warden server`); a subset of `peers`' ids.
    pub peer_addrs: BTreeMap<u64, String>,
    /// The new cluster's id: None on the first member (one is minted), the
    /// printed id on the others.
    pub cluster_id: Option<String>,
    /// Token gap, floor and lock-delay.
    pub options: RestoreOptions,
}

/// What a restore wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreReport {
    /// The new cluster's id (pass it to the other members' restores).
    pub cluster_id: String,
    /// The backup's cluster.
    pub old_cluster_id: String,
    /// The log index the new cluster starts after.
    pub applied_index: u64,
    /// The token transformation and counts.
    pub summary: RestoreSummary,
}

fn check_cluster_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "--cluster-id: 1..=64 ASCII letters and digits (as printed by the first restore); got {id:?}"
        ));
    }
    Ok(())
}

/// Seeds `target.data_dir` for one member of a new cluster from `file`.
///
/// # Errors
/// One line naming the flag or the problem; nothing is written unless every
/// check passed (a refused data dir is left as it was).
pub fn restore_data_dir(
    file: &SnapshotFile,
    target: &RestoreTarget,
) -> Result<RestoreReport, String> {
    if !target.peers.contains_key(&target.node_id) {
        return Err(format!(
            "--id {} is not one of the --peers ids ({:?})",
            target.node_id,
            target.peers.keys().collect::<Vec<_>>()
        ));
    }
    if let Some(id) = target
        .peer_addrs
        .keys()
        .find(|id| !target.peers.contains_key(id))
    {
        return Err(format!(
            "--peer-addrs: node {id} is not one of the --peers ids"
        ));
    }
    let nodes = target
        .peers
        .iter()
        .map(|(id, addr)| {
            let peer = target.peer_addrs.get(id).cloned();
            MemberAddr::new(addr.clone(), peer)
                .map(|m| (*id, m))
                .map_err(|e| format!("--peer-addrs: node {id}: {e}"))
        })
        .collect::<Result<BTreeMap<u64, MemberAddr>, String>>()?;
    if let Some(id) = &target.cluster_id {
        check_cluster_id(id)?;
        if *id == file.cluster_id {
            return Err(format!(
                "--cluster-id: {id} is the backed-up cluster's own id; a restore makes a NEW cluster"
            ));
        }
    }
    let mut table = LockTable::from_snapshot(&file.table).map_err(|e| e.to_string())?;
    let summary = for_new_cluster(&mut table, target.options).map_err(|e| format!("--{e}"))?;
    refuse_non_empty(&target.data_dir)?;
    let db = open_target(&target.data_dir)?;
    let storage = |e: std::io::Error| format!("--data-dir {}: {e}", target.data_dir.display());
    let cluster_id = target
        .cluster_id
        .clone()
        .unwrap_or_else(crate::raft::bootstrap::mint_cluster_id);
    let log_id = LogId::new(
        RaftLeaderId {
            term: file.term,
            node_id: file.leader_node_id,
        },
        file.applied_index,
    );
    let voters: BTreeSet<u64> = target.peers.keys().copied().collect();
    let membership = Membership::new(vec![voters], nodes).map_err(|e| format!("--peers: {e}"))?;
    let meta = SnapshotMeta {
        last_log_id: Some(log_id),
        last_membership: StoredMembership::new(Some(log_id), membership),
    };
    // A vote for the backup's term (not committed): the first election of
    // the new cluster is for a later term than every entry it holds.
    let vote = Vote::new(file.term, file.leader_node_id);
    db.seed_snapshot(&meta, table.to_snapshot(), &vote)
        .map_err(storage)?;
    db.put_meta(KEY_NODE_ID, target.node_id.to_string().as_bytes())
        .map_err(storage)?;
    db.put_meta(KEY_CLUSTER_ID, cluster_id.as_bytes())
        .map_err(storage)?;
    Ok(RestoreReport {
        cluster_id,
        old_cluster_id: file.cluster_id.clone(),
        applied_index: file.applied_index,
        summary,
    })
}

/// Opens (creating) the database in `dir`, with the reasons an operator can
/// act on: not a directory, or in use by a running node.
fn open_target(dir: &Path) -> Result<Db, String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--data-dir: {} is not a directory", dir.display()));
    }
    Db::open(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::ResourceBusy => format!(
            "--data-dir: data dir {} is in use by a running node; stop it (a restore writes only into an empty dir)",
            dir.display()
        ),
        _ => format!("--data-dir {}: {e}", dir.display()),
    })
}

/// A restore writes only into a dir with no node data.
fn refuse_non_empty(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--data-dir: {} is not a directory", dir.display()));
    }
    if !dir.join("warden.redb").exists() {
        if dir.join(crate::store::WAL_FILE).exists() {
            return Err(format!(
                "--data-dir {}: it holds a Raft log file ({}) from earlier node data; restore into an empty dir",
                dir.display(),
                crate::store::WAL_FILE
            ));
        }
        return Ok(());
    }
    let db = open_target(dir)?;
    let has_id = db
        .get_meta(KEY_CLUSTER_ID)
        .map_err(|e| e.to_string())?
        .is_some();
    let empty = db.raft_state_is_empty().map_err(|e| e.to_string())?;
    if has_id || !empty {
        return Err(format!(
            "--data-dir {}: it already holds node data; restore into an empty dir",
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SnapshotFile {
        SnapshotFile {
            cluster_id: "abc".into(),
            applied_index: 42,
            term: 7,
            leader_node_id: 2,
            saved_by_node_id: 2,
            table: LockTable::new().to_snapshot(),
        }
    }

    // "What bad input gets": a corrupt, truncated, foreign or future file is a
    // typed error, never a panic or a half-loaded table.
    #[test]
    fn bad_files_get_typed_errors() {
        let good = sample().encode();
        assert_eq!(SnapshotFile::decode(&good), Ok(sample()));
        assert!(matches!(
            SnapshotFile::decode(&good[..20]),
            Err(BackupError::Truncated { len: 20, .. })
        ));
        assert!(matches!(
            SnapshotFile::decode(&good[..good.len() - 1]),
            Err(BackupError::Checksum)
        ));
        assert_eq!(
            SnapshotFile::decode(&[]),
            Err(BackupError::Truncated { len: 0, min: 42 })
        );
        let mut flipped = good.clone();
        flipped[HEADER_BYTES + 3] ^= 0x40;
        assert_eq!(SnapshotFile::decode(&flipped), Err(BackupError::Checksum));
        assert_eq!(
            SnapshotFile::decode(b"PK\x03\x04 a zip file, not a snapshot at all....."),
            Err(BackupError::NotASnapshot)
        );
        // A tiny file that is no snapshot: the magic is checked first.
        assert_eq!(
            SnapshotFile::decode(b"hello\n"),
            Err(BackupError::NotASnapshot)
        );
        assert!(matches!(
            SnapshotFile::decode(&good[..5]),
            Err(BackupError::Truncated { len: 5, .. })
        ));
        let mut future = good.clone();
        future[9] = 9;
        assert_eq!(
            SnapshotFile::decode(&future),
            Err(BackupError::UnsupportedVersion(9))
        );
        // A valid checksum over a table that does not load.
        let mut bad_table = sample();
        bad_table.table = vec![2, 0xff, 0xff];
        assert!(matches!(
            SnapshotFile::decode(&bad_table.encode()),
            Err(BackupError::Table(_))
        ));
        // Every truncation is refused.
        for n in 0..good.len() {
            assert!(
                SnapshotFile::decode(&good[..n]).is_err(),
                "prefix of {n} bytes"
            );
        }
    }

    // docs/operations.md "Backup and restore": restore refuses a data dir that holds node data, and a
    // cluster id that is the backup's own; a good restore is reloadable.
    #[test]
    fn restore_refuses_used_dirs_and_the_old_cluster_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = RestoreTarget {
            data_dir: dir.path().join("n1"),
            node_id: 1,
            peers: BTreeMap::from([
                (1, "127.0.0.1:1".to_string()),
                (2, "127.0.0.1:2".to_string()),
            ]),
            peer_addrs: BTreeMap::new(),
            cluster_id: None,
            options: RestoreOptions::default(),
        };
        // A peer address of no member, or one equal to the client address,
        // is refused before anything is written.
        let mut bad = target.clone();
        bad.peer_addrs = BTreeMap::from([(3, "127.0.0.1:3".to_string())]);
        let e = restore_data_dir(&sample(), &bad).expect_err("not a member");
        assert_eq!(e, "--peer-addrs: node 3 is not one of the --peers ids");
        bad.peer_addrs = BTreeMap::from([(2, "127.0.0.1:2".to_string())]);
        let e = restore_data_dir(&sample(), &bad).expect_err("same address");
        assert!(e.starts_with("--peer-addrs: node 2: peer_addr:"), "{e}");
        assert!(!target.data_dir.exists(), "nothing written");
        let report = restore_data_dir(&sample(), &target).expect("restore");
        assert_ne!(report.cluster_id, "abc");
        assert_eq!(
            report.summary.next_token,
            1 + warden_core::restore::DEFAULT_TOKEN_GAP
        );
        let again = restore_data_dir(&sample(), &target).expect_err("used dir");
        assert!(again.contains("already holds node data"), "{again}");
        let mut t2 = target.clone();
        t2.data_dir = dir.path().join("n2");
        t2.node_id = 2;
        t2.cluster_id = Some("abc".into());
        assert!(restore_data_dir(&sample(), &t2)
            .unwrap_err()
            .starts_with("--cluster-id"));
        t2.cluster_id = Some("bad id!".into());
        assert!(restore_data_dir(&sample(), &t2)
            .unwrap_err()
            .starts_with("--cluster-id"));
        t2.cluster_id = Some(report.cluster_id.clone());
        t2.node_id = 3;
        assert!(restore_data_dir(&sample(), &t2)
            .unwrap_err()
            .starts_with("--id 3"));
        let db = Db::open(&target.data_dir).expect("db");
        assert_eq!(
            db.get_meta_string(KEY_CLUSTER_ID).expect("meta"),
            Some(report.cluster_id)
        );
        assert!(!db.raft_state_is_empty().expect("state"));
    }

    // "What bad input gets": a data dir held open by a running node, and a
    // --data-dir that is a file, are refused with a reason an operator can
    // act on (not redb's "Database already open. Cannot acquire lock.").
    #[test]
    fn restore_names_a_busy_dir_and_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut target = RestoreTarget {
            data_dir: dir.path().join("n1"),
            node_id: 1,
            peers: BTreeMap::from([(1, "127.0.0.1:1".to_string())]),
            peer_addrs: BTreeMap::new(),
            cluster_id: None,
            options: RestoreOptions::default(),
        };
        // A fresh node's open database (no cluster id yet), as while it runs.
        let running = Db::open(&target.data_dir).expect("db");
        let busy = restore_data_dir(&sample(), &target).expect_err("busy dir");
        assert!(
            busy.contains(&format!(
                "data dir {} is in use by a running node",
                target.data_dir.display()
            )),
            "{busy}"
        );
        drop(running);
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").expect("file");
        target.data_dir = file.clone();
        assert_eq!(
            restore_data_dir(&sample(), &target).expect_err("a file"),
            format!("--data-dir: {} is not a directory", file.display())
        );
        // A dir left with only the Raft log's write-ahead file (its
        // database removed) holds earlier node data too (found in review).
        let leftover = dir.path().join("n2");
        std::fs::create_dir_all(&leftover).expect("dir");
        std::fs::write(leftover.join(crate::store::WAL_FILE), b"entries").expect("file");
        target.data_dir = leftover.clone();
        let err = restore_data_dir(&sample(), &target).expect_err("leftover log");
        assert!(err.contains("restore into an empty dir"), "{err}");
        assert!(!leftover.join("warden.redb").exists(), "nothing written");
    }
}
