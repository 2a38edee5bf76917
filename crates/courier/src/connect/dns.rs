//! Name resolution, pluggable so tests and service discovery can supply addresses.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;

/// The future a [`Resolve`] implementation returns.
pub type Resolving = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

/// Resolves a host name to socket addresses.
///
/// Called once for every new connection, so an implementation that consults
/// service discovery sees every rotation. Return the addresses in preference
/// order; the pool starts each new connection at the next one.
///
/// ```
/// use std::net::SocketAddr;
/// use courier::{Resolve, Resolving};
///
/// /// Sends every host name to two local replicas.
/// struct Replicas;
///
/// impl Resolve for Replicas {
///     fn resolve(&self, _host: &str, port: u16) -> Resolving {
///         let addrs: Vec<SocketAddr> = vec![
///             ([127, 0, 0, 1], port).into(),
///             ([127, 0, 0, 2], port).into(),
///         ];
///         Box::pin(async move { Ok(addrs) })
///     }
/// }
/// let client = courier::Client::builder().dns_resolver(Replicas).build().unwrap();
/// ```
pub trait Resolve: Send + Sync + 'static {
    /// Looks up `host` (never an IP literal: those skip resolution).
    fn resolve(&self, host: &str, port: u16) -> Resolving;
}

/// The operating system's resolver (`getaddrinfo` on a blocking thread, via tokio).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> Resolving {
        let host = host.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        })
    }
}
