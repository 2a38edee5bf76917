//! Requests' deadlines, kept by their connection: one timer per
//! connection, at the earliest deadline, in the driver's task.
//!
//! Why: each HTTP/3 request with a deadline kept a tokio `Sleep` of its own
//! (a registration and a removal in the timer wheel, each under the wheel's
//! lock; about 3 % of a request's instructions over loopback). As HTTP/2
//! does (`proto/h2/deadline.rs`), the connection now keeps them: a request
//! writes its deadline and waker in the connection's table when it first
//! waits, and takes them out when it ends; the driver sleeps until the
//! earliest deadline it was told of, marks every request past its deadline
//! and wakes it, and sleeps again until the next one. A request woken so
//! fails with the request timeout's error, and its stream is stopped
//! (dropping an unanswered request stops its stream, see `reader.rs`).
//!
//! HTTP/3 has no table of streams of its own to keep the deadlines in
//! (quinn keeps the streams), hence this one, under a lock of its own:
//! taken twice per request (in, out), never by two tasks for long.
//! Deadlines usually come in the order requests start (one timeout for
//! all), so a new one seldom moves the timer or wakes the driver; an entry
//! that left before its deadline is not looked for: the timer fires at its
//! time anyway, finds it gone and moves on, one walk of the table (as many
//! entries as requests in flight) per timeout's length.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::time::{Instant, Sleep};

use crate::error::{Error, ErrorKind};
use crate::proto::exchange::SendError;

/// The deadlines of a connection's requests, shared by the requests and
/// the driver.
#[derive(Default)]
pub(crate) struct Deadlines {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Requests' entries; a free one is `None`, listed in `free`.
    entries: Vec<Option<Entry>>,
    free: Vec<usize>,
    /// Where the driver's timer is to be: the earliest deadline of the
    /// entries (or earlier, when the request that told it has left).
    timer: Option<Instant>,
    /// The driver's waker, woken when a deadline comes earlier than the
    /// timer's.
    driver: Option<Waker>,
}

/// 32 bytes: a table holds one per request in flight (128 of them for a
/// connection's 100 long polls), and a separate `passed` flag made it 40.
struct Entry {
    /// The deadline; `None` once it passed and the request was woken.
    at: Option<Instant>,
    waker: Waker,
}

impl Deadlines {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `at` for the request at `key` (a new entry when `None`) with
    /// the waker to wake at it. `true` when its deadline has passed.
    fn keep(&self, key: &mut Option<usize>, at: Instant, waker: &Waker) -> bool {
        let mut table = self.lock();
        if let Some(entry) = key.and_then(|k| table.entries.get_mut(k)?.as_mut()) {
            if !entry.waker.will_wake(waker) {
                entry.waker = waker.clone();
            }
            return entry.at.is_none();
        }
        let entry = Some(Entry {
            at: Some(at),
            waker: waker.clone(),
        });
        let k = match table.free.pop() {
            Some(k) => {
                table.entries[k] = entry;
                k
            }
            None => {
                table.entries.push(entry);
                table.entries.len() - 1
            }
        };
        *key = Some(k);
        if table.timer.is_none_or(|timer| at < timer) {
            table.timer = Some(at);
            if let Some(driver) = &table.driver {
                driver.wake_by_ref();
            }
        }
        false
    }

    /// The request at `key` ended (answered, failed or dropped).
    fn leave(&self, key: usize) {
        let mut table = self.lock();
        if let Some(entry) = table.entries.get_mut(key) {
            if entry.take().is_some() {
                table.free.push(key);
            }
        }
    }

    /// Where the timer is to be, noting the driver's waker.
    fn timer(&self, driver: &Waker) -> Option<Instant> {
        let mut table = self.lock();
        if !table.driver.as_ref().is_some_and(|w| w.will_wake(driver)) {
            table.driver = Some(driver.clone());
        }
        table.timer
    }

    /// Marks every request past its deadline and wakes it; the timer goes
    /// to the earliest deadline left.
    fn expire(&self, wakers: &mut Vec<Waker>) -> Option<Instant> {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut table = self.lock();
        for entry in table.entries.iter_mut().flatten() {
            let Some(at) = entry.at else {
                continue;
            };
            if at <= now {
                entry.at = None;
                wakers.push(entry.waker.clone());
            } else if next.is_none_or(|n| at < n) {
                next = Some(at);
            }
        }
        table.timer = next;
        drop(table);
        for w in wakers.drain(..) {
            w.wake();
        }
        next
    }
}

/// The driver's timer, at the earliest deadline of the connection's
/// requests.
pub(crate) struct Timer {
    deadlines: Arc<Deadlines>,
    sleep: Option<Pin<Box<Sleep>>>,
    /// Where the sleep is set (`None`: not polled, nothing to wait for).
    armed: Option<Instant>,
    wakers: Vec<Waker>,
}

/// Expiries one poll handles at most (each moves the timer past the
/// present: one is the rule).
const EXPIRIES_PER_POLL: usize = 4;

impl Timer {
    pub(crate) fn new(deadlines: Arc<Deadlines>) -> Timer {
        Timer {
            deadlines,
            sleep: None,
            armed: None,
            wakers: Vec::new(),
        }
    }

    /// Moves the timer to a sooner deadline if one was told, and fails the
    /// requests whose deadline came. Never ready: it runs beside the
    /// driver's own work.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) {
        let mut target = self.deadlines.timer(cx.waker());
        for _ in 0..EXPIRIES_PER_POLL {
            if !self.fired(cx, target) {
                return;
            }
            target = self.deadlines.expire(&mut self.wakers);
        }
        // Not reached by a timer that moves forward; should it be, the
        // driver runs again rather than spin here.
        cx.waker().wake_by_ref();
    }

    /// Whether the timer, moved to `target`, fired.
    fn fired(&mut self, cx: &mut Context<'_>, target: Option<Instant>) -> bool {
        let Some(at) = target else {
            self.armed = None;
            return false;
        };
        if self.armed != Some(at) {
            self.armed = Some(at);
            match &mut self.sleep {
                Some(sleep) => sleep.as_mut().reset(at),
                None => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
            }
        }
        let Some(sleep) = self.sleep.as_mut() else {
            return false;
        };
        sleep.as_mut().poll(cx).is_ready()
    }
}

/// A request's deadline, as its connection keeps it.
pub(crate) struct Kept {
    deadlines: Arc<Deadlines>,
    at: Instant,
    /// Its entry in the table, once it waited.
    key: Option<usize>,
}

impl Kept {
    pub(crate) fn new(deadlines: Arc<Deadlines>, at: Instant) -> Kept {
        Kept {
            deadlines,
            at,
            key: None,
        }
    }

    /// Whether the deadline passed; if not, the request (`cx`'s waker) is
    /// woken when it does.
    pub(crate) fn passed(&mut self, cx: &Context<'_>) -> bool {
        self.deadlines.keep(&mut self.key, self.at, cx.waker())
    }

    /// The request ended: its entry leaves the table.
    pub(crate) fn leave(&mut self) {
        if let Some(key) = self.key.take() {
            self.deadlines.leave(key);
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Polls a request's `future` held to its deadline (`kept`): past it, the
/// future is dropped (its stream stopped) and the request fails with the
/// request timeout's error. (A settled connection's request, the common
/// one, has this written out in its own poll, `request.rs`'s `Sending`.)
pub(crate) fn poll_within<F: Future<Output = Result<T, SendError>>, T>(
    mut future: Pin<&mut Option<F>>,
    kept: Option<&mut Kept>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, SendError>> {
    let Some(running) = future.as_mut().as_pin_mut() else {
        return Poll::Ready(Err(timed_out()));
    };
    if let Poll::Ready(output) = running.poll(cx) {
        if let Some(kept) = kept {
            kept.leave();
        }
        return Poll::Ready(output);
    }
    let Some(kept) = kept else {
        return Poll::Pending;
    };
    if !kept.passed(cx) {
        return Poll::Pending;
    }
    kept.leave();
    // Dropped now, not with the request's future: its stream is stopped
    // and its slot freed at the deadline.
    future.set(None);
    Poll::Ready(Err(timed_out()))
}

pin_project_lite::pin_project! {
    /// A request's future (to its response head) held to its deadline by
    /// the connection's timer ([`poll_within`]).
    pub(crate) struct Within<F> {
        #[pin]
        future: Option<F>,
        kept: Option<Kept>,
    }
}

impl<F> Within<F> {
    pub(crate) fn new(future: F, kept: Option<Kept>) -> Self {
        Within {
            future: Some(future),
            kept,
        }
    }
}

/// The error of a request whose deadline passed: the request timeout's.
pub(crate) fn timed_out() -> SendError {
    SendError {
        error: Error::msg(ErrorKind::Timeout, "no response within the request timeout"),
        handed_back: None,
    }
}

impl<T, F: Future<Output = Result<T, SendError>>> Future for Within<F> {
    type Output = Result<T, SendError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        poll_within(this.future, this.kept.as_mut(), cx)
    }
}

#[cfg(test)]
#[path = "deadline_tests.rs"]
mod tests;
