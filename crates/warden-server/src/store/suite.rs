//! openraft's own storage test suite (`openraft::testing::log::Suite`) run
//! against the log store and the state machine on a temp dir: every
//! contract openraft states for `RaftLogStorage` and `RaftStateMachine`
//! (log state, reads, truncate, purge, vote, applied state, membership,
//! snapshot build and install), checked by the consensus library itself.

use std::sync::Arc;

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;

use super::test_support::FixedClock;
use super::{Db, LogStore, MaxStamp, StateMachineStore};
use crate::clock::NodeClock;
use crate::types::TypeConfig;

fn read_error(e: &std::io::Error) -> StorageError<TypeConfig> {
    use openraft::type_config::TypeConfigExt as _;
    StorageError::read(TypeConfig::err_from_error(e))
}

/// Opens a fresh node store in its own temp dir; the dir is the guard.
struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, tempfile::TempDir> for Builder {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, StateMachineStore), StorageError<TypeConfig>> {
        let dir = tempfile::tempdir().map_err(|e| read_error(&e))?;
        let db = Db::open(dir.path()).map_err(|e| read_error(&e))?;
        let max_stamp = MaxStamp::default();
        let clock = NodeClock::new(Arc::new(FixedClock::default()));
        let log = LogStore::new(db.clone(), max_stamp.clone()).map_err(|e| read_error(&e))?;
        let sm = StateMachineStore::open(db, clock, max_stamp).map_err(|e| read_error(&e))?;
        Ok((dir, log, sm))
    }
}

// S3 and the Raft log-matching rules the whole protocol leans on: the log
// store and state machine honour every storage contract of openraft, as
// openraft's own test suite states them.
#[tokio::test]
async fn the_stores_pass_openrafts_storage_suite() {
    Suite::test_all(Builder)
        .await
        .expect("openraft storage suite");
}
