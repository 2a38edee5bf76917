//! `courier::cluster` against real replicas on loopback: tiny scripted
//! HTTP/1.1 servers (one status, one delay, switchable; each counts the
//! requests it saw and those whose client went away mid-request) and the
//! built-in server.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use courier::cluster::{
    is_throttled, ClusterClient, Replica, ReplicaOrdering, SharedTopology, Strategy, ThrottleConfig,
};
use courier::{Body, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A scripted replica.
#[derive(Clone)]
struct Scripted {
    name: &'static str,
    url: String,
    status: Arc<AtomicU16>,
    delay_ms: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    cancelled: Arc<AtomicU64>,
}

impl Scripted {
    async fn start(name: &'static str, status: u16, delay_ms: u64) -> Scripted {
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

    fn requests(&self) -> u64 {
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

fn replica_of(res: &courier::Response) -> String {
    res.headers()["x-replica"].to_str().unwrap().to_owned()
}

fn health_of(cluster: &ClusterClient, s: &Scripted) -> f64 {
    let snap = cluster.snapshot();
    snap.replicas
        .iter()
        .find(|r| r.replica == s.replica())
        .unwrap()
        .health
}

#[tokio::test]
async fn sequential_skips_a_503_replica_and_then_rarely_chooses_it() {
    let bad = Scripted::start("bad", 503, 0).await;
    let good1 = Scripted::start("good1", 200, 0).await;
    let good2 = Scripted::start("good2", 200, 0).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&bad.url, &good1.url, &good2.url])
        .strategy(Strategy::sequential(3))
        .throttle(None)
        .seed(42)
        .build(Client::new())
        .unwrap();

    for _ in 0..100 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_ne!(replica_of(&res), "bad");
    }
    let early = bad.requests();
    assert!(early >= 3, "the bad replica was tried and skipped");
    // Halved on every failure, never raised.
    let expected = 0.5f64.powi(early as i32).max(0.001);
    assert_eq!(
        health_of(&cluster, &bad),
        expected,
        "{:?}",
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
    let bad_snap = snap
        .replicas
        .iter()
        .find(|r| r.replica == bad.replica())
        .unwrap();
    assert_eq!(bad_snap.failures, bad.requests());
    assert_eq!(bad_snap.requests, bad.requests());
    assert_eq!(snap.requests, 300);
    assert!(snap.replicas.iter().all(|r| r.in_flight == 0));
}

#[tokio::test]
async fn forking_answers_from_the_fast_replica_and_cancels_the_slow() {
    let slow = Scripted::start("slow", 200, 2000).await;
    let fast = Scripted::start("fast", 200, 0).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&slow.url, &fast.url])
        .strategy(Strategy::forking(2))
        .timeout(Duration::from_secs(1)) // a fork every 500 ms
        .throttle(None)
        .seed(7)
        .build(Client::new())
        .unwrap();

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
    let snap = cluster.snapshot();
    let s = snap
        .replicas
        .iter()
        .find(|r| r.replica == slow.replica())
        .unwrap();
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
async fn a_removed_replica_finishes_its_request_and_gets_no_new_one() {
    let old = Scripted::start("old", 200, 300).await;
    let new = Scripted::start("new", 200, 0).await;
    let topology = SharedTopology::new([old.replica()]);
    let cluster = ClusterClient::builder("svc")
        .topology(topology.clone())
        .throttle(None)
        .build(Client::new())
        .unwrap();

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
    let cluster = ClusterClient::builder("svc")
        .replicas([&a.url, &b.url])
        .strategy(Strategy::sequential(2))
        .throttle(None)
        .build(Client::new())
        .unwrap();
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
    let cluster = ClusterClient::builder("svc")
        .replicas([&hung.url, &good.url])
        .strategy(Strategy::sequential(2))
        .timeout(Duration::from_secs(1)) // the first replica gets 500 ms
        .throttle(None)
        .seed(1)
        .build(Client::new())
        .unwrap();
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
    let snap = cluster.snapshot();
    let h = snap
        .replicas
        .iter()
        .find(|r| r.replica == hung.replica())
        .unwrap();
    assert_eq!(h.failures, tried, "a timed-out attempt is a failure");
    assert_eq!(h.health, 0.5f64.powi(tried as i32));
}
