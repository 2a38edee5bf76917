//! A named client that is a cluster: [`ClusterOptions`] (where the
//! replicas come from, and the [`ClusterConfig`]), and how the factory
//! builds a [`ClusterClient`] over the named client's pool.
//!
//! Why here and not in `courier::cluster`: a cluster knows nothing of
//! names, files or handler lifetimes; the factory does. It gives the
//! cluster the named client's [`Client`](crate::Client) — its pool settings,
//! TLS, default headers and handler lifetime (as the connections'
//! lifetime) — so every replica is one more origin in that pool, and keeps
//! one [`ClusterClient`] per name, as it keeps one
//! [`ServiceClient`](crate::ServiceClient): every caller shares the
//! replicas' health, weights and budgets.
//!
//! What a cluster does not get is the named client's middleware stack: a
//! [`ClusterClient`] sends each attempt on a `Client`, not through a
//! [`Stack`], and its strategies already do what retries and hedging would
//! (on other replicas). A stack configured for the name is logged at `warn`
//! when the cluster is built, so it is not dropped in silence. Nor does a
//! cluster rotate whole pools ([`ClientOptions::rotate_pool`]): its
//! replicas' states live with one `Client`, so the factory refuses the
//! combination; the default handler lifetime (connections renewed every
//! lifetime) works as for any client.

use std::path::PathBuf;
use std::time::Duration;

use http::Uri;

use super::{config_error, ClientOptions};
use crate::client::request::IntoUri;
use crate::client::Client;
use crate::cluster::{
    ClusterClient, ClusterConfig, DnsTopology, FileTopology, Replica, StaticTopology,
};
use crate::error::Error;
use crate::middleware::Stack;

/// How often a DNS topology is resolved again by default.
pub const DEFAULT_DNS_REFRESH: Duration = Duration::from_secs(30);
/// How often a replica file is checked by default.
pub const DEFAULT_FILE_REFRESH: Duration = Duration::from_secs(5);

/// Where a factory cluster's replicas come from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReplicaSource {
    /// A fixed list.
    Static(Vec<Replica>),
    /// A host name's addresses ([`DnsTopology`]), resolved again every `refresh`.
    Dns {
        /// `http://host:port` or `https://host:port`.
        url: Uri,
        /// The interval between resolutions.
        refresh: Duration,
    },
    /// A file of replica URLs ([`FileTopology`]), checked every `refresh`.
    File {
        /// The file.
        path: PathBuf,
        /// The interval between checks.
        refresh: Duration,
    },
}

/// A named client's cluster ([`ClientOptions::cluster`]): its replicas and
/// its settings. See [`ClientFactory::cluster`](super::ClientFactory::cluster).
///
/// ```
/// use courier::cluster::Strategy;
/// use courier::factory::ClusterOptions;
///
/// let factory = courier::ClientFactory::builder()
///     .options("billing", |o| {
///         let cluster = ClusterOptions::replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
///             .unwrap();
///         o.cluster = Some(cluster.strategy(Strategy::sequential(2)));
///     })
///     .build()
///     .unwrap();
/// # drop(factory);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClusterOptions {
    /// Where the replicas come from.
    pub replicas: ReplicaSource,
    /// Strategy, ordering, criteria, throttling, budget, …
    pub config: ClusterConfig,
}

impl ClusterOptions {
    /// Replicas from `source`, default settings.
    pub fn new(source: ReplicaSource) -> ClusterOptions {
        ClusterOptions {
            replicas: source,
            config: ClusterConfig::default(),
        }
    }

    /// A fixed list of replicas (base URLs).
    pub fn replicas<U: IntoUri>(urls: impl IntoIterator<Item = U>) -> Result<Self, Error> {
        let list = urls
            .into_iter()
            .map(Replica::new)
            .collect::<Result<_, _>>()?;
        Ok(Self::new(ReplicaSource::Static(list)))
    }

    /// The addresses of `url`'s host, resolved again every `refresh`.
    pub fn dns(url: impl IntoUri, refresh: Duration) -> Result<Self, Error> {
        let url = url.into_uri()?;
        Ok(Self::new(ReplicaSource::Dns { url, refresh }))
    }

    /// The replicas a file lists, checked every `refresh`.
    pub fn file(path: impl Into<PathBuf>, refresh: Duration) -> Self {
        Self::new(ReplicaSource::File {
            path: path.into(),
            refresh,
        })
    }

    /// Sets all the settings.
    pub fn config(mut self, config: ClusterConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the strategy.
    pub fn strategy(mut self, strategy: crate::cluster::Strategy) -> Self {
        self.config.strategy = strategy;
        self
    }
}

/// What a name's options must not combine with a cluster.
pub(super) fn check(name: &str, options: &ClientOptions) -> Result<(), Error> {
    if options.cluster.is_none() {
        return Ok(());
    }
    if options.base_url.is_some() {
        return Err(config_error(format!(
            "client {name:?}: a cluster and a base_url at once: a cluster request's origin is \
             the replica it goes to (its target is a path); remove base_url, or put a path \
             prefix in the replicas' URLs"
        )));
    }
    if options.rotate_pool && options.handler_lifetime.is_some() {
        return Err(config_error(format!(
            "client {name:?}: rotate_pool with a cluster: the replicas' health and weights live \
             with one pool; the handler lifetime already renews the connections \
             (pooled_connection_lifetime), so remove rotate_pool"
        )));
    }
    Ok(())
}

/// Builds the cluster `name` over `client` (DNS resolved, file read once).
pub(super) async fn build(
    name: &str,
    cluster: ClusterOptions,
    middleware: &Stack,
    client: Client,
) -> Result<ClusterClient, Error> {
    let unused = middleware_names(middleware);
    if !unused.is_empty() {
        tracing::warn!(
            client = name,
            middleware = ?unused,
            "a cluster's requests do not go through the client's middleware; its strategy \
             retries and forks on other replicas"
        );
    }
    let builder = ClusterClient::builder(name).config(cluster.config);
    let builder = match cluster.replicas {
        ReplicaSource::Static(list) => builder.topology(StaticTopology::new(list)),
        ReplicaSource::Dns { url, refresh } => {
            builder.topology(DnsTopology::resolve(url, refresh).await?)
        }
        ReplicaSource::File { path, refresh } => {
            builder.topology(FileTopology::watch(path, refresh).await?)
        }
    };
    builder.build(client)
}

/// The middleware set in `stack`.
fn middleware_names(stack: &Stack) -> Vec<&'static str> {
    let mut names = Vec::new();
    let mut add = |set: bool, name| {
        if set {
            names.push(name);
        }
    };
    add(stack.trace.is_some(), "trace");
    add(stack.decompression.is_some(), "decompression");
    add(stack.concurrency_limit.is_some(), "concurrency_limit");
    add(stack.timeout.is_some(), "timeout");
    add(stack.redirect.is_some(), "redirect");
    add(stack.retry.is_some(), "retry");
    add(stack.hedging.is_some(), "hedging");
    add(stack.circuit_breaker.is_some(), "circuit_breaker");
    #[cfg(feature = "cookies")]
    add(stack.cookies.is_some(), "cookies");
    names
}

#[cfg(test)]
mod tests {
    /// `cluster()` can be awaited in a spawned task (no lock held across
    /// its awaits).
    #[test]
    fn the_cluster_future_is_send() {
        fn send<T: Send>(_: &T) {}
        let factory = crate::ClientFactory::new();
        let future = factory.cluster("x");
        send(&future);
    }
}
