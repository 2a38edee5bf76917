//! A request's deadline kept by its HTTP/1.1 connection, on one timer the
//! connection reuses from one request to the next.
//!
//! A request future with a timeout of its own registers a tokio timer at its
//! first wait and removes it when it ends: each a trip into the timer wheel
//! under the driver's lock, every request. An HTTP/1.1 connection carries
//! one request at a time, so it can keep one timer for its whole life and
//! move it to each request's deadline. It is not even moved on every request:
//! a timer due no later than the request's deadline is left as it is, wakes
//! the task early (once per timeout's length on a busy connection) and is
//! moved then; only an earlier deadline moves it at once. It is the same timer
//! (tokio's wheel, millisecond ticks, paused time alike), so a deadline fires
//! when it did before.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;

use tokio::time::{Instant, Sleep};

use crate::error::{Error, ErrorKind};

/// The current exchange's deadline, if the connection keeps it, and the
/// connection's timer (made at the first deadline, kept after).
#[derive(Debug, Default)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    /// The next exchange ends at `at`.
    pub(crate) fn keep(&mut self, at: Instant) {
        self.at = Some(at);
    }

    /// The exchange is over: its deadline no longer applies. The timer stays
    /// registered, with the last task's waker, until the next request moves
    /// it or its time comes (then a spurious wake-up of that task, if still
    /// running): one timer per connection, and no second poll per request
    /// to forget the waker.
    pub(crate) fn clear(&mut self) {
        self.at = None;
    }

    /// Whether the kept deadline has passed; if not, the task is woken when
    /// it does. No deadline kept: never.
    pub(crate) fn passed(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(at) = self.at else {
            return false;
        };
        let timer = match &mut self.timer {
            Some(timer) => {
                // Left where it is when it is due no later than `at` (each
                // request's deadline is usually later than the last one's):
                // it then wakes the task early, once, and is moved below.
                // An earlier deadline moves it now.
                if timer.deadline() > at {
                    timer.as_mut().reset(at);
                }
                timer
            }
            None => self.timer.insert(Box::pin(tokio::time::sleep_until(at))),
        };
        if timer.as_mut().poll(cx).is_pending() {
            return false;
        }
        if timer.deadline() >= at {
            return true;
        }
        // An earlier deadline's time came, not this one's.
        timer.as_mut().reset(at);
        timer.as_mut().poll(cx).is_ready()
    }
}

/// The error source of an exchange stopped by its kept deadline: the caller
/// that set the deadline makes its own timeout error of it.
#[derive(Debug)]
pub(crate) struct DeadlinePassed;

impl std::fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request's deadline passed")
    }
}

impl std::error::Error for DeadlinePassed {}

/// An exchange stopped by its kept deadline.
pub(crate) fn passed_error() -> Error {
    Error::new(ErrorKind::Timeout, DeadlinePassed)
}

/// Whether `error` is an exchange stopped by its kept deadline.
pub(crate) fn is_passed(error: &Error) -> bool {
    error.kind() == ErrorKind::Timeout
        && std::error::Error::source(error).is_some_and(|s| s.is::<DeadlinePassed>())
}
