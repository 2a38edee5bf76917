//! Requests' deadlines, kept by their connection while they wait for their
//! response heads.
//!
//! Why: a request with a deadline kept a tokio `Sleep` of its own (112 B in
//! its future, a registration and a removal in the timer wheel, each under
//! the wheel's lock). A connection of long polls held a hundred of them. A
//! stream's deadline is now a number in its slot (milliseconds since the
//! connection began, rounded up, in 4 bytes the slot had spare: a
//! deadline more than 49 days after the connection began is not kept, and
//! the request times itself as before), and the driver keeps one
//! timer, at the earliest deadline it was told of. When it fires, the driver
//! marks every stream past its deadline and wakes its request, which fails
//! with [`StreamError::DeadlinePassed`] (the request's own timeout error, a
//! layer up) and resets its stream; the timer moves to the next deadline.
//!
//! Deadlines usually come in the order streams open (one timeout for all),
//! so a new one seldom moves the timer. A stream that ends before its
//! deadline is not looked for: the timer fires at its time anyway, finds it
//! gone and moves on, one walk of the connection's streams (a few hundred
//! at most) per timeout's length. Granularity is the timer's: tokio's
//! wheel, millisecond ticks, paused time alike, as the request's own timer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::conn::{Shared, State};
use super::error::StreamError;
use crate::error::{Error, ErrorKind};

/// A stream with no deadline kept.
pub(crate) const NONE: u32 = 0;
/// A stream whose deadline passed before its head came.
pub(crate) const PASSED: u32 = u32::MAX;

/// A stream's mark for the deadline `at` on a connection that began at
/// `epoch`: 1 + milliseconds since, rounded up (0 is [`NONE`]); `None` if
/// too far ahead to keep.
pub(crate) fn mark(epoch: Instant, at: Instant) -> Option<u32> {
    let since = at.saturating_duration_since(epoch);
    let ms = since.as_millis() + u128::from(since.subsec_nanos() % 1_000_000 != 0);
    u32::try_from(ms + 1).ok().filter(|&mark| mark < PASSED)
}

fn at(epoch: Instant, mark: u32) -> Instant {
    epoch + Duration::from_millis(u64::from(mark - 1))
}

/// When the connection began (deadlines are kept relative to it), and the
/// earliest deadline kept since the driver last looked.
pub(crate) struct Deadlines {
    epoch: Instant,
    earliest: u32,
}

impl Deadlines {
    pub(crate) fn new(epoch: Instant) -> Deadlines {
        Deadlines {
            epoch,
            earliest: NONE,
        }
    }

    /// When the connection began.
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// A stream's deadline is `mark` (see [`mark`]).
    pub(crate) fn keep(&mut self, mark: u32) {
        if self.earliest == NONE || mark < self.earliest {
            self.earliest = mark;
        }
    }

    fn take_earliest(&mut self) -> u32 {
        std::mem::replace(&mut self.earliest, NONE)
    }

    /// The mark of the present: deadlines at or before it have passed.
    fn mark_now(&self) -> u32 {
        let ms = Instant::now()
            .saturating_duration_since(self.epoch)
            .as_millis();
        u32::try_from(ms + 1).map_or(PASSED - 1, |mark| mark.min(PASSED - 1))
    }
}

impl State {
    /// The earliest deadline kept since the driver last asked ([`NONE`]: none).
    pub(crate) fn take_earliest_deadline(&mut self) -> u32 {
        self.deadlines.take_earliest()
    }

    /// Marks every stream past its deadline and hands out its request's
    /// waker; the earliest deadline left ([`NONE`]: none).
    fn expire_deadlines(&mut self, wakers: &mut Vec<Waker>) -> u32 {
        let now = self.deadlines.mark_now();
        let mut next = NONE;
        for (_, stream) in self.streams.iter_mut() {
            match stream.deadline {
                NONE | PASSED => {}
                mark if mark <= now => {
                    stream.deadline = PASSED;
                    wakers.extend(stream.waker.take());
                }
                mark if next == NONE || mark < next => next = mark,
                _ => {}
            }
        }
        next
    }
}

/// The driver's timer, at the earliest deadline of its streams.
pub(crate) struct Timer {
    epoch: Instant,
    timer: Option<Pin<Box<Sleep>>>,
    /// The mark the timer is at ([`NONE`]: not armed).
    armed: u32,
}

/// Expiries one run of the driver handles at most (each moves the timer
/// past the present: one is the rule).
const EXPIRIES_PER_RUN: usize = 4;

impl Timer {
    pub(crate) fn new(epoch: Instant) -> Timer {
        Timer {
            epoch,
            timer: None,
            armed: NONE,
        }
    }

    /// Moves the timer to `earliest` (a deadline kept since the last run)
    /// if that is sooner, and fails the streams whose deadline came.
    pub(crate) fn run(
        &mut self,
        cx: &mut Context<'_>,
        earliest: u32,
        shared: &Shared,
        wakers: &mut Vec<Waker>,
    ) {
        let mut earliest = earliest;
        for _ in 0..EXPIRIES_PER_RUN {
            if !self.fired(cx, earliest) {
                return;
            }
            earliest = shared.lock().expire_deadlines(wakers);
            for w in wakers.drain(..) {
                w.wake();
            }
        }
        // Not reached by a timer that moves forward; should it be, the
        // driver runs again rather than spin here.
        cx.waker().wake_by_ref();
    }

    /// Whether the armed deadline came (the timer is then disarmed).
    fn fired(&mut self, cx: &mut Context<'_>, earliest: u32) -> bool {
        if earliest != NONE && (self.armed == NONE || earliest < self.armed) {
            self.armed = earliest;
            let at = at(self.epoch, earliest);
            match &mut self.timer {
                Some(timer) => timer.as_mut().reset(at),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
            }
        }
        if self.armed == NONE {
            return false;
        }
        let Some(timer) = self.timer.as_mut() else {
            return false;
        };
        if timer.as_mut().poll(cx).is_pending() {
            return false;
        }
        self.armed = NONE;
        true
    }
}

/// The error of a request whose stream's deadline passed: the caller that
/// set the deadline makes its own timeout error of it.
pub(crate) fn is_passed(error: &Error) -> bool {
    error.kind() == ErrorKind::Timeout
        && std::error::Error::source(error)
            .and_then(|s| s.downcast_ref::<StreamError>())
            .is_some_and(|e| matches!(e, StreamError::DeadlinePassed))
}
