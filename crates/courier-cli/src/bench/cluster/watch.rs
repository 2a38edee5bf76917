//! The cluster run's progress (`--progress`, as the other scenarios): each second, the
//! requests that finished in it and their p50/p99 (from the tally), and the pool's
//! connections, attempts in flight and queue (from the client).
//!
//! Why: a run of a minute with a fault at second 10 is watched to see the fault land and the
//! cluster recover; silent until the report, it could only be read afterwards.

use std::convert::Infallible;
use std::time::Duration;

use courier::Client;
use tokio::time::{Instant, MissedTickBehavior};

use super::super::progress::{Frame, Progress};
use super::tally::Tally;

/// What a run's progress shows besides what it reads each second.
pub struct Watch<'a> {
    pub progress: &'a Progress,
    pub tally: &'a Tally,
    pub client: &'a Client,
    /// The open loop's rate.
    pub rate: f64,
    pub duration: Duration,
}

impl Watch<'_> {
    /// Draws a frame every second, until dropped.
    pub async fn run(self) -> Infallible {
        let start = Instant::now();
        let mut ticks =
            tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let goal = format!("{} s", self.duration.as_secs_f64());
        let mut last = self.tally.take_recent();
        let mut last_at = start;
        loop {
            let now = ticks.tick().await;
            let seen = self.tally.take_recent();
            let pool = self.client.metrics();
            let (requests, errors) = (seen.requests - last.requests, seen.errors - last.errors);
            let seconds = (now - last_at).as_secs_f64().max(1e-3);
            self.progress.frame(&Frame {
                elapsed_s: (now - start).as_secs_f64(),
                goal: goal.clone(),
                rps: (requests - errors) as f64 / seconds,
                target_rps: Some(self.rate),
                errors_last: errors,
                requests_last: requests,
                errors_total: seen.errors,
                requests_total: seen.requests,
                p50_ms: ms(seen.recent.value_at_quantile(0.50)),
                p99_ms: ms(seen.recent.value_at_quantile(0.99)),
                connections: pool.connections_open,
                in_flight: pool.requests_active,
                queued: pool.requests_queued,
            });
            last = seen;
            last_at = now;
        }
    }
}

/// Microseconds as milliseconds.
fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}
