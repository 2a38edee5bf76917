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
//! The cluster gets the name's middleware too, the very layers of
//! [`client(name)`](super::ClientFactory::client) (one concurrency limit,
//! retry budget, cookie jar and set of request metrics per name), split
//! between the whole cluster request and each replica attempt as
//! [`ClusterClientBuilder::middleware`](crate::cluster::ClusterClientBuilder::middleware)
//! says; hedging is refused when the factory is built (the strategy forks).
//! Nor does a cluster rotate whole pools ([`ClientOptions::rotate_pool`]):
//! its replicas' states live with one `Client`, so the factory refuses the
//! combination; the default handler lifetime (connections renewed every
//! lifetime) works as for any client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use http::Uri;

use super::{config_error, ClientOptions};
use crate::client::request::IntoUri;
use crate::cluster::{
    ClusterClient, ClusterConfig, DnsTopology, FileTopology, Replica, StaticTopology,
};
use crate::error::Error;
use crate::service::ServiceClient;

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
    /// A name's DNS SRV records (`cluster::SrvTopology`, the `dns-srv`
    /// feature; without it the factory refuses the name), resolved again
    /// every `refresh`.
    Srv {
        /// `_http._tcp.billing.svc` (`_https.…`: https replicas).
        name: String,
        /// The nameserver to ask; `None`: the system's configuration.
        nameserver: Option<SocketAddr>,
        /// The interval between resolutions.
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

    /// The targets of `name`'s SRV records, resolved again every `refresh`
    /// (the `dns-srv` feature).
    pub fn srv(name: impl Into<String>, nameserver: Option<SocketAddr>, refresh: Duration) -> Self {
        Self::new(ReplicaSource::Srv {
            name: name.into(),
            nameserver,
            refresh,
        })
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
    #[cfg(not(feature = "dns-srv"))]
    if let Some(ClusterOptions {
        replicas: ReplicaSource::Srv { .. },
        ..
    }) = &options.cluster
    {
        return Err(config_error(format!(
            "client {name:?}: SRV records need courier's `dns-srv` feature"
        )));
    }
    // The order table says which layers a cluster refuses.
    crate::cluster::check_middleware(name, &options.middleware.layers())?;
    Ok(())
}

/// Builds the cluster `name` over `service`'s pool and middleware layers
/// (DNS resolved, file read once).
pub(super) async fn build(
    name: &str,
    cluster: ClusterOptions,
    service: &ServiceClient,
) -> Result<ClusterClient, Error> {
    let builder = ClusterClient::builder(name)
        .config(cluster.config)
        .middleware_layers(service.layers().clone());
    let builder = match cluster.replicas {
        ReplicaSource::Static(list) => builder.topology(StaticTopology::new(list)),
        ReplicaSource::Dns { url, refresh } => {
            builder.topology(DnsTopology::resolve(url, refresh).await?)
        }
        ReplicaSource::File { path, refresh } => {
            builder.topology(FileTopology::watch(path, refresh).await?)
        }
        #[cfg(feature = "dns-srv")]
        ReplicaSource::Srv {
            name,
            nameserver,
            refresh,
        } => {
            let mut srv = crate::cluster::SrvTopology::builder(name).refresh(refresh);
            if let Some(addr) = nameserver {
                srv = srv.nameserver(addr);
            }
            builder.topology(srv.resolve().await?)
        }
        #[cfg(not(feature = "dns-srv"))]
        ReplicaSource::Srv { .. } => {
            return Err(config_error(format!(
                "client {name:?}: SRV records need courier's `dns-srv` feature"
            )))
        }
    };
    builder.build(service.client())
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
