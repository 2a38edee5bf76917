//! Full pool rotation (the factory's handler lifetime): a fresh [`Client`]
//! every lifetime; the old one
//! is dropped (closing its pool) once no request uses it.
//!
//! Requests hold their own clone of the client they started on, and response
//! bodies hold their connection's origin pool, so dropping the factory's clone
//! never cuts a request short: the old pool goes away with its last user.
//! The factory keeps a retired client only until it is quiet, to fold its
//! final counters into the named client's metrics, then drops it, which closes
//! its idle connections.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::time::Instant;

use crate::client::Client;
use crate::error::Error;
use crate::metrics::MetricsSnapshot;

type Make = Box<dyn Fn() -> Result<Client, Error> + Send + Sync>;

pub(crate) struct Rotation {
    make: Make,
    lifetime: Duration,
    epoch: Instant,
    /// Milliseconds since `epoch` when the current client retires.
    next_ms: AtomicU64,
    current: RwLock<Client>,
    retired: Mutex<Retired>,
    reaper_started: AtomicBool,
    /// Ends the reaper when the rotation goes (its owners dropped it).
    reaper_stop: Arc<tokio::sync::Notify>,
    rotations: AtomicU64,
}

impl Drop for Rotation {
    fn drop(&mut self) {
        // A permit is stored if the reaper is not waiting right now.
        self.reaper_stop.notify_one();
    }
}

#[derive(Default)]
struct Retired {
    /// Retired clients that may still have requests in flight.
    clients: Vec<Client>,
    /// Counters of retired clients already dropped.
    totals: Option<MetricsSnapshot>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Rotation {
    pub(crate) fn new(make: Make, lifetime: Duration) -> Result<Arc<Rotation>, Error> {
        let first = make()?;
        let lifetime = lifetime.max(Duration::from_millis(1));
        Ok(Arc::new(Rotation {
            make,
            lifetime,
            epoch: Instant::now(),
            next_ms: AtomicU64::new(ms(lifetime)),
            current: RwLock::new(first),
            retired: Mutex::new(Retired::default()),
            reaper_started: AtomicBool::new(false),
            reaper_stop: Arc::new(tokio::sync::Notify::new()),
            rotations: AtomicU64::new(0),
        }))
    }

    /// The client to use now (rotating first if its time is up).
    pub(crate) fn current(self: &Arc<Self>) -> Client {
        if !self.reaper_started.load(Relaxed) {
            self.start_reaper();
        }
        self.maybe_rotate();
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Pools replaced so far.
    pub(crate) fn rotations(&self) -> u64 {
        self.rotations.load(Relaxed)
    }

    fn maybe_rotate(&self) {
        let now = ms(self.epoch.elapsed());
        let next = self.next_ms.load(Relaxed);
        if now < next {
            return;
        }
        // One caller wins the rotation; the others keep using the current client.
        if self
            .next_ms
            .compare_exchange(next, now + ms(self.lifetime), Relaxed, Relaxed)
            .is_err()
        {
            return;
        }
        let fresh = match (self.make)() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %format_args!("{e:#}"), "cannot build a new pool; keeping the current one");
                return;
            }
        };
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|p| p.into_inner()),
            fresh,
        );
        self.rotations.fetch_add(1, Relaxed);
        tracing::debug!("pool rotated (handler lifetime)");
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clients
            .push(old);
        self.reap();
    }

    /// Drops retired clients that nothing uses any more.
    fn reap(&self) {
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        let mut i = 0;
        while i < retired.clients.len() {
            let m = retired.clients[i].metrics();
            if is_quiet(&m) {
                let client = retired.clients.swap_remove(i);
                let final_counts = m.without_gauges();
                match &mut retired.totals {
                    Some(t) => t.accumulate(&final_counts, false),
                    None => retired.totals = Some(final_counts),
                }
                // The last clone held here: its pool closes its idle connections.
                drop(client);
            } else {
                i += 1;
            }
        }
    }

    /// Every pool's counters added up; gauges of the pools still open.
    pub(crate) fn metrics(&self) -> MetricsSnapshot {
        self.reap();
        let mut total = self
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .metrics();
        let retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        for c in &retired.clients {
            total.accumulate(&c.metrics(), true);
        }
        if let Some(t) = &retired.totals {
            total.accumulate(t, false);
        }
        total
    }

    /// A background task (one per rotating client, while it lives) that
    /// rotates on time even without traffic and closes retired pools once
    /// they are quiet. It ends when the rotation is dropped.
    fn start_reaper(self: &Arc<Self>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.reaper_started.swap(true, Relaxed) {
            return;
        }
        let weak: Weak<Rotation> = Arc::downgrade(self);
        let stop = Arc::clone(&self.reaper_stop);
        let period = (self.lifetime / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
        handle.spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                // Ends with the rotation, not at its next tick (up to 5 s
                // later: a task and a timer behind every dropped client).
                tokio::select! {
                    _ = tick.tick() => {}
                    () = stop.notified() => return,
                }
                let Some(rotation) = weak.upgrade() else {
                    return;
                };
                rotation.maybe_rotate();
                rotation.reap();
            }
        });
    }
}

/// Nothing in flight: no request waiting or sent, no connection in use (an
/// HTTP/1.1 body being read or drained, an HTTP/2 stream open).
fn is_quiet(m: &MetricsSnapshot) -> bool {
    m.requests_active == 0
        && m.requests_queued == 0
        && m.connect_attempts_current == 0
        && m.http2_streams_active == 0
        && m.http3_streams_active == 0
        && m.connections_active == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every background task of a client ends when its last clone goes, not
    /// at its timer's next tick: the rotation's reaper (one period, up to
    /// 5 s, before) and the pool's scavenger. (The Alt-Svc re-arm timer has
    /// its own test: `transport::alt::tests::a_dropped_clients_rearm_timer_ends_with_it`.)
    #[tokio::test]
    async fn a_dropped_clients_background_tasks_end_with_it() {
        let metrics = tokio::runtime::Handle::current().metrics();
        let base = metrics.num_alive_tasks();
        let make: Make = Box::new(|| Client::builder().build());
        let rotation = Rotation::new(make, Duration::from_secs(60)).unwrap();
        // Its first use starts the reaper.
        let client = rotation.current();
        assert_eq!(metrics.num_alive_tasks(), base + 1, "the reaper runs");
        // The pool's first origin starts its scavenger.
        client
            .inner
            .pool
            .origin(&"http://scavenged.test/".parse().unwrap())
            .unwrap();
        assert_eq!(metrics.num_alive_tasks(), base + 2, "the scavenger runs");
        drop(client);
        drop(rotation);
        // Bounded well under the reaper's period (5 s here): a task that
        // waits for its next tick fails this.
        assert_eq!(
            crate::test_support::alive_tasks_once_settled(&metrics, base).await,
            base,
            "a task outlived its client"
        );
    }
}
