//! Keeping a looked-up list of replicas current: look up once, then again
//! every interval on a task of its own, for the DNS topologies
//! ([`DnsTopology`](crate::cluster::DnsTopology), and `SrvTopology` with the
//! `dns-srv` feature).
//!
//! Why one loop for both: what a lookup means differs (A/AAAA, SRV), but
//! what the cluster needs of every answer is the same: a failed or empty
//! answer keeps the list (a DNS blip must not empty the cluster), a changed
//! one swaps it without touching requests in flight, an unchanged one
//! leaves it alone (the cluster notices a new list by pointer), and the
//! task stops once the topology is dropped.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::cluster::replica::Replica;
use crate::cluster::topology::{SharedTopology, Topology};
use crate::error::{Error, ErrorKind};

/// The longest one lookup may take before the loop gives up on it (and
/// keeps the list): a resolver's own timeouts are shorter.
const LOOKUP_LIMIT: Duration = Duration::from_secs(30);

/// A lookup of a service's replicas.
pub(super) trait Lookup: Send + Sync + 'static {
    /// The replicas now.
    fn lookup(&self) -> Pin<Box<dyn Future<Output = Result<Vec<Replica>, Error>> + Send + '_>>;

    /// What is looked up, for the logs.
    fn name(&self) -> &str;
}

/// Looks `source` up once (failing if that fails or finds nothing), then
/// every `every` on a task that stops when the returned list is dropped.
pub(super) async fn start(
    source: impl Lookup,
    every: Duration,
) -> Result<Arc<SharedTopology>, Error> {
    let first = within_limit(&source).await?;
    if first.is_empty() {
        return Err(Error::msg(ErrorKind::Dns, "the lookup found no replica"));
    }
    let shared = Arc::new(SharedTopology::new(first));
    tokio::spawn(keep_current(Arc::downgrade(&shared), every, source));
    Ok(shared)
}

async fn within_limit(source: &impl Lookup) -> Result<Vec<Replica>, Error> {
    tokio::time::timeout(LOOKUP_LIMIT, source.lookup())
        .await
        .unwrap_or_else(|_| Err(Error::msg(ErrorKind::Dns, "the lookup took too long")))
}

async fn keep_current(shared: Weak<SharedTopology>, every: Duration, source: impl Lookup) {
    loop {
        tokio::time::sleep(every).await;
        if shared.strong_count() == 0 {
            return;
        }
        match within_limit(&source).await {
            Ok(list) if !list.is_empty() => {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                if *shared.replicas() != *list {
                    tracing::debug!(
                        name = source.name(),
                        replicas = list.len(),
                        "cluster: DNS topology changed"
                    );
                    shared.set(list);
                }
            }
            Ok(_) => {
                tracing::debug!(
                    name = source.name(),
                    "cluster: empty DNS answer, keeping the replicas"
                )
            }
            Err(e) => {
                tracing::debug!(name = source.name(), error = %format_args!("{e:#}"), "cluster: DNS failed, keeping the replicas")
            }
        }
    }
}
