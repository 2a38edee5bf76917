//! The clients' own metrics, summed over all clients of a run.
//!
//! Each `Client` counts what its pool does (`Client::metrics`). With `--clients N` there are N
//! pools, and the figures people compare (current connections, connect attempts, queue time) are
//! totals over them, like the process-wide event counters of the .NET benchmark.

use courier::HistogramSnapshot;

use super::client::BenchClient;

/// A reading of every client's metrics, added up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolReading {
    pub connections_open: u64,
    /// Sum of each client's high-water mark (exact with one client, an upper bound otherwise).
    pub connections_open_max: u64,
    pub connections_established: u64,
    pub connect_attempts_current: u64,
    pub connect_failures: u64,
    pub requests_active: u64,
    pub requests_queued: u64,
    pub requests_total: u64,
    pub drains_completed: u64,
    pub drains_aborted: u64,
    pub stale_retries: u64,
    /// Requests sent over each protocol (attempts), total.
    pub requests_http1: u64,
    pub requests_http2: u64,
    pub requests_http3: u64,
    /// Connections established over each protocol, total.
    pub connections_established_http1: u64,
    pub connections_established_http2: u64,
    pub connections_established_http3: u64,
    /// TLS handshakes completed / resumed, total; in progress now.
    pub tls_handshakes: u64,
    pub tls_resumed: u64,
    pub tls_handshakes_current: u64,
    /// Handshake time: (count, total ms) for means, and the longest, in ms.
    pub tls_handshake_count: u64,
    pub tls_handshake_ms_total: f64,
    pub tls_handshake_max_ms: f64,
    /// Requests that waited for a connection, total.
    pub queued_total: u64,
    /// Their total time in the queue, in ms (estimated as count × mean per client).
    pub queued_ms_total: f64,
}

impl PoolReading {
    /// Reads and adds up the metrics of `clients`.
    pub fn read(clients: &[BenchClient]) -> Self {
        let mut total = Self::default();
        for client in clients {
            let m = client.metrics();
            total.connections_open += m.connections_open;
            total.connections_open_max += m.connections_open_max;
            total.connections_established += m.connections_established;
            total.connect_attempts_current += m.connect_attempts_current;
            total.connect_failures += m.connect_failures;
            total.requests_active += m.requests_active;
            total.requests_queued += m.requests_queued;
            total.requests_total += m.requests_total;
            total.drains_completed += m.drains_completed;
            total.drains_aborted += m.drains_aborted;
            total.stale_retries += m.stale_retries;
            total.requests_http1 += m.requests_http1;
            total.requests_http2 += m.requests_http2;
            total.requests_http3 += m.requests_http3;
            total.connections_established_http1 += m.connections_established_http1;
            total.connections_established_http2 += m.connections_established_http2;
            total.connections_established_http3 += m.connections_established_http3;
            total.tls_handshakes += m.tls_handshakes;
            total.tls_resumed += m.tls_resumed;
            total.tls_handshakes_current += m.tls_handshakes_current;
            total.tls_handshake_count += m.tls_handshake_duration.count();
            total.tls_handshake_ms_total += sum_ms(&m.tls_handshake_duration);
            total.tls_handshake_max_ms = total
                .tls_handshake_max_ms
                .max(m.tls_handshake_duration.max().as_secs_f64() * 1000.0);
            total.queued_total += m.time_in_queue.count();
            total.queued_ms_total += sum_ms(&m.time_in_queue);
        }
        total
    }

    /// The protocol requests went over: `HTTP/1.1`, `HTTP/2`, or both when the pool used both;
    /// `HTTP/3` when every request went over it.
    pub fn protocol(&self) -> &'static str {
        if self.requests_http3 > 0 && self.requests_http1 + self.requests_http2 == 0 {
            return "HTTP/3";
        }
        match (self.requests_http1 > 0, self.requests_http2 > 0) {
            (false, true) => "HTTP/2",
            (true, true) => "HTTP/1.1+HTTP/2",
            _ => "HTTP/1.1",
        }
    }

    /// (count, total ms) of queue time, for per-interval means.
    pub fn queue_sum(&self) -> (u64, f64) {
        (self.queued_total, self.queued_ms_total)
    }

    /// Counters that grew from `earlier` to `self`; gauges are taken from `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            connections_established: self
                .connections_established
                .saturating_sub(earlier.connections_established),
            connect_failures: self
                .connect_failures
                .saturating_sub(earlier.connect_failures),
            requests_total: self.requests_total.saturating_sub(earlier.requests_total),
            drains_completed: self
                .drains_completed
                .saturating_sub(earlier.drains_completed),
            drains_aborted: self.drains_aborted.saturating_sub(earlier.drains_aborted),
            stale_retries: self.stale_retries.saturating_sub(earlier.stale_retries),
            requests_http1: self.requests_http1.saturating_sub(earlier.requests_http1),
            requests_http2: self.requests_http2.saturating_sub(earlier.requests_http2),
            requests_http3: self.requests_http3.saturating_sub(earlier.requests_http3),
            connections_established_http1: self
                .connections_established_http1
                .saturating_sub(earlier.connections_established_http1),
            connections_established_http2: self
                .connections_established_http2
                .saturating_sub(earlier.connections_established_http2),
            connections_established_http3: self
                .connections_established_http3
                .saturating_sub(earlier.connections_established_http3),
            tls_handshakes: self.tls_handshakes.saturating_sub(earlier.tls_handshakes),
            tls_resumed: self.tls_resumed.saturating_sub(earlier.tls_resumed),
            tls_handshake_count: self
                .tls_handshake_count
                .saturating_sub(earlier.tls_handshake_count),
            tls_handshake_ms_total: (self.tls_handshake_ms_total - earlier.tls_handshake_ms_total)
                .max(0.0),
            queued_total: self.queued_total.saturating_sub(earlier.queued_total),
            queued_ms_total: (self.queued_ms_total - earlier.queued_ms_total).max(0.0),
            ..*self
        }
    }
}

/// Total of a histogram in ms. The snapshot exposes count and (whole-µs) mean, not the sum, so
/// this is count × mean: off by less than one µs per value. (If the library ever exposes the
/// exact sum, use it here.)
fn sum_ms(h: &HistogramSnapshot) -> f64 {
    h.count() as f64 * h.mean().as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_of_counters_keep_current_gauges() {
        let earlier = PoolReading {
            connections_open: 5,
            connections_established: 10,
            requests_total: 100,
            queued_total: 4,
            queued_ms_total: 8.0,
            ..PoolReading::default()
        };
        let now = PoolReading {
            connections_open: 7,
            connections_established: 12,
            requests_total: 250,
            queued_total: 6,
            queued_ms_total: 20.0,
            ..PoolReading::default()
        };
        let d = now.since(&earlier);
        assert_eq!(d.connections_open, 7);
        assert_eq!(d.connections_established, 2);
        assert_eq!(d.requests_total, 150);
        assert_eq!(d.queue_sum(), (2, 12.0));
    }

    #[test]
    fn protocol_from_the_requests_sent() {
        let h1 = PoolReading {
            requests_http1: 3,
            ..PoolReading::default()
        };
        let h2 = PoolReading {
            requests_http2: 3,
            ..PoolReading::default()
        };
        let both = PoolReading {
            requests_http1: 1,
            requests_http2: 1,
            ..PoolReading::default()
        };
        assert_eq!(h1.protocol(), "HTTP/1.1");
        assert_eq!(h2.protocol(), "HTTP/2");
        assert_eq!(both.protocol(), "HTTP/1.1+HTTP/2");
        assert_eq!(PoolReading::default().protocol(), "HTTP/1.1");
    }

    #[test]
    fn reads_unused_clients_as_zero() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let reading = rt.block_on(async {
            let clients = [
                BenchClient::Plain(courier::Client::new()),
                BenchClient::Plain(courier::Client::new()),
            ];
            PoolReading::read(&clients)
        });
        assert_eq!(reading, PoolReading::default());
    }
}
