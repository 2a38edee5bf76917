//! Exporting the pool metrics through the [`metrics`] facade, with the
//! OpenTelemetry HTTP client names, so whatever recorder the application
//! installed (Prometheus, OpenTelemetry, StatsD, …) can scrape them.
//!
//! The pool itself records into lock-free atomics ([`Client::metrics`]), and
//! so does the attempt span layer for its per-request attributes; an exporter
//! reads a snapshot now and then and records gauges, counter deltas and
//! histogram deltas, so no lock is taken while requests are sent. Every
//! series carries a `client` label (the name given to the exporter).
//! Durations are in seconds. Counters end in `_total`, the Prometheus
//! convention (an OpenTelemetry Prometheus exporter keeps a name that already
//! has it); dots become underscores in Prometheus
//! (`courier_client_requests_total`).
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `http.client.request.duration` | histogram (s) | with a [`TraceAttemptLayer`](crate::middleware::TraceAttemptLayer) (a [`ServiceClient`] with tracing): `http.request.method`, `server.address`, `server.port`, and `http.response.status_code` + `network.protocol.version` (a response) or `error.type` (an error kind, or the status when ≥ 400); one value per attempt. Without it: no attributes, one value per request the pool sent |
//! | `http.client.open_connections` | gauge | `http.connection.state` = `idle` \| `active`, `network.protocol.version` = `1.1` \| `2` |
//! | `courier.client.open_connections.by_protocol` | gauge | `network.protocol.version` = `1.1` \| `2` (the same connections summed over states; kept for dashboards that read it) |
//! | `http.client.active_requests` | gauge | |
//! | `http.client.request.time_in_queue` | histogram (s) | |
//! | `dns.lookup.duration` | histogram (s) | |
//! | `courier.client.connect.duration`, `courier.client.tls.handshake.duration` | histogram (s) | |
//! | `courier.client.queued_requests`, `courier.client.connect_attempts.active`, `courier.client.http2.active_streams`, `courier.client.http3.active_streams`, `courier.client.tls.active_handshakes` | gauge | |
//! | `courier.client.connections.established_total` | counter | `network.protocol.version` |
//! | `courier.client.connect_attempts_total`, `courier.client.connect_failures_total` | counter | |
//! | `courier.client.requests_total`, `courier.client.requests.failed_total` | counter | |
//! | `courier.client.drains_total` | counter | `result` = `completed` \| `aborted` |
//! | `courier.client.retries_total` | counter | `reason` = `stale_connection` \| `refused_stream` |
//! | `courier.client.dns.lookups_total`, `courier.client.dns.failures_total` | counter | |
//! | `courier.client.upgrades_total` | counter | (connections and streams given to `Response::upgrade`) |
//! | `courier.client.tls.handshakes_total`, `courier.client.tls.resumed_total`, `courier.client.tls.early_data_total`, `courier.client.tls.handshake_failures_total` | counter | |
//! | `courier.client.middleware.retries_total`, `courier.client.middleware.retry_budget_exhausted_total` | counter | (a [`ServiceClient`] with retries) |
//! | `courier.client.middleware.hedges_total`, `courier.client.middleware.hedges_won_total` | counter | (a [`ServiceClient`] with hedging) |
//!
//! Past 512 attribute sets, request durations share one series labelled
//! `otel.metric.overflow = true`, as the OpenTelemetry SDK does.
//!
//! A [`ClusterClient`]'s exporter ([`ClusterClient::metrics_exporter`], and
//! [`ClientFactory::export_metrics`] for the clusters it built) adds the
//! cluster's numbers to its pool's (see `metrics_export/cluster.rs`):
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `courier.cluster.replica.weight`, `courier.cluster.replica.health`, `courier.cluster.replica.relative_weight` | gauge | `client`, `replica` (its URL) |
//! | `courier.cluster.replica.latency_ewma`, `courier.cluster.replica.recent_latency` | gauge (s) | `client`, `replica` |
//! | `courier.cluster.replica.recent_weight` | gauge | `client`, `replica` |
//! | `courier.cluster.replica.in_flight`, `courier.cluster.replica.ejected`, `courier.cluster.replica.gray_listed` (0 \| 1) | gauge | `client`, `replica` |
//! | `courier.cluster.replica.verdicts_total` | counter | `client`, `replica`, `verdict` = `accepted` \| `rejected` |
//! | `courier.cluster.replica.cancelled_total`, `courier.cluster.replica.ejections_total` | counter | `client`, `replica` |
//! | `courier.cluster.requests_total`, `courier.cluster.attempts_total`, `courier.cluster.throttled_total`, `courier.cluster.replica_budget.limited_total`, `courier.cluster.panics_total` | counter | `client` |
//! | `courier.cluster.throttle.probability`, `courier.cluster.replica_budget.ratio` | gauge | `client` |
//!
//! A replica that leaves the topology has its weight and in-flight gauges
//! set to 0 once (the facade cannot remove a series).

mod cluster;
mod describe;
mod pool;

use std::collections::HashMap;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use self::describe::describe;
use self::pool::{record, record_middleware, record_request_series, DESCRIPTIONS};

use crate::client::Client;
use crate::cluster::ClusterClient;
use crate::factory::ClientFactory;
use crate::metrics::{HistogramSnapshot, MetricsSnapshot};
use crate::middleware::StackLayers;
use crate::service::ServiceClient;

type Source = Box<dyn Fn() -> Option<MetricsSnapshot> + Send + Sync>;

/// Records one client's metrics into the `metrics` facade; see the module
/// docs for the names. Call [`record`](MetricsExporter::record) yourself
/// (for example before each scrape), or [`spawn`](MetricsExporter::spawn) a
/// task that records periodically.
pub struct MetricsExporter {
    name: String,
    source: Source,
    layers: Option<StackLayers>,
    cluster: Option<ClusterClient>,
    last: Mutex<Option<Last>>,
}

/// What the previous export saw, for deltas.
struct Last {
    pool: MetricsSnapshot,
    counts: MiddlewareCounts,
    /// Request-duration series by their (stable) slot.
    series: HashMap<usize, HistogramSnapshot>,
    cluster: Option<cluster::Last>,
}

/// What the middleware counted, for deltas.
#[derive(Debug, Clone, Copy, Default)]
struct MiddlewareCounts {
    retries: u64,
    budget_exhausted: u64,
    hedges: u64,
    hedges_won: u64,
}

impl MiddlewareCounts {
    fn of(layers: &StackLayers) -> MiddlewareCounts {
        let retry = layers.retry.as_ref().map(|r| r.stats());
        let hedge = layers.hedge.as_ref().map(|h| h.stats());
        MiddlewareCounts {
            retries: retry.map_or(0, |r| r.retries),
            budget_exhausted: retry.map_or(0, |r| r.budget_exhausted),
            hedges: hedge.map_or(0, |h| h.hedges),
            hedges_won: hedge.map_or(0, |h| h.hedges_won),
        }
    }
}

impl std::fmt::Debug for MetricsExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsExporter")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A running periodic export; dropping it (or calling
/// [`stop`](MetricsExportTask::stop)) stops it.
#[derive(Debug)]
pub struct MetricsExportTask {
    handle: tokio::task::JoinHandle<()>,
}

impl MetricsExportTask {
    /// Stops exporting.
    pub fn stop(self) {}
}

impl Drop for MetricsExportTask {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl MetricsExporter {
    /// An exporter of whatever `source` returns (`None`: the client is gone).
    fn new(
        name: impl Into<String>,
        source: Source,
        layers: Option<StackLayers>,
    ) -> MetricsExporter {
        MetricsExporter {
            name: name.into(),
            source,
            layers,
            cluster: None,
            last: Mutex::new(None),
        }
    }

    /// Records the current values (gauges) and what happened since the last
    /// call (counters, histograms). Returns false once the client is gone.
    pub fn record(&self) -> bool {
        let Some(now) = (self.source)() else {
            return false;
        };
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_none() {
            describe(DESCRIPTIONS);
        }
        let attempts = self
            .layers
            .as_ref()
            .and_then(|l| l.trace_attempt.as_ref())
            .map(|t| t.request_metrics().snapshot());
        record(
            &self.name,
            &now,
            last.as_ref().map(|l| &l.pool),
            attempts.is_none(),
        );
        let mut series = HashMap::new();
        if let Some(attempts) = attempts {
            let before = last.as_ref().map(|l| &l.series);
            for s in attempts {
                record_request_series(&self.name, &s, before.and_then(|b| b.get(&s.slot)));
                series.insert(s.slot, s.duration);
            }
        }
        let counts = self
            .layers
            .as_ref()
            .map(MiddlewareCounts::of)
            .unwrap_or_default();
        if let Some(layers) = &self.layers {
            let before = last.as_ref().map(|l| l.counts).unwrap_or_default();
            record_middleware(&self.name, layers, counts, before);
        }
        let cluster = self.cluster.as_ref().map(|c| {
            let before = last.as_ref().and_then(|l| l.cluster.as_ref());
            if before.is_none() {
                describe(cluster::DESCRIPTIONS);
            }
            cluster::record(&self.name, &c.snapshot(), before)
        });
        *last = Some(Last {
            pool: now,
            counts,
            series,
            cluster,
        });
        true
    }

    /// Records every `period` on the current tokio runtime until the returned
    /// task is dropped or the client is gone.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn spawn(self, period: Duration) -> MetricsExportTask {
        let handle = tokio::spawn(async move {
            let mut tick = ticker(period);
            loop {
                tick.tick().await;
                if !self.record() {
                    return;
                }
            }
        });
        MetricsExportTask { handle }
    }
}

/// The export tick, shared by every exporter task so they pace alike: every
/// `period` (at least 1 ms: `interval` panics on zero), and after a stall the
/// next tick a full period later instead of a burst of catch-up exports.
fn ticker(period: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(period.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

impl Client {
    /// An exporter of this client's pool metrics to the `metrics` facade,
    /// labelled `client = name`. It holds a clone of the client (keeping its
    /// pool open) until it is dropped.
    pub fn metrics_exporter(&self, name: impl Into<String>) -> MetricsExporter {
        let client = self.clone();
        MetricsExporter::new(name, Box::new(move || Some(client.metrics())), None)
    }

    /// Exports this client's metrics every `period` (see
    /// [`metrics_exporter`](Client::metrics_exporter)) until the task is dropped.
    pub fn export_metrics(&self, name: impl Into<String>, period: Duration) -> MetricsExportTask {
        self.metrics_exporter(name).spawn(period)
    }
}

impl ServiceClient {
    /// An exporter of this client's pool metrics (with pool rotation, of all
    /// its pools) and of its retry and hedging counts, labelled `client = name`.
    pub fn metrics_exporter(&self, name: impl Into<String>) -> MetricsExporter {
        let client = self.clone();
        let layers = self.layers().clone();
        MetricsExporter::new(name, Box::new(move || Some(client.metrics())), Some(layers))
    }

    /// Exports this client's metrics every `period` until the task is dropped.
    pub fn export_metrics(&self, name: impl Into<String>, period: Duration) -> MetricsExportTask {
        self.metrics_exporter(name).spawn(period)
    }
}

impl ClusterClient {
    /// An exporter of this cluster's numbers, per replica and its own, of
    /// its pool's metrics, and of its middleware's (each attempt's
    /// `http.client.request.duration` with the trace middleware, retries),
    /// labelled `client = name` (see the module docs). It holds a clone of
    /// the cluster until it is dropped.
    pub fn metrics_exporter(&self, name: impl Into<String>) -> MetricsExporter {
        let client = self.client().clone();
        let layers = Some(self.layers().clone());
        let mut exporter =
            MetricsExporter::new(name, Box::new(move || Some(client.metrics())), layers);
        exporter.cluster = Some(self.clone());
        exporter
    }

    /// Exports this cluster's metrics every `period` until the task is dropped.
    pub fn export_metrics(&self, name: impl Into<String>, period: Duration) -> MetricsExportTask {
        self.metrics_exporter(name).spawn(period)
    }
}

impl ClientFactory {
    /// Exports the metrics of every named client (labelled with its name),
    /// and of every cluster built ([`ClientFactory::cluster`], with the
    /// client of its name), including those created later, every `period`,
    /// until the task is dropped or the factory is gone.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn export_metrics(&self, period: Duration) -> MetricsExportTask {
        let factory: Weak<_> = self.downgrade();
        let handle = tokio::spawn(async move {
            let mut exporters: Vec<(String, MetricsExporter)> = Vec::new();
            let mut tick = ticker(period);
            loop {
                tick.tick().await;
                let Some(factory) = ClientFactory::upgrade(&factory) else {
                    return;
                };
                for (name, client) in factory.clients() {
                    if !exporters.iter().any(|(n, _)| *n == name) {
                        let exporter = client.metrics_exporter(name.clone());
                        exporters.push((name, exporter));
                    }
                }
                for (name, cluster) in factory.clusters() {
                    // `cluster(name)` made the client of that name first.
                    if let Some((_, e)) = exporters.iter_mut().find(|(n, _)| *n == name) {
                        e.cluster.get_or_insert(cluster);
                    }
                }
                for (_, e) in &exporters {
                    e.record();
                }
            }
        });
        MetricsExportTask { handle }
    }
}
