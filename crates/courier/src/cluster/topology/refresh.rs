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
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::replica::Replica;
use crate::cluster::topology::watched::{Watched, Watcher};
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
pub(super) async fn start(source: impl Lookup, every: Duration) -> Result<Arc<Watched>, Error> {
    let first = within_limit(&source).await?;
    if first.is_empty() {
        return Err(Error::msg(ErrorKind::Dns, "the lookup found no replica"));
    }
    let (watched, watcher) = Watched::new(first);
    tokio::spawn(keep_current(watcher, every, source));
    Ok(watched)
}

async fn within_limit(source: &impl Lookup) -> Result<Vec<Replica>, Error> {
    tokio::time::timeout(LOOKUP_LIMIT, source.lookup())
        .await
        .unwrap_or_else(|_| Err(Error::msg(ErrorKind::Dns, "the lookup took too long")))
}

async fn keep_current(watcher: Watcher, every: Duration, source: impl Lookup) {
    loop {
        let Some(()) = watcher.unless_dropped(tokio::time::sleep(every)).await else {
            return;
        };
        let Some(answer) = watcher.unless_dropped(within_limit(&source)).await else {
            return;
        };
        match answer {
            Ok(list) if !list.is_empty() => {
                let replicas = list.len();
                match watcher.offer(list) {
                    None => return,
                    Some(true) => tracing::debug!(
                        name = source.name(),
                        replicas,
                        "cluster: DNS topology changed"
                    ),
                    Some(false) => {}
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
