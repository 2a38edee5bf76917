//! A cluster behind the named client's middleware (`src/cluster/layers.rs`):
//! the attempt side (decompression, default headers, the attempt span and
//! `traceparent`) on every replica attempt, the request side (total
//! timeout, whole-request retry, the request span) around the whole cluster
//! request, hedging refused; against scripted replicas on loopback.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use courier::cluster::{ClusterClient, Strategy};
use courier::middleware::{
    DecompressionConfig, HedgeConfig, RetryConfig, Stack, TimeoutConfig, TraceConfig,
};
use courier::{Client, ClientFactory, ErrorKind};

use crate::cluster::{h2_replica, spans, Scripted};
use crate::support::middleware::{reply, scripted, with_header, Seen};

const TEXT: &[u8] = b"the same text from every replica, compressed by each of them";

/// A replica that answers `status` with `TEXT` gzipped and names itself.
async fn gzip_replica(name: &'static str, status: u16) -> crate::support::middleware::Scripted {
    scripted(move |_req: Seen| async move {
        let body = crate::support::compress("gzip", TEXT).await;
        let res = with_header(reply(status, body), "content-encoding", "gzip");
        with_header(res, "x-replica", name)
    })
    .await
}

#[tokio::test]
async fn the_named_clients_middleware_applies_to_every_attempt_of_a_factory_cluster() {
    let bad = gzip_replica("bad", 503).await;
    let good = gzip_replica("good", 200).await;
    let factory = ClientFactory::builder()
        .config_toml(&format!(
            r#"
            [clients.svc]
            headers = {{ x-team = "payments" }}
            decompression = true
            [clients.svc.cluster]
            replicas = ["{}", "{}"]
            strategy = "sequential2"
            seed = 3
            throttle = false
            replica_budget = false
            "#,
            bad.origin(),
            good.origin()
        ))
        .unwrap()
        .build()
        .unwrap();
    let cluster = factory.cluster("svc").await.unwrap();
    for _ in 0..20 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert!(res.headers().get("content-encoding").is_none());
        assert_eq!(&res.bytes().await.unwrap()[..], TEXT, "decoded");
        if bad.hits() > 0 {
            break;
        }
    }
    assert!(
        bad.hits() > 0,
        "the seed sends a request to the 503 replica"
    );
    for seen in bad.seen().iter().chain(good.seen().iter()) {
        assert_eq!(seen.header("x-team"), Some("payments"), "{seen:?}");
        let accept = seen.header("accept-encoding").unwrap_or_default();
        assert!(accept.contains("gzip"), "{seen:?}");
    }
}

/// Both replicas hang; the cluster's own budget is 30 s, split in two.
async fn hung_pair() -> (Scripted, Scripted) {
    (
        Scripted::start("a", 200, 60_000).await,
        Scripted::start("b", 200, 60_000).await,
    )
}

#[tokio::test]
async fn a_total_timeout_bounds_the_whole_cluster_request_and_is_its_budget() {
    let (a, b) = hung_pair().await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&a.url, &b.url])
        .strategy(Strategy::sequential(2))
        .timeout(Duration::from_secs(30))
        .throttle(None)
        .middleware(
            Stack::new().timeout(TimeoutConfig::default().total(Duration::from_millis(600))),
        )
        .build(Client::new())
        .unwrap();
    let t0 = Instant::now();
    let err = cluster.get("/x").send().await.unwrap_err();
    let took = t0.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Each replica had half of the 600 ms, not half of 30 s: both were tried.
    assert_eq!((a.requests(), b.requests()), (1, 1));
}

#[tokio::test]
async fn retry_sends_the_whole_cluster_request_again_only_when_no_replica_accepted() {
    let failing = Scripted::start("failing", 503, 0).await;
    let stack = Stack::new().retry(
        RetryConfig::default()
            .max_attempts(3)
            .base_delay(Duration::from_millis(1))
            .budget(None),
    );
    let cluster = ClusterClient::builder("svc")
        .replicas([&failing.url])
        .strategy(Strategy::single_replica())
        .throttle(None)
        .replica_budget(None)
        .middleware(stack.clone())
        .build(Client::new())
        .unwrap();
    let res = cluster.get("/x").send().await.unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(
        failing.requests(),
        3,
        "three cluster requests of one attempt"
    );
    assert_eq!(cluster.snapshot().requests, 3);
    assert_eq!(cluster.layers().retry.as_ref().unwrap().stats().retries, 2);

    // A 503 the criteria accept (`dont-retry`) is the answer: not retried.
    let final_503 = scripted(|_| async { with_header(reply(503, "no"), "dont-retry", "1") }).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([final_503.origin()])
        .throttle(None)
        .middleware(stack)
        .build(Client::new())
        .unwrap();
    assert_eq!(cluster.get("/x").send().await.unwrap().status(), 503);
    assert_eq!(final_503.hits(), 1);
}

#[tokio::test]
async fn hedging_around_a_cluster_is_refused() {
    let err = ClusterClient::builder("svc")
        .replicas(["http://127.0.0.1:1"])
        .middleware(Stack::new().hedging(HedgeConfig::default()))
        .build(Client::new())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(format!("{err:#}").contains("forking"), "{err}");
    let err = ClientFactory::builder()
        .config_toml(
            "[clients.svc]\nhedging = true\n[clients.svc.cluster]\nreplicas = [\"http://127.0.0.1:1\"]\n",
        )
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(
        format!("{err:#}").contains("svc") && format!("{err:#}").contains("hedging"),
        "{err}"
    );
}

#[tokio::test]
async fn spans_nest_request_cluster_attempt_and_traceparent_continues_the_trace() {
    let (recorder, _guard) = spans::install();
    let bad = scripted(|_| async { reply(503, "busy") }).await;
    let good = scripted(|_| async { reply(200, "ok") }).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([bad.origin(), good.origin()])
        .strategy(Strategy::sequential(2))
        .throttle(None)
        .replica_budget(None)
        .seed(5)
        .middleware(Stack::new().trace(TraceConfig::default()))
        .build(Client::new())
        .unwrap();
    for _ in 0..10 {
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
        if bad.hits() > 0 {
            break;
        }
    }
    assert_eq!(bad.hits(), 1, "the seed tries the 503 replica first once");
    let spans = recorder.0.lock().unwrap().clone();
    let children = |parent: u64, name: &str| -> Vec<spans::Span> {
        spans
            .iter()
            .filter(|s| s.parent == Some(parent) && s.name == name)
            .cloned()
            .collect()
    };
    let mut by_trace: BTreeMap<String, usize> = BTreeMap::new();
    for request in spans.iter().filter(|s| s.name == "HTTP request") {
        let [cluster_request] = &children(request.id, "cluster.request")[..] else {
            panic!("one cluster.request under {request:?}");
        };
        let attempts = children(cluster_request.id, "cluster.attempt");
        assert_eq!(
            cluster_request.fields["attempts"],
            attempts.len().to_string()
        );
        for attempt in &attempts {
            let [http] = &children(attempt.id, "HTTP attempt")[..] else {
                panic!("one HTTP attempt under {attempt:?}");
            };
            assert_eq!(
                http.fields["http.request.resend_count"],
                attempt.fields["attempt"]
            );
            assert_eq!(http.fields["trace_id"], request.fields["trace_id"]);
            assert!(attempt.fields["replica"].contains(&http.fields["server.port"]));
        }
        *by_trace
            .entry(request.fields["trace_id"].clone())
            .or_default() += attempts.len();
    }
    assert_eq!(by_trace.values().sum::<usize>(), bad.hits() + good.hits());
    // What the replicas saw: the request's trace, one attempt span each.
    for seen in bad.seen().iter().chain(good.seen().iter()) {
        let traceparent = seen.header("traceparent").unwrap();
        let trace_id = traceparent.split('-').nth(1).unwrap();
        assert!(by_trace.contains_key(trace_id), "{traceparent}");
    }
}

#[tokio::test]
async fn losing_attempts_through_the_attempt_layers_are_still_reset_streams() {
    let (slow, slow_streams, slow_resets) = h2_replica(Duration::from_secs(5)).await;
    let (fast, _, _) = h2_replica(Duration::ZERO).await;
    let client = Client::builder().http2_prior_knowledge().build().unwrap();
    let cluster = ClusterClient::builder("svc")
        .replicas([&slow, &fast])
        .strategy(Strategy::parallel(2))
        .throttle(None)
        .middleware(
            Stack::new()
                .trace(TraceConfig::default())
                .decompression(DecompressionConfig::default())
                .timeout(TimeoutConfig::default().per_attempt(Duration::from_secs(10))),
        )
        .build(client.clone())
        .unwrap();
    for _ in 0..3 {
        let t0 = Instant::now();
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
    crate::support::eventually(
        "every losing stream is reset",
        Duration::from_secs(5),
        || slow_resets.load(SeqCst) == 3,
    )
    .await;
    assert_eq!(slow_streams.load(SeqCst), 3);
    assert_eq!(client.metrics().connections_open_http2, 2);
}
