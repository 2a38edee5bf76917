//! A topology from DNS SRV records (RFC 2782), re-resolved on an interval:
//! `_http._tcp.billing.svc` names the replicas and the port of each (the
//! `dns-srv` feature, over hickory-resolver).
//!
//! Why: where a service's replicas listen on ports of their own (Consul's
//! DNS interface, Kubernetes named ports, a sidecar resolver), SRV is how
//! DNS says so; the system resolver (`getaddrinfo`) has no SRV lookup.
//!
//! What a client needs of RFC 2782, and what this does:
//! - **Priority**: only the lowest-numbered priority that has a target with
//!   an address is used, as the RFC asks of a client ("the lowest-numbered
//!   priority it can reach"); a higher one is a standby group, used while no
//!   target of a lower one resolves. Reachability is the cluster's own
//!   business (health, ejection), not the lookup's.
//! - **Weight**: a target of weight 0 is left out while its group has a
//!   target of a higher weight (the RFC's "very small chance"). Other weights
//!   do not bias the ordering: it learns each replica's share from its
//!   answers (adaptive health, relative weights), and a static multiplier
//!   would fight that learning.
//! - **Targets** are resolved to their addresses (A and AAAA), each replica
//!   `scheme://address:port/` with the record's port; a target of `.` (the
//!   service is not offered there) is skipped. The scheme is `https` for a
//!   name that starts with `_https.`, else `http` (or as set).
//! - As [`DnsTopology`](crate::cluster::DnsTopology): a failed or empty answer keeps
//!   the list; a changed one swaps it without touching requests in flight;
//!   answers are cached for their TTL, so a change shows at the first
//!   refresh after the records' TTL has passed.
//!
//! At most 64 records of an answer are read, so a name with a huge record
//! set costs a bounded number of lookups.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hickory_resolver::config::{NameServerConfigGroup, ResolverConfig, ResolverOpts};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::{Name, TokioResolver};

use super::refresh::{self, Lookup};
use crate::cluster::replica::Replica;
use crate::cluster::topology::watched::Watched;
use crate::cluster::topology::Topology;
use crate::error::{Error, ErrorKind};

/// SRV records of one answer read at most.
const MAX_TARGETS: usize = 64;

/// Replicas from a name's SRV records, re-resolved every interval.
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// use std::time::Duration;
/// use courier::cluster::{ClusterClient, SrvTopology};
/// let topology = SrvTopology::resolve("_http._tcp.billing.svc", Duration::from_secs(30)).await?;
/// // or: SrvTopology::builder("_http._tcp.billing.svc").nameserver("127.0.0.1:8600".parse().unwrap())
/// //         .resolve().await?
/// let cluster = ClusterClient::builder("billing").topology(topology).build(courier::Client::new())?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SrvTopology {
    // Only the clones here hold it; the refresh task stops once they are gone.
    shared: Arc<Watched>,
}

/// Settings of an [`SrvTopology`] before its first lookup.
#[derive(Debug, Clone)]
#[must_use]
pub struct SrvTopologyBuilder {
    name: String,
    https: Option<bool>,
    nameserver: Option<SocketAddr>,
    refresh: Duration,
}

impl SrvTopology {
    /// Looks `name` up with the system's DNS configuration
    /// (`/etc/resolv.conf`), then again every `refresh`.
    pub async fn resolve(name: impl Into<String>, refresh: Duration) -> Result<SrvTopology, Error> {
        SrvTopology::builder(name).refresh(refresh).resolve().await
    }

    /// Starts configuring the topology of `name` (refreshed every 30 s
    /// unless set).
    pub fn builder(name: impl Into<String>) -> SrvTopologyBuilder {
        SrvTopologyBuilder {
            name: name.into(),
            https: None,
            nameserver: None,
            refresh: Duration::from_secs(30),
        }
    }
}

impl SrvTopologyBuilder {
    /// `https` replicas (default: when the name starts with `_https.`).
    pub fn https(mut self, https: bool) -> Self {
        self.https = Some(https);
        self
    }

    /// Asks this nameserver (UDP, and TCP for a truncated answer) instead
    /// of the system's: a sidecar resolver, a test's.
    pub fn nameserver(mut self, addr: SocketAddr) -> Self {
        self.nameserver = Some(addr);
        self
    }

    /// How often the records are looked up again.
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// Looks the name up once (failing with [`ErrorKind::Dns`] if that fails
    /// or finds no target with an address), then again every refresh on a
    /// task of its own, which stops when the topology is dropped.
    pub async fn resolve(self) -> Result<SrvTopology, Error> {
        let resolver = match self.nameserver {
            Some(addr) => {
                let servers =
                    NameServerConfigGroup::from_ips_clear(&[addr.ip()], addr.port(), true);
                let config = ResolverConfig::from_parts(None, Vec::new(), servers);
                TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
                    .with_options(ResolverOpts::default())
                    .build()
            }
            None => TokioResolver::builder_tokio()
                .map_err(|e| Error::new(ErrorKind::Dns, e))?
                .build(),
        };
        let name = Name::from_utf8(&self.name).map_err(|e| Error::new(ErrorKind::Dns, e))?;
        let https = self
            .https
            .unwrap_or_else(|| self.name.starts_with("_https."));
        let source = SrvLookup {
            text: self.name,
            name,
            https,
            resolver,
        };
        let shared = refresh::start(source, self.refresh).await?;
        Ok(SrvTopology { shared })
    }
}

impl Topology for SrvTopology {
    fn replicas(&self) -> Arc<[Replica]> {
        self.shared.replicas()
    }
}

struct SrvLookup {
    text: String,
    name: Name,
    https: bool,
    resolver: TokioResolver,
}

/// One SRV record, as far as a client uses it.
#[derive(Debug, Clone, PartialEq)]
struct Record<T> {
    priority: u16,
    weight: u16,
    port: u16,
    target: T,
}

impl Lookup for SrvLookup {
    fn lookup(&self) -> Pin<Box<dyn Future<Output = Result<Vec<Replica>, Error>> + Send + '_>> {
        Box::pin(self.replicas())
    }

    fn name(&self) -> &str {
        &self.text
    }
}

impl SrvLookup {
    async fn replicas(&self) -> Result<Vec<Replica>, Error> {
        let answer = self
            .resolver
            .srv_lookup(self.name.clone())
            .await
            .map_err(|e| Error::new(ErrorKind::Dns, e))?;
        let records = answer
            .iter()
            .take(MAX_TARGETS)
            .filter(|srv| !srv.target().is_root())
            .map(|srv| Record {
                priority: srv.priority(),
                weight: srv.weight(),
                port: srv.port(),
                target: srv.target().clone(),
            })
            .collect();
        for group in groups(records) {
            let mut addrs = Vec::new();
            for record in group {
                match self.resolver.lookup_ip(record.target.clone()).await {
                    Ok(ips) => addrs.extend(ips.iter().map(|ip| SocketAddr::new(ip, record.port))),
                    Err(e) => {
                        tracing::debug!(target = %record.target, error = %e, "cluster: an SRV target has no address")
                    }
                }
            }
            if !addrs.is_empty() {
                addrs.sort();
                addrs.dedup();
                return Ok(addrs
                    .into_iter()
                    .map(|a| Replica::from_addr(self.https, a))
                    .collect());
            }
        }
        Ok(Vec::new())
    }
}

/// The records by priority, lowest first, each group without its weight-0
/// targets when it has others.
fn groups<T>(mut records: Vec<Record<T>>) -> Vec<Vec<Record<T>>> {
    records.sort_by_key(|r| r.priority);
    let mut groups: Vec<Vec<Record<T>>> = Vec::new();
    for record in records {
        match groups.last_mut() {
            Some(group) if group[0].priority == record.priority => group.push(record),
            _ => groups.push(vec![record]),
        }
    }
    for group in &mut groups {
        if group.iter().any(|r| r.weight > 0) {
            group.retain(|r| r.weight > 0);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(priority: u16, weight: u16, target: &'static str) -> Record<&'static str> {
        Record {
            priority,
            weight,
            port: 80,
            target,
        }
    }

    fn targets(groups: &[Vec<Record<&'static str>>]) -> Vec<Vec<&'static str>> {
        groups
            .iter()
            .map(|g| g.iter().map(|r| r.target).collect())
            .collect()
    }

    #[test]
    fn lowest_priority_first_and_weight_zero_only_alone() {
        let g = groups(vec![
            r(20, 5, "standby"),
            r(10, 0, "spare"),
            r(10, 60, "a"),
            r(10, 40, "b"),
            r(30, 0, "last-0"),
            r(30, 0, "last-1"),
        ]);
        assert_eq!(
            targets(&g),
            vec![vec!["a", "b"], vec!["standby"], vec!["last-0", "last-1"]]
        );
        assert!(groups::<&str>(Vec::new()).is_empty());
    }
}
