//! Turns what a run measured into the report's figures.
//!
//! All the arithmetic that is not a percentile lives here: differences of the pool's counters
//! from the baseline, rates over the measured time, the corrections that distinguish a closed
//! loop from an open one, and memory per long poll.

use std::time::Duration;

use super::args::{BenchArgs, Load, Model, Stop};
use super::histograms::Histograms;
use super::json::{
    AllocationReport, BenchReport, ByVersion, FirstRequestsReport, LoadReport, LongPollReport,
    OpenLoopReport, ProcessReport, TlsReport, SCHEMA_VERSION,
};
use super::limits::Limits;
use super::longpoll::PeakMemory;
use super::open::Schedule;
use super::pool::PoolReading;
use super::sampler::Sampled;
use super::stats::{mib, millis, per_second, ratio, MeanMax, Percentiles};
use super::targets_file::TargetReport;

/// Everything a run produced, before it is turned into a report.
#[derive(Debug)]
pub struct RunOutcome {
    pub sampled: Sampled,
    /// The pool's counters after background drains settled.
    pub settled: PoolReading,
    /// The pool's counters once the clients were built, before any connection opened: the
    /// baseline of the connection counters (see [`connection_counters`]).
    pub clients_built: PoolReading,
    /// Open loop only.
    pub schedule: Option<Schedule>,
    /// Long polls only.
    pub peak: Option<PeakMemory>,
    /// The closed loop only: each slot's first request.
    pub first: Option<FirstRequestsReport>,
    /// Ctrl-C stopped the run early.
    pub interrupted: bool,
}

/// Facts about the run that are not measurements.
#[derive(Debug, Clone)]
pub struct RunSetup<'a> {
    pub args: &'a BenchArgs,
    pub load: Load,
    pub urls: Vec<String>,
    /// `in-process`, `process` or `external`.
    pub server: &'static str,
    pub threads: u64,
    pub cores: u64,
    pub limits: Limits,
    pub request_headers: u64,
    /// Allocations and bytes of building one request, when allocations are counted.
    pub request_construction: Option<(f64, f64)>,
    /// `--targets`: the methods (`GET+POST`) and the entries.
    pub targets: Option<(String, Vec<TargetReport>)>,
}

/// Computes the report.
pub fn report(setup: RunSetup<'_>, outcome: &RunOutcome) -> BenchReport {
    let RunSetup {
        args,
        load,
        urls,
        server,
        threads,
        cores,
        limits,
        request_headers,
        request_construction,
        targets,
    } = setup;
    let s = &outcome.sampled;
    let total = &s.total;
    let requests = total.requests();
    let elapsed = s.measured;
    let pool = s.last.since(&s.baseline);
    let opened = connection_counters(&s.last, &outcome.clients_built);
    let drains = outcome.settled.since(&s.baseline);
    // Connections that could serve measured requests: those open when measurement started
    // (warmup) plus those established during it.
    let connections_used = s.baseline.connections_open + pool.connections_established;
    // The library's own high-water mark is exact, but it covers the client's whole life; use it
    // only when that life is the measured time (one client, no warmup).
    let exact_max = if load.clients == 1 && load.warmup.is_zero() {
        s.last.connections_open_max
    } else {
        0
    };
    let connections_open_max = exact_max.max(s.connections_open.max as u64);
    let delay = match load.model {
        Model::LongPoll { delay } => Some(delay),
        _ => None,
    };
    BenchReport {
        schema_version: SCHEMA_VERSION,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        url: urls.first().cloned().unwrap_or_default(),
        urls,
        method: targets
            .as_ref()
            .map_or_else(|| args.method.clone(), |(methods, _)| methods.clone()),
        targets: targets.map(|(_, entries)| entries).unwrap_or_default(),
        // What the pool actually spoke during the measurement (ALPN may pick either).
        protocol: pool.protocol().to_owned(),
        scenario: match load.model {
            Model::LongPoll { .. } => "longpoll",
            _ => "requests",
        }
        .to_owned(),
        server: server.to_owned(),
        load: LoadReport {
            model: load.model_name().to_owned(),
            clients: load.clients,
            concurrency: load.concurrency,
            max_connections_per_host: load.max_connections_per_host,
            rate: match load.model {
                Model::Open { rate } => Some(rate),
                _ => None,
            },
            delay_s: delay.map(|d| d.as_secs_f64()),
            stop: match load.stop {
                Stop::Requests(_) => "requests",
                Stop::Duration(_) => "duration",
                Stop::OneRound => "one-round",
            }
            .to_owned(),
        },
        threads,
        cores,
        warmup_s: load.warmup.as_secs_f64(),
        duration_s: elapsed.as_secs_f64(),
        requests,
        responses: total.responses(),
        errors: total.error_count(),
        error_rate: ratio(total.error_count(), requests),
        error_messages: total.messages.clone(),
        interrupted: outcome.interrupted,
        errors_by_kind: total
            .errors
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(kind, n)| ((*kind).to_owned(), *n))
            .collect(),
        status_codes: total
            .statuses
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code.to_string(), *n))
            .collect(),
        // Failures are not throughput: a refused connection fails faster than any server answers.
        rps: per_second(total.responses(), elapsed),
        bytes_read: total.body_bytes,
        bytes_per_s: per_second(total.body_bytes, elapsed),
        latency_headers_ms: Percentiles::from_micros(&total.to_headers),
        latency_last_byte_ms: Percentiles::from_micros(&total.to_last_byte),
        connections_current: MeanMax {
            mean: s.connections_open.mean,
            max: connections_open_max as f64,
        },
        connections_open_max,
        connections_established: opened.connections_established,
        connections_established_by_version: ByVersion {
            http1: opened.connections_established_http1,
            http2: opened.connections_established_http2,
            http3: opened.connections_established_http3,
        },
        tls_handshakes: opened.tls_handshakes,
        tls_resumed: opened.tls_resumed,
        connect_attempts_current: s.connect_attempts,
        connect_failures: opened.connect_failures,
        requests_per_connection: ratio(requests, connections_used),
        requests_queued: s.requests_queued,
        queue_time_ms: s.queue_time_ms,
        drains_completed: drains.drains_completed,
        drains_aborted: drains.drains_aborted,
        stale_retries: pool.stale_retries,
        // The seed's TLS rows, when the run spoke TLS: every open connection is a session.
        tls: (s.last.tls_handshakes > 0).then(|| TlsReport {
            handshakes_total: opened.tls_handshakes,
            resumed: opened.tls_resumed,
            handshakes_current: s.tls_handshakes_current,
            sessions_active: MeanMax {
                mean: s.connections_open.mean,
                max: connections_open_max as f64,
            },
            handshake_duration_ms: MeanMax {
                mean: if opened.tls_handshake_count == 0 {
                    0.0
                } else {
                    opened.tls_handshake_ms_total / opened.tls_handshake_count as f64
                },
                max: s.last.tls_handshake_max_ms,
            },
        }),
        process: ProcessReport {
            cpu_max_pct: s.cpu_pct.max,
            cpu_mean_pct: s.cpu_mean_pct,
            rss_max_mb: mib(s.rss_max_bytes),
            private_max_mb: mib(s.private_max_bytes),
            includes_server: server == "in-process",
            cpu_seconds: s.cpu_mean_pct / 100.0 * cores as f64 * elapsed.as_secs_f64(),
        },
        open_loop: outcome
            .schedule
            .map(|schedule| open_loop(&schedule, load, outcome, elapsed)),
        longpoll: outcome.peak.zip(delay).map(|(peak, delay)| LongPollReport {
            delay_s: delay.as_secs_f64(),
            target_in_flight: load.in_flight(),
            peak_in_flight: peak.peak_in_flight,
            wake_up_ms: Percentiles::from_micros(&total.to_last_byte).minus(millis(delay)),
            rss_before_mb: mib(peak.base.rss_before),
            rss_peak_mb: mib(peak.rss_at_peak),
            rss_high_water_mb: mib(peak.rss_high_water),
            memory_per_request_bytes: peak.per_request(),
            heap_per_connection_bytes: peak.heap_per_connection(),
            heap_per_request_bytes: peak.heap_per_request(),
            server_addresses: peak.server_addresses,
        }),
        first_requests: outcome.first,
        allocations: s.allocations.map(|counts| AllocationReport {
            allocations: counts.allocations,
            bytes: counts.bytes,
            allocations_per_request: ratio(counts.allocations, requests),
            bytes_per_request: ratio(counts.bytes, requests),
            request_headers,
            request_construction_allocations: request_construction.map_or(0.0, |c| c.0),
            request_construction_bytes: request_construction.map_or(0.0, |c| c.1),
        }),
        limits,
        timeline: s.timeline.clone(),
        config: args.clone(),
        thresholds: Vec::new(),
        // Serializing into memory fails only on a histogram too large to encode; the report is
        // still worth writing then, just not mergeable.
        histograms: Histograms::of(total).ok(),
        agents: 1,
    }
}

/// The connection counters (established, by version, connect failures, TLS handshakes and
/// their time) from `clients_built` to `last`: every connection the run's clients opened,
/// including the long polls' opening phase and the warmup. Counted from the measurement's start
/// instead, as they once were, a long-poll run of 1,000 open connections reported 0 established:
/// its connections all open before measuring starts.
fn connection_counters(last: &PoolReading, clients_built: &PoolReading) -> PoolReading {
    last.since(clients_built)
}

fn open_loop(
    schedule: &Schedule,
    load: Load,
    outcome: &RunOutcome,
    elapsed: Duration,
) -> OpenLoopReport {
    let total = &outcome.sampled.total;
    OpenLoopReport {
        rate: match load.model {
            Model::Open { rate } => rate,
            _ => 0.0,
        },
        intended: schedule.intended,
        sent: schedule.sent,
        sent_per_s: per_second(schedule.sent, elapsed),
        not_sent: schedule.intended.saturating_sub(schedule.sent),
        late: total.late(schedule.late_after()),
        late_after_ms: millis(schedule.late_after()),
        unfinished: schedule.sent.saturating_sub(total.requests()),
        in_flight_cap: schedule.cap,
        max_in_flight: schedule.max_in_flight,
        send_lag_ms: Percentiles::from_micros(&total.send_lag),
        latency_corrected_headers_ms: Percentiles::from_micros(&total.corrected_to_headers),
        latency_corrected_last_byte_ms: Percentiles::from_micros(&total.corrected_to_last_byte),
    }
}
