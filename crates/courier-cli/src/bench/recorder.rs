//! Where request slots record what they measured: one [`Tally`] per runtime thread.
//!
//! A tally per request slot would cost its histograms (tens of KB) per slot, gigabytes with
//! 100,000 long polls in flight; a tally shared by all would be a contended lock on every
//! request. So each runtime thread records into its own tally, found through a thread-local and
//! registered once in the recorder's list. Its mutex is only ever contended by the sampler,
//! which takes it once a second to fold the thread's tally into the run's figures and empty it.
//! A recorder has an id so that several runs in one process (tests) keep separate tallies.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::stats::Tally;
use crate::error::Result;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's tally for each live recorder (normally just one), by recorder id.
    static SHARDS: RefCell<Vec<(u64, Arc<Mutex<Tally>>)>> = const { RefCell::new(Vec::new()) };
}

/// The per-thread tallies of one run.
#[derive(Debug)]
pub struct Recorder {
    id: u64,
    shards: Mutex<Vec<Arc<Mutex<Tally>>>>,
}

impl Recorder {
    /// A recorder with no tallies yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shards: Mutex::new(Vec::new()),
        })
    }

    /// Records into the calling thread's tally, creating it on the thread's first record.
    pub fn record(&self, f: impl FnOnce(&mut Tally)) {
        SHARDS.with(|shards| {
            if let Some((_, shard)) = shards.borrow().iter().find(|(id, _)| *id == self.id) {
                f(&mut lock(shard));
                return;
            }
            let shard = Arc::new(Mutex::new(Tally::new()));
            lock(&self.shards).push(Arc::clone(&shard));
            let mut shards = shards.borrow_mut();
            // Forget the tallies of finished recorders (only this thread still holds them).
            shards.retain(|(_, s)| Arc::strong_count(s) > 1);
            f(&mut lock(&shard));
            shards.push((self.id, shard));
        });
    }

    /// Adds every thread's tally into `into` and empties them: what was recorded since the
    /// previous drain.
    pub fn drain_into(&self, into: &mut Tally) -> Result<()> {
        let shards: Vec<_> = lock(&self.shards).clone();
        for shard in shards {
            let mut shard = lock(&shard);
            into.add(&shard)?;
            shard.reset();
        }
        Ok(())
    }

    /// Threads that recorded at least once.
    #[cfg(test)]
    pub fn threads(&self) -> usize {
        lock(&self.shards).len()
    }
}

/// Locks, ignoring poisoning: a panic mid-record leaves at worst one sample half-counted.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::Measured;
    use std::time::Duration;

    fn sample() -> Measured {
        Measured {
            status: 200,
            to_headers: Duration::from_millis(1),
            to_last_byte: Duration::from_millis(2),
            body_bytes: 10,
            send_lag: None,
        }
    }

    #[test]
    fn threads_record_into_their_own_tallies_and_drain_adds_them_up() {
        let recorder = Recorder::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        recorder.record(|t| t.record_response(&sample()));
                    }
                });
            }
        });
        assert_eq!(recorder.threads(), 4);
        let mut total = Tally::new();
        recorder.drain_into(&mut total).unwrap();
        assert_eq!(total.responses(), 400);
        assert_eq!(total.body_bytes, 4000);
        // Drained tallies are empty: a second drain adds nothing.
        recorder.drain_into(&mut total).unwrap();
        assert_eq!(total.responses(), 400);
    }

    #[test]
    fn two_recorders_on_one_thread_stay_apart() {
        let a = Recorder::new();
        let b = Recorder::new();
        a.record(|t| t.record_error("timeout"));
        b.record(|t| t.record_response(&sample()));
        b.record(|t| t.record_response(&sample()));
        let (mut ta, mut tb) = (Tally::new(), Tally::new());
        a.drain_into(&mut ta).unwrap();
        b.drain_into(&mut tb).unwrap();
        assert_eq!((ta.error_count(), ta.responses()), (1, 0));
        assert_eq!((tb.error_count(), tb.responses()), (0, 2));
        let a_id = a.id;
        drop(a);
        // A new recorder on this thread prunes the finished one's tally.
        let c = Recorder::new();
        c.record(|t| t.record_error("connect"));
        SHARDS.with(|s| assert!(s.borrow().iter().all(|(id, _)| *id != a_id)));
    }
}
