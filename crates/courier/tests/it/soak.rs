//! Soak and cancellation: thousands of requests mixing good ones with ~1 %
//! injected faults, and requests dropped at random points, over HTTP/1.1 and
//! HTTP/2. Afterwards every request is accounted for, the pool holds only
//! idle connections, and memory has not grown.
//!
//! The short form runs with the other tests; the long one is
//! `COURIER_SOAK_SECS=180 cargo test -p courier-http --test it soak:: -- --ignored`.
//! Both check the whole process's RSS, so they run in a process of their
//! own ([`alone`]), not beside the binary's other tests.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{alone, eventually, server, settled};
use courier::{Client, ErrorKind};

/// Faults and the error kinds each may end in (HTTP/1.1 or HTTP/2).
const FAULTS: &[(&str, &[ErrorKind])] = &[
    ("/fault/close", &[ErrorKind::ConnectionClosed]),
    ("/fault/reset", &[ErrorKind::ConnectionClosed]),
    ("/fault/close-mid-body", &[ErrorKind::Body]),
    ("/fault/chunked-mid-body", &[ErrorKind::Body]),
    ("/fault/huge-headers/100000", &[ErrorKind::HeadersTooLarge]),
    (
        "/fault/rst-stream",
        &[ErrorKind::ConnectionClosed, ErrorKind::Protocol],
    ),
    ("/fault/no-answer", &[ErrorKind::Timeout]),
];

const GOOD: &[&str] = &[
    "/bytes/128",
    "/json/512",
    "/bytes/20000?chunked=1",
    "/delay/2",
    "/status/204",
];

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    faults: AtomicU64,
    /// Good HTTP/2 requests that shared a connection with an injected
    /// connection-level fault (close, reset): HTTP/2 loses every stream then.
    collateral: AtomicU64,
    by_kind: Mutex<BTreeMap<&'static str, u64>>,
    unexpected: Mutex<Vec<String>>,
}

async fn soak(duration: Duration) {
    let srv = server().await;
    let clients = [
        Client::builder()
            .timeout(Duration::from_millis(500))
            .max_connections_per_host(8)
            .build()
            .unwrap(),
        Client::builder()
            .http2_prior_knowledge()
            .timeout(Duration::from_millis(500))
            .build()
            .unwrap(),
    ];
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..16u64 {
        let h2 = w % 2 == 1;
        let client = clients[(w % 2) as usize].clone();
        let base = srv.url("").trim_end_matches('/').to_string();
        let tally = tally.clone();
        workers.push(tokio::spawn(async move {
            let mut seed = w.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            while started.elapsed() < duration {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let fault = (seed % 100 == 0).then(|| FAULTS[(seed / 100) as usize % FAULTS.len()]);
                let path = fault.map_or(GOOD[(seed >> 8) as usize % GOOD.len()], |f| f.0);
                let result = async {
                    let res = client.get(format!("{base}{path}")).send().await?;
                    res.bytes().await
                }
                .await;
                match (fault, result) {
                    (None, Ok(_)) => {
                        tally.ok.fetch_add(1, Ordering::Relaxed);
                    }
                    (Some((_, kinds)), Err(e)) if kinds.contains(&e.kind()) => {
                        tally.faults.fetch_add(1, Ordering::Relaxed);
                        *tally
                            .by_kind
                            .lock()
                            .unwrap()
                            .entry(e.kind().as_str())
                            .or_default() += 1;
                    }
                    (_, Err(e))
                        if h2
                            && matches!(
                                e.kind(),
                                ErrorKind::ConnectionClosed | ErrorKind::Body
                            ) =>
                    {
                        tally.collateral.fetch_add(1, Ordering::Relaxed);
                    }
                    (fault, result) => tally.unexpected.lock().unwrap().push(format!(
                        "{path} (fault: {}): {:?}",
                        fault.is_some(),
                        result.map(|b| b.len())
                    )),
                }
            }
        }));
    }
    tokio::time::sleep(duration / 2).await;
    let rss_at_half = rss_kb();
    for w in workers {
        w.await.unwrap();
    }
    let rss_end = rss_kb();
    let ok = tally.ok.load(Ordering::Relaxed);
    let faults = tally.faults.load(Ordering::Relaxed);
    let collateral = tally.collateral.load(Ordering::Relaxed);
    let unexpected = std::mem::take(&mut *tally.unexpected.lock().unwrap());
    println!(
        "soak {:?}: {} requests, {ok} ok, {faults} faults injected {:?}, \
         {collateral} HTTP/2 streams lost with a faulted connection, unexpected {}, RSS {} -> {} kB",
        duration,
        ok + faults + collateral + unexpected.len() as u64,
        tally.by_kind.lock().unwrap(),
        unexpected.len(),
        rss_at_half,
        rss_end
    );
    assert!(unexpected.is_empty(), "{unexpected:#?}");
    assert!(ok > 1000, "too few requests: {ok}");
    // Each connection-level fault takes at most the other in-flight streams
    // of its connection (8 HTTP/2 workers).
    assert!(
        collateral <= faults * 8,
        "{collateral} collateral for {faults} faults"
    );
    for client in &clients {
        eventually("pool settles", Duration::from_secs(3), || {
            settled(&client.metrics())
        })
        .await;
        let m = client.metrics();
        assert_eq!(
            m.requests_total,
            m.request_duration.count() + m.requests_failed
        );
    }
    // The second half must not have grown memory much (no leak per request).
    assert!(
        rss_end < rss_at_half + 16 * 1024,
        "RSS grew {rss_at_half} -> {rss_end} kB"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_short() {
    if !alone(module_path!(), "soak_short") {
        return;
    }
    soak(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long soak: COURIER_SOAK_SECS=180 cargo test -p courier-http --test it soak:: -- --ignored"]
async fn soak_long() {
    if !alone(module_path!(), "soak_long") {
        return;
    }
    let secs = std::env::var("COURIER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    soak(Duration::from_secs(secs)).await;
}

/// Drops requests at random points (before connect, while connecting, queued,
/// during the head, during the body) over HTTP/1.1 and HTTP/2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_cancellation_leaves_nothing_behind() {
    let srv = server().await;
    for h2 in [false, true] {
        let mut builder = Client::builder().max_connections_per_host(4);
        if h2 {
            builder = builder.http2_prior_knowledge();
        }
        let client = builder.build().unwrap();
        let mut kept = Vec::new();
        for i in 0..2000u64 {
            let path = match i % 4 {
                0 => "/bytes/100000".to_string(),
                1 => format!("/delay/{}", i % 5),
                2 => "/bytes/64".to_string(),
                _ => "/bytes/3000?chunked=1".to_string(),
            };
            let request = client.get(srv.url(&path));
            let task = tokio::spawn(async move {
                let mut res = request.send().await?;
                while res.chunk().await?.is_some() {}
                Ok::<_, courier::Error>(())
            });
            if i % 3 == 0 {
                if i % 2 == 0 {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(Duration::from_micros(i % 500)).await;
                }
                task.abort();
            } else {
                kept.push(task);
            }
            if kept.len() >= 64 {
                for t in kept.drain(..) {
                    t.await.unwrap().unwrap();
                }
            }
        }
        for t in kept {
            t.await.unwrap().unwrap();
        }
        eventually("nothing left behind", Duration::from_secs(5), || {
            settled(&client.metrics())
        })
        .await;
        assert!(client.metrics().connections_open <= 4, "h2={h2}");
    }
}
