//! `courier::cluster` against real replicas on loopback: tiny scripted
//! HTTP/1.1 servers (one status, one delay, switchable; each counts the
//! requests it saw and those whose client went away mid-request) and the
//! built-in server. The time-driven parts (health recovery, ejection
//! periods, weight rounds, budget windows) are also tested on paused time
//! beside their code (`src/cluster/`), and `src/cluster/simulation.rs` runs
//! minutes of a simulated cluster for issue 18's recovery target.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use courier::cluster::{
    is_throttled, ClusterClient, ClusterClientBuilder, FileTopology, ForkDelay, HealthConfig,
    OutlierConfig, RelativeWeightConfig, Replica, ReplicaBudgetConfig, ReplicaOrdering,
    ReplicaSnapshot, SharedTopology, Strategy, ThrottleConfig,
};
use courier::{Body, Client, IntoUri};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A scripted replica (the factory's cluster tests use it too).
#[derive(Clone)]
pub(crate) struct Scripted {
    name: &'static str,
    pub(crate) url: String,
    pub(crate) status: Arc<AtomicU16>,
    delay_ms: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    pub(crate) cancelled: Arc<AtomicU64>,
}

impl Scripted {
    pub(crate) async fn start(name: &'static str, status: u16, delay_ms: u64) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let s = Scripted {
            name,
            url: format!("http://{}", listener.local_addr().unwrap()),
            status: Arc::new(AtomicU16::new(status)),
            delay_ms: Arc::new(AtomicU64::new(delay_ms)),
            requests: Arc::default(),
            cancelled: Arc::default(),
        };
        let server = s.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(server.clone().serve(conn));
            }
        });
        s
    }

    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(SeqCst)
    }

    fn replica(&self) -> Replica {
        Replica::new(self.url.as_str()).unwrap()
    }

    async fn serve(self, mut conn: TcpStream) {
        let mut buf = Vec::new();
        loop {
            if !read_request(&mut conn, &mut buf).await {
                return;
            }
            self.requests.fetch_add(1, SeqCst);
            let delay = Duration::from_millis(self.delay_ms.load(SeqCst));
            if !delay.is_zero() {
                let mut byte = [0u8; 1];
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = conn.read(&mut byte) => {
                        // The client closed (or wrote) mid-request: cancelled.
                        self.cancelled.fetch_add(1, SeqCst);
                        return;
                    }
                }
            }
            let status = self.status.load(SeqCst);
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: 2\r\nx-replica: {}\r\n\r\nok",
                self.name
            );
            if conn.write_all(head.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// Reads one request (head, and a content-length or chunked body); false at EOF.
async fn read_request(conn: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if !fill(conn, buf).await {
            return false;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    buf.drain(..head_end);
    if let Some(len) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        while buf.len() < len {
            if !fill(conn, buf).await {
                return false;
            }
        }
        buf.drain(..len);
    } else if head.contains("transfer-encoding: chunked") {
        let end = loop {
            if let Some(i) = find(buf, b"0\r\n\r\n") {
                break i + 5;
            }
            if !fill(conn, buf).await {
                return false;
            }
        };
        buf.drain(..end);
    }
    true
}

async fn fill(conn: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    match conn.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn replica_of(res: &courier::Response) -> String {
    res.headers()["x-replica"].to_str().unwrap().to_owned()
}

fn snap_of(cluster: &ClusterClient, s: &Scripted) -> ReplicaSnapshot {
    let snap = cluster.snapshot();
    snap.replicas
        .into_iter()
        .find(|r| r.replica == s.replica())
        .unwrap()
}

fn health_of(cluster: &ClusterClient, s: &Scripted) -> f64 {
    snap_of(cluster, s).health
}

async fn scripted(specs: &[(&'static str, u16, u64)]) -> Vec<Scripted> {
    let mut out = Vec::new();
    for &(name, status, delay) in specs {
        out.push(Scripted::start(name, status, delay).await);
    }
    out
}

/// `ClusterClient::builder("svc")` over `urls` with local throttling off, as
/// most tests here want it: they count where requests go, and the throttle
/// would refuse some of them locally.
fn svc<U: IntoUri>(urls: impl IntoIterator<Item = U>) -> ClusterClientBuilder {
    ClusterClient::builder("svc").replicas(urls).throttle(None)
}

/// Builds a cluster on a default `Client`.
trait OnANewClient {
    fn on_a_new_client(self) -> ClusterClient;
}

impl OnANewClient for ClusterClientBuilder {
    fn on_a_new_client(self) -> ClusterClient {
        self.build(Client::new()).unwrap()
    }
}

/// A GET through `cluster` on a task of its own, returned once the first
/// replica counts it in flight (within 5 s).
async fn in_flight_on_the_first_replica(
    cluster: &ClusterClient,
) -> JoinHandle<Result<courier::Response, courier::Error>> {
    let in_flight = tokio::spawn({
        let cluster = cluster.clone();
        async move { cluster.get("/x").send().await }
    });
    crate::support::eventually(
        "the request is on the old replica",
        Duration::from_secs(5),
        || cluster.snapshot().replicas[0].in_flight == 1,
    )
    .await;
    in_flight
}

/// `n` GETs through `cluster` at once; each must be answered 200.
async fn all_at_once(cluster: &ClusterClient, n: usize) {
    let requests = (0..n).map(|_| async { cluster.get("/x").send().await.map(|r| r.status()) });
    for status in futures_util::future::join_all(requests).await {
        assert_eq!(status.unwrap(), 200);
    }
}

/// `n` GETs through `cluster`, one every `every` whatever the answers do
/// (an open loop); each must be answered 200.
async fn open_loop(cluster: &ClusterClient, n: usize, every: Duration) {
    let mut tick = tokio::time::interval(every);
    let mut sent = Vec::new();
    for _ in 0..n {
        tick.tick().await;
        let cluster = cluster.clone();
        sent.push(tokio::spawn(async move {
            cluster.get("/x").send().await.map(|r| r.status())
        }));
    }
    for request in sent {
        assert_eq!(request.await.unwrap().unwrap(), 200);
    }
}

#[tokio::test]
async fn sequential_skips_a_503_replica_and_then_rarely_chooses_it() {
    let bad = Scripted::start("bad", 503, 0).await;
    let good1 = Scripted::start("good1", 200, 0).await;
    let good2 = Scripted::start("good2", 200, 0).await;
    let cluster = svc([&bad.url, &good1.url, &good2.url])
        .strategy(Strategy::sequential(3))
        .seed(42)
        .on_a_new_client();

    for _ in 0..100 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_ne!(replica_of(&res), "bad");
    }
    let early = bad.requests();
    assert!(early >= 3, "the bad replica was tried and skipped");
    // Halved on every failure, never raised (the damage fades over 60 s:
    // a little of it is back already).
    let expected = 0.5f64.powi(early as i32).max(0.001);
    let health = health_of(&cluster, &bad);
    assert!(
        (expected..expected + 0.05).contains(&health),
        "{health} {expected} {:?}",
        cluster.snapshot()
    );
    assert_eq!(health_of(&cluster, &good1), 1.0);

    for _ in 0..200 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
    let later = bad.requests() - early;
    // Uniformly it would be first for about a third of the 200.
    assert!(
        later <= 3,
        "chosen {later} times in 200 after its health fell"
    );
    let snap = cluster.snapshot();
    let bad_snap = snap_of(&cluster, &bad);
    assert_eq!(bad_snap.failures, bad.requests());
    assert_eq!(bad_snap.requests, bad.requests());
    assert_eq!(snap.requests, 300);
    assert!(snap.replicas.iter().all(|r| r.in_flight == 0));
}

#[tokio::test]
async fn forking_answers_from_the_fast_replica_and_cancels_the_slow() {
    let slow = Scripted::start("slow", 200, 2000).await;
    let fast = Scripted::start("fast", 200, 0).await;
    let cluster = svc([&slow.url, &fast.url])
        .strategy(Strategy::forking(2))
        .timeout(Duration::from_secs(1)) // a fork every 500 ms
        .seed(7)
        .on_a_new_client();

    for _ in 0..8 {
        let t0 = Instant::now();
        let res = cluster.get("/x").send().await.unwrap();
        let took = t0.elapsed();
        assert_eq!(replica_of(&res), "fast");
        assert!(took < Duration::from_millis(900), "{took:?}");
        // The losing attempt is gone the moment the winner is returned.
        assert!(cluster.snapshot().replicas.iter().all(|r| r.in_flight == 0));
    }
    let started = slow.requests();
    assert!(
        started >= 1,
        "the seed sends some requests to the slow replica first"
    );
    crate::support::eventually(
        "the slow replica sees every cancel",
        Duration::from_secs(5),
        || slow.cancelled.load(SeqCst) == started,
    )
    .await;
    let s = snap_of(&cluster, &slow);
    assert_eq!(
        (s.failures, s.health),
        (0, 1.0),
        "a cancelled attempt is no failure"
    );
}

#[tokio::test]
async fn throttling_refuses_locally_while_most_fail_and_recovers() {
    let a = Scripted::start("a", 503, 0).await;
    let b = Scripted::start("b", 503, 0).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&a.url, &b.url])
        .strategy(Strategy::single_replica())
        .throttle(Some(ThrottleConfig::default()))
        .seed(3)
        .build(Client::new())
        .unwrap();

    let mut refused = 0;
    for _ in 0..200 {
        match cluster.get("/x").send().await {
            Ok(res) => assert_eq!(res.status(), 503),
            Err(e) => {
                assert!(is_throttled(&e), "{e}");
                assert_eq!(e.kind(), courier::ErrorKind::Refused);
                refused += 1;
            }
        }
    }
    let sent = a.requests() + b.requests();
    assert_eq!(sent + refused, 200, "refused requests are never sent");
    assert!(refused >= 100, "only {refused} refused");
    let snap = cluster.snapshot();
    assert_eq!(snap.throttled, refused);
    assert!((snap.throttle_probability - 0.8).abs() < 1e-9);

    // The service recovers: the requests let through are accepted, and the
    // refusals stop (bounded: about 850 requests with this seed).
    a.status.store(200, SeqCst);
    b.status.store(200, SeqCst);
    let mut n = 0;
    while cluster.snapshot().throttle_probability > 0.0 {
        n += 1;
        assert!(n < 5000, "throttling never eased");
        if let Ok(res) = cluster.get("/x").send().await {
            assert_eq!(res.status(), 200);
        }
    }
    for _ in 0..50 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
}

#[tokio::test]
async fn requests_still_in_flight_are_not_failures_to_the_throttle() {
    // Sixty requests at once, each answered (200) after 100 ms: none has
    // failed, so none may be refused. Counted as requests when they
    // started, with their accepts only when they ended, the 30 first made
    // the 30 next look like a service that accepts nothing.
    let a = Scripted::start("a", 200, 100).await;
    let b = Scripted::start("b", 200, 100).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&a.url, &b.url])
        .throttle(Some(ThrottleConfig::default()))
        .seed(3)
        .build(Client::new())
        .unwrap();
    all_at_once(&cluster, 60).await;
    assert_eq!(cluster.snapshot().throttled, 0);
}

#[tokio::test]
async fn a_removed_replica_finishes_its_request_and_gets_no_new_one() {
    let old = Scripted::start("old", 200, 300).await;
    let new = Scripted::start("new", 200, 0).await;
    let topology = SharedTopology::new([old.replica()]);
    let cluster = ClusterClient::builder("svc")
        .topology(topology.clone())
        .throttle(None)
        .build(Client::new())
        .unwrap();

    let in_flight = in_flight_on_the_first_replica(&cluster).await;

    topology.set([new.replica()]);
    for _ in 0..10 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(replica_of(&res), "new");
    }
    let res = tokio::time::timeout(Duration::from_secs(5), in_flight)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        (res.status().as_u16(), replica_of(&res)),
        (200, "old".to_owned())
    );
    assert_eq!(old.requests(), 1);
    assert_eq!(old.cancelled.load(SeqCst), 0);
    let snap = cluster.snapshot();
    assert_eq!(snap.replicas.len(), 1);
    assert_eq!(snap.replicas[0].replica, new.replica());
}

#[tokio::test]
async fn only_a_buffered_body_goes_to_a_second_replica() {
    let a = Scripted::start("a", 503, 0).await;
    let b = Scripted::start("b", 503, 0).await;
    let cluster = svc([&a.url, &b.url])
        .strategy(Strategy::sequential(2))
        .on_a_new_client();
    let sent = || a.requests() + b.requests();

    let res = cluster.put("/x").body("buffered").send().await.unwrap();
    assert_eq!(
        (res.status().as_u16(), sent()),
        (503, 2),
        "both tried, last answer returned"
    );

    let stream = Body::wrap(crate::support::Pieces {
        pieces: vec![bytes::Bytes::from_static(b"streamed")].into_iter(),
        stall: false,
    });
    let res = cluster.put("/x").body(stream).send().await.unwrap();
    assert_eq!(
        (res.status().as_u16(), sent()),
        (503, 3),
        "a stream is sent once"
    );

    let res = cluster.post("/x").body("once").send().await.unwrap();
    assert_eq!(
        (res.status().as_u16(), sent()),
        (503, 4),
        "POST is not replayed"
    );
    let res = cluster
        .post("/x")
        .body("twice")
        .idempotent()
        .send()
        .await
        .unwrap();
    assert_eq!(
        (res.status().as_u16(), sent()),
        (503, 6),
        "unless marked idempotent"
    );
}

#[tokio::test]
async fn spreads_over_builtin_server_replicas_in_one_pool() {
    let servers = [
        crate::support::server().await,
        crate::support::server().await,
        crate::support::server().await,
    ];
    let client = Client::new();
    let cluster = ClusterClient::builder("svc")
        .replicas(servers.iter().map(|s| s.url("/")))
        .seed(11)
        // The spread under test is the seeded draw's. With the
        // recent-latency factor on, one slow answer on a loaded machine
        // (a cold connection) weighs a replica down to a request or two of
        // the 60 (seen: [27, 32, 1]); that factor has tests of its own.
        .recent_latency(None)
        .build(client.clone())
        .unwrap();
    for _ in 0..60 {
        let body = cluster
            .get("/bytes/16")
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(body.len(), 16);
    }
    let served: Vec<u64> = servers.iter().map(|s| s.requests_served()).collect();
    assert_eq!(served.iter().sum::<u64>(), 60, "{served:?}");
    assert!(served.iter().all(|&n| n >= 10), "{served:?}");
    // One pool: each replica an origin with its connection kept alive.
    assert_eq!(
        servers
            .iter()
            .map(|s| s.connections_accepted())
            .sum::<u64>(),
        3
    );
    assert_eq!(
        cluster
            .snapshot()
            .replicas
            .iter()
            .map(|r| r.requests)
            .sum::<u64>(),
        60
    );
}

#[tokio::test]
async fn peak_ewma_ordering_leaves_a_slow_replica_after_its_slow_answer() {
    let slow = Scripted::start("slow", 200, 150).await;
    let fast = Scripted::start("fast", 200, 0).await;
    let topology = SharedTopology::new([slow.replica()]);
    let cluster = ClusterClient::builder("svc")
        .topology(topology.clone())
        .ordering(ReplicaOrdering::PeakEwma)
        .strategy(Strategy::single_replica())
        .throttle(None)
        .seed(5)
        .build(Client::new())
        .unwrap();
    // One 150 ms answer: a peak is taken whole.
    assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
    let latency = cluster.snapshot().replicas[0].latency_ewma;
    assert!(latency >= Duration::from_millis(140), "{latency:?}");

    // With a fresh replica (30 ms until measured) beside it, P2C compares
    // the two on every request and the slow one loses every time.
    topology.set([slow.replica(), fast.replica()]);
    for _ in 0..40 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(replica_of(&res), "fast");
    }
    assert_eq!((slow.requests(), fast.requests()), (1, 40));
}

#[tokio::test]
async fn sequential_gives_a_hung_replica_only_its_share_of_the_budget() {
    let hung = Scripted::start("hung", 200, 5000).await;
    let good = Scripted::start("good", 200, 0).await;
    let cluster = svc([&hung.url, &good.url])
        .strategy(Strategy::sequential(2))
        .timeout(Duration::from_secs(1)) // the first replica gets 500 ms
        .seed(1)
        .on_a_new_client();
    for _ in 0..6 {
        let t0 = Instant::now();
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(replica_of(&res), "good");
        assert!(
            t0.elapsed() < Duration::from_millis(900),
            "{:?}",
            t0.elapsed()
        );
    }
    let tried = hung.requests();
    assert!(
        tried >= 1,
        "the seed puts the hung replica first at least once"
    );
    crate::support::eventually(
        "the hung replica sees its attempts end",
        Duration::from_secs(5),
        || hung.cancelled.load(SeqCst) == tried,
    )
    .await;
    let h = snap_of(&cluster, &hung);
    assert_eq!(h.failures, tried, "a timed-out attempt is a failure");
    let expected = 0.5f64.powi(tried as i32);
    assert!(
        (expected..expected + 0.1).contains(&h.health),
        "{} {expected}",
        h.health
    );
}

#[tokio::test(start_paused = true)]
async fn relative_weights_take_the_traffic_from_a_slow_replica() {
    // On paused time each answer takes exactly its scripted delay (the fast
    // ones 1 ms, so that the clock, and the weight rounds, move on).
    let r = scripted(&[("slow", 200, 40), ("fast1", 200, 1), ("fast2", 200, 1)]).await;
    let cluster = ClusterClient::builder("svc")
        .replicas(r.iter().map(|s| &s.url))
        .strategy(Strategy::single_replica())
        .relative_weights(Some(
            // Vostok's ratios at 1/50 of the time: 10 s rounds, 1 min up, 1 s down.
            RelativeWeightConfig::default()
                .update_period(Duration::from_millis(200))
                .smoothing(Duration::from_millis(1200), Duration::from_millis(20))
                .statistic_smoothing(Duration::from_millis(20)),
        ))
        .throttle(None)
        .seed(4)
        .build(Client::new())
        .unwrap();
    // Every answer is accepted: health alone would keep an even spread.
    let t0 = Instant::now();
    while snap_of(&cluster, &r[0]).relative_weight >= 0.05 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{:?}",
            cluster.snapshot()
        );
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
    }
    let slow = snap_of(&cluster, &r[0]);
    assert_eq!((slow.health, slow.failures), (1.0, 0), "{slow:?}");
    assert!(slow.weight < 0.05);
    let fast = [1, 2].map(|i| snap_of(&cluster, &r[i]).relative_weight);
    assert!(
        fast.contains(&1.0) && fast.iter().all(|&w| w > 0.8),
        "the best weighs 1: {fast:?}"
    );
    let before = r[0].requests();
    for _ in 0..150 {
        cluster.get("/x").send().await.unwrap();
    }
    let later = r[0].requests() - before;
    assert!(
        later <= 5,
        "the slow replica got {later} of 150 (evenly: 50)"
    );
}

#[tokio::test]
async fn the_gray_list_puts_a_rejecting_replica_last_after_one_reject() {
    let r = scripted(&[("bad", 503, 0), ("good1", 200, 0), ("good2", 200, 0)]).await;
    let cluster = svc(r.iter().map(|s| &s.url))
        .strategy(Strategy::sequential(2))
        .gray_list(Duration::from_secs(60))
        .outlier(None)
        .seed(8)
        .on_a_new_client();
    for _ in 0..100 {
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
    }
    // Health alone (0.5 after one reject) would put it first about one time
    // in five; gray, it is behind both good replicas and never reached.
    assert_eq!(r[0].requests(), 1);
    let bad = snap_of(&cluster, &r[0]);
    assert!(bad.gray_listed && bad.weight == 0.0, "{bad:?}");
    assert!(!snap_of(&cluster, &r[1]).gray_listed);
}

#[tokio::test(start_paused = true)]
async fn outlier_ejection_takes_out_at_most_ten_percent() {
    let mut specs: Vec<(&'static str, u16, u64)> = vec![("bad0", 503, 0), ("bad1", 503, 0)];
    specs.extend(std::iter::repeat_n(("good", 200, 0), 8));
    let r = scripted(&specs).await;
    let cluster = ClusterClient::builder("svc")
        .replicas(r.iter().map(|s| &s.url))
        .strategy(Strategy::single_replica())
        .health(HealthConfig::default().down(1.0)) // ejection alone steers
        .relative_weights(None)
        .throttle(None)
        .seed(10)
        .build(Client::new())
        .unwrap();
    for _ in 0..400 {
        cluster.get("/x").send().await.unwrap();
    }
    let snaps = [snap_of(&cluster, &r[0]), snap_of(&cluster, &r[1])];
    let ejected: Vec<usize> = (0..2).filter(|&i| snaps[i].ejected).collect();
    assert_eq!(ejected.len(), 1, "one of ten may be ejected: {snaps:?}");
    let (out, other) = (ejected[0], 1 - ejected[0]);
    assert_eq!(snaps[out].ejections, 1);
    assert_eq!(snaps[out].weight, 0.0);
    assert!(
        snaps[other].consecutive_rejects >= 5,
        "due, but over the cap"
    );
    let (held, went_on) = (r[out].requests(), r[other].requests());
    for _ in 0..300 {
        cluster.get("/x").send().await.unwrap();
    }
    assert_eq!(r[out].requests(), held, "no request while ejected (30 s)");
    assert!(
        r[other].requests() - went_on >= 10,
        "the other still gets its share"
    );
    assert_eq!(cluster.snapshot().panics, 0);
}

#[tokio::test]
async fn below_half_in_rotation_the_cluster_panics_and_spreads_over_all() {
    let r = scripted(&[
        ("bad0", 503, 0),
        ("bad1", 503, 0),
        ("bad2", 503, 0),
        ("good", 200, 0),
    ])
    .await;
    // Ejection may take out every replica: three are, and the panic
    // threshold puts them back.
    let cluster = svc(r.iter().map(|s| &s.url))
        .strategy(Strategy::single_replica())
        .outlier(Some(OutlierConfig::default().max_ejection_percent(100.0)))
        .seed(12)
        .on_a_new_client();
    for _ in 0..200 {
        cluster.get("/x").send().await.unwrap();
    }
    let before = r[3].requests();
    for _ in 0..200 {
        cluster.get("/x").send().await.unwrap();
    }
    // Without the threshold the good replica (health 1 against 0.001) would
    // take nearly all 200; in panic each replica gets about a quarter.
    let good = r[3].requests() - before;
    assert!(
        (20..90).contains(&good),
        "the good replica got {good} of 200"
    );
    let snap = cluster.snapshot();
    assert!(snap.panics >= 200, "{}", snap.panics);
}

#[tokio::test]
async fn parallel_asks_n_replicas_at_once_and_cancels_the_losers() {
    let slow = Scripted::start("slow", 200, 2000).await;
    let fast = Scripted::start("fast", 200, 0).await;
    let cluster = svc([&slow.url, &fast.url])
        .strategy(Strategy::parallel(2))
        .timeout(Duration::from_secs(5))
        .on_a_new_client();
    for _ in 0..5 {
        let t0 = Instant::now();
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(replica_of(&res), "fast");
        assert!(
            t0.elapsed() < Duration::from_millis(1000),
            "{:?}",
            t0.elapsed()
        );
    }
    crate::support::eventually(
        "both replicas saw every request",
        Duration::from_secs(5),
        || slow.requests() == 5 && fast.requests() == 5,
    )
    .await;
    crate::support::eventually(
        "the slow replica sees every cancel",
        Duration::from_secs(5),
        || slow.cancelled.load(SeqCst) == 5,
    )
    .await;
    let s = snap_of(&cluster, &slow);
    assert_eq!(
        (s.requests, s.cancelled, s.failures, s.in_flight),
        (5, 5, 0, 0)
    );
    let f = snap_of(&cluster, &fast);
    assert_eq!((f.requests, f.accepted), (5, 5));
    assert_eq!(cluster.snapshot().attempts, 10);
}

#[tokio::test]
async fn the_replica_budget_holds_attempts_to_one_point_two_per_request() {
    let a = Scripted::start("a", 503, 0).await;
    let b = Scripted::start("b", 503, 0).await;
    let cluster = svc([&a.url, &b.url])
        .strategy(Strategy::sequential(2))
        .replica_budget(Some(ReplicaBudgetConfig::default()))
        .outlier(None)
        .on_a_new_client();
    for _ in 0..300 {
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 503);
    }
    // Unlimited, every request would go to both: 600.
    let sent = a.requests() + b.requests();
    assert!(
        (300..=361).contains(&sent),
        "{sent} attempts for 300 requests"
    );
    let snap = cluster.snapshot();
    assert_eq!(snap.attempts, sent);
    assert!(snap.budget_limited >= 200, "{}", snap.budget_limited);
    assert!(
        snap.replica_budget_ratio <= 1.21,
        "{}",
        snap.replica_budget_ratio
    );
}

#[tokio::test]
async fn a_burst_of_slow_requests_cannot_fork_past_the_replica_budget() {
    // Every request is still waiting when its fork is due (at 200 ms of a
    // 600 ms budget; answers take 300 ms), and all of them started before
    // any ended: a budget that counted attempts when requests end, and
    // decided when they start, let all 100 fork (200 attempts).
    let replicas = [
        Scripted::start("a", 200, 300).await,
        Scripted::start("b", 200, 300).await,
        Scripted::start("c", 200, 300).await,
    ];
    let cluster = ClusterClient::builder("svc")
        .replicas(replicas.iter().map(|r| r.url.as_str()))
        .strategy(Strategy::forking(3))
        .timeout(Duration::from_millis(600))
        .replica_budget(Some(ReplicaBudgetConfig::default()))
        .outlier(None)
        .throttle(None)
        .build(
            Client::builder()
                .max_connections_per_host(200)
                .build()
                .unwrap(),
        )
        .unwrap();
    all_at_once(&cluster, 100).await;
    let sent: u64 = replicas.iter().map(Scripted::requests).sum();
    let snap = cluster.snapshot();
    assert_eq!(snap.attempts, sent);
    assert!(sent <= 120, "{sent} attempts for 100 requests");
    assert!(snap.budget_limited >= 80, "{}", snap.budget_limited);
}

#[tokio::test]
async fn forks_the_budget_has_no_room_for_yet_wait_for_room_instead_of_giving_up() {
    // Twenty requests at once over a stuck replica and a fast one: those
    // that draw the stuck one first all fork at 150 ms, and the budget lets
    // one extra attempt run at a time. Each fork takes a millisecond, so
    // all fit in the budget if the others ask again; given up, they waited
    // for the stuck replica until their budget ran out.
    let stuck = Scripted::start("stuck", 200, 5000).await;
    let fast = Scripted::start("fast", 200, 0).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&stuck.url, &fast.url])
        .strategy(Strategy::forking(2))
        .timeout(Duration::from_millis(400))
        .replica_budget(Some(
            ReplicaBudgetConfig::default()
                .max_in_flight_share(0.0)
                .min_in_flight(1),
        ))
        // An even draw, whatever the replicas did before.
        .recent_latency(None)
        .active_request_bias(0.0)
        .outlier(None)
        .throttle(None)
        .seed(5)
        .build(Client::new())
        .unwrap();
    all_at_once(&cluster, 20).await;
    assert!(stuck.requests() >= 3, "some drew the stuck one first");
    assert_eq!(cluster.snapshot().budget_limited, 0);
}

#[tokio::test]
async fn a_quantile_fork_delay_forks_late_requests_long_before_the_equal_share() {
    let replicas = [
        Scripted::start("a", 200, 0).await,
        Scripted::start("b", 200, 0).await,
        Scripted::start("c", 200, 0).await,
    ];
    let cluster = ClusterClient::builder("svc")
        .replicas(replicas.iter().map(|r| r.url.as_str()))
        .strategy(Strategy::forking(3))
        .fork_delay(ForkDelay::quantile(0.9))
        // The equal share would be 1 s.
        .timeout(Duration::from_secs(3))
        .outlier(None)
        .relative_weights(None)
        .seed(7)
        .build(Client::new())
        .unwrap();
    // 100 answers before the quantile means anything.
    for _ in 0..150 {
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
    }
    let slow = &replicas[0];
    slow.delay_ms.store(2_000, SeqCst);
    let before = slow.requests();
    for _ in 0..20 {
        let t0 = Instant::now();
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
        // Forked at the p90 of answers of a few ms, not at 1 s.
        assert!(
            t0.elapsed() < Duration::from_millis(600),
            "{:?}",
            t0.elapsed()
        );
    }
    assert!(slow.requests() > before, "the slow replica was drawn first");
}

#[tokio::test]
async fn a_slow_replica_loses_its_first_attempts_within_a_second() {
    // Nine replicas answering in 5 ms, one in 50 ms: accepted, so health
    // never falls; only latency tells. Vostok's ordering waits for its 10 s
    // round, and until then the active request bias alone leaves the slow
    // one a share that grows with the load.
    let slow = Scripted::start("slow", 200, 50).await;
    let mut fast = Vec::new();
    for _ in 0..9 {
        fast.push(Scripted::start("fast", 200, 5).await);
    }
    let cluster = ClusterClient::builder("svc")
        .replicas(std::iter::once(&slow.url).chain(fast.iter().map(|s| &s.url)))
        .seed(18)
        .build(Client::new())
        .unwrap();
    // 200 requests a second for 2 s.
    open_loop(&cluster, 400, Duration::from_millis(5)).await;
    let all: u64 = slow.requests() + fast.iter().map(Scripted::requests).sum::<u64>();
    assert_eq!(
        all, 400,
        "no request forked: answers come in 50 ms, forks at 333"
    );
    let share = slow.requests() as f64 / 400.0;
    assert!(share < 0.025, "the slow replica had {share} (fair: 0.1)");
    let s = snap_of(&cluster, &slow);
    assert!(s.recent_weight < 0.01, "{s:?}");
}

#[tokio::test]
async fn weighted_ordering_sends_less_to_a_replica_with_requests_piling_up() {
    // Health and relative weights learn over seconds (the relative weights'
    // round is 10 s); the requests a slow replica holds say it at once.
    async fn slow_share(bias: f64) -> f64 {
        let slow = Scripted::start("slow", 200, 300).await;
        let fast = Scripted::start("fast", 200, 0).await;
        let cluster = ClusterClient::builder("svc")
            .replicas([&slow.url, &fast.url])
            .strategy(Strategy::single_replica())
            .active_request_bias(bias)
            // The bias alone: recent latency would see the slow one too.
            .recent_latency(None)
            .outlier(None)
            .seed(11)
            .build(Client::new())
            .unwrap();
        open_loop(&cluster, 100, Duration::from_millis(10)).await;
        slow.requests() as f64 / 100.0
    }
    let even = slow_share(0.0).await;
    // The default bias, 2: the slow replica gets 11 of the 100 (with 1,
    // Envoy's, 19: one request from the bound, and it failed under load).
    let biased = slow_share(2.0).await;
    assert!(even > 0.3, "without the bias, about half: {even}");
    assert!(
        biased < 0.2,
        "with it, the pile-up steers requests away: {biased}"
    );
}

#[tokio::test]
async fn a_file_topology_follows_the_file_and_keeps_requests_in_flight() {
    let old = Scripted::start("old", 200, 300).await;
    let new = Scripted::start("new", 200, 0).await;
    let dir = std::env::temp_dir().join(format!("courier-cluster-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("replicas");
    std::fs::write(&path, format!("# billing\n{}\n", old.url)).unwrap();
    let topology = FileTopology::watch(&path, Duration::from_millis(20))
        .await
        .unwrap();
    let cluster = ClusterClient::builder("svc")
        .topology(topology)
        .throttle(None)
        .build(Client::new())
        .unwrap();

    let in_flight = in_flight_on_the_first_replica(&cluster).await;
    // Written aside and renamed, as a deploy should.
    let tmp = dir.join("replicas.tmp");
    std::fs::write(&tmp, format!("# moved\n\n{}  # the new one\n", new.url)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    crate::support::eventually("the file is re-read", Duration::from_secs(5), || {
        cluster
            .snapshot()
            .replicas
            .iter()
            .map(|r| r.replica.clone())
            .collect::<Vec<_>>()
            == [new.replica()]
    })
    .await;
    for _ in 0..10 {
        assert_eq!(replica_of(&cluster.get("/x").send().await.unwrap()), "new");
    }
    let res = in_flight.await.unwrap().unwrap();
    assert_eq!(
        (res.status().as_u16(), replica_of(&res)),
        (200, "old".to_owned())
    );
    assert_eq!((old.requests(), old.cancelled.load(SeqCst)), (1, 0));

    // An invalid line keeps the list.
    std::fs::write(&path, "not a url\n").unwrap();
    let res = cluster.get("/x").send().await.unwrap();
    assert_eq!(replica_of(&res), "new");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Records spans (name, parent, fields) for the tracing tests.
pub(crate) mod spans {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::Subscriber;
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::registry::LookupSpan;
    use tracing_subscriber::Layer;

    #[derive(Debug, Clone)]
    pub struct Span {
        pub id: u64,
        pub name: &'static str,
        pub parent: Option<u64>,
        pub fields: HashMap<String, String>,
    }

    #[derive(Clone, Default)]
    pub struct Recorder(pub Arc<Mutex<Vec<Span>>>);

    struct Fields<'a>(&'a mut HashMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.insert(field.name().to_owned(), value.to_string());
        }
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
    }

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
            let parent = ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64());
            let mut fields = HashMap::new();
            attrs.record(&mut Fields(&mut fields));
            let name = attrs.metadata().name();
            let id = id.into_u64();
            self.0.lock().unwrap().push(Span {
                id,
                name,
                parent,
                fields,
            });
        }

        fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
            let mut spans = self.0.lock().unwrap();
            if let Some(s) = spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
                values.record(&mut Fields(&mut s.fields));
            }
        }
    }

    /// A recorder set as this thread's subscriber until the guard is dropped
    /// (the test runs on a current-thread runtime, so it sees every span).
    pub fn install() -> (Recorder, tracing::subscriber::DefaultGuard) {
        let r = Recorder::default();
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(r.clone()));
        (r, guard)
    }
}

#[tokio::test]
async fn the_request_span_names_the_strategy_and_the_replica_that_answered() {
    let (recorder, _guard) = spans::install();
    let bad = Scripted::start("bad", 503, 0).await;
    let good = Scripted::start("good", 200, 0).await;
    let cluster = ClusterClient::builder("billing")
        .replicas([&bad.url, &good.url])
        .strategy(Strategy::forking(2))
        .throttle(None)
        .seed(1)
        .build(Client::new())
        .unwrap();
    for _ in 0..4 {
        assert_eq!(replica_of(&cluster.get("/x").send().await.unwrap()), "good");
    }
    let spans = recorder.0.lock().unwrap().clone();
    let requests: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "cluster.request")
        .collect();
    assert_eq!(requests.len(), 4);
    let good_url = good.replica().to_string();
    let mut bad_attempts = 0;
    for r in &requests {
        assert_eq!(r.fields["cluster"], "billing");
        assert_eq!(r.fields["strategy"], "forking2");
        assert_eq!(r.fields["replica"], good_url, "{:?}", r.fields);
        assert_eq!(r.fields["verdict"], "accept");
        let attempts: Vec<_> = spans
            .iter()
            .filter(|s| s.name == "cluster.attempt" && s.parent == Some(r.id))
            .collect();
        assert_eq!(r.fields["attempts"], attempts.len().to_string());
        // One attempt per replica at most; the good one's is the one that
        // accepted. (Which came last depends on the order and on whether
        // the fork fired before the first answer: a loaded machine forks
        // to the 503 replica after the good one's attempt has started.)
        assert!(attempts.len() <= 2, "{attempts:?}");
        let accepted: Vec<_> = attempts
            .iter()
            .filter(|a| a.fields.get("verdict").map(String::as_str) == Some("accept"))
            .collect();
        assert_eq!(accepted.len(), 1, "{attempts:?}");
        assert_eq!(accepted[0].fields["replica"], good_url);
        bad_attempts += attempts
            .iter()
            .filter(|a| a.fields["replica"] != good_url)
            .count();
    }
    assert!(
        bad_attempts >= 1,
        "the seed puts the 503 replica first at least once"
    );
    // An attempt to the 503 replica cancelled before it was sent never
    // reaches it.
    assert!((1..=bad_attempts as u64).contains(&bad.requests()));
}

/// An HTTP/2 (h2c) replica from the `h2` crate: answers 200 after `delay`
/// and counts the streams the client reset before that.
pub(crate) async fn h2_replica(delay: Duration) -> (String, Arc<AtomicU64>, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (streams, resets) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (s, r) = (Arc::clone(&streams), Arc::clone(&resets));
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let (s, r) = (Arc::clone(&s), Arc::clone(&r));
            tokio::spawn(async move {
                let Ok(mut h2) = h2::server::handshake(conn).await else {
                    return;
                };
                while let Some(Ok((_req, mut respond))) = h2.accept().await {
                    s.fetch_add(1, SeqCst);
                    let r = Arc::clone(&r);
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = tokio::time::sleep(delay) => {
                                let res = http::Response::builder().status(200).body(()).unwrap();
                                let _ = respond.send_response(res, true);
                            }
                            _ = std::future::poll_fn(|cx| respond.poll_reset(cx)) => {
                                r.fetch_add(1, SeqCst);
                            }
                        }
                    });
                }
            });
        }
    });
    (url, streams, resets)
}

#[tokio::test]
async fn parallel_losers_on_http2_are_reset_streams() {
    let (slow, slow_streams, slow_resets) = h2_replica(Duration::from_secs(5)).await;
    let (fast, fast_streams, _) = h2_replica(Duration::ZERO).await;
    let client = Client::builder().http2_prior_knowledge().build().unwrap();
    let cluster = ClusterClient::builder("svc")
        .replicas([&slow, &fast])
        .strategy(Strategy::parallel(2))
        .throttle(None)
        .build(client.clone())
        .unwrap();
    for _ in 0..4 {
        let t0 = Instant::now();
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
    crate::support::eventually(
        "every losing stream is reset",
        Duration::from_secs(5),
        || slow_resets.load(SeqCst) == 4,
    )
    .await;
    assert_eq!(
        (slow_streams.load(SeqCst), fast_streams.load(SeqCst)),
        (4, 4)
    );
    // A reset stream, not a closed connection: one connection per replica.
    let m = client.metrics();
    assert_eq!(
        (m.connections_established_http2, m.connections_open_http2),
        (2, 2)
    );
}
