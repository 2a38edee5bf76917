//! A topology from DNS: a host name's A/AAAA records, re-resolved on an
//! interval, one replica per address.
//!
//! Why: most services are a name in DNS (a headless Kubernetes service, a
//! round-robin record). Resolving in the background keeps requests off the
//! resolver; a failed or empty answer keeps the previous list (a DNS blip
//! must not empty the cluster), and a changed answer swaps the list without
//! touching requests in flight.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;

use super::refresh::{self, Lookup};
use crate::client::request::IntoUri;
use crate::cluster::replica::Replica;
use crate::cluster::topology::watched::Watched;
use crate::cluster::topology::Topology;
use crate::connect::{Resolve, SystemResolver};
use crate::error::{Error, ErrorKind};

/// Replicas from a host name's addresses, re-resolved every `interval`.
///
/// The replicas' URLs carry the addresses (`http://10.0.0.7:8080/`), so for
/// `https` the servers' certificates must name those addresses.
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// use std::time::Duration;
/// let topology =
///     courier::cluster::DnsTopology::resolve("http://billing.internal:8080", Duration::from_secs(30))
///         .await?;
/// let cluster = courier::cluster::ClusterClient::builder("billing")
///     .topology(topology)
///     .build(courier::Client::new())?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DnsTopology {
    // Only the clones here hold it; the refresh task stops once they are gone.
    shared: Arc<Watched>,
}

impl DnsTopology {
    /// Resolves `url`'s host once with the system resolver (`getaddrinfo`,
    /// as `tokio::net::lookup_host`), then again every `interval` on a task
    /// of its own. Fails if the first resolution fails or is empty.
    pub async fn resolve(url: impl IntoUri, interval: Duration) -> Result<DnsTopology, Error> {
        DnsTopology::with_resolver(url, interval, SystemResolver).await
    }

    /// As [`resolve`](Self::resolve), with another resolver.
    pub async fn with_resolver(
        url: impl IntoUri,
        interval: Duration,
        resolver: impl Resolve,
    ) -> Result<DnsTopology, Error> {
        let url = url.into_uri()?;
        let target = Target::new(&url)?;
        let shared = refresh::start(AddressLookup { target, resolver }, interval).await?;
        Ok(DnsTopology { shared })
    }
}

impl Topology for DnsTopology {
    fn replicas(&self) -> Arc<[Replica]> {
        self.shared.replicas()
    }
}

struct Target {
    host: String,
    port: u16,
    https: bool,
}

impl Target {
    fn new(url: &Uri) -> Result<Target, Error> {
        let https = match url.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(Error::msg(ErrorKind::InvalidUrl, "expected http or https")),
        };
        let host = url
            .host()
            .ok_or_else(|| Error::msg(ErrorKind::InvalidUrl, "no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Target { host, port, https })
    }

    async fn lookup(&self, resolver: &impl Resolve) -> Result<Vec<Replica>, Error> {
        let mut addrs: Vec<SocketAddr> = match self.host.parse() {
            Ok(ip) => vec![SocketAddr::new(ip, self.port)],
            Err(_) => resolver
                .resolve(&self.host, self.port)
                .await
                .map_err(|e| Error::new(ErrorKind::Dns, e))?,
        };
        addrs.sort();
        addrs.dedup();
        Ok(addrs
            .into_iter()
            .map(|a| Replica::from_addr(self.https, a))
            .collect())
    }
}

/// A host's addresses, for [`refresh`].
struct AddressLookup<R> {
    target: Target,
    resolver: R,
}

impl<R: Resolve> Lookup for AddressLookup<R> {
    fn lookup(&self) -> Pin<Box<dyn Future<Output = Result<Vec<Replica>, Error>> + Send + '_>> {
        Box::pin(self.target.lookup(&self.resolver))
    }

    fn name(&self) -> &str {
        &self.target.host
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::Resolving;
    use crate::test_support::alive_tasks_once_settled;
    use std::sync::Mutex;

    /// Answers with whatever the test put in last.
    #[derive(Clone)]
    struct Scripted(Arc<Mutex<std::io::Result<Vec<SocketAddr>>>>);

    impl Resolve for Scripted {
        fn resolve(&self, _host: &str, _port: u16) -> Resolving {
            let answer = match &*self.0.lock().unwrap() {
                Ok(a) => Ok(a.clone()),
                Err(e) => Err(std::io::Error::new(e.kind(), "scripted")),
            };
            Box::pin(async move { answer })
        }
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn urls(t: &DnsTopology) -> Vec<String> {
        t.replicas().iter().map(|r| r.to_string()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn follows_the_answer_and_keeps_the_list_on_failure() {
        let dns = Scripted(Arc::new(Mutex::new(Ok(Vec::new()))));
        *dns.0.lock().unwrap() = Ok(vec![addr("10.0.0.2:80"), addr("10.0.0.1:80")]);
        let every = Duration::from_secs(30);
        let t = DnsTopology::with_resolver("http://billing.internal", every, dns.clone())
            .await
            .unwrap();
        assert_eq!(urls(&t), ["http://10.0.0.1:80/", "http://10.0.0.2:80/"]);

        *dns.0.lock().unwrap() = Ok(vec![addr("10.0.0.2:80"), addr("[::1]:80")]);
        tokio::time::sleep(every / 2).await;
        assert_eq!(urls(&t).len(), 2);
        assert!(
            urls(&t).contains(&"http://10.0.0.1:80/".to_owned()),
            "not before the interval"
        );
        tokio::time::sleep(every).await;
        assert_eq!(urls(&t), ["http://10.0.0.2:80/", "http://[::1]:80/"]);

        *dns.0.lock().unwrap() = Err(std::io::ErrorKind::Other.into());
        tokio::time::sleep(every * 2).await;
        assert_eq!(urls(&t), ["http://10.0.0.2:80/", "http://[::1]:80/"]);
        *dns.0.lock().unwrap() = Ok(vec![]);
        tokio::time::sleep(every * 2).await;
        assert_eq!(urls(&t).len(), 2, "an empty answer keeps the list");
    }

    /// The refresh task ends when the last clone of its topology goes, not
    /// at its next lookup (an interval later: a task and a timer behind
    /// every dropped topology).
    #[tokio::test]
    async fn a_dropped_topologys_refresh_task_ends_with_it() {
        let metrics = tokio::runtime::Handle::current().metrics();
        let base = metrics.num_alive_tasks();
        let dns = Scripted(Arc::new(Mutex::new(Ok(vec![addr("10.0.0.1:80")]))));
        let t =
            DnsTopology::with_resolver("http://billing.internal", Duration::from_secs(3600), dns)
                .await
                .unwrap();
        let clone = t.clone();
        assert_eq!(metrics.num_alive_tasks(), base + 1, "the refresh task runs");
        drop(t);
        assert_eq!(
            alive_tasks_once_settled(&metrics, base).await,
            base + 1,
            "a clone keeps it"
        );
        drop(clone);
        assert_eq!(
            alive_tasks_once_settled(&metrics, base).await,
            base,
            "the refresh task outlived its topology"
        );
    }

    #[tokio::test]
    async fn system_resolver_finds_localhost() {
        let t = DnsTopology::resolve("http://localhost:8080", Duration::from_secs(60))
            .await
            .unwrap();
        assert!(!t.replicas().is_empty());
        assert!(t
            .replicas()
            .iter()
            .all(|r| r.url().port_u16() == Some(8080)));
    }
}
