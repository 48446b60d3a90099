//! The deny-list calls of [`Admin`] (docs/security.md "A key was
//! stolen") and their results. Each needs `admin` on `""`; changes carry
//! one request id for every attempt (S7).

use warden_proto::v1;

use super::{Admin, ADMIN_ATTEMPT_TIMEOUT};
use crate::client::within;
use crate::ClientError;

impl Admin {
    /// Puts `target` on the replicated deny list (docs/security.md "A key
    /// was stolen"): on every node its handshakes fail and its open
    /// connections are closed once the change applies there; a denied
    /// principal's commands are refused and its queued waits end. Needs
    /// `admin` on `""`. Denying again changes nothing. Retried with one
    /// request id (S7).
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `InvalidArgument` naming `user` (`root`, or not
    /// a principal name) or `serial` (not hex, or over 20 bytes);
    /// `ResourceExhausted` (10,000 entries); `NoQuorum` / `Unavailable`;
    /// `RequestExpired`.
    pub async fn deny(&self, target: DenyTarget) -> Result<(), ClientError> {
        self.deny_change(target, true).await
    }

    /// Takes `target` off the replicated deny list. Needs `admin` on `""`.
    /// An entry of a node's deny file stays until the file changes.
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `NotFound` (field `user` or `serial`) when it is
    /// not denied; `InvalidArgument`; `NoQuorum` / `Unavailable`;
    /// `RequestExpired`.
    pub async fn undeny(&self, target: DenyTarget) -> Result<(), ClientError> {
        self.deny_change(target, false).await
    }

    /// [`Admin::deny`] (`deny` true) or [`Admin::undeny`].
    async fn deny_change(&self, target: DenyTarget, deny: bool) -> Result<(), ClientError> {
        let target = target.into_pb();
        self.change(
            if deny { "deny" } else { "undeny" },
            |header| v1::DenyRequest {
                header: Some(header),
                target: Some(target),
            },
            move |mut admin, r| async move {
                if deny {
                    admin.deny(r).await
                } else {
                    admin.undeny(r).await
                }
            },
        )
        .await
    }

    /// The replicated deny list (a linearizable read) and the serving
    /// node's deny file. Needs `admin` on `""`.
    ///
    /// # Errors
    ///
    /// `PermissionDenied`; `NoQuorum` / `Unavailable`.
    pub async fn denied(&self) -> Result<DenyList, ClientError> {
        self.call("list denied", move |mut admin| async move {
            let r = within(
                ADMIN_ATTEMPT_TIMEOUT,
                admin.list_denied(v1::ListDeniedRequest {}),
            )
            .await?;
            Ok(DenyList {
                users: r.users,
                serials: r.serials,
                file_users: r.file_users,
                file_serials: r.file_serials,
                read_index: r.read_index,
            })
        })
        .await
    }
}

/// What [`Admin::deny`] and [`Admin::undeny`] name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyTarget {
    /// Every certificate of a principal.
    User(String),
    /// One certificate, by serial: hex as `warden cert list` or openssl
    /// print it (colons, case and leading zeros are ignored).
    Serial(String),
}

impl DenyTarget {
    fn into_pb(self) -> v1::deny_request::Target {
        match self {
            DenyTarget::User(u) => v1::deny_request::Target::User(u),
            DenyTarget::Serial(s) => v1::deny_request::Target::Serial(s),
        }
    }
}

/// The answer to [`Admin::denied`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DenyList {
    /// Denied principals of the replicated list, by name.
    pub users: Vec<String>,
    /// Denied serials of the replicated list (lowercase hex, no leading
    /// zeros), in order.
    pub serials: Vec<String>,
    /// The serving node's deny file (`deny.toml` in its certs dir):
    /// principals.
    pub file_users: Vec<String>,
    /// The serving node's deny file: serials.
    pub file_serials: Vec<String>,
    /// The read index.
    pub read_index: u64,
}
