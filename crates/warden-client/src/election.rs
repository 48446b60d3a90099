//! [`Election`]: leader election on a [`Session`] (etcd's
//! `concurrency.Election`: campaign, proclaim, leader, observe, resign), with
//! a fencing token for each term of office.
//!
//! An election named `N` is the lock-table key
//! [`ELECTION_PREFIX`]` + N`: elections live in their own namespace, apart
//! from lock resources (a lock named `N` is another thing). A campaigner
//! publishes its value as a candidate, then waits in the key's fair queue
//! (S8: first come, first elected); its grant is its term of office, and the
//! grant's fencing token is the leadership token.

use std::collections::VecDeque;
use std::time::Duration;

use crate::session::{LockGuard, Lost, Session};
use crate::types::{ReleaseResult, StatusResult};
use crate::watch::{WatchError, WatchTarget, Watcher};
use crate::{Client, ClientError};

/// The key prefix of every election until the server has published its
/// own (`ClusterStatus`'s `election_prefix`, which
/// [`Client::election_key`] uses): U+0001, which no lock name may contain,
/// then `election/`.
pub const ELECTION_PREFIX: &str = "\u{1}election/";

/// The lock-table key of election `name` under the default
/// [`ELECTION_PREFIX`] ([`Client::election_key`] uses the server's).
pub fn election_key(name: &str) -> String {
    format!("{ELECTION_PREFIX}{name}")
}

/// A leader as the cluster reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderInfo {
    /// The leader's session lease.
    pub lease_id: u64,
    /// The token of its term of office: larger than every earlier leader's.
    pub fencing_token: u64,
    /// The value it published (campaign or proclaim).
    pub value: String,
}

/// One election, campaigned in with a [`Session`].
#[derive(Debug, Clone)]
pub struct Election {
    session: Session,
    name: String,
}

impl Election {
    /// The election `name` (1..=512 bytes of UTF-8 without control
    /// characters, as a resource name) for this session.
    pub fn new(session: Session, name: impl Into<String>) -> Election {
        Election {
            session,
            name: name.into(),
        }
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stands with `value` (≤ 4,096 bytes) and waits until elected: the
    /// session publishes its value as a candidate, then queues for the
    /// election; campaigners are elected in the order they queued. The wait
    /// survives leader changes of the cluster (S8).
    ///
    /// # Errors
    ///
    /// [`ClientError::SessionLost`] when the session is lost first (the
    /// candidacy goes with the lease); `InvalidArgument` for a bad name or
    /// value; `NoQuorum` / `Unavailable`.
    pub async fn campaign(&self, value: impl Into<String>) -> Result<Leadership, ClientError> {
        self.session.check()?;
        let client = self.session.client();
        let key = client.election_key(&self.name).await;
        client
            .proclaim(&key, self.session.lease_id(), 0, value)
            .await?;
        let guard = self.session.lock(&key).await?;
        Ok(Leadership {
            guard,
            name: self.name.clone(),
            key,
        })
    }

    /// The current leader, if any (a linearizable read).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` for a bad name; `NoQuorum` / `Unavailable`.
    pub async fn leader(&self) -> Result<Option<LeaderInfo>, ClientError> {
        let client = self.session.client();
        leader_of(client, &client.election_key(&self.name).await).await
    }

    /// Follows the election: see [`Observer`].
    ///
    /// # Errors
    ///
    /// As [`Client::watch`].
    pub async fn observe(&self) -> Result<Observer, WatchError> {
        Observer::start(self.session.client().clone(), &self.name).await
    }
}

async fn leader_of(client: &Client, key: &str) -> Result<Option<LeaderInfo>, ClientError> {
    let status: StatusResult = client.status(key).await?;
    Ok(status.holder.map(|h| LeaderInfo {
        lease_id: h.lease_id,
        fencing_token: h.fencing_token,
        value: h.value,
    }))
}

/// A term of office: the election's lock, held by the session. Valid while
/// the session is ([`check`](Leadership::check) before each act of the
/// leader); pass [`fencing_token`](Leadership::fencing_token) with every
/// write so that a deposed leader's writes are rejected (S2). Dropping it
/// resigns in the background.
#[derive(Debug)]
pub struct Leadership {
    guard: LockGuard,
    name: String,
    /// The election's lock-table key ([`Client::election_key`]).
    key: String,
}

impl Leadership {
    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The token of this term of office: larger than every earlier term's.
    pub fn fencing_token(&self) -> u64 {
        self.guard.fencing_token()
    }

    /// The leader's session lease.
    pub fn lease_id(&self) -> u64 {
        self.guard.lease_id()
    }

    /// See [`Session::valid_until`].
    pub fn valid_until(&self) -> Duration {
        self.guard.valid_until()
    }

    /// See [`Session::check`].
    ///
    /// # Errors
    ///
    /// The [`Lost`] reason.
    pub fn check(&self) -> Result<(), Lost> {
        self.guard.check()
    }

    /// See [`Session::lost`].
    pub async fn lost(&self) -> Lost {
        self.guard.lost().await
    }

    /// Publishes a new value for this term (etcd `Proclaim`). Refused with
    /// `FailedPrecondition` if this term has ended (a deposed leader cannot
    /// proclaim).
    ///
    /// # Errors
    ///
    /// `FailedPrecondition`; `InvalidArgument` for a value over 4,096 bytes;
    /// [`ClientError::SessionLost`]; `NoQuorum` / `Unavailable`.
    pub async fn proclaim(&self, value: impl Into<String>) -> Result<(), ClientError> {
        self.check()?;
        self.guard
            .session()
            .client()
            .proclaim(
                self.key.clone(),
                self.lease_id(),
                self.fencing_token(),
                value,
            )
            .await
    }

    /// Steps down: releases this term's grant (the next campaigner in the
    /// queue is elected in the same committed entry) and waits for the commit.
    ///
    /// # Errors
    ///
    /// As [`LockGuard::release`].
    pub async fn resign(self) -> Result<ReleaseResult, ClientError> {
        self.guard.release().await
    }
}

/// A stream of an election's leaders (etcd `Observe`): the current one first
/// (if any), then each new leader or new value, in commit order. Between two
/// reports several terms may have passed unseen if they were very short; the
/// tokens of reported leaders always grow.
#[derive(Debug)]
pub struct Observer {
    client: Client,
    key: String,
    watcher: Watcher,
    last: Option<LeaderInfo>,
    pending: VecDeque<LeaderInfo>,
}

impl Observer {
    /// Follows election `name` through `client` (no session needed).
    ///
    /// # Errors
    ///
    /// As [`Client::watch`].
    pub async fn start(client: Client, name: &str) -> Result<Observer, WatchError> {
        let key = client.election_key(name).await;
        // Watch first, then read: a change between the two shows up as an
        // event, and is read again (duplicates are filtered).
        let watcher = client.watch(WatchTarget::Resource(key.clone()), 0).await?;
        let mut observer = Observer {
            client,
            key,
            watcher,
            last: None,
            pending: VecDeque::new(),
        };
        observer.refresh().await?;
        Ok(observer)
    }

    async fn refresh(&mut self) -> Result<(), ClientError> {
        if let Some(now) = leader_of(&self.client, &self.key).await? {
            if self.last.as_ref() != Some(&now)
                && self
                    .last
                    .as_ref()
                    .is_none_or(|l| now.fencing_token >= l.fencing_token)
            {
                self.last = Some(now.clone());
                self.pending.push_back(now);
            }
        }
        Ok(())
    }

    /// The next leader (or the current leader's new value). Waits as long as
    /// it takes; reconnects across cluster leader changes like
    /// [`Watcher::next`].
    ///
    /// # Errors
    ///
    /// As [`Watcher::next`].
    pub async fn next(&mut self) -> Result<LeaderInfo, WatchError> {
        loop {
            if let Some(leader) = self.pending.pop_front() {
                return Ok(leader);
            }
            let event = self.watcher.next().await?;
            if matches!(event.event.as_str(), "granted" | "proclaimed") {
                self.refresh().await?;
            }
        }
    }
}
