//! What the pool does, counted with atomics.
//!
//! Recording is a relaxed atomic add (or a `fetch_max`) and never takes a lock,
//! so it costs the same with one request in flight or 100,000. Call
//! [`Client::metrics`](crate::Client::metrics) for a [`MetricsSnapshot`].
//!
//! Names in the docs follow the OpenTelemetry HTTP client conventions
//! (`http.client.open_connections`, `http.client.request.time_in_queue`, …) so a
//! later exporter can map them one to one.

mod histogram;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub(crate) use histogram::AtomicHistogram;
pub use histogram::HistogramSnapshot;

/// Live counters shared by a client's pool, its connections and its requests.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    pub(crate) connections_open: Gauge,
    pub(crate) connections_established: Counter,
    pub(crate) connect_attempts_current: Gauge,
    pub(crate) connect_attempts_total: Counter,
    pub(crate) connect_failures: Counter,
    pub(crate) requests_active: Gauge,
    pub(crate) requests_total: Counter,
    pub(crate) requests_failed: Counter,
    pub(crate) requests_queued: Gauge,
    pub(crate) drains_completed: Counter,
    pub(crate) drains_aborted: Counter,
    pub(crate) stale_retries: Counter,
    pub(crate) refused_stream_retries: Counter,
    pub(crate) upgrades: Counter,
    pub(crate) dns_lookups: Counter,
    pub(crate) dns_failures: Counter,
    /// The connection and request counts of each protocol, by its label.
    protocols: [ByProtocol; Label::COUNT],
    pub(crate) tls_handshakes_current: Gauge,
    pub(crate) tls_handshake_failures: Counter,
    pub(crate) tls_early_data: Counter,
    pub(crate) tls_early_data_accepted: Counter,
    pub(crate) tls_early_data_rejected: Counter,
    pub(crate) time_in_queue: AtomicHistogram,
    pub(crate) request_duration: AtomicHistogram,
    pub(crate) connect_duration: AtomicHistogram,
    pub(crate) dns_duration: AtomicHistogram,
    /// How long connections lived, from established to closed.
    pub(crate) connection_duration: AtomicHistogram,
}

/// A protocol as the metrics name it: the pool counts connections and
/// requests under the label each connection reports, knowing nothing of
/// what the label stands for. A fixed table, not a map, so that counting
/// stays one atomic add with no lookup and no lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(usize);

impl Label {
    /// HTTP/1.1.
    pub(crate) const HTTP1: Label = Label(0);
    /// HTTP/2.
    pub(crate) const HTTP2: Label = Label(1);
    /// HTTP/3 (feature `http3`).
    pub(crate) const HTTP3: Label = Label(2);
    const COUNT: usize = 3;
    /// Every label, in the table's order.
    pub(crate) const ALL: [Label; Label::COUNT] = [Label::HTTP1, Label::HTTP2, Label::HTTP3];

    /// Its place in the table (for per-label arrays kept elsewhere).
    pub(crate) fn index(self) -> usize {
        self.0
    }
}

/// One protocol's share of the client's connections and requests.
#[derive(Debug, Default)]
pub(crate) struct ByProtocol {
    pub(crate) connections_open: Gauge,
    /// Connections without a request (exclusive: on the idle stack;
    /// shared: no slot in use); derived by the pool on unlock.
    pub(crate) connections_idle: Gauge,
    pub(crate) connections_established: Counter,
    pub(crate) requests: Counter,
    /// Slots in use on shared connections (HTTP/2: streams); derived by the
    /// pool on unlock.
    pub(crate) slots_active: Gauge,
    /// TLS handshakes completed for connections of this protocol (over
    /// TCP by ALPN's outcome; QUIC's are HTTP/3's); the client's totals
    /// are their sums.
    pub(crate) tls_handshakes: Counter,
    pub(crate) tls_resumed: Counter,
    pub(crate) tls_handshake_duration: AtomicHistogram,
}

impl Metrics {
    /// The counts of the protocol labelled `label`.
    pub(crate) fn protocol(&self, label: Label) -> &ByProtocol {
        &self.protocols[label.0]
    }

    pub(crate) fn snapshot(&self) -> MetricsSnapshot {
        let open = self.connections_open.get();
        let (h1, h2) = (self.protocol(Label::HTTP1), self.protocol(Label::HTTP2));
        let h3 = self.protocol(Label::HTTP3);
        let (open_http1, open_http2) = (h1.connections_open.get(), h2.connections_open.get());
        let (idle_http1, idle_http2) = (h1.connections_idle.get(), h2.connections_idle.get());
        let (open_http3, idle_http3) = (h3.connections_open.get(), h3.connections_idle.get());
        let tls_duration = |p: &ByProtocol| p.tls_handshake_duration.snapshot();
        let mut tls_handshake_duration = tls_duration(h1);
        tls_handshake_duration.merge(&tls_duration(h2));
        tls_handshake_duration.merge(&tls_duration(h3));
        let tls_handshakes = |p: &ByProtocol| p.tls_handshakes.get();
        let tls_resumed = |p: &ByProtocol| p.tls_resumed.get();
        let idle: u64 = self
            .protocols
            .iter()
            .map(|p| p.connections_idle.get())
            .sum();
        MetricsSnapshot {
            connections_open: open,
            connections_idle: idle,
            // The two gauges are read one after the other, so clamp the
            // momentary skew instead of reporting a wrapped-around number.
            connections_active: open.saturating_sub(idle),
            connections_open_max: self.connections_open.max(),
            connections_established: self.connections_established.get(),
            connect_attempts_current: self.connect_attempts_current.get(),
            connect_attempts_total: self.connect_attempts_total.get(),
            connect_failures: self.connect_failures.get(),
            requests_active: self.requests_active.get(),
            requests_total: self.requests_total.get(),
            requests_failed: self.requests_failed.get(),
            requests_queued: self.requests_queued.get(),
            drains_completed: self.drains_completed.get(),
            drains_aborted: self.drains_aborted.get(),
            stale_retries: self.stale_retries.get(),
            refused_stream_retries: self.refused_stream_retries.get(),
            upgrades: self.upgrades.get(),
            dns_lookups: self.dns_lookups.get(),
            dns_failures: self.dns_failures.get(),
            connections_open_http1: open_http1,
            connections_open_http2: open_http2,
            connections_idle_http1: idle_http1,
            connections_idle_http2: idle_http2,
            connections_active_http1: open_http1.saturating_sub(idle_http1),
            connections_active_http2: open_http2.saturating_sub(idle_http2),
            connections_established_http1: h1.connections_established.get(),
            connections_established_http2: h2.connections_established.get(),
            requests_http1: h1.requests.get(),
            requests_http2: h2.requests.get(),
            http2_streams_active: h2.slots_active.get(),
            connections_open_http3: open_http3,
            connections_idle_http3: idle_http3,
            connections_active_http3: open_http3.saturating_sub(idle_http3),
            connections_established_http3: h3.connections_established.get(),
            requests_http3: h3.requests.get(),
            http3_streams_active: h3.slots_active.get(),
            tls_handshakes: tls_handshakes(h1) + tls_handshakes(h2) + tls_handshakes(h3),
            tls_handshakes_http1: tls_handshakes(h1),
            tls_handshakes_http2: tls_handshakes(h2),
            tls_handshakes_http3: tls_handshakes(h3),
            tls_handshakes_current: self.tls_handshakes_current.get(),
            tls_handshakes_current_max: self.tls_handshakes_current.max(),
            tls_handshake_failures: self.tls_handshake_failures.get(),
            tls_resumed: tls_resumed(h1) + tls_resumed(h2) + tls_resumed(h3),
            tls_resumed_http1: tls_resumed(h1),
            tls_resumed_http2: tls_resumed(h2),
            tls_resumed_http3: tls_resumed(h3),
            tls_early_data: self.tls_early_data.get(),
            tls_early_data_accepted: self.tls_early_data_accepted.get(),
            tls_early_data_rejected: self.tls_early_data_rejected.get(),
            tls_handshake_duration,
            tls_handshake_duration_http1: tls_duration(h1),
            tls_handshake_duration_http2: tls_duration(h2),
            tls_handshake_duration_http3: tls_duration(h3),
            time_in_queue: self.time_in_queue.snapshot(),
            request_duration: self.request_duration.snapshot(),
            connect_duration: self.connect_duration.snapshot(),
            connection_duration: self.connection_duration.snapshot(),
            dns_duration: self.dns_duration.snapshot(),
        }
    }
}

/// A point-in-time copy of a client's metrics.
///
/// Gauges (`connections_open`, `requests_active`, …) are the value now; counters
/// (`connections_established`, `requests_total`, …) count since the client was
/// built; `connections_open_max` is the high-water mark of open connections.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// `http.client.open_connections`: TCP connections open now (idle + active).
    pub connections_open: u64,
    /// Open connections with nothing in flight (HTTP/1.1 in the idle stack,
    /// HTTP/2 with no open stream).
    pub connections_idle: u64,
    /// Open connections in use: an HTTP/1.1 connection leased to a request (or
    /// draining a body), an HTTP/2 connection with at least one open stream.
    pub connections_active: u64,
    /// The most connections that were open at once.
    pub connections_open_max: u64,
    /// Connections established (TCP connected and HTTP handshake done), total.
    pub connections_established: u64,
    /// Connection attempts in progress now.
    pub connect_attempts_current: u64,
    /// Connection attempts started, total.
    pub connect_attempts_total: u64,
    /// Connection attempts that failed (DNS, refused, timeout), total.
    pub connect_failures: u64,
    /// `http.client.active_requests`: requests sent and not yet answered with a response head.
    pub requests_active: u64,
    /// Requests started, total.
    pub requests_total: u64,
    /// Requests that ended in an error before a response head, total.
    pub requests_failed: u64,
    /// Requests waiting for a connection now.
    pub requests_queued: u64,
    /// Unread bodies drained to their end in the background so the connection was reused.
    pub drains_completed: u64,
    /// Unread bodies whose connection was closed instead (over the drain size or time limit, or broken).
    pub drains_aborted: u64,
    /// Requests retried on a new connection because a reused one turned out to be closed.
    pub stale_retries: u64,
    /// HTTP/2 requests retried on another connection because the server refused
    /// the stream unprocessed (GOAWAY past it, REFUSED_STREAM).
    pub refused_stream_retries: u64,
    /// Connections (HTTP/1.1: a `101`, a CONNECT's 2xx) and streams
    /// (HTTP/2: an extended CONNECT's 200) handed to
    /// [`Response::upgrade`](crate::Response::upgrade). An upgraded
    /// connection counts as open and active until it is dropped, and never
    /// serves a request again.
    pub upgrades: u64,
    /// DNS lookups made (one per new connection to a host name).
    pub dns_lookups: u64,
    /// DNS lookups that failed or found no address.
    pub dns_failures: u64,
    /// Open HTTP/1.1 connections.
    pub connections_open_http1: u64,
    /// Open HTTP/2 connections.
    pub connections_open_http2: u64,
    /// Idle HTTP/1.1 connections (in the idle stack).
    pub connections_idle_http1: u64,
    /// Idle HTTP/2 connections (no open stream).
    pub connections_idle_http2: u64,
    /// HTTP/1.1 connections leased to a request or draining a body.
    pub connections_active_http1: u64,
    /// HTTP/2 connections with at least one open stream.
    pub connections_active_http2: u64,
    /// HTTP/1.1 connections established, total.
    pub connections_established_http1: u64,
    /// HTTP/2 connections established, total.
    pub connections_established_http2: u64,
    /// Requests sent over HTTP/1.1 (each attempt counts).
    pub requests_http1: u64,
    /// Requests sent over HTTP/2 (each attempt counts).
    pub requests_http2: u64,
    /// HTTP/2 streams open now, over all connections.
    pub http2_streams_active: u64,
    /// Open HTTP/3 (QUIC) connections (always 0 without feature `http3`).
    pub connections_open_http3: u64,
    /// Idle HTTP/3 connections (no open request stream).
    pub connections_idle_http3: u64,
    /// HTTP/3 connections with at least one open request stream.
    pub connections_active_http3: u64,
    /// HTTP/3 connections established, total.
    pub connections_established_http3: u64,
    /// Requests sent over HTTP/3 (each attempt counts).
    pub requests_http3: u64,
    /// HTTP/3 request streams open now, over all connections.
    pub http3_streams_active: u64,
    /// TLS handshakes completed, total (full and resumed; over TCP and
    /// QUIC): the sum of `tls_handshakes_http{1,2,3}`.
    pub tls_handshakes: u64,
    /// TLS handshakes completed over TCP whose ALPN chose HTTP/1.1 (or
    /// nothing), total.
    pub tls_handshakes_http1: u64,
    /// TLS handshakes completed over TCP whose ALPN chose HTTP/2, total.
    pub tls_handshakes_http2: u64,
    /// QUIC (HTTP/3) handshakes completed, total. A 0-RTT connection's
    /// counts when its handshake completes, after its early requests went.
    pub tls_handshakes_http3: u64,
    /// TLS handshakes in progress now.
    pub tls_handshakes_current: u64,
    /// The most TLS handshakes that were in progress at once.
    pub tls_handshakes_current_max: u64,
    /// TLS handshakes that failed (certificate, protocol), total.
    pub tls_handshake_failures: u64,
    /// TLS handshakes that resumed an earlier session, total: the sum of
    /// `tls_resumed_http{1,2,3}`.
    pub tls_resumed: u64,
    /// TLS handshakes of HTTP/1.1 connections that resumed a session.
    pub tls_resumed_http1: u64,
    /// TLS handshakes of HTTP/2 connections that resumed a session.
    pub tls_resumed_http2: u64,
    /// QUIC handshakes that resumed a session (the server's `ServerHello`
    /// took a pre-shared key), with or without 0-RTT.
    pub tls_resumed_http3: u64,
    /// QUIC connections that sent requests in TLS early data (0-RTT, see
    /// `ClientBuilder::tls_early_data`) before their handshake completed,
    /// total; the server may still have refused it (the requests are then
    /// sent again).
    pub tls_early_data: u64,
    /// Of `tls_early_data`, the connections whose server took the early
    /// data once the handshake completed.
    pub tls_early_data_accepted: u64,
    /// Of `tls_early_data`, the connections whose handshake completed with
    /// the early data refused (the requests sent early were sent again).
    /// Those whose handshake never completed count in neither.
    pub tls_early_data_rejected: u64,
    /// TLS handshake duration (over TCP and QUIC): the merge of
    /// `tls_handshake_duration_http{1,2,3}`.
    pub tls_handshake_duration: HistogramSnapshot,
    /// TLS handshake duration of HTTP/1.1 connections.
    pub tls_handshake_duration_http1: HistogramSnapshot,
    /// TLS handshake duration of HTTP/2 connections.
    pub tls_handshake_duration_http2: HistogramSnapshot,
    /// QUIC handshake duration, from the dial to the handshake's end (the
    /// server's Finished read, the client's sent). For a 0-RTT connection
    /// that is still the end of the whole handshake, though its early
    /// requests went out at the dial.
    pub tls_handshake_duration_http3: HistogramSnapshot,
    /// `http.client.request.time_in_queue`: time requests spent waiting for a connection (only those that waited).
    pub time_in_queue: HistogramSnapshot,
    /// `http.client.request.duration`: time from send to the response head.
    pub request_duration: HistogramSnapshot,
    /// Time to establish a connection (DNS + TCP + HTTP handshake).
    pub connect_duration: HistogramSnapshot,
    /// How long closed connections had been open.
    pub connection_duration: HistogramSnapshot,
    /// `dns.lookup.duration`.
    pub dns_duration: HistogramSnapshot,
}

impl MetricsSnapshot {
    /// Adds `other` into `self`: counters and histograms add up, high-water
    /// marks take the larger value, and gauges (values "now") add up only when
    /// `gauges` is true. Used to report one named client whose pool rotates as
    /// the sum of its pools.
    pub(crate) fn accumulate(&mut self, other: &MetricsSnapshot, gauges: bool) {
        macro_rules! add {
            ($($f:ident),*) => { $( self.$f += other.$f; )* };
        }
        macro_rules! max {
            ($($f:ident),*) => { $( self.$f = self.$f.max(other.$f); )* };
        }
        add!(
            connections_established,
            connect_attempts_total,
            connect_failures,
            requests_total,
            requests_failed,
            drains_completed,
            drains_aborted,
            stale_retries,
            refused_stream_retries,
            upgrades,
            dns_lookups,
            dns_failures,
            connections_established_http1,
            connections_established_http2,
            connections_established_http3,
            requests_http1,
            requests_http2,
            requests_http3,
            tls_handshakes,
            tls_handshakes_http1,
            tls_handshakes_http2,
            tls_handshakes_http3,
            tls_handshake_failures,
            tls_resumed,
            tls_resumed_http1,
            tls_resumed_http2,
            tls_resumed_http3,
            tls_early_data,
            tls_early_data_accepted,
            tls_early_data_rejected
        );
        max!(connections_open_max, tls_handshakes_current_max);
        if gauges {
            add!(
                connections_open,
                connections_idle,
                connections_active,
                connect_attempts_current,
                requests_active,
                requests_queued,
                connections_open_http1,
                connections_open_http2,
                connections_idle_http1,
                connections_idle_http2,
                connections_active_http1,
                connections_active_http2,
                connections_open_http3,
                connections_idle_http3,
                connections_active_http3,
                http2_streams_active,
                http3_streams_active,
                tls_handshakes_current
            );
        }
        self.tls_handshake_duration
            .merge(&other.tls_handshake_duration);
        self.tls_handshake_duration_http1
            .merge(&other.tls_handshake_duration_http1);
        self.tls_handshake_duration_http2
            .merge(&other.tls_handshake_duration_http2);
        self.tls_handshake_duration_http3
            .merge(&other.tls_handshake_duration_http3);
        self.time_in_queue.merge(&other.time_in_queue);
        self.request_duration.merge(&other.request_duration);
        self.connect_duration.merge(&other.connect_duration);
        self.connection_duration.merge(&other.connection_duration);
        self.dns_duration.merge(&other.dns_duration);
    }

    /// The same snapshot with every gauge at zero (a pool that is gone).
    pub(crate) fn without_gauges(&self) -> MetricsSnapshot {
        let mut s = self.clone();
        s.connections_open = 0;
        s.connections_idle = 0;
        s.connections_active = 0;
        s.connect_attempts_current = 0;
        s.requests_active = 0;
        s.requests_queued = 0;
        s.connections_open_http1 = 0;
        s.connections_open_http2 = 0;
        s.connections_idle_http1 = 0;
        s.connections_idle_http2 = 0;
        s.connections_active_http1 = 0;
        s.connections_active_http2 = 0;
        s.http2_streams_active = 0;
        s.connections_open_http3 = 0;
        s.connections_idle_http3 = 0;
        s.connections_active_http3 = 0;
        s.http3_streams_active = 0;
        s.tls_handshakes_current = 0;
        s
    }
}

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// A value that goes up and down, with its high-water mark.
#[derive(Debug, Default)]
pub(crate) struct Gauge {
    value: AtomicU64,
    max: AtomicU64,
}

impl Gauge {
    pub(crate) fn inc(&self) {
        let now = self.value.fetch_add(1, Relaxed) + 1;
        self.max.fetch_max(now, Relaxed);
    }
    pub(crate) fn dec(&self) {
        self.value.fetch_sub(1, Relaxed);
    }
    /// Moves the gauge by `to - from`: one contributor's share went from
    /// `from` to `to`.
    pub(crate) fn adjust(&self, from: u64, to: u64) {
        if to > from {
            let now = self.value.fetch_add(to - from, Relaxed) + (to - from);
            self.max.fetch_max(now, Relaxed);
        } else if from > to {
            self.value.fetch_sub(from - to, Relaxed);
        }
    }
    pub(crate) fn get(&self) -> u64 {
        self.value.load(Relaxed)
    }
    pub(crate) fn max(&self) -> u64 {
        self.max.load(Relaxed)
    }
}

/// Decrements a gauge when dropped, so cancelled futures cannot leave it high.
pub(crate) struct GaugeGuard<'a>(&'a Gauge);

impl<'a> GaugeGuard<'a> {
    pub(crate) fn new(gauge: &'a Gauge) -> Self {
        gauge.inc();
        GaugeGuard(gauge)
    }
}

impl Drop for GaugeGuard<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

// Log-linear buckets over microseconds: exact below 32 µs, then 16 buckets per
// power of two (≤ 6.25 % relative error), up to 2^40 µs (≈ 12.7 days).

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_tracks_high_water_mark() {
        let g = Gauge::default();
        g.inc();
        g.inc();
        g.dec();
        g.inc();
        g.inc();
        g.dec();
        assert_eq!(g.get(), 2);
        assert_eq!(g.max(), 3);
        {
            let _guard = GaugeGuard::new(&g);
            assert_eq!(g.get(), 3);
        }
        assert_eq!(g.get(), 2);
    }
}
