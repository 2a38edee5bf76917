//! The open loop (`--rate R`), the same shape as `courier bench --rate`: request `i` is due at
//! `start + i / R` whatever the latency, and is sent when due if one of the `-c` in-flight slots
//! is free, else as soon as one frees (late). Against a server that is not saturated, a closed
//! loop measures how fast the client can go; this measures what a given load costs it.
//!
//! One scheduler task sends everything that has come due each time it wakes (tokio's timer has
//! a 1 ms resolution, so at 20,000/s it sends about 20 a wake-up), as tokio's
//! `MissedTickBehavior::Burst` would, and each request runs in a task of its own. Requests still
//! waiting for a slot at the deadline are never sent (`not_sent`); those in flight at the
//! deadline are abandoned and not counted, as courier's are. `--tick MS` sends only on ticks of
//! that period instead (h2load's `--rps` sends every 10 ms), to see what coarser bursts save.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::{first_error, print_line, record, Args, Since};

/// Sent later than this after its due time, a request counts as late (courier's threshold: the
/// timer wakes up to 1 ms late by design).
const LATE_AFTER: Duration = Duration::from_millis(5);

/// Runs `one` at `rate` requests a second for `args.duration`, at most `args.concurrency` in
/// flight, then prints the JSON line with the schedule's figures.
pub(crate) async fn run<F, Fut, E>(name: &str, args: &Args, rate: f64, one: F)
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let cap = args.concurrency.min(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(cap));
    let ok = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + args.duration;
    let (mut sent, mut late, mut max_in_flight) = (0u64, 0u64, 0usize);
    loop {
        let due = start + Duration::from_secs_f64(sent as f64 / rate);
        if due >= deadline {
            break;
        }
        let send_at = on_tick(start, due, args.tick);
        if Instant::now() < send_at {
            tokio::time::sleep_until(send_at).await;
        }
        let Ok(Ok(permit)) =
            tokio::time::timeout_at(deadline, Arc::clone(&slots).acquire_owned()).await
        else {
            break;
        };
        let now = Instant::now();
        if now.saturating_duration_since(due) > LATE_AFTER {
            late += 1;
        }
        max_in_flight = max_in_flight.max(cap - slots.available_permits());
        sent += 1;
        let (one, ok, errors) = (one.clone(), Arc::clone(&ok), Arc::clone(&errors));
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout_at(deadline, one()).await {
                Ok(Ok(())) => {
                    let end = Instant::now();
                    record(Since::Sent, end - now);
                    record(Since::Due, end - due);
                    ok.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(e)) => {
                    first_error(&e);
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                Err(_abandoned_at_the_deadline) => {}
            }
        });
    }
    // Every slot free again: every request sent has finished or been abandoned.
    let _ = slots.acquire_many(cap as u32).await;
    let elapsed = start.elapsed();
    let intended = (args.duration.as_secs_f64() * rate).ceil() as u64;
    let extra = format!(
        ",\"rate\":{rate},\"intended\":{intended},\"sent\":{sent},\"not_sent\":{},\"late\":{late},\"max_in_flight\":{max_in_flight},\"p50_corrected_ms\":{:.3},\"p99_corrected_ms\":{:.3}",
        intended.saturating_sub(sent),
        crate::quantile_ms(Since::Due, 0.5),
        crate::quantile_ms(Since::Due, 0.99),
    );
    print_line(
        name,
        args,
        ok.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
        elapsed,
        &extra,
    );
}

/// The first tick of period `tick` from `start` at or after `due` (`due` itself for no tick).
fn on_tick(start: Instant, due: Instant, tick: Duration) -> Instant {
    if tick.is_zero() {
        return due;
    }
    let ticks = ((due - start).as_secs_f64() / tick.as_secs_f64()).ceil();
    start + tick.mul_f64(ticks)
}
