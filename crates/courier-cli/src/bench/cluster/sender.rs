//! How one run of the scenario sends a request: through `courier::ClusterClient` with a
//! strategy and an ordering, or round robin with a plain `Client`; every request of the run
//! has the shape the flags give ([`Shape`]: `-m`, `--path`, `-H`, `--body-size`).
//!
//! Why round robin lives here: the library has no round-robin ordering (it orders by health
//! or by P2C), and the baseline is meant to be the naive balancer anyway: the bench picks the
//! next replica in turn and sends one attempt, no retries, no throttling.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use courier::cluster::{
    ClusterClient, ClusterSnapshot, ForkDelay, Load, ReplicaOrdering, Strategy,
};
use courier::{Body, Client};
use http::{HeaderMap, Method};

use super::tally::{Failure, Outcome};
use crate::bench::args::BenchArgs;
use crate::error::Result;

/// What every request of a run is (the replicas answer any of them the same way).
#[derive(Debug, Clone)]
pub struct Shape {
    method: Method,
    /// `--path`, `/` by default: the cluster's target, the round robin's path on each replica.
    path: String,
    /// `-H`, unless `--default-headers` put them on the client.
    headers: HeaderMap,
    body: Bytes,
}

impl Shape {
    /// The shape the flags ask for.
    pub fn from_args(args: &BenchArgs) -> Result<Shape> {
        let headers = if args.default_headers {
            HeaderMap::new() // on the client (`client::builder`)
        } else {
            crate::bench::headers::from_flags(args)?
        };
        let size = args.body_size.unwrap_or(0);
        let size = usize::try_from(size)
            .map_err(|_| crate::error::CliError::new(format!("--body-size {size} is too large")))?;
        Ok(Shape {
            method: args.http_method()?,
            path: args.path.clone().unwrap_or_else(|| "/".to_owned()),
            headers,
            body: Bytes::from(vec![b'x'; size]),
        })
    }

    /// `GET /`, `POST /orders, 2 headers, 1024-byte body` (the report's line).
    pub fn describe(&self, args: &BenchArgs) -> String {
        let mut text = format!("{} {}", self.method, self.path);
        let headers = args.headers.len();
        if headers > 0 {
            let s = if headers == 1 { "" } else { "s" };
            text.push_str(&format!(", {headers} header{s}"));
        }
        if !self.body.is_empty() {
            text.push_str(&format!(", {}-byte body", self.body.len()));
        }
        text
    }

    /// Whether the cluster may send a request to a second replica (else each goes to one).
    pub fn replayable(&self) -> bool {
        self.method.is_idempotent() || self.headers.contains_key("idempotency-key")
    }
}

/// Which balancer a run uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Balancer {
    /// `ClusterClient` with these settings.
    Cluster {
        strategy: Strategy,
        fork_delay: ForkDelay,
        ordering: ReplicaOrdering,
        throttle: bool,
    },
    /// The bench's own round robin, one attempt.
    RoundRobin,
}

impl Balancer {
    /// P2C peak EWMA, one attempt, no throttling: the second baseline.
    pub fn p2c_no_retries() -> Balancer {
        Balancer::Cluster {
            strategy: Strategy::single_replica(),
            fork_delay: ForkDelay::Equal,
            ordering: ReplicaOrdering::PeakEwma,
            throttle: false,
        }
    }

    /// How the report names it.
    pub fn name(&self) -> String {
        match *self {
            Balancer::RoundRobin => "round robin, no retries".to_owned(),
            Balancer::Cluster {
                strategy,
                fork_delay,
                ordering,
                throttle,
            } => {
                let ordering = match ordering.load() {
                    None => "weighted health".to_owned(),
                    Some(Load::PeakEwma) => "p2c peak EWMA".to_owned(),
                    Some(_) => ordering.to_string(),
                };
                let strategy = match (strategy, fork_delay) {
                    (Strategy::SingleReplica, _) => "no retries".to_owned(),
                    (s @ Strategy::Forking { .. }, ForkDelay::Quantile { .. }) => {
                        format!("{s} after {fork_delay}")
                    }
                    (s, _) => s.to_string(),
                };
                let throttle = if throttle { "" } else { ", no throttling" };
                format!("{ordering}, {strategy}{throttle}")
            }
        }
    }
}

/// Sends the run's requests.
#[derive(Clone)]
pub struct Sender {
    way: Way,
    shape: Arc<Shape>,
    budget: Duration,
}

#[derive(Clone)]
enum Way {
    Cluster(ClusterClient),
    RoundRobin {
        client: Client,
        /// Each replica's URL with the path.
        urls: Arc<[String]>,
        next: Arc<AtomicUsize>,
    },
}

impl Sender {
    /// A sender of `shape` over `urls` (each replica's base URL) through `client`.
    pub fn new(
        balancer: Balancer,
        client: Client,
        urls: &[String],
        shape: Arc<Shape>,
        budget: Duration,
    ) -> Result<Sender, courier::Error> {
        let way = match balancer {
            Balancer::RoundRobin => Way::RoundRobin {
                client,
                urls: urls.iter().map(|u| format!("{u}{}", shape.path)).collect(),
                next: Arc::new(AtomicUsize::new(0)),
            },
            Balancer::Cluster {
                strategy,
                fork_delay,
                ordering,
                throttle,
            } => {
                let mut builder = ClusterClient::builder("bench")
                    .replicas(urls.iter().map(String::as_str))
                    .strategy(strategy)
                    .fork_delay(fork_delay)
                    .ordering(ordering)
                    .timeout(budget);
                if !throttle {
                    builder = builder.throttle(None);
                }
                Way::Cluster(builder.build(client)?)
            }
        };
        Ok(Sender { way, shape, budget })
    }

    /// Sends one request, reads the body, says how it ended.
    pub async fn send(&self) -> Outcome {
        let shape = &*self.shape;
        // Only what the flags set is copied: a bare GET costs nothing more.
        let headers = (!shape.headers.is_empty()).then(|| shape.headers.clone());
        let body = (!shape.body.is_empty()).then(|| Body::from(shape.body.clone()));
        let answer = match &self.way {
            Way::Cluster(cluster) => {
                let mut request = cluster.request(shape.method.clone(), &shape.path);
                if let Some(headers) = headers {
                    request = request.headers(headers);
                }
                if let Some(body) = body {
                    request = request.body(body);
                }
                request.timeout(self.budget).send().await
            }
            Way::RoundRobin { client, urls, next } => {
                let i = next.fetch_add(1, Ordering::Relaxed) % urls.len();
                let mut request = client.request(shape.method.clone(), urls[i].as_str());
                if let Some(headers) = headers {
                    request = request.headers(headers);
                }
                if let Some(body) = body {
                    request = request.body(body);
                }
                request.timeout(self.budget).send().await
            }
        };
        let response = match answer {
            Ok(response) => response,
            Err(e) if courier::cluster::is_throttled(&e) => return Outcome::Throttled,
            Err(e) => return Outcome::Failed(Failure::Error(e.kind().as_str())),
        };
        let status = response.status().as_u16();
        match response.bytes().await {
            Ok(_) if (200..300).contains(&status) => Outcome::Success,
            Ok(_) => Outcome::Failed(Failure::Status(status)),
            Err(e) => Outcome::Failed(Failure::Body(e.kind().as_str())),
        }
    }

    /// The cluster's numbers (none for round robin).
    pub fn snapshot(&self) -> Option<ClusterSnapshot> {
        match &self.way {
            Way::Cluster(cluster) => Some(cluster.snapshot()),
            Way::RoundRobin { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A replica that answers 200 and hands over what it read of each request.
    async fn replica() -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    // Head and the 5-byte body of the test's request.
                    while !String::from_utf8_lossy(&seen).ends_with("\r\n\r\nxxxxx") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
                    let _ = conn
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                        .await;
                });
            }
        });
        (url, rx)
    }

    #[tokio::test]
    async fn every_balancer_sends_the_method_path_headers_and_body_asked_for() {
        let mut headers = HeaderMap::new();
        headers.insert("x-bench", "1".parse().unwrap());
        let shape = Arc::new(Shape {
            method: Method::POST,
            path: "/orders?x=1".to_owned(),
            headers,
            body: Bytes::from_static(b"xxxxx"),
        });
        let balancers = [
            Balancer::RoundRobin,
            Balancer::p2c_no_retries(),
            Balancer::Cluster {
                strategy: Strategy::forking(3),
                fork_delay: ForkDelay::Equal,
                ordering: ReplicaOrdering::WeightedHealth,
                throttle: true,
            },
        ];
        for balancer in balancers {
            let (url, mut seen) = replica().await;
            let budget = Duration::from_secs(5);
            let sender =
                Sender::new(balancer, Client::new(), &[url], Arc::clone(&shape), budget).unwrap();
            assert_eq!(sender.send().await, Outcome::Success, "{balancer:?}");
            let request = seen.recv().await.unwrap().to_ascii_lowercase();
            assert!(
                request.starts_with("post /orders?x=1 http/1.1\r\n"),
                "{balancer:?}: {request}"
            );
            assert!(request.contains("\r\nx-bench: 1\r\n"), "{request}");
            assert!(request.contains("\r\ncontent-length: 5\r\n"), "{request}");
        }
    }
}
