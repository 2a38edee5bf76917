//! What the pool's randomized tests (`pool/fake_tests/random_tests.rs`)
//! read of an origin at rest, beside the debug check of its books.

use super::*;

impl<P: Protocol> OriginPool<P> {
    /// What the randomized tests check at rest; taking the lock runs the
    /// debug check of the books too (on unlock).
    pub(crate) fn books(&self) -> Books {
        let now = Instant::now();
        let st = self.lock();
        let (budget, hint) = (st.budget.get(), st.slots_hint);
        let live = st.waiters.iter().filter(|w| !w.tx.is_closed());
        Books {
            waiting: live.clone().count(),
            waiting_any: live.filter(|w| !w.fresh_only).count(),
            idle: (0..crate::metrics::Label::ALL.len())
                .map(|i| st.idle.count(i))
                .sum(),
            shared_with_room: st
                .shared_conns
                .iter()
                .filter(|s| s.has_room(budget, hint) && s.conn.accepts_streams(now))
                .count(),
            open: st.open,
            connecting: st.connecting,
            draining: st.draining,
        }
    }
}

/// An origin's state as the randomized tests check it at rest
/// ([`OriginPool::books`]).
#[derive(Debug)]
pub(crate) struct Books {
    /// Requests waiting that have not given up.
    pub(crate) waiting: usize,
    /// Of those, the ones a pooled connection would do for.
    pub(crate) waiting_any: usize,
    /// Exclusive connections on the idle stack.
    pub(crate) idle: u64,
    /// Shared connections that would take a stream now.
    pub(crate) shared_with_room: usize,
    pub(crate) open: usize,
    pub(crate) connecting: usize,
    pub(crate) draining: usize,
}
