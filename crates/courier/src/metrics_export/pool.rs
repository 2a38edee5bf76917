//! The pool's and the middleware's series: their names, their
//! descriptions (the table `describe` registers once per exporter), and
//! recording one snapshot's gauges, counter deltas and histogram deltas.
//!
//! Why a file of its own: the exporter (`mod.rs`) decides when and for
//! whom to record — a `Client`, a `ServiceClient`, a cluster, a factory's
//! clients — and this file what one client's pool and middleware numbers
//! become in the facade, beside `cluster.rs` for a cluster's.

use metrics::{counter, gauge, histogram, Unit};

use super::describe::Description;
use super::describe::Kind::{Counter, Gauge, Histogram};
use super::MiddlewareCounts;
use crate::metrics::{HistogramSnapshot, MetricsSnapshot};
use crate::middleware::{SeriesSnapshot, StackLayers};

const OPEN: &str = "http.client.open_connections";
const OPEN_BY_PROTOCOL: &str = "courier.client.open_connections.by_protocol";
const ACTIVE_REQUESTS: &str = "http.client.active_requests";
const TIME_IN_QUEUE: &str = "http.client.request.time_in_queue";
const DURATION: &str = "http.client.request.duration";
const DNS_DURATION: &str = "dns.lookup.duration";
const CONNECT_DURATION: &str = "courier.client.connect.duration";
const CONNECTION_DURATION: &str = "http.client.connection.duration";
const TLS_DURATION: &str = "courier.client.tls.handshake.duration";
const QUEUED: &str = "courier.client.queued_requests";
const CONNECTING: &str = "courier.client.connect_attempts.active";
const STREAMS: &str = "courier.client.http2.active_streams";
const H3_STREAMS: &str = "courier.client.http3.active_streams";
const TLS_ACTIVE: &str = "courier.client.tls.active_handshakes";
const ESTABLISHED: &str = "courier.client.connections.established_total";
const CONNECT_ATTEMPTS: &str = "courier.client.connect_attempts_total";
const CONNECT_FAILURES: &str = "courier.client.connect_failures_total";
const REQUESTS: &str = "courier.client.requests_total";
const REQUESTS_FAILED: &str = "courier.client.requests.failed_total";
const DRAINS: &str = "courier.client.drains_total";
const RETRIES: &str = "courier.client.retries_total";
const DNS_LOOKUPS: &str = "courier.client.dns.lookups_total";
const UPGRADES: &str = "courier.client.upgrades_total";
const DNS_FAILURES: &str = "courier.client.dns.failures_total";
const TLS_HANDSHAKES: &str = "courier.client.tls.handshakes_total";
const TLS_RESUMED: &str = "courier.client.tls.resumed_total";
const TLS_EARLY_DATA: &str = "courier.client.tls.early_data_total";
const TLS_EARLY_ACCEPTED: &str = "courier.client.tls.early_data.accepted_total";
const TLS_EARLY_REJECTED: &str = "courier.client.tls.early_data.rejected_total";
const TLS_FAILURES: &str = "courier.client.tls.handshake_failures_total";
const MW_RETRIES: &str = "courier.client.middleware.retries_total";
const MW_BUDGET: &str = "courier.client.middleware.retry_budget_exhausted_total";
const MW_HEDGES: &str = "courier.client.middleware.hedges_total";
const MW_HEDGES_WON: &str = "courier.client.middleware.hedges_won_total";

pub(super) fn record_middleware(
    name: &str,
    layers: &StackLayers,
    now: MiddlewareCounts,
    before: MiddlewareCounts,
) {
    let c = |metric: &'static str, now: u64, before: u64| {
        counter!(metric, "client" => name.to_owned()).increment(now.saturating_sub(before));
    };
    if layers.retry.is_some() {
        c(MW_RETRIES, now.retries, before.retries);
        c(MW_BUDGET, now.budget_exhausted, before.budget_exhausted);
    }
    if layers.hedge.is_some() {
        c(MW_HEDGES, now.hedges, before.hedges);
        c(MW_HEDGES_WON, now.hedges_won, before.hedges_won);
    }
}

/// The pool's and the middleware's metrics, described once per exporter.
pub(super) const DESCRIPTIONS: &[Description] = &[
    (
        OPEN,
        Gauge,
        Unit::Count,
        "Open HTTP connections, by state and protocol",
    ),
    (
        OPEN_BY_PROTOCOL,
        Gauge,
        Unit::Count,
        "Open HTTP connections, by protocol",
    ),
    (
        ACTIVE_REQUESTS,
        Gauge,
        Unit::Count,
        "Requests sent and not yet answered with a response head",
    ),
    (
        TIME_IN_QUEUE,
        Histogram,
        Unit::Seconds,
        "Time requests waited for a connection",
    ),
    (
        DURATION,
        Histogram,
        Unit::Seconds,
        "Time from send to the response head",
    ),
    (
        DNS_DURATION,
        Histogram,
        Unit::Seconds,
        "DNS lookup duration",
    ),
    (
        CONNECT_DURATION,
        Histogram,
        Unit::Seconds,
        "Time to establish a connection",
    ),
    (
        TLS_DURATION,
        Histogram,
        Unit::Seconds,
        "TLS handshake duration, by protocol",
    ),
    (
        CONNECTION_DURATION,
        Histogram,
        Unit::Seconds,
        "How long connections were open, established to closed",
    ),
    (
        QUEUED,
        Gauge,
        Unit::Count,
        "Requests waiting for a connection",
    ),
    (
        CONNECTING,
        Gauge,
        Unit::Count,
        "Connection attempts in progress",
    ),
    (STREAMS, Gauge, Unit::Count, "Open HTTP/2 streams"),
    (
        H3_STREAMS,
        Gauge,
        Unit::Count,
        "Open HTTP/3 request streams",
    ),
    (TLS_ACTIVE, Gauge, Unit::Count, "TLS handshakes in progress"),
    (ESTABLISHED, Counter, Unit::Count, "Connections established"),
    (
        CONNECT_ATTEMPTS,
        Counter,
        Unit::Count,
        "Connection attempts started",
    ),
    (
        CONNECT_FAILURES,
        Counter,
        Unit::Count,
        "Connection attempts that failed",
    ),
    (REQUESTS, Counter, Unit::Count, "Requests started"),
    (
        REQUESTS_FAILED,
        Counter,
        Unit::Count,
        "Requests failed before a response head",
    ),
    (
        DRAINS,
        Counter,
        Unit::Count,
        "Background drains of unread bodies",
    ),
    (
        RETRIES,
        Counter,
        Unit::Count,
        "Requests retried by the pool",
    ),
    (DNS_LOOKUPS, Counter, Unit::Count, "DNS lookups"),
    (
        UPGRADES,
        Counter,
        Unit::Count,
        "Connections and HTTP/2 streams given to Response::upgrade",
    ),
    (
        DNS_FAILURES,
        Counter,
        Unit::Count,
        "DNS lookups that failed",
    ),
    (
        TLS_HANDSHAKES,
        Counter,
        Unit::Count,
        "TLS handshakes completed, by protocol",
    ),
    (
        TLS_RESUMED,
        Counter,
        Unit::Count,
        "TLS handshakes that resumed a session, by protocol",
    ),
    (
        TLS_EARLY_DATA,
        Counter,
        Unit::Count,
        "Connections that sent requests as 0-RTT early data",
    ),
    (
        TLS_EARLY_ACCEPTED,
        Counter,
        Unit::Count,
        "0-RTT connections whose server took the early data",
    ),
    (
        TLS_EARLY_REJECTED,
        Counter,
        Unit::Count,
        "0-RTT connections whose server refused the early data",
    ),
    (
        TLS_FAILURES,
        Counter,
        Unit::Count,
        "TLS handshakes that failed",
    ),
    (
        MW_RETRIES,
        Counter,
        Unit::Count,
        "Retries sent by the retry middleware",
    ),
    (
        MW_BUDGET,
        Counter,
        Unit::Count,
        "Retries not sent: retry budget spent",
    ),
    (MW_HEDGES, Counter, Unit::Count, "Hedged attempts sent"),
    (
        MW_HEDGES_WON,
        Counter,
        Unit::Count,
        "Requests answered by a hedged attempt",
    ),
];

/// One `http.client.request.duration` series of the attempt layer: the
/// values recorded since `before`, under its attributes.
pub(super) fn record_request_series(
    name: &str,
    s: &SeriesSnapshot,
    before: Option<&HistogramSnapshot>,
) {
    let mut labels = vec![metrics::Label::new("client", name.to_owned())];
    match &s.attrs {
        Some(attrs) => labels.extend(
            attrs
                .pairs()
                .into_iter()
                .map(|(k, v)| metrics::Label::new(k, v)),
        ),
        None => labels.push(metrics::Label::new("otel.metric.overflow", "true")),
    }
    let handle = histogram!(DURATION, labels);
    for (value, count) in s.duration.delta_since(before) {
        handle.record_many(
            value.as_secs_f64(),
            usize::try_from(count).unwrap_or(usize::MAX),
        );
    }
}

/// The HTTP/3 rows (protocol version "3"), only when the client can speak it.
#[cfg(feature = "http3")]
fn record_http3(client: &str, now: &MetricsSnapshot, last: Option<&MetricsSnapshot>) {
    for (state, value) in [
        ("idle", now.connections_idle_http3),
        ("active", now.connections_active_http3),
    ] {
        gauge!(OPEN, "client" => client.to_owned(), "http.connection.state" => state,
            "network.protocol.version" => "3")
        .set(value as f64);
    }
    gauge!(OPEN_BY_PROTOCOL, "client" => client.to_owned(), "network.protocol.version" => "3")
        .set(now.connections_open_http3 as f64);
    let delta = now
        .connections_established_http3
        .saturating_sub(last.map_or(0, |m| m.connections_established_http3));
    counter!(ESTABLISHED, "client" => client.to_owned(), "network.protocol.version" => "3")
        .increment(delta);
    record_tls(
        client,
        "3",
        (now, last),
        (
            |m| m.tls_handshakes_http3,
            |m| m.tls_resumed_http3,
            |m| &m.tls_handshake_duration_http3,
        ),
    );
    let c = |metric: &'static str, f: fn(&MetricsSnapshot) -> u64| {
        counter!(metric, "client" => client.to_owned())
            .increment(f(now).saturating_sub(last.map_or(0, f)));
    };
    c(TLS_EARLY_ACCEPTED, |m| m.tls_early_data_accepted);
    c(TLS_EARLY_REJECTED, |m| m.tls_early_data_rejected);
}

/// Which snapshot fields hold one protocol's TLS handshakes, resumptions
/// and handshake durations.
type TlsFields = (
    fn(&MetricsSnapshot) -> u64,
    fn(&MetricsSnapshot) -> u64,
    fn(&MetricsSnapshot) -> &HistogramSnapshot,
);

/// One protocol's TLS series, with `network.protocol.version`.
fn record_tls(
    client: &str,
    protocol: &'static str,
    (now, last): (&MetricsSnapshot, Option<&MetricsSnapshot>),
    (handshakes, resumed, duration): TlsFields,
) {
    let attrs = || {
        [
            ("client", client.to_owned()),
            ("network.protocol.version", protocol.to_owned()),
        ]
    };
    for (metric, f) in [(TLS_HANDSHAKES, handshakes), (TLS_RESUMED, resumed)] {
        counter!(metric, &attrs()).increment(f(now).saturating_sub(last.map_or(0, f)));
    }
    let handle = histogram!(TLS_DURATION, &attrs());
    for (value, count) in duration(now).delta_since(last.map(duration)) {
        handle.record_many(
            value.as_secs_f64(),
            usize::try_from(count).unwrap_or(usize::MAX),
        );
    }
}

/// Records the pool's metrics; `pool_duration`: whether the pool's own
/// (attribute-less) request durations are exported, which they are only
/// when no attempt layer records them with their attributes.
pub(super) fn record(
    name: &str,
    now: &MetricsSnapshot,
    last: Option<&MetricsSnapshot>,
    pool_duration: bool,
) {
    let client = name.to_owned();
    let g = |metric: &'static str, value: u64| {
        gauge!(metric, "client" => client.clone()).set(value as f64);
    };
    for (state, protocol, value) in [
        ("idle", "1.1", now.connections_idle_http1),
        ("active", "1.1", now.connections_active_http1),
        ("idle", "2", now.connections_idle_http2),
        ("active", "2", now.connections_active_http2),
    ] {
        gauge!(OPEN, "client" => client.clone(), "http.connection.state" => state,
            "network.protocol.version" => protocol)
        .set(value as f64);
    }
    gauge!(OPEN_BY_PROTOCOL, "client" => client.clone(), "network.protocol.version" => "1.1")
        .set(now.connections_open_http1 as f64);
    gauge!(OPEN_BY_PROTOCOL, "client" => client.clone(), "network.protocol.version" => "2")
        .set(now.connections_open_http2 as f64);
    #[cfg(feature = "http3")]
    record_http3(&client, now, last);
    g(ACTIVE_REQUESTS, now.requests_active);
    g(QUEUED, now.requests_queued);
    g(CONNECTING, now.connect_attempts_current);
    g(STREAMS, now.http2_streams_active);
    g(H3_STREAMS, now.http3_streams_active);
    g(TLS_ACTIVE, now.tls_handshakes_current);

    let delta = |f: fn(&MetricsSnapshot) -> u64| f(now).saturating_sub(last.map_or(0, f));
    let c = |metric: &'static str, f: fn(&MetricsSnapshot) -> u64| {
        counter!(metric, "client" => client.clone()).increment(delta(f));
    };
    counter!(ESTABLISHED, "client" => client.clone(), "network.protocol.version" => "1.1")
        .increment(delta(|m| m.connections_established_http1));
    counter!(ESTABLISHED, "client" => client.clone(), "network.protocol.version" => "2")
        .increment(delta(|m| m.connections_established_http2));
    c(CONNECT_ATTEMPTS, |m| m.connect_attempts_total);
    c(CONNECT_FAILURES, |m| m.connect_failures);
    c(REQUESTS, |m| m.requests_total);
    c(REQUESTS_FAILED, |m| m.requests_failed);
    counter!(DRAINS, "client" => client.clone(), "result" => "completed")
        .increment(delta(|m| m.drains_completed));
    counter!(DRAINS, "client" => client.clone(), "result" => "aborted")
        .increment(delta(|m| m.drains_aborted));
    counter!(RETRIES, "client" => client.clone(), "reason" => "stale_connection")
        .increment(delta(|m| m.stale_retries));
    counter!(RETRIES, "client" => client.clone(), "reason" => "refused_stream")
        .increment(delta(|m| m.refused_stream_retries));
    c(DNS_LOOKUPS, |m| m.dns_lookups);
    c(UPGRADES, |m| m.upgrades);
    c(DNS_FAILURES, |m| m.dns_failures);
    for (protocol, fields) in [
        (
            "1.1",
            (
                (|m| m.tls_handshakes_http1) as fn(&MetricsSnapshot) -> u64,
                (|m| m.tls_resumed_http1) as fn(&MetricsSnapshot) -> u64,
                (|m| &m.tls_handshake_duration_http1) as fn(&MetricsSnapshot) -> &HistogramSnapshot,
            ),
        ),
        (
            "2",
            (
                |m| m.tls_handshakes_http2,
                |m| m.tls_resumed_http2,
                |m| &m.tls_handshake_duration_http2,
            ),
        ),
    ] {
        record_tls(&client, protocol, (now, last), fields);
    }
    c(TLS_EARLY_DATA, |m| m.tls_early_data);
    c(TLS_FAILURES, |m| m.tls_handshake_failures);

    let h = |metric: &'static str, f: fn(&MetricsSnapshot) -> &HistogramSnapshot| {
        let handle = histogram!(metric, "client" => client.clone());
        for (value, count) in f(now).delta_since(last.map(f)) {
            handle.record_many(
                value.as_secs_f64(),
                usize::try_from(count).unwrap_or(usize::MAX),
            );
        }
    };
    h(TIME_IN_QUEUE, |m| &m.time_in_queue);
    if pool_duration {
        h(DURATION, |m| &m.request_duration);
    }
    h(DNS_DURATION, |m| &m.dns_duration);
    h(CONNECT_DURATION, |m| &m.connect_duration);
    h(CONNECTION_DURATION, |m| &m.connection_duration);
}

#[cfg(test)]
mod tests {
    /// Snapshot fields with no metric of their own, and why.
    const NOT_EXPORTED: [(&str, &str); 12] = [
        (
            "connections_open",
            "the sum of connections_open_http{1,2,3}",
        ),
        (
            "connections_idle",
            "the sum of connections_idle_http{1,2,3}",
        ),
        (
            "connections_active",
            "the sum of connections_active_http{1,2,3}",
        ),
        (
            "connections_established",
            "the sum of the per-protocol counts",
        ),
        (
            "connections_open_max",
            "a high-water mark: the backend keeps its own",
        ),
        (
            "tls_handshakes_current_max",
            "a high-water mark: the backend keeps its own",
        ),
        ("tls_handshakes", "the sum of tls_handshakes_http{1,2,3}"),
        ("tls_resumed", "the sum of tls_resumed_http{1,2,3}"),
        (
            "tls_handshake_duration",
            "the merge of tls_handshake_duration_http{1,2,3}",
        ),
        ("requests_http1", "requests_total's split by protocol"),
        ("requests_http2", "requests_total's split by protocol"),
        ("requests_http3", "requests_total's split by protocol"),
    ];

    /// Every field of `MetricsSnapshot` is exported here, or listed in
    /// [`NOT_EXPORTED`] with its reason: the mapping is written by hand, and
    /// a field added to the snapshot alone reaches no dashboard.
    #[test]
    fn every_snapshot_field_is_exported_or_said_why_not() {
        let metrics = include_str!("../metrics.rs");
        let start = metrics
            .find("pub struct MetricsSnapshot {")
            .expect("the snapshot struct");
        let body = &metrics[start..];
        let body = &body[..body.find("\n}").expect("its end")];
        // The code here, comments left out.
        let here: String = include_str!("pool.rs")
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect();
        let reads = |field: &str| {
            here.match_indices(&format!(".{field}")).any(|(at, found)| {
                let next = here[at + found.len()..].chars().next();
                !next.is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
            })
        };
        let mut missing = Vec::new();
        for line in body.lines().map(str::trim) {
            let Some(field) = line
                .strip_prefix("pub ")
                .and_then(|rest| rest.split_once(':'))
                .map(|(name, _)| name)
            else {
                continue;
            };
            let used = reads(field);
            let excused = NOT_EXPORTED.iter().any(|(name, _)| *name == field);
            assert!(!(used && excused), "{field} is exported and excused");
            if !used && !excused {
                missing.push(field);
            }
        }
        assert!(
            missing.is_empty(),
            "snapshot fields exported nowhere: {missing:?}"
        );
    }
}
