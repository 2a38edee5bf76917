//! The idle stack of exclusive (HTTP/1.1) connections, counted by protocol
//! label as it changes.
//!
//! Why a type: unlocking an origin publishes its idle connections per label
//! to the client's gauges (see [`locked`](super::locked)). Counting them by
//! walking the stack made every checkout and every return O(idle
//! connections): with 10,000 connections to one origin, a checkout cost
//! 10,000 steps under the origin's lock. Here the stack can only change
//! through methods that keep the counts, so they stay derived from the
//! state (no call site adjusts them by hand) and reading them is O(1).

use tokio::time::Instant;

use super::conn::ExclusiveConn;
use crate::metrics::Label;
use crate::pool::protocol::Protocol;

/// An exclusive connection waiting for a request, and since when.
pub(super) struct Idle<P: Protocol> {
    pub(super) conn: ExclusiveConn<P>,
    pub(super) since: Instant,
}

/// Idle exclusive connections, LIFO: the most recently used connection is
/// the warmest (and the oldest sink to the bottom where the idle timeout
/// finds them).
pub(super) struct IdleStack<P: Protocol> {
    stack: Vec<Idle<P>>,
    /// Connections on the stack, by [`Label::index`].
    by_label: [u64; Label::ALL.len()],
    /// Entries looked at by walks of the stack, for the tests of its cost.
    #[cfg(test)]
    pub(super) walked: usize,
}

impl<P: Protocol> IdleStack<P> {
    pub(super) fn new() -> IdleStack<P> {
        IdleStack {
            stack: Vec::new(),
            by_label: [0; Label::ALL.len()],
            #[cfg(test)]
            walked: 0,
        }
    }

    /// Parks a connection on top.
    pub(super) fn push(&mut self, idle: Idle<P>) {
        self.by_label[idle.conn.label.index()] += 1;
        self.stack.push(idle);
    }

    /// Takes the connection on top (the one returned last).
    pub(super) fn pop(&mut self) -> Option<Idle<P>> {
        let idle = self.stack.pop()?;
        self.by_label[idle.conn.label.index()] -= 1;
        Some(idle)
    }

    /// Takes the connection at the bottom (idle longest).
    pub(super) fn pop_oldest(&mut self) -> Option<Idle<P>> {
        if self.stack.is_empty() {
            return None;
        }
        let idle = self.stack.remove(0);
        self.by_label[idle.conn.label.index()] -= 1;
        Some(idle)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// Moves every connection `expired` says yes to into `into`, keeping the
    /// others in their order. One pass, for the scavenger.
    pub(super) fn remove_into(
        &mut self,
        mut expired: impl FnMut(&mut Idle<P>) -> bool,
        into: &mut Vec<ExclusiveConn<P>>,
    ) {
        let mut kept = 0;
        #[cfg(test)]
        {
            self.walked += self.stack.len();
        }
        for i in 0..self.stack.len() {
            if expired(&mut self.stack[i]) {
                continue;
            }
            self.stack.swap(kept, i);
            kept += 1;
        }
        for idle in self.stack.drain(kept..) {
            self.by_label[idle.conn.label.index()] -= 1;
            into.push(idle.conn);
        }
    }

    /// Connections on the stack with the label of index `i`.
    pub(super) fn count(&self, i: usize) -> u64 {
        self.by_label[i]
    }
}
