//! Samples the client's pool metrics while the benchmark runs.
//!
//! Some values (how many connections are open right now) only mean something over time, so a
//! background task reads `Client::metrics()` every 100 ms and keeps the peaks. It is separate
//! from the workers so their loop stays free of anything but requests; per-second timelines can
//! be collected here later.

use std::time::Duration;

use courier::Client;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How often the pool metrics are read.
pub const PERIOD: Duration = Duration::from_millis(100);

/// Peaks seen by the sampler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peaks {
    pub connections_open: u64,
    pub requests_queued: u64,
}

impl Peaks {
    fn observe(&mut self, client: &Client) {
        let m = client.metrics();
        self.connections_open = self.connections_open.max(m.connections_open);
        self.requests_queued = self.requests_queued.max(m.requests_queued);
    }
}

/// A running sampler; [`Sampler::stop`] returns what it saw.
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Peaks>,
}

impl Sampler {
    /// Starts sampling `client` on the current runtime.
    pub fn start(client: Client) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut peaks = Peaks::default();
            let mut ticks = tokio::time::interval(PERIOD);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = ticks.tick() => peaks.observe(&client),
                    _ = &mut stopped => break,
                }
            }
            // One last look, so a run shorter than a period is still sampled.
            peaks.observe(&client);
            peaks
        });
        Self { stop, task }
    }

    /// Stops sampling and returns the peaks (empty if the task died, which it has no reason to).
    pub async fn stop(self) -> Peaks {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}
