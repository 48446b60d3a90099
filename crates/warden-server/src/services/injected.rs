//! Simulator only: where an injected identity enters a request.
//!
//! The simulator (`warden-sim`) serves nodes on plaintext turmoil TCP
//! (TLS itself is not simulated) but runs them with principals on: its
//! [`IdentitySource`] says which identity the connection from each remote
//! address would have had after a verified TLS handshake. [`InjectIdentities`]
//! is a tower layer in front of every service of such a node: it reads the
//! connection's remote address (tonic's `TcpConnectInfo`, which tonic puts
//! in the request's extensions before any layer runs), asks the source, and
//! puts the answer in the request as an [`InjectedIdentity`], which
//! `services::principal` reads as it reads warden-tls' `PeerInfo`.
//!
//! Why this opens no hole in production:
//!
//! - The layer is installed with a source only by `start::run_node` when
//!   `Injected::identities` is set **and** the node has no certificates.
//!   `run` and `run_with` (the CLI's paths, the only ones that serve TLS)
//!   build their `Injected` themselves with no source, and `run_injected`
//!   refuses a config with `certs_dir`; so a secure node never consults a
//!   source and reads identities from its TLS handshakes only.
//! - [`InjectedIdentity`] is crate-private: nothing outside this crate can
//!   construct one, and this layer removes any it finds before it decides
//!   (request extensions are made by the server, never read off the wire:
//!   no header or metadata a caller sends can become an identity).
//! - Without a source the layer only removes; every caller stays anonymous,
//!   as on any insecure node.

use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::http;
use tonic::transport::server::TcpConnectInfo;
use warden_tls::Identity;

use crate::sim_hooks::IdentitySource;

/// The identity an [`IdentitySource`] gave a request's connection. Only
/// [`WithIdentities`] inserts one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InjectedIdentity(pub(crate) Identity);

/// The identity [`InjectIdentities`] put in `req`, if any.
pub(crate) fn injected_identity<T>(req: &tonic::Request<T>) -> Option<&Identity> {
    req.extensions().get::<InjectedIdentity>().map(|i| &i.0)
}

/// The tower layer (see the module docs); `None`: no source, every caller
/// anonymous.
#[derive(Clone, Debug, Default)]
pub struct InjectIdentities {
    source: Option<Arc<dyn IdentitySource>>,
}

impl InjectIdentities {
    /// The layer with `source` (only `start::run_node` passes one, for an
    /// insecure node whose `Injected` carries it).
    pub(crate) fn new(source: Option<Arc<dyn IdentitySource>>) -> Self {
        InjectIdentities { source }
    }
}

impl<S> tower::Layer<S> for InjectIdentities {
    type Service = WithIdentities<S>;

    fn layer(&self, inner: S) -> WithIdentities<S> {
        WithIdentities {
            source: self.source.clone(),
            inner,
        }
    }
}

/// A service behind [`InjectIdentities`].
#[derive(Clone, Debug)]
pub struct WithIdentities<S> {
    source: Option<Arc<dyn IdentitySource>>,
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for WithIdentities<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> S::Future {
        let extensions = request.extensions_mut();
        extensions.remove::<InjectedIdentity>();
        if let Some(source) = &self.source {
            // A connection whose address is unknown presented no
            // certificate: anonymous, refused as on a secure node.
            let identity = extensions
                .get::<TcpConnectInfo>()
                .and_then(TcpConnectInfo::remote_addr)
                .map_or(Identity::Anonymous, |remote| source.identity_of(remote));
            extensions.insert(InjectedIdentity(identity));
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tower::{Layer as _, Service as _};

    #[derive(Debug)]
    struct Fixed;

    impl IdentitySource for Fixed {
        fn identity_of(&self, remote: SocketAddr) -> Identity {
            match remote.port() {
                1 => Identity::Client {
                    principal: "alice".into(),
                },
                _ => Identity::Anonymous,
            }
        }
    }

    /// Calls the layered echo service and returns the identity it saw.
    fn seen(
        layer: InjectIdentities,
        remote: Option<SocketAddr>,
        planted: bool,
    ) -> Option<Identity> {
        let echo = tower::service_fn(|req: http::Request<()>| async move {
            Ok::<_, std::convert::Infallible>(
                req.extensions()
                    .get::<InjectedIdentity>()
                    .map(|i| i.0.clone()),
            )
        });
        let mut svc = layer.layer(echo);
        let mut req = http::Request::new(());
        if let Some(remote) = remote {
            req.extensions_mut().insert(TcpConnectInfo {
                local_addr: None,
                remote_addr: Some(remote),
            });
        }
        if planted {
            req.extensions_mut()
                .insert(InjectedIdentity(Identity::Client {
                    principal: "root".into(),
                }));
        }
        let fut = svc.call(req);
        futures::executor::block_on(fut).expect("infallible")
    }

    // docs/security.md "Identity and permissions" (a principal comes from
    // the connection, never from the request): with a source, the
    // connection's address decides, an unknown address is anonymous, and an
    // identity already in the request is replaced; without a source
    // (production, a secure node) nothing is injected and a planted one is
    // removed.
    #[test]
    fn the_connection_decides_the_injected_identity() {
        let addr = |port| Some(SocketAddr::from(([10, 0, 0, 1], port)));
        let with = InjectIdentities::new(Some(Arc::new(Fixed)));
        assert_eq!(
            seen(with.clone(), addr(1), false),
            Some(Identity::Client {
                principal: "alice".into()
            })
        );
        assert_eq!(seen(with.clone(), addr(2), true), Some(Identity::Anonymous));
        assert_eq!(seen(with, None, false), Some(Identity::Anonymous));
        let without = InjectIdentities::default();
        assert_eq!(seen(without.clone(), addr(1), false), None);
        assert_eq!(seen(without, addr(1), true), None);
    }
}
