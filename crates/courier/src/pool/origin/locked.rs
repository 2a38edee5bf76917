//! The origin's state under its lock, and what unlocking settles.
//!
//! Two things must not happen while the lock is held, and both used to be
//! left to whoever changed the state:
//! - **Gauges adjusted by hand.** The idle connections and the slots in
//!   use (per protocol label) were incremented and decremented at a dozen
//!   places, and one missed path left them wrong for good. Now they are
//!   derived: on unlock, each is recomputed from the state and the global
//!   gauge moves by the difference from what this origin last published.
//! - **Connections dropped under the lock.** Closing an exclusive connection
//!   frees its slot, which takes the lock again. Whatever the critical
//!   section retires goes to `State::closing`, and is dropped after the
//!   mutex is released, so a closing connection keeps its books at once (no
//!   task spawned for it, none lost where no runtime is).

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;

use super::State;
use crate::metrics::{Label, Metrics};
use crate::pool::protocol::Protocol;

thread_local! {
    /// This thread holds an origin's lock: a connection dropped now would
    /// deadlock taking it again (see [`holds_lock`]).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is inside an origin's critical section.
pub(super) fn holds_lock() -> bool {
    HOLDING.get()
}

/// Gauge values this origin has added to the client's totals, by
/// protocol label.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Published {
    /// Connections with no request: exclusive ones on the idle stack,
    /// shared ones with no slot in use.
    pub(super) idle: [u64; Label::ALL.len()],
    /// Slots in use on shared connections.
    pub(super) slots: [u64; Label::ALL.len()],
}

/// The locked state; derefs to [`State`].
pub(super) struct Locked<'a, P: Protocol> {
    guard: Option<MutexGuard<'a, State<P>>>,
    metrics: &'a Metrics,
}

impl<'a, P: Protocol> Locked<'a, P> {
    pub(super) fn new(guard: MutexGuard<'a, State<P>>, metrics: &'a Metrics) -> Locked<'a, P> {
        HOLDING.set(true);
        Locked {
            guard: Some(guard),
            metrics,
        }
    }
}

impl<P: Protocol> Deref for Locked<'_, P> {
    type Target = State<P>;

    fn deref(&self) -> &State<P> {
        self.guard.as_deref().expect("locked until dropped")
    }
}

impl<P: Protocol> DerefMut for Locked<'_, P> {
    fn deref_mut(&mut self) -> &mut State<P> {
        self.guard.as_deref_mut().expect("locked until dropped")
    }
}

impl<P: Protocol> Drop for Locked<'_, P> {
    fn drop(&mut self) {
        let Some(mut st) = self.guard.take() else {
            return;
        };
        publish(&mut st, self.metrics);
        let closing = std::mem::take(&mut st.closing);
        drop(st);
        HOLDING.set(false);
        drop(closing);
    }
}

/// Moves the client's gauges by what changed in this origin's state.
fn publish<P: Protocol>(st: &mut State<P>, metrics: &Metrics) {
    // The shared connections keep their figures as streams come and go,
    // and the idle stack its counts as it changes: no unlock walks either
    // (10,000 connections made every checkout O(connections)).
    let mut now = st
        .shared_conns
        .tally(st.budget.get(), st.slots_hint)
        .clone();
    for (i, idle) in now.idle.iter_mut().enumerate() {
        *idle += st.idle.count(i);
    }
    let was = std::mem::replace(&mut st.published, now);
    adjust(metrics, &was, &st.published);
}

fn adjust(metrics: &Metrics, was: &Published, now: &Published) {
    for label in Label::ALL {
        let i = label.index();
        let by = metrics.protocol(label);
        by.connections_idle.adjust(was.idle[i], now.idle[i]);
        by.slots_active.adjust(was.slots[i], now.slots[i]);
    }
}

/// Takes this origin's share out of the gauges (the origin is going away).
pub(super) fn unpublish<P: Protocol>(st: &mut State<P>, metrics: &Metrics) {
    let was = std::mem::take(&mut st.published);
    adjust(metrics, &was, &Published::default());
}
