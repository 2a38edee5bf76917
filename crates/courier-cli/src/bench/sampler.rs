//! The sampler: a background task that turns a running benchmark into figures over time.
//!
//! Gauges (connections open, connect attempts, queued requests) only mean something over time,
//! so the clients' metrics are read every [`period`] and kept as mean/max. Every second the
//! sampler also folds the per-thread tallies into the run's total (keeping that second's
//! percentiles for the timeline), reads this process's CPU and memory, and shows the second
//! (`progress`). During the warmup it only shows progress; measurement starts with a baseline reading
//! of every counter, so figures are differences from it. Its own work is left out of allocation
//! counts.

use std::sync::Arc;
use std::time::Duration;

use super::client::BenchClient;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::format::group_thousands;
use super::json::TimelineSample;
use super::pacer::Pacer;
use super::plan::Clock;
use super::pool::PoolReading;
use super::procfs::{self, ProcSample};
use super::progress::{Frame, Progress};
use super::recorder::Recorder;
use super::stats::{interval_mean, mib, per_second, MeanMax, MeanMaxAcc, Percentiles, Tally};
use crate::alloc;
use crate::error::{CliError, Result};

/// A final interval shorter than this is merged into the previous second instead of becoming
/// a sample of its own, whose rate would be noise.
const SHORT_TAIL: Duration = Duration::from_millis(500);

/// How often gauges are read: 10 times a second normally; once a second with many clients,
/// where reading every pool's metrics starts to cost CPU the benchmark needs.
pub fn period(clients: usize) -> Duration {
    if clients <= 16 {
        Duration::from_millis(100)
    } else {
        Duration::from_secs(1)
    }
}

/// What the sampler needs.
pub struct SamplerConfig {
    pub clients: Vec<BenchClient>,
    pub recorder: Arc<Recorder>,
    pub clock: Clock,
    pub cores: u64,
    pub count_allocations: bool,
    pub progress: Progress,
    /// How the progress line shows the goal, e.g. `10 s` or `2,000 req`.
    pub goal: String,
    /// The open loop's schedule, for each second's target rate.
    pub pacer: Option<Pacer>,
}

/// What the sampler measured.
#[derive(Debug)]
pub struct Sampled {
    /// Every measured request's figures.
    pub total: Tally,
    pub timeline: Vec<TimelineSample>,
    /// Pool counters at the start of the measurement and at its end.
    pub baseline: PoolReading,
    pub last: PoolReading,
    pub connections_open: MeanMax,
    pub connect_attempts: MeanMax,
    pub tls_handshakes_current: MeanMax,
    pub requests_queued: MeanMax,
    /// Per-second mean queue time, then mean/max over the seconds.
    pub queue_time_ms: MeanMax,
    pub cpu_pct: MeanMax,
    /// Mean CPU over the whole measured time (not the mean of per-second figures).
    pub cpu_mean_pct: f64,
    pub rss_max_bytes: u64,
    pub private_max_bytes: u64,
    /// Measured wall time.
    pub measured: Duration,
    /// Allocation counts over the measured time, if counted.
    pub allocations: Option<alloc::Counts>,
}

/// A running sampler.
pub struct Sampler {
    stop: oneshot::Sender<Instant>,
    task: JoinHandle<Result<Sampled>>,
}

impl Sampler {
    /// Starts sampling on the current runtime.
    pub fn start(config: SamplerConfig) -> Self {
        let (stop, stopped) = oneshot::channel();
        // Without a warmup, measuring starts now: read the baseline before any worker runs, or
        // connections the first requests open would fall before it and go uncounted.
        let early = (config.clock.measure_start <= Instant::now())
            .then(|| alloc::uncounted(|| Series::start(&config, config.clock.measure_start)));
        let task = tokio::spawn(sample(config, stopped, early));
        Self { stop, task }
    }

    /// Ends the measurement at `end` (when the last measured request finished or the deadline
    /// passed) and returns the figures.
    pub async fn finish(self, end: Instant) -> Result<Sampled> {
        let _ = self.stop.send(end);
        self.task
            .await
            .map_err(|e| CliError::new(format!("the metrics sampler failed: {e}")))?
    }
}

async fn sample(
    config: SamplerConfig,
    mut stopped: oneshot::Receiver<Instant>,
    early: Option<Series>,
) -> Result<Sampled> {
    let clock = config.clock;
    let mut series = match early {
        Some(series) => series,
        None => {
            if let Some(ended) = warm_up(&config, &mut stopped).await {
                return ended;
            }
            alloc::uncounted(|| Series::start(&config, clock.measure_start))
        }
    };
    let period = period(config.clients.len());
    let per_second_ticks = (Duration::from_secs(1).as_millis() / period.as_millis()).max(1) as u64;
    let mut ticker = tokio::time::interval_at(clock.measure_start + period, period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            at = ticker.tick() => {
                // At the deadline, abandoned requests are closing their connections: a reading
                // then would describe the teardown, not the run. `finish` closes the last second.
                if clock.deadline.is_some_and(|deadline| at >= deadline) {
                    continue;
                }
                ticks += 1;
                let second = ticks % per_second_ticks == 0;
                alloc::uncounted(|| series.tick(&config, second))?;
            }
            end = &mut stopped => {
                let end = end.unwrap_or_else(|_| Instant::now());
                return alloc::uncounted(|| series.finish(&config, end));
            }
        }
    }
}

/// The warmup: progress only. Returns the (empty) figures if the run ended before measuring
/// began.
async fn warm_up(
    config: &SamplerConfig,
    stopped: &mut oneshot::Receiver<Instant>,
) -> Option<Result<Sampled>> {
    let clock = config.clock;
    let mut warm_requests = alloc::uncounted(|| PoolReading::read(&config.clients)).requests_total;
    let mut warm_tick = clock.start;
    while Instant::now() < clock.measure_start {
        let next = (warm_tick + Duration::from_secs(1)).min(clock.measure_start);
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            end = &mut *stopped => {
                // Ended before measuring started: nothing was measured.
                let end = end.unwrap_or_else(|_| Instant::now());
                let mut series = alloc::uncounted(|| Series::start(config, clock.measure_start));
                return Some(alloc::uncounted(|| {
                    series.finish(config, end.max(clock.measure_start))
                }));
            }
        }
        alloc::uncounted(|| {
            let total = PoolReading::read(&config.clients).requests_total;
            let rate = per_second(total.saturating_sub(warm_requests), next - warm_tick);
            config.progress.show(&format!(
                "warming up {:>5.1} s  {:>10} req/s",
                (next - clock.start).as_secs_f64(),
                group_thousands(&format!("{rate:.0}"))
            ));
            warm_requests = total;
        });
        warm_tick = next;
    }
    None
}

/// The sampler's running state during the measurement.
struct Series {
    measure_start: Instant,
    total: Tally,
    /// The current second's requests, then (after the second is sampled) kept as the previous
    /// second's, in case a short tail is merged into it.
    second: Tally,
    previous_second: Tally,
    timeline: Vec<TimelineSample>,
    baseline: PoolReading,
    /// Pool reading at the end of the last closed second (the start of the current one).
    at_second: PoolReading,
    /// Pool reading and process sample at the start of the last closed second, to re-open it.
    previous_from: (PoolReading, Option<ProcSample>),
    last: PoolReading,
    last_second_at: Instant,
    proc_start: Option<ProcSample>,
    proc_second: Option<ProcSample>,
    connections_open: MeanMaxAcc,
    connect_attempts: MeanMaxAcc,
    tls_handshakes_current: MeanMaxAcc,
    requests_queued: MeanMaxAcc,
    queue_time: MeanMaxAcc,
    cpu: MeanMaxAcc,
    rss_max: u64,
    private_max: u64,
}

impl Series {
    fn start(config: &SamplerConfig, measure_start: Instant) -> Self {
        let baseline = PoolReading::read(&config.clients);
        let proc_start = procfs::sample();
        if config.count_allocations {
            alloc::start();
        }
        Self {
            measure_start,
            total: Tally::new(),
            second: Tally::new(),
            previous_second: Tally::new(),
            timeline: Vec::new(),
            baseline,
            at_second: baseline,
            previous_from: (baseline, proc_start),
            last: baseline,
            last_second_at: measure_start,
            proc_start,
            proc_second: proc_start,
            connections_open: MeanMaxAcc::default(),
            connect_attempts: MeanMaxAcc::default(),
            tls_handshakes_current: MeanMaxAcc::default(),
            requests_queued: MeanMaxAcc::default(),
            queue_time: MeanMaxAcc::default(),
            cpu: MeanMaxAcc::default(),
            rss_max: proc_start.map_or(0, |p| p.rss_bytes),
            private_max: proc_start.map_or(0, |p| p.private_bytes),
        }
    }

    /// Reads the gauges; on whole seconds also closes the second.
    fn tick(&mut self, config: &SamplerConfig, whole_second: bool) -> Result<()> {
        self.read_gauges(config);
        if whole_second {
            let now = Instant::now();
            self.close_second(config, now, false)?;
            let sample = self.timeline.last().copied().unwrap_or_default();
            config.progress.frame(&Frame {
                elapsed_s: (now - self.measure_start).as_secs_f64(),
                goal: config.goal.clone(),
                rps: sample.rps,
                target_rps: sample.target_rps,
                errors_last: sample.errors,
                requests_last: sample.requests,
                errors_total: self.total.error_count(),
                requests_total: self.total.requests(),
                p50_ms: sample.p50_ms,
                p99_ms: sample.p99_ms,
                connections: sample.connections_open,
                in_flight: sample.requests_active,
                queued: sample.requests_queued,
            });
        }
        Ok(())
    }

    fn read_gauges(&mut self, config: &SamplerConfig) {
        let reading = PoolReading::read(&config.clients);
        self.connections_open
            .observe(reading.connections_open as f64);
        self.connect_attempts
            .observe(reading.connect_attempts_current as f64);
        self.tls_handshakes_current
            .observe(reading.tls_handshakes_current as f64);
        self.requests_queued.observe(reading.requests_queued as f64);
        self.last = reading;
    }

    /// Folds what was recorded since the last second into a timeline sample (or, for a short
    /// final tail, into the previous sample).
    fn close_second(&mut self, config: &SamplerConfig, now: Instant, last: bool) -> Result<()> {
        self.second.reset();
        config.recorder.drain_into(&mut self.second)?;
        self.total.add(&self.second)?;
        let interval = now.saturating_duration_since(self.last_second_at);
        let proc_now = procfs::sample();
        let merge = last && interval < SHORT_TAIL && !self.timeline.is_empty();
        let (from_reading, from_proc, window) = if merge {
            // Re-open the previous second and extend it to `now`.
            let previous = self.timeline.pop().unwrap_or_default();
            self.previous_second.add(&self.second)?;
            let window = interval + Duration::from_secs_f64(previous.interval_s);
            (self.previous_from.0, self.previous_from.1, window)
        } else {
            std::mem::swap(&mut self.previous_second, &mut self.second);
            self.previous_from = (self.at_second, self.proc_second);
            (self.at_second, self.proc_second, interval)
        };
        let tally = &self.previous_second;
        let reading = self.last;
        let latency = Percentiles::from_micros(&tally.to_last_byte);
        let cpu_pct = match (from_proc, proc_now) {
            (Some(a), Some(b)) => Some(procfs::cpu_percent(&a, &b, window, config.cores)),
            _ => None,
        };
        let queue_time_ms = interval_mean(from_reading.queue_sum(), reading.queue_sum());
        // The requests due in this window, per second (the pacer counts from the first due).
        let target_rps = config.pacer.as_ref().map(|pacer| {
            let to = now.saturating_duration_since(config.clock.start);
            let due = pacer.due_between(to.saturating_sub(window), to);
            per_second(due, window)
        });
        let sample = TimelineSample {
            t_s: (now - self.measure_start).as_secs_f64(),
            interval_s: window.as_secs_f64(),
            requests: tally.requests(),
            errors: tally.error_count(),
            rps: per_second(tally.responses(), window),
            target_rps,
            bytes_per_s: per_second(tally.body_bytes, window),
            p50_ms: latency.p50,
            p99_ms: latency.p99,
            connections_open: reading.connections_open,
            connect_attempts: reading.connect_attempts_current,
            requests_queued: reading.requests_queued,
            requests_active: reading.requests_active,
            connections_established: reading
                .connections_established
                .saturating_sub(from_reading.connections_established),
            queue_time_ms,
            cpu_pct,
            rss_mb: proc_now.map(|p| mib(p.rss_bytes)),
        };
        self.timeline.push(sample);
        if let Some(p) = proc_now {
            self.rss_max = self.rss_max.max(p.rss_bytes);
            self.private_max = self.private_max.max(p.private_bytes);
        }
        self.at_second = reading;
        self.proc_second = proc_now;
        self.last_second_at = now;
        Ok(())
    }

    fn finish(&mut self, config: &SamplerConfig, end: Instant) -> Result<Sampled> {
        let allocations = config.count_allocations.then(alloc::stop);
        // With a deadline, the last regular reading is the last one taken during the run.
        if config.clock.deadline.is_none() {
            self.read_gauges(config);
        }
        self.close_second(config, end.max(self.last_second_at), true)?;
        config.progress.clear();
        // Per-second figures over the finished timeline (merging may have replaced one).
        for sample in &self.timeline {
            if let Some(q) = sample.queue_time_ms {
                self.queue_time.observe(q);
            }
            if let Some(c) = sample.cpu_pct {
                self.cpu.observe(c);
            }
        }
        let measured = end.saturating_duration_since(self.measure_start);
        let cpu_mean_pct = match (self.proc_start, self.proc_second) {
            (Some(a), Some(b)) => procfs::cpu_percent(&a, &b, measured, config.cores),
            _ => 0.0,
        };
        Ok(Sampled {
            total: std::mem::take(&mut self.total),
            timeline: std::mem::take(&mut self.timeline),
            baseline: self.baseline,
            last: self.last,
            connections_open: self.connections_open.finish(),
            connect_attempts: self.connect_attempts.finish(),
            tls_handshakes_current: self.tls_handshakes_current.finish(),
            requests_queued: self.requests_queued.finish(),
            queue_time_ms: self.queue_time.finish(),
            cpu_pct: self.cpu.finish(),
            cpu_mean_pct,
            rss_max_bytes: self.rss_max,
            private_max_bytes: self.private_max,
            measured,
            allocations,
        })
    }
}
