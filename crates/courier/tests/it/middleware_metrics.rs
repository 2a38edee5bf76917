//! Metrics export through the `metrics` facade, with OpenTelemetry names.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::h2::h2c;
use crate::support::{eventually, fetch, server, spawn_get};
use courier::Client;
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;

#[derive(Debug, Default)]
struct Seen {
    counters: BTreeMap<String, u64>,
    gauges: BTreeMap<String, f64>,
    histograms: BTreeMap<String, Vec<f64>>,
    units: BTreeMap<String, Unit>,
    /// The help text each metric was described with.
    descriptions: BTreeMap<String, String>,
}

/// `name{k=v,...}` for every series.
fn take(snapshotter: &Snapshotter) -> Seen {
    let mut seen = Seen::default();
    for (key, unit, description, value) in snapshotter.snapshot().into_vec() {
        let mut labels: Vec<String> = key
            .key()
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.key().name(), labels.join(","));
        if let Some(unit) = unit {
            seen.units.insert(key.key().name().to_owned(), unit);
        }
        if let Some(description) = description {
            seen.descriptions
                .insert(key.key().name().to_owned(), description.to_string());
        }
        match (key.kind(), value) {
            (MetricKind::Counter, DebugValue::Counter(v)) => {
                seen.counters.insert(name, v);
            }
            (MetricKind::Gauge, DebugValue::Gauge(v)) => {
                seen.gauges.insert(name, v.0);
            }
            (MetricKind::Histogram, DebugValue::Histogram(v)) => {
                seen.histograms
                    .insert(name, v.into_iter().map(|x| x.0).collect());
            }
            _ => {}
        }
    }
    seen
}

/// `(idle, active)` open connections of each protocol, as the exporter
/// records them: `[HTTP/1.1, HTTP/2]`.
fn open_by_state_and_protocol(client: &Client) -> [(f64, f64); 2] {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = client.metrics_exporter("c");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    let open = |state: &str, protocol: &str| {
        seen.gauges[&format!(
            "http.client.open_connections{{client=c,http.connection.state={state},network.protocol.version={protocol}}}"
        )]
    };
    [
        (open("idle", "1.1"), open("active", "1.1")),
        (open("idle", "2"), open("active", "2")),
    ]
}

#[tokio::test]
async fn open_connections_are_split_by_state_and_protocol() {
    let srv = server().await;
    let h1 = Client::new();
    let h2 = h2c().build().unwrap();

    // One idle connection each.
    fetch(&h1, srv.url("/bytes/10")).await;
    fetch(&h2, srv.url("/bytes/10")).await;
    let m = h2.metrics();
    assert_eq!(
        (
            m.connections_idle_http2,
            m.connections_active_http2,
            m.connections_open_http1
        ),
        (1, 0, 0),
        "{m:?}"
    );
    assert_eq!(open_by_state_and_protocol(&h1), [(1.0, 0.0), (0.0, 0.0)]);
    assert_eq!(open_by_state_and_protocol(&h2), [(0.0, 0.0), (1.0, 0.0)]);

    // A request in flight makes each one active, and the snapshot's idle
    // total is the sum of both protocols'.
    let slow1 = spawn_get(&h1, srv.url("/delay/10000"));
    let slow2 = spawn_get(&h2, srv.url("/delay/10000"));
    eventually("both requests in flight", Duration::from_secs(5), || {
        h1.metrics().requests_active == 1 && h2.metrics().http2_streams_active == 1
    })
    .await;
    let (m1, m2) = (h1.metrics(), h2.metrics());
    assert_eq!(
        (
            m1.connections_idle_http1,
            m1.connections_active_http1,
            m1.connections_idle
        ),
        (0, 1, 0),
        "{m1:?}"
    );
    assert_eq!(
        (
            m2.connections_idle_http2,
            m2.connections_active_http2,
            m2.connections_idle
        ),
        (0, 1, 0),
        "{m2:?}"
    );
    assert_eq!(open_by_state_and_protocol(&h1), [(0.0, 1.0), (0.0, 0.0)]);
    assert_eq!(open_by_state_and_protocol(&h2), [(0.0, 0.0), (0.0, 1.0)]);
    slow1.abort();
    slow2.abort();
}

#[tokio::test]
async fn pool_metrics_are_exported_with_opentelemetry_names() {
    let srv = server().await;
    let client = Client::new();
    for _ in 0..5 {
        let res = client.get(srv.url("/bytes/10")).send().await.unwrap();
        res.bytes().await.unwrap();
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = client.metrics_exporter("billing");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));

    let seen = take(&snapshotter);
    assert_eq!(
        seen.counters["courier.client.requests_total{client=billing}"],
        5
    );
    assert_eq!(
        seen.counters
            ["courier.client.connections.established_total{client=billing,network.protocol.version=1.1}"],
        1
    );
    let open = |state: &str, protocol: &str| {
        seen.gauges[&format!(
            "http.client.open_connections{{client=billing,http.connection.state={state},network.protocol.version={protocol}}}"
        )]
    };
    assert_eq!(open("idle", "1.1"), 1.0);
    assert_eq!(open("active", "1.1"), 0.0);
    assert_eq!(open("idle", "2"), 0.0);
    assert_eq!(open("active", "2"), 0.0);
    assert_eq!(
        seen.gauges["http.client.active_requests{client=billing}"],
        0.0
    );
    let durations = &seen.histograms["http.client.request.duration{client=billing}"];
    assert_eq!(durations.len(), 5);
    assert!(
        durations.iter().all(|s| *s > 0.0 && *s < 5.0),
        "{durations:?} (seconds)"
    );
    assert_eq!(seen.units["http.client.request.duration"], Unit::Seconds);
    assert_eq!(
        seen.descriptions["http.client.request.duration"],
        "Time from send to the response head"
    );
    assert_eq!(
        seen.descriptions["courier.client.requests_total"],
        "Requests started"
    );
    assert!(seen
        .histograms
        .contains_key("courier.client.connect.duration{client=billing}"));

    // The next export records what happened since: counters add up,
    // histograms get only the new values.
    for _ in 0..3 {
        let res = client.get(srv.url("/bytes/10")).send().await.unwrap();
        res.bytes().await.unwrap();
    }
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    assert_eq!(
        seen.counters["courier.client.requests_total{client=billing}"],
        8
    );
    assert_eq!(
        seen.histograms["http.client.request.duration{client=billing}"].len(),
        3
    );
    assert_eq!(
        seen.counters
            ["courier.client.connections.established_total{client=billing,network.protocol.version=1.1}"],
        1
    );
}

#[tokio::test]
async fn the_factory_exports_every_named_client() {
    let srv = server().await;
    let factory = courier::ClientFactory::new();
    for name in ["billing", "search"] {
        factory
            .client(name)
            .get(srv.url("/bytes/1"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    for (name, client) in factory.clients() {
        let exporter = client.metrics_exporter(name);
        metrics::with_local_recorder(&recorder, || exporter.record());
    }
    let seen = take(&snapshotter);
    assert_eq!(
        seen.counters["courier.client.requests_total{client=billing}"],
        1
    );
    assert_eq!(
        seen.counters["courier.client.requests_total{client=search}"],
        1
    );

    // Middleware counts of a ServiceClient are exported too.
    let flaky = crate::support::middleware::scripted(|req| async move {
        crate::support::middleware::reply(if req.n == 1 { 503 } else { 200 }, "")
    })
    .await;
    let client = courier::middleware::Stack::new()
        .retry(
            courier::middleware::RetryConfig::default()
                .base_delay(std::time::Duration::from_millis(1)),
        )
        .client(courier::Client::new());
    client.get(flaky.url("/")).send().await.unwrap();
    let exporter = client.metrics_exporter("flaky");
    metrics::with_local_recorder(&recorder, || exporter.record());
    let seen = take(&snapshotter);
    assert_eq!(
        seen.counters["courier.client.middleware.retries_total{client=flaky}"],
        1
    );
    assert_eq!(
        seen.counters["courier.client.requests_total{client=flaky}"],
        2
    );

    // The periodic task runs until dropped.
    let task = factory.export_metrics(std::time::Duration::from_millis(10));
    task.stop();
}

/// With tracing, `http.client.request.duration` carries the OpenTelemetry
/// HTTP client attributes, one value per attempt; failures carry `error.type`.
#[tokio::test]
async fn request_durations_carry_the_semantic_convention_attributes() {
    let flaky = crate::support::middleware::scripted(|req| async move {
        crate::support::middleware::reply(if req.n == 1 { 503 } else { 200 }, "")
    })
    .await;
    let client = courier::middleware::Stack::new()
        .trace(Default::default())
        .retry(
            courier::middleware::RetryConfig::default()
                .base_delay(std::time::Duration::from_millis(1)),
        )
        .client(Client::new());
    client.get(flaky.url("/")).send().await.unwrap();
    let (dead, _held) = crate::support::refused_port();
    let err = client
        .delete(format!("http://127.0.0.1:{dead}/"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), courier::ErrorKind::Connect);

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = client.metrics_exporter("api");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    let port = flaky
        .url("/")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let ok = format!(
        "http.client.request.duration{{client=api,http.request.method=GET,\
         http.response.status_code=200,network.protocol.version=1.1,\
         server.address=127.0.0.1,server.port={port}}}"
    );
    let unavailable = format!(
        "http.client.request.duration{{client=api,error.type=503,http.request.method=GET,\
         http.response.status_code=503,network.protocol.version=1.1,\
         server.address=127.0.0.1,server.port={port}}}"
    );
    let refused = format!(
        "http.client.request.duration{{client=api,error.type=connect,\
         http.request.method=DELETE,server.address=127.0.0.1,server.port={dead}}}"
    );
    let durations: Vec<&String> = seen
        .histograms
        .keys()
        .filter(|k| k.starts_with("http.client.request.duration"))
        .collect();
    assert_eq!(durations.len(), 3, "{durations:#?}");
    for key in [&ok, &unavailable, &refused] {
        let values = seen
            .histograms
            .get(key)
            .unwrap_or_else(|| panic!("{key} not in {durations:#?}"));
        // The refused DELETE may be retried (it is idempotent); the GET was
        // answered once with 503 and once with 200.
        assert!(key == &refused || values.len() == 1, "{key}: {values:?}");
        assert!(values.iter().all(|v| *v > 0.0 && *v < 5.0), "{values:?}");
    }
    // The pool's attribute-less series is not exported beside them (it would
    // count every request twice).
    assert!(!seen
        .histograms
        .contains_key("http.client.request.duration{client=api}"));
    assert!(seen.counters["courier.client.connect_failures_total{client=api}"] >= 1);

    // A second export adds only what is new.
    client.get(flaky.url("/")).send().await.unwrap();
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    assert_eq!(seen.histograms[&ok].len(), 1);
    assert_eq!(seen.histograms.get(&refused).map_or(0, Vec::len), 0);
}

/// What Prometheus scrapes through `metrics-exporter-prometheus` (the README
/// recipe and `examples/prometheus.rs`): counters end in `_total`, and the
/// request duration's attributes become labels.
#[tokio::test]
async fn prometheus_sees_total_counters_and_attribute_labels() {
    let srv = server().await;
    let client = courier::middleware::Stack::new()
        .trace(Default::default())
        .client(Client::new());
    for path in ["/bytes/10", "/status/404"] {
        client
            .get(srv.url(path))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let exporter = client.metrics_exporter("shop");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let text = recorder.handle().render();
    let lines: Vec<&str> = text.lines().collect();
    let has = |want: &str| {
        assert!(
            lines.iter().any(|l| l.starts_with(want)),
            "no line starting with {want:?} in\n{text}"
        )
    };
    has("# TYPE courier_client_requests_total counter");
    has("courier_client_requests_total{client=\"shop\"} 2");
    has("# TYPE courier_client_connections_established_total counter");
    has("courier_client_connect_attempts_total{client=\"shop\"} 1");
    has("http_client_open_connections{client=\"shop\",http_connection_state=\"idle\",network_protocol_version=\"1.1\"} 1");
    let port = srv
        .url("/")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    has(&format!(
        "http_client_request_duration_count{{client=\"shop\",http_request_method=\"GET\",\
         server_address=\"127.0.0.1\",server_port=\"{port}\",http_response_status_code=\"404\",\
         network_protocol_version=\"1.1\",error_type=\"404\"}} 1"
    ));
    // No counter is left without the suffix.
    for l in lines
        .iter()
        .filter(|l| l.starts_with("# TYPE") && l.ends_with(" counter"))
    {
        assert!(l.split(' ').nth(2).unwrap().ends_with("_total"), "{l}");
    }
}

#[tokio::test]
async fn closed_connections_report_how_long_they_lived() {
    let srv = server().await;
    let client = Client::new();
    // `/close` answers with `Connection: close`: two connections, both closed.
    for _ in 0..2 {
        let res = client.get(srv.url("/close")).send().await.unwrap();
        res.bytes().await.unwrap();
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = client.metrics_exporter("lived");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while client.metrics().connections_open > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "connections still open"
        );
        tokio::task::yield_now().await;
    }
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    let lived = &seen.histograms["http.client.connection.duration{client=lived}"];
    assert_eq!(lived.len(), 2, "{lived:?}");
    assert!(lived.iter().all(|s| *s >= 0.0 && *s < 5.0), "{lived:?}");
    assert_eq!(seen.units["http.client.connection.duration"], Unit::Seconds);
}

/// A cluster's exporter: per replica gauges and counters labelled `client`
/// and `replica`, the cluster's own counters labelled `client`, counters as
/// deltas between exports, and a replica that left zeroed.
#[tokio::test(start_paused = true)]
async fn cluster_metrics_are_exported_per_replica() {
    use crate::cluster::Scripted;
    use courier::cluster::{
        ClusterClient, OutlierConfig, Replica, ReplicaBudgetConfig, SharedTopology, Strategy,
        ThrottleConfig,
    };

    // On paused time every answer takes exactly its scripted delay: 5 ms
    // for the good replicas (so their latencies are above 0 and equal).
    let ok1 = Scripted::start("ok1", 200, 5).await;
    let ok2 = Scripted::start("ok2", 200, 5).await;
    let bad = Scripted::start("bad", 503, 0).await;
    let replicas = |list: &[&Scripted]| -> Vec<Replica> {
        list.iter()
            .map(|s| Replica::new(s.url.as_str()).unwrap())
            .collect()
    };
    let topology = SharedTopology::new(replicas(&[&ok1, &ok2, &bad]));
    let cluster = ClusterClient::builder("svc")
        .topology(topology.clone())
        .strategy(Strategy::sequential(3))
        .throttle(None)
        .replica_budget(None)
        .outlier(Some(OutlierConfig::default().consecutive_rejects(2)))
        .seed(3)
        .build(Client::new())
        .unwrap();
    for _ in 0..20 {
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = cluster.metrics_exporter("svc");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    let snap = cluster.snapshot();
    let series = |metric: &str, s: &Scripted, extra: &str| {
        format!("{metric}{{client=svc,replica={}/{extra}}}", s.url)
    };
    assert_eq!(
        seen.counters["courier.cluster.requests_total{client=svc}"],
        20
    );
    assert_eq!(
        seen.counters["courier.cluster.attempts_total{client=svc}"],
        snap.attempts
    );
    let r_bad = snap
        .replicas
        .iter()
        .find(|r| r.replica.url().to_string() == format!("{}/", bad.url))
        .unwrap();
    assert!(r_bad.failures >= 1 && r_bad.ejections >= 1, "{r_bad:?}");
    assert_eq!(
        seen.counters[&series(
            "courier.cluster.replica.verdicts_total",
            &bad,
            ",verdict=rejected"
        )],
        r_bad.failures
    );
    assert_eq!(
        seen.counters[&series("courier.cluster.replica.ejections_total", &bad, "")],
        r_bad.ejections
    );
    let accepted: u64 = [&ok1, &ok2]
        .iter()
        .map(|s| {
            seen.counters[&series(
                "courier.cluster.replica.verdicts_total",
                s,
                ",verdict=accepted",
            )]
        })
        .sum();
    assert_eq!(accepted, 20);
    assert_eq!(
        seen.gauges[&series("courier.cluster.replica.health", &ok1, "")],
        1.0
    );
    assert!(seen.gauges[&series("courier.cluster.replica.health", &bad, "")] < 1.0);
    assert_eq!(
        seen.gauges[&series("courier.cluster.replica.ejected", &bad, "")],
        1.0
    );
    assert_eq!(
        seen.gauges[&series("courier.cluster.replica.weight", &bad, "")],
        0.0
    );
    assert!(seen.gauges[&series("courier.cluster.replica.latency_ewma", &ok1, "")] > 0.0);
    assert!(seen.gauges[&series("courier.cluster.replica.recent_latency", &ok1, "")] > 0.0);
    assert_eq!(
        seen.gauges[&series("courier.cluster.replica.recent_weight", &ok1, "")],
        1.0
    );
    assert_eq!(
        seen.gauges[&series("courier.cluster.replica.in_flight", &ok1, "")],
        0.0
    );
    assert_eq!(
        seen.units["courier.cluster.replica.latency_ewma"],
        Unit::Seconds
    );
    assert_eq!(
        seen.descriptions["courier.cluster.replica.in_flight"],
        "Attempts in flight on the replica"
    );
    // The pool under it, under the same name.
    assert_eq!(
        seen.counters["courier.client.requests_total{client=svc}"],
        snap.attempts
    );

    // Deltas: the recorder adds them up to the cluster's own counts.
    for _ in 0..5 {
        cluster.get("/x").send().await.unwrap();
    }
    topology.set(replicas(&[&ok1, &bad]));
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    assert_eq!(
        seen.counters["courier.cluster.requests_total{client=svc}"],
        25
    );
    assert_eq!(
        seen.counters["courier.cluster.attempts_total{client=svc}"],
        cluster.snapshot().attempts
    );
    assert_eq!(
        seen.gauges[&series("courier.cluster.replica.weight", &ok2, "")],
        0.0,
        "left"
    );
    assert!(seen.gauges[&series("courier.cluster.replica.weight", &ok1, "")] > 0.0);

    // Local refusals: throttling and the replica budget, on a failing service.
    let down = ClusterClient::builder("down")
        .replicas([&bad.url])
        .strategy(Strategy::sequential(2))
        .throttle(Some(ThrottleConfig::default().min_requests(5)))
        .replica_budget(Some(ReplicaBudgetConfig::default().min_requests(1)))
        .outlier(None)
        .seed(5)
        .build(Client::new())
        .unwrap();
    let twice = ClusterClient::builder("twice")
        .replicas([&bad.url, &ok1.url])
        .strategy(Strategy::sequential(2))
        .throttle(None)
        .replica_budget(Some(ReplicaBudgetConfig::default().min_requests(1)))
        .outlier(None)
        .seed(5)
        .build(Client::new())
        .unwrap();
    for _ in 0..40 {
        let _ = down.get("/x").send().await;
        let _ = twice.get("/x").send().await;
    }
    for (name, c) in [("down", &down), ("twice", &twice)] {
        let exporter = c.metrics_exporter(name);
        metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    }
    let seen = take(&snapshotter);
    let throttled = down.snapshot().throttled;
    assert!(throttled > 0);
    assert_eq!(
        seen.counters["courier.cluster.throttled_total{client=down}"],
        throttled
    );
    assert!(seen.gauges["courier.cluster.throttle.probability{client=down}"] > 0.0);
    let limited = twice.snapshot().budget_limited;
    assert!(limited > 0);
    assert_eq!(
        seen.counters["courier.cluster.replica_budget.limited_total{client=twice}"],
        limited
    );
}

/// The factory's periodic export includes the clusters it built, under
/// their client's name (this runtime's one thread runs the export task, so
/// it sees the thread's recorder).
#[tokio::test]
async fn the_factory_exports_its_clusters() {
    let replica = crate::cluster::Scripted::start("one", 200, 0).await;
    let factory = courier::ClientFactory::builder()
        .config_toml(&format!(
            "[clients.inventory.cluster]\nreplicas = [\"{}\"]\n",
            replica.url
        ))
        .unwrap()
        .build()
        .unwrap();
    let cluster = factory.cluster("inventory").await.unwrap();
    for _ in 0..3 {
        cluster.get("/x").send().await.unwrap();
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let task = factory.export_metrics(std::time::Duration::from_millis(5));
    let weight = format!(
        "courier.cluster.replica.weight{{client=inventory,replica={}/}}",
        replica.url
    );
    let mut seen = Seen::default();
    crate::support::eventually(
        "the export task records the cluster",
        std::time::Duration::from_secs(5),
        || {
            let now = take(&snapshotter);
            seen.counters.extend(now.counters);
            seen.gauges.extend(now.gauges);
            seen.gauges.contains_key(&weight)
        },
    )
    .await;
    task.stop();
    assert_eq!(
        seen.counters["courier.cluster.requests_total{client=inventory}"],
        3
    );
    assert_eq!(
        seen.counters["courier.client.requests_total{client=inventory}"],
        3
    );
    assert_eq!(seen.gauges[&weight], 1.0);
}

/// A cluster behind the trace middleware exports each replica attempt's
/// `http.client.request.duration`, under that replica's address and the
/// status it answered.
#[tokio::test]
async fn a_traced_cluster_exports_each_attempts_duration_per_replica() {
    use crate::cluster::Scripted;
    use courier::cluster::{ClusterClient, Strategy};
    use courier::middleware::{Stack, TraceConfig};

    let ok = Scripted::start("ok", 200, 0).await;
    let bad = Scripted::start("bad", 503, 0).await;
    let cluster = ClusterClient::builder("svc")
        .replicas([&ok.url, &bad.url])
        .strategy(Strategy::sequential(2))
        .throttle(None)
        .replica_budget(None)
        .seed(3)
        .middleware(Stack::new().trace(TraceConfig::default()))
        .build(Client::new())
        .unwrap();
    for _ in 0..10 {
        assert_eq!(cluster.get("/x").send().await.unwrap().status(), 200);
    }
    assert!(bad.requests() >= 1, "the seed tries the 503 replica");
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = cluster.metrics_exporter("svc");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    let key = |s: &Scripted, status: u16| {
        let port = s.url.rsplit(':').next().unwrap();
        let error = if status >= 400 {
            format!("error.type={status},")
        } else {
            String::new()
        };
        format!(
            "http.client.request.duration{{client=svc,{error}http.request.method=GET,\
             http.response.status_code={status},network.protocol.version=1.1,\
             server.address=127.0.0.1,server.port={port}}}"
        )
    };
    let durations = |k: &str| seen.histograms.get(k).map_or(0, Vec::len) as u64;
    assert_eq!(
        durations(&key(&ok, 200)),
        ok.requests(),
        "{:#?}",
        seen.histograms.keys()
    );
    assert_eq!(durations(&key(&bad, 503)), bad.requests());
}
