//! Request strategies: how many replicas a request may go to, and when.
//!
//! Why four: `SingleReplica` for requests that must not be repeated;
//! `Sequential` to get past a failing replica at the cost of latency (each
//! replica gets an equal share of what is left of the budget, so a hung one
//! cannot eat it all); `Forking` to get past a slow one as well: the next
//! replica starts every budget ÷ n (or at once when one is rejected), the
//! first accepted answer wins, and the attempts still running are cancelled
//! (their futures dropped: an HTTP/1.1 connection mid-request is closed, an
//! HTTP/2 stream reset); `Parallel` (Vostok's `ParallelRequestStrategy`)
//! when latency matters more than load: n replicas at once from the start,
//! the first accepted answer wins, the others are cancelled the same way.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::response::Response;
use crate::cluster::admission::criteria::Verdict;
use crate::error::{Error, ErrorKind};

/// How a request uses the replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// One replica, never another.
    SingleReplica,
    /// Up to `replicas` replicas one after the other, each with the budget
    /// left ÷ the replicas left, until one answer is accepted.
    Sequential {
        /// Replicas at most.
        replicas: usize,
    },
    /// Up to `replicas` replicas, a new one every budget ÷ `replicas` (or as
    /// soon as one is rejected) while none has answered acceptably; the
    /// first accepted answer wins and the others are cancelled.
    Forking {
        /// Replicas at most.
        replicas: usize,
    },
    /// `replicas` replicas at once, each with the whole budget; the first
    /// accepted answer wins and the others are cancelled.
    Parallel {
        /// Replicas at once.
        replicas: usize,
    },
}

impl std::fmt::Display for Strategy {
    /// `single`, `sequential3`, `forking3`, `parallel2`: the names
    /// [`FromStr`](std::str::FromStr) reads (and the trace span's `strategy`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Strategy::SingleReplica => f.write_str("single"),
            Strategy::Sequential { replicas } => write!(f, "sequential{replicas}"),
            Strategy::Forking { replicas } => write!(f, "forking{replicas}"),
            Strategy::Parallel { replicas } => write!(f, "parallel{replicas}"),
        }
    }
}

impl Default for Strategy {
    /// Forking over at most 3 replicas (Vostok's default).
    fn default() -> Self {
        Strategy::forking(3)
    }
}

impl Strategy {
    /// [`Strategy::SingleReplica`].
    pub fn single_replica() -> Strategy {
        Strategy::SingleReplica
    }

    /// [`Strategy::Sequential`] over at most `replicas` (at least 1).
    pub fn sequential(replicas: usize) -> Strategy {
        Strategy::Sequential {
            replicas: replicas.max(1),
        }
    }

    /// [`Strategy::Forking`] over at most `replicas` (at least 1).
    pub fn forking(replicas: usize) -> Strategy {
        Strategy::Forking {
            replicas: replicas.max(1),
        }
    }

    /// [`Strategy::Parallel`] over `replicas` at once (at least 1).
    pub fn parallel(replicas: usize) -> Strategy {
        Strategy::Parallel {
            replicas: replicas.max(1),
        }
    }

    /// The most replicas one request may go to.
    pub fn max_replicas(&self) -> usize {
        match *self {
            Strategy::SingleReplica => 1,
            Strategy::Sequential { replicas }
            | Strategy::Forking { replicas }
            | Strategy::Parallel { replicas } => replicas,
        }
    }
}

/// One attempt's verdict and answer.
pub(crate) type Outcome = (Verdict, Result<Response, Error>);
pub(crate) type AttemptFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// What asking for an attempt gave.
pub(crate) enum Start {
    /// The attempt, running.
    Attempt(AttemptFuture),
    /// No room now (the replica budget's extra attempts in flight are at
    /// their cap): ask again after [`BUSY_RETRY`].
    Busy,
    /// No more attempts for this request (the replica budget's ratio).
    Refused,
}

/// How long a request waits before it asks again for an attempt refused
/// as [`Start::Busy`]. Why it asks again at all: a fork refused for good
/// left the request on the replica it was stuck on, and in a burst (a
/// client that falls behind and catches up sends many requests at once,
/// and they fork at once) requests timed out on a stalled replica while
/// the cap was full for a few milliseconds.
pub(crate) const BUSY_RETRY: Duration = Duration::from_millis(5);

/// Runs a request over `replicas` replicas (already capped by the caller)
/// within `budget`, forking (if the strategy does) every `fork_after`
/// without an answer. `start(i, timeout)` starts the attempt on the `i`th
/// replica of the order, its response head due within `timeout`; it may
/// refuse an attempt past the first, for now ([`Start::Busy`]: asked again
/// a little later, within the budget) or for good ([`Start::Refused`]: the
/// request makes no more).
pub(crate) async fn run(
    strategy: Strategy,
    replicas: usize,
    budget: Duration,
    fork_after: Duration,
    mut start: impl FnMut(usize, Duration) -> Start + Send,
) -> Outcome {
    let deadline = Instant::now() + budget;
    match strategy {
        Strategy::Forking { .. } if replicas > 1 => {
            fork(replicas, 1, Some(fork_after), deadline, start).await
        }
        Strategy::Parallel { .. } if replicas > 1 => {
            fork(replicas, replicas, None, deadline, start).await
        }
        _ => {
            let mut last = None;
            let mut i = 0;
            while i < replicas {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let attempt = match start(i, left / (replicas - i) as u32) {
                    Start::Attempt(attempt) => attempt,
                    Start::Busy => {
                        tokio::time::sleep(BUSY_RETRY.min(left)).await;
                        continue;
                    }
                    Start::Refused => break,
                };
                let (verdict, answer) = attempt.await;
                if verdict == Verdict::Accept {
                    return (verdict, answer);
                }
                last = Some(answer);
                i += 1;
            }
            (
                Verdict::Reject,
                last.unwrap_or_else(|| Err(out_of_budget())),
            )
        }
    }
}

/// `initial` attempts at once, then one more every `every` (if any) or on a
/// reject, up to `replicas`; the first accepted answer wins.
async fn fork(
    mut replicas: usize,
    initial: usize,
    every: Option<Duration>,
    deadline: Instant,
    mut start: impl FnMut(usize, Duration) -> Start + Send,
) -> Outcome {
    let left = |deadline: Instant| deadline.saturating_duration_since(Instant::now());
    let every = every.unwrap_or(Duration::MAX);
    let later = |after: Duration| Instant::now().checked_add(after).unwrap_or(deadline);
    let mut running: Vec<AttemptFuture> = Vec::with_capacity(initial);
    let mut started = 0;
    // Attempts due to start now (the initial ones, then one per fork
    // interval or reject), and, while the budget is busy, when to ask again.
    let mut owed = initial;
    let mut next = Box::pin(tokio::time::sleep_until(later(every)));
    let mut busy: Option<Pin<Box<tokio::time::Sleep>>> = None;
    let mut last: Option<Result<Response, Error>> = None;
    std::future::poll_fn(move |cx| loop {
        let mut i = 0;
        while i < running.len() {
            match running[i].as_mut().poll(cx) {
                Poll::Ready((Verdict::Accept, answer)) => {
                    // Returning drops `running`: the other attempts are cancelled.
                    return Poll::Ready((Verdict::Accept, answer));
                }
                Poll::Ready((Verdict::Reject, answer)) => {
                    drop(running.swap_remove(i));
                    // An answer beats an error as the last word.
                    if answer.is_ok() || !matches!(last, Some(Ok(_))) {
                        last = Some(answer);
                    }
                    owed += 1;
                }
                Poll::Pending => i += 1,
            }
        }
        owed = owed.min(replicas - started);
        if owed == 0 && started < replicas && next.as_mut().poll(cx).is_ready() {
            owed = 1;
        }
        if busy
            .as_mut()
            .is_some_and(|b| b.as_mut().poll(cx).is_ready())
        {
            busy = None;
        }
        if owed > 0 && busy.is_none() && !left(deadline).is_zero() {
            match start(started, left(deadline)) {
                Start::Attempt(attempt) => {
                    running.push(attempt);
                    started += 1;
                    owed -= 1;
                    next.as_mut().reset(later(every));
                }
                Start::Busy => {
                    busy = Some(Box::pin(tokio::time::sleep_until(
                        later(BUSY_RETRY).min(deadline),
                    )));
                }
                Start::Refused => {
                    replicas = started;
                    owed = 0;
                }
            }
            continue;
        }
        if running.is_empty() && (owed == 0 || left(deadline).is_zero()) {
            let answer = last.take().unwrap_or_else(|| Err(out_of_budget()));
            return Poll::Ready((Verdict::Reject, answer));
        }
        return Poll::Pending;
    })
    .await
}

fn out_of_budget() -> Error {
    Error::msg(ErrorKind::Timeout, "the cluster request's budget ran out")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Attempt `i` answers after `delays[i]` with `verdicts[i]`; the log
    /// records (attempt, start time, timeout).
    fn scripted(
        delays: Vec<u64>,
        verdicts: Vec<Verdict>,
        log: Arc<Mutex<Vec<(usize, Duration, Duration)>>>,
    ) -> impl FnMut(usize, Duration) -> Start + Send {
        let t0 = Instant::now();
        move |i, timeout| {
            log.lock().unwrap().push((i, t0.elapsed(), timeout));
            let Some(&delay) = delays.get(i) else {
                return Start::Refused;
            };
            let delay = Duration::from_millis(delay);
            let verdict = verdicts[i];
            Start::Attempt(Box::pin(async move {
                if delay > timeout {
                    tokio::time::sleep(timeout).await;
                    return (Verdict::Reject, Err(out_of_budget()));
                }
                tokio::time::sleep(delay).await;
                (verdict, Err(Error::msg(ErrorKind::Connect, "scripted")))
            }))
        }
    }

    use Verdict::{Accept, Reject};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn sequential_splits_what_is_left() {
        let log = Arc::default();
        let start = scripted(
            vec![5000, 100, 10],
            vec![Accept, Reject, Accept],
            Arc::clone(&log),
        );
        let (v, _) = run(Strategy::sequential(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept);
        let log = log.lock().unwrap().clone();
        // 3000/3 = 1000 (timed out); then 2000/2; then 1900/1.
        assert_eq!(
            log,
            vec![
                (0, ms(0), ms(1000)),
                (1, ms(1000), ms(1000)),
                (2, ms(1100), ms(1900))
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forking_starts_one_every_budget_share_and_on_rejects() {
        let log = Arc::default();
        let start = scripted(
            vec![5000, 50, 700],
            vec![Accept, Reject, Accept],
            Arc::clone(&log),
        );
        let t0 = Instant::now();
        let (v, _) = run(Strategy::forking(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept);
        // Attempt 1 at 1000 ms, rejected at 1050, so attempt 2 at once; it wins at 1750.
        assert_eq!(t0.elapsed(), ms(1750));
        let starts: Vec<_> = log.lock().unwrap().iter().map(|e| (e.0, e.1)).collect();
        assert_eq!(starts, vec![(0, ms(0)), (1, ms(1000)), (2, ms(1050))]);
    }

    #[tokio::test(start_paused = true)]
    async fn all_rejected_is_the_last_rejection_and_single_is_one() {
        let log = Arc::default();
        let start = scripted(vec![10, 10], vec![Reject, Reject], Arc::clone(&log));
        let (v, _) = run(Strategy::forking(2), 2, ms(1000), ms(500), start).await;
        assert_eq!(v, Reject);
        assert_eq!(log.lock().unwrap().len(), 2);

        let log = Arc::default();
        let start = scripted(vec![10, 10], vec![Reject, Accept], Arc::clone(&log));
        let (v, _) = run(Strategy::single_replica(), 1, ms(1000), ms(1000), start).await;
        assert_eq!(v, Reject);
        assert_eq!(log.lock().unwrap().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn parallel_starts_all_at_once_and_the_first_accept_wins() {
        let log = Arc::default();
        let start = scripted(
            vec![900, 300, 50, 10],
            vec![Accept, Accept, Reject, Accept],
            Arc::clone(&log),
        );
        let t0 = Instant::now();
        let (v, _) = run(Strategy::parallel(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept);
        assert_eq!(
            t0.elapsed(),
            ms(300),
            "attempt 1 wins; attempt 0 is dropped"
        );
        let log = log.lock().unwrap().clone();
        // All three at once with the whole budget; no fourth (n is the cap).
        assert_eq!(
            log,
            vec![
                (0, ms(0), ms(3000)),
                (1, ms(0), ms(3000)),
                (2, ms(0), ms(3000))
            ]
        );
        assert_eq!(Strategy::parallel(2).to_string(), "parallel2");
        assert_eq!(Strategy::default().to_string(), "forking3");
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_attempt_ends_the_starting() {
        // Scripts shorter than the strategy's n: `start` refuses the rest,
        // as the replica budget does.
        let log = Arc::default();
        let start = scripted(vec![2000], vec![Accept], Arc::clone(&log));
        let t0 = Instant::now();
        let (v, _) = run(Strategy::forking(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept, "the running attempt still answers");
        assert_eq!(t0.elapsed(), ms(2000));
        assert_eq!(
            log.lock().unwrap().len(),
            2,
            "asked once at 1000 ms, then never"
        );

        let log = Arc::default();
        let start = scripted(vec![10], vec![Reject], Arc::clone(&log));
        let (v, _) = run(Strategy::sequential(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Reject);
        assert_eq!(log.lock().unwrap().len(), 2);

        let log = Arc::default();
        let start = scripted(vec![10, 20], vec![Reject, Accept], Arc::clone(&log));
        let (v, _) = run(Strategy::parallel(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept);
        assert_eq!(log.lock().unwrap().len(), 3);
    }

    /// `inner`, but its attempts past the first are refused as busy until
    /// `until` after the start.
    fn busy_until(
        until: Duration,
        mut inner: impl FnMut(usize, Duration) -> Start + Send,
    ) -> impl FnMut(usize, Duration) -> Start + Send {
        let t0 = Instant::now();
        move |i, timeout| {
            if i > 0 && t0.elapsed() < until {
                return Start::Busy;
            }
            inner(i, timeout)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_budget_delays_an_attempt_and_does_not_end_the_starting() {
        // The first replica is stuck; the fork at 1000 ms finds the budget
        // busy until 1012 ms, and starts at the first retry after that.
        let log = Arc::default();
        let start = scripted(vec![5000, 50], vec![Accept, Accept], Arc::clone(&log));
        let t0 = Instant::now();
        let start = busy_until(ms(1012), start);
        let (v, _) = run(Strategy::forking(2), 2, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept);
        assert_eq!(t0.elapsed(), ms(1065), "the fork started at 1015 ms");
        let starts: Vec<_> = log.lock().unwrap().iter().map(|e| (e.0, e.1)).collect();
        assert_eq!(starts, vec![(0, ms(0)), (1, ms(1015))]);

        // Parallel: the attempts the budget had no room for start later.
        let log = Arc::default();
        let start = scripted(vec![100, 100, 100], vec![Reject; 3], Arc::clone(&log));
        let start = busy_until(ms(7), start);
        let (v, _) = run(Strategy::parallel(3), 3, ms(3000), ms(1000), start).await;
        assert_eq!(v, Reject);
        let starts: Vec<_> = log.lock().unwrap().iter().map(|e| (e.0, e.1)).collect();
        assert_eq!(starts, vec![(0, ms(0)), (1, ms(10)), (2, ms(10))]);

        // Sequential: after a reject, the next replica when there is room.
        let log = Arc::default();
        let start = scripted(vec![10, 10], vec![Reject, Accept], Arc::clone(&log));
        let start = busy_until(ms(22), start);
        let (v, _) = run(Strategy::sequential(2), 2, ms(3000), ms(1000), start).await;
        assert_eq!(v, Accept);
        let starts: Vec<_> = log.lock().unwrap().iter().map(|e| (e.0, e.1)).collect();
        assert_eq!(starts, vec![(0, ms(0)), (1, ms(25))]);

        // Busy up to the deadline: the request ends with it, not after.
        let log = Arc::default();
        let start = scripted(vec![10, 10], vec![Reject, Accept], Arc::clone(&log));
        let start = busy_until(ms(10_000), start);
        let t0 = Instant::now();
        let (v, _) = run(Strategy::forking(2), 2, ms(300), ms(100), start).await;
        assert_eq!(v, Reject);
        assert_eq!(t0.elapsed(), ms(300));
    }
}
