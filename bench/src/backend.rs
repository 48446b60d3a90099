//! One trait, [`Backend`], and an implementation per system. A backend value
//! is one client (its own connection and, where the system has them, its own
//! session); an operation of the benchmark is one [`Backend::cycle`]:
//! acquire + release.
//!
//! | name | acquire | release |
//! |---|---|---|
//! | `warden` | `Acquire` on a new lease (TTL 10 s), over mutual TLS 1.3 as `root` | `Release` with the fencing token (the lease dies with its last lock) |
//! | `warden-insecure` | as `warden`, plaintext (`--insecure` nodes) | as `warden` |
//! | `etcd` | `LeaseGrant` (10 s) + `Lock` on that lease | `LeaseRevoke` (deletes the lock key) |
//! | `etcd-session` | `Lock` on the client's one lease (granted at connect, kept alive) | `Unlock` |
//! | `zookeeper` | `create /locks/R/lock-` EPHEMERAL_SEQUENTIAL (container parent made on `NoNode`), lowest wins, others watch their predecessor | `delete` own node |
//! | `redis` | `SET R v NX PX 10000` (retried while held) | compare-and-delete script (**unsafe**: one node, no fencing, lost on restart) |

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use async_trait::async_trait;

/// TTL of every lease or key the backends create, in seconds.
pub const TTL_S: u64 = 10;

/// A grant as each system names it.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// The resource granted.
    pub resource: String,
    /// Warden/etcd: the lease; ZooKeeper: the session; Redis: unused.
    pub id: i64,
    /// etcd: the lock key; ZooKeeper: the node path; Redis: the random value.
    pub key: Vec<u8>,
    /// Warden: the fencing token; etcd: the key's create revision; ZooKeeper: the sequence.
    pub token: u64,
}

/// One client of one lock service.
#[async_trait]
pub trait Backend: Send {
    /// Acquires `resource`, waiting up to `wait` while it is held (zero: the
    /// caller expects it to be free). `None`: not granted within `wait`.
    async fn acquire(&mut self, resource: &str, wait: Duration) -> Result<Option<Grant>>;
    /// Releases a grant this client holds.
    async fn release(&mut self, grant: &Grant) -> Result<()>;
    /// Keeps the grant's lease (or session, or key) alive for another TTL.
    async fn renew(&mut self, grant: &Grant) -> Result<()>;
    /// True when the system still records this exact grant as the holder.
    async fn holds(&mut self, grant: &Grant) -> Result<bool>;

    /// Acquires one grant of `kind` (a semaphore permit, a read-write
    /// lock's shared or exclusive grant), waiting up to `wait`. Only Warden
    /// has them built in; the others answer an error (their recipes are
    /// client-side: Curator's `InterProcessSemaphoreV2` and
    /// `InterProcessReadWriteLock` are Java, which this harness does not run).
    async fn acquire_kind(
        &mut self,
        resource: &str,
        wait: Duration,
        kind: warden_client::GrantKind,
    ) -> Result<Option<Grant>> {
        let _ = (resource, wait, kind);
        Err(anyhow!("no built-in semaphores or read-write locks"))
    }

    /// One operation of the benchmark: acquire a free resource, release it.
    async fn cycle(&mut self, resource: &str) -> Result<()> {
        let grant = self
            .acquire(resource, Duration::ZERO)
            .await?
            .ok_or_else(|| anyhow!("{resource}: not granted although free"))?;
        self.release(&grant).await
    }
}

/// Which system, and how a client reaches it.
#[derive(Debug, Clone)]
pub struct Target {
    /// Backend name: `warden`, `warden-insecure`, `etcd`, `etcd-session`,
    /// `zookeeper`, `redis`.
    pub backend: &'static str,
    /// Client endpoints, `host:port`.
    pub endpoints: Vec<String>,
    /// Warden with mutual TLS: the client certificate to present; None:
    /// plaintext (and every other system).
    pub warden_tls: Option<warden_client::TlsOptions>,
}

impl Target {
    /// True for both Warden backends.
    pub fn is_warden(&self) -> bool {
        matches!(self.backend, "warden" | "warden-insecure")
    }

    /// Options of a Warden client of this target (defaults, and TLS if the
    /// cluster serves it).
    pub fn warden_options(&self) -> warden_client::ClientOptions {
        warden_client::ClientOptions {
            tls: self.warden_tls.clone(),
            ..Default::default()
        }
    }

    /// A lazily connected gRPC channel to the Warden node at `addr`
    /// (`host:port`), over mutual TLS if the cluster serves it.
    pub fn warden_channel(&self, addr: &str) -> Result<tonic::transport::Channel> {
        Ok(match &self.warden_tls {
            Some(tls) => {
                warden_tls::ClientTls::load_client(&tls.certs_dir, &tls.user)?.channel_lazy(addr)?
            }
            None => {
                tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?.connect_lazy()
            }
        })
    }

    /// Opens a new client (its own connection and session).
    pub async fn connect(&self) -> Result<Box<dyn Backend>> {
        Ok(match self.backend {
            "warden" | "warden-insecure" => {
                Box::new(Warden::connect(&self.endpoints, self.warden_options()).await?)
            }
            "etcd" => Box::new(Etcd::connect(&self.endpoints, false).await?),
            "etcd-session" => Box::new(Etcd::connect(&self.endpoints, true).await?),
            "zookeeper" => Box::new(Zk::connect(&self.endpoints).await?),
            "redis" => Box::new(Redis::connect(&self.endpoints).await?),
            other => bail!("unknown backend {other}"),
        })
    }
}

// ---------------------------------------------------------------- Warden

pub struct Warden {
    client: warden_client::Client,
}

impl Warden {
    async fn connect(
        endpoints: &[String],
        options: warden_client::ClientOptions,
    ) -> Result<Warden> {
        let client = warden_client::Client::connect(endpoints.to_vec(), options).await?;
        Ok(Warden { client })
    }
}

#[async_trait]
impl Backend for Warden {
    async fn acquire(&mut self, resource: &str, wait: Duration) -> Result<Option<Grant>> {
        self.acquire_kind(resource, wait, warden_client::GrantKind::Mutex)
            .await
    }

    async fn acquire_kind(
        &mut self,
        resource: &str,
        wait: Duration,
        kind: warden_client::GrantKind,
    ) -> Result<Option<Grant>> {
        let mut options = warden_client::AcquireOptions::with_ttl(Duration::from_secs(TTL_S));
        options.wait = wait;
        options.kind = kind;
        match self.client.acquire(resource, options).await? {
            warden_client::AcquireResult::Granted {
                lease_id,
                fencing_token,
                ..
            } => Ok(Some(Grant {
                resource: resource.to_owned(),
                id: lease_id as i64,
                key: Vec::new(),
                token: fencing_token,
            })),
            warden_client::AcquireResult::NotGranted { .. } => Ok(None),
        }
    }

    async fn release(&mut self, grant: &Grant) -> Result<()> {
        let r = self
            .client
            .release(
                grant.id as u64,
                Some(grant.resource.clone()),
                Some(grant.token),
            )
            .await?;
        if !r.released {
            bail!("release of {} answered released=false", grant.resource);
        }
        Ok(())
    }

    async fn renew(&mut self, grant: &Grant) -> Result<()> {
        self.client.renew(grant.id as u64).await?;
        Ok(())
    }

    async fn holds(&mut self, grant: &Grant) -> Result<bool> {
        let s = self.client.status(grant.resource.clone()).await?;
        Ok(s.holder
            .is_some_and(|h| h.lease_id == grant.id as u64 && h.fencing_token == grant.token))
    }
}

// ---------------------------------------------------------------- etcd

pub struct Etcd {
    client: etcd_client::Client,
    /// `etcd-session`: the client's one lease, kept alive by a task.
    session: Option<(i64, tokio::task::JoinHandle<()>)>,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        if let Some((_, task)) = &self.session {
            task.abort();
        }
    }
}

impl Etcd {
    async fn connect(endpoints: &[String], session: bool) -> Result<Etcd> {
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(500))
            .with_timeout(Duration::from_secs(5));
        let mut client = etcd_client::Client::connect(endpoints, Some(options)).await?;
        let session = if session {
            let id = client.lease_grant(TTL_S as i64, None).await?.id();
            let (mut keeper, mut stream) = client.lease_keep_alive(id).await?;
            let task = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(TTL_S / 3)).await;
                    if keeper.keep_alive().await.is_err() {
                        return;
                    }
                    if !matches!(stream.message().await, Ok(Some(_))) {
                        return;
                    }
                }
            });
            Some((id, task))
        } else {
            None
        };
        Ok(Etcd { client, session })
    }
}

#[async_trait]
impl Backend for Etcd {
    async fn acquire(&mut self, resource: &str, wait: Duration) -> Result<Option<Grant>> {
        let lease = match &self.session {
            Some((id, _)) => *id,
            None => self.client.lease_grant(TTL_S as i64, None).await?.id(),
        };
        let options = etcd_client::LockOptions::new().with_lease(lease);
        let locked = if wait.is_zero() {
            Some(self.client.lock(resource, Some(options)).await)
        } else {
            tokio::time::timeout(wait, self.client.lock(resource, Some(options)))
                .await
                .ok()
        };
        match locked {
            Some(Ok(r)) => Ok(Some(Grant {
                resource: resource.to_owned(),
                id: lease,
                key: r.key().to_vec(),
                token: r.header().map(|h| h.revision() as u64).unwrap_or(0),
            })),
            other => {
                if self.session.is_none() {
                    let _ = self.client.lease_revoke(lease).await;
                }
                match other {
                    Some(Err(e)) => Err(e.into()),
                    _ => Ok(None),
                }
            }
        }
    }

    async fn release(&mut self, grant: &Grant) -> Result<()> {
        if self.session.is_some() {
            self.client.unlock(grant.key.clone()).await?;
        } else {
            self.client.lease_revoke(grant.id).await?;
        }
        Ok(())
    }

    async fn renew(&mut self, grant: &Grant) -> Result<()> {
        let (mut keeper, mut stream) = self.client.lease_keep_alive(grant.id).await?;
        keeper.keep_alive().await?;
        let reply = stream
            .message()
            .await?
            .ok_or_else(|| anyhow!("keep-alive stream closed"))?;
        if reply.ttl() <= 0 {
            bail!("lease {} is gone", grant.id);
        }
        Ok(())
    }

    async fn holds(&mut self, grant: &Grant) -> Result<bool> {
        let r = self.client.get(grant.key.clone(), None).await?;
        Ok(r.kvs().first().is_some_and(|kv| kv.lease() == grant.id))
    }
}

// ---------------------------------------------------------------- ZooKeeper

pub struct Zk {
    client: zookeeper_client::Client,
}

impl Zk {
    async fn connect(endpoints: &[String]) -> Result<Zk> {
        let client = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(TTL_S))
            .with_connection_timeout(Duration::from_millis(1000))
            .connect(&endpoints.join(","))
            .await?;
        Ok(Zk { client })
    }

    fn dir(resource: &str) -> String {
        format!("/locks/{resource}")
    }
}

#[async_trait]
impl Backend for Zk {
    async fn acquire(&mut self, resource: &str, wait: Duration) -> Result<Option<Grant>> {
        use zookeeper_client::{Acls, CreateMode, Error};
        let deadline = Instant::now() + wait;
        let dir = Zk::dir(resource);
        let prefix = format!("{dir}/lock-");
        let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, sequence) = match self.client.create(&prefix, b"", &ephemeral).await {
            Err(Error::NoNode) => {
                // First use of the resource: its parent, as a container node
                // (the server removes it once empty), as Curator does.
                let container = CreateMode::Container.with_acls(Acls::anyone_all());
                match self.client.create("/locks", b"", &container).await {
                    Ok(_) | Err(Error::NodeExists) => {}
                    Err(e) => return Err(e.into()),
                }
                match self.client.create(&dir, b"", &container).await {
                    Ok(_) | Err(Error::NodeExists) => {}
                    Err(e) => return Err(e.into()),
                }
                self.client.create(&prefix, b"", &ephemeral).await?
            }
            other => other?,
        };
        let mine = format!("lock-{sequence}");
        let path = format!("{dir}/{mine}");
        loop {
            let mut children = self.client.list_children(&dir).await?;
            children.sort_by_key(|c| c.rsplit('-').next().unwrap_or("").to_owned());
            let at = children
                .iter()
                .position(|c| *c == mine)
                .ok_or_else(|| anyhow!("{path}: own node vanished (session lost)"))?;
            if at == 0 {
                return Ok(Some(Grant {
                    resource: resource.to_owned(),
                    id: self.client.session_id().0,
                    key: path.into_bytes(),
                    token: sequence.into_i64() as u64,
                }));
            }
            let predecessor = format!("{dir}/{}", children[at - 1]);
            let (stat, watcher) = self.client.check_and_watch_stat(&predecessor).await?;
            if stat.is_none() {
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, watcher.changed()).await.is_err() {
                let _ = self.client.delete(&path, None).await;
                return Ok(None);
            }
        }
    }

    async fn release(&mut self, grant: &Grant) -> Result<()> {
        let path = String::from_utf8_lossy(&grant.key).into_owned();
        self.client.delete(&path, None).await?;
        Ok(())
    }

    async fn renew(&mut self, _grant: &Grant) -> Result<()> {
        // The client library pings the session by itself; a renew is a
        // check that the session is still usable.
        match self.client.state() {
            zookeeper_client::SessionState::SyncConnected
            | zookeeper_client::SessionState::Disconnected => Ok(()),
            other => bail!("zookeeper session {other:?}"),
        }
    }

    async fn holds(&mut self, grant: &Grant) -> Result<bool> {
        let path = String::from_utf8_lossy(&grant.key).into_owned();
        let dir = Zk::dir(&grant.resource);
        let mut children = self.client.list_children(&dir).await?;
        children.sort_by_key(|c| c.rsplit('-').next().unwrap_or("").to_owned());
        let first = children.first().map(|c| format!("{dir}/{c}"));
        let stat = self.client.check_stat(&path).await?;
        Ok(first.as_deref() == Some(path.as_str())
            && stat.is_some_and(|s| s.ephemeral_owner == grant.id))
    }
}

// ---------------------------------------------------------------- Redis

const REDIS_RELEASE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const REDIS_RENEW: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

pub struct Redis {
    /// Reconnects by itself after the server restarts.
    conn: redis::aio::ConnectionManager,
    release: redis::Script,
    renew: redis::Script,
}

impl Redis {
    async fn connect(endpoints: &[String]) -> Result<Redis> {
        let endpoint = endpoints.first().context("no redis endpoint")?;
        let client = redis::Client::open(format!("redis://{endpoint}/"))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_millis(500))
            .set_response_timeout(Duration::from_secs(2))
            .set_number_of_retries(2);
        let conn = tokio::time::timeout(
            Duration::from_secs(2),
            redis::aio::ConnectionManager::new_with_config(client, config),
        )
        .await
        .context("redis connect timed out")??;
        Ok(Redis {
            conn,
            release: redis::Script::new(REDIS_RELEASE),
            renew: redis::Script::new(REDIS_RENEW),
        })
    }
}

#[async_trait]
impl Backend for Redis {
    async fn acquire(&mut self, resource: &str, wait: Duration) -> Result<Option<Grant>> {
        let deadline = Instant::now() + wait;
        let value = format!("{:032x}", rand::random::<u128>());
        loop {
            let set: Option<String> = redis::cmd("SET")
                .arg(resource)
                .arg(&value)
                .arg("NX")
                .arg("PX")
                .arg(TTL_S * 1000)
                .query_async(&mut self.conn)
                .await?;
            if set.is_some() {
                return Ok(Some(Grant {
                    resource: resource.to_owned(),
                    id: 0,
                    key: value.into_bytes(),
                    token: 0,
                }));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            // Retry at once: the most favourable policy for Redis's latency.
            tokio::task::yield_now().await;
        }
    }

    async fn release(&mut self, grant: &Grant) -> Result<()> {
        let deleted: i64 = self
            .release
            .key(&grant.resource)
            .arg(grant.key.as_slice())
            .invoke_async(&mut self.conn)
            .await?;
        if deleted != 1 {
            bail!("{}: not ours any more at release", grant.resource);
        }
        Ok(())
    }

    async fn renew(&mut self, grant: &Grant) -> Result<()> {
        let renewed: i64 = self
            .renew
            .key(&grant.resource)
            .arg(grant.key.as_slice())
            .arg(TTL_S * 1000)
            .invoke_async(&mut self.conn)
            .await?;
        if renewed != 1 {
            bail!("{}: not ours any more at renew", grant.resource);
        }
        Ok(())
    }

    async fn holds(&mut self, grant: &Grant) -> Result<bool> {
        let value: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&grant.resource)
            .query_async(&mut self.conn)
            .await?;
        Ok(value.as_deref() == Some(grant.key.as_slice()))
    }
}
