//! Shared (HTTP/2) connections of the origin: the slots they offer, what a
//! GOAWAY teaches about the server's request limit, and retiring them.

use super::*;
use crate::pool::protocol::{Changes, Shared as _};

impl<P: Protocol> OriginPool<P> {
    /// Gives waiters slots on shared connection `id` while it has room.
    pub(super) fn serve_streams(&self, st: &mut State<P>, id: u64) {
        let budget = st.budget.get();
        while !st.waiters.is_empty() {
            let Some(slot) = st.shared_conns.get(id) else {
                return;
            };
            if !slot.has_room(budget, st.slots_hint) {
                return;
            }
            let conn = Arc::clone(&slot.conn);
            let Some(waiter) = st.waiters.pop_front() else {
                return;
            };
            if waiter.tx.send(Ok(Conn::Shared(conn))).is_ok() {
                st.shared_conns.start_stream(id, budget);
            }
        }
    }

    /// Gives waiters slots on any shared connection with room, busiest
    /// first: after the origin's slot hint rose, connections not yet
    /// declared offer more, and their waiters would otherwise stay in line
    /// until a stream of theirs ended or a new checkout came.
    pub(super) fn serve_any(&self, st: &mut State<P>) {
        let (budget, now) = (st.budget.get(), Instant::now());
        while !st.waiters.is_empty() {
            let Some(id) = st.shared_conns.pick(budget, st.slots_hint, now) else {
                return;
            };
            let conn = match st.shared_conns.get(id) {
                Some(slot) => Arc::clone(&slot.conn),
                None => return,
            };
            let mut taken = false;
            while let Some(waiter) = st.waiters.pop_front() {
                if waiter.tx.send(Ok(Conn::Shared(Arc::clone(&conn)))).is_ok() {
                    taken = true;
                    break;
                }
            }
            if !taken {
                // Picking took it off the candidates: it has room still.
                st.shared_conns.offer(id);
                return;
            }
            st.shared_conns.start_stream(id, budget);
        }
    }

    /// A GOAWAY showed how many streams the server serves per connection:
    /// connections that had their share already take no new streams.
    pub(super) fn learn_budget(&self, st: &mut State<P>, served: Served) {
        let Some(budget) = st.budget.learn(served, Instant::now()) else {
            return;
        };
        tracing::debug!(
            origin = %self.authority,
            budget,
            certain = served.certain,
            "the server closes connections after this many requests"
        );
        for slot in st.shared_conns.iter_mut() {
            if slot.opened >= budget {
                slot.retiring = true;
            }
        }
        self.forget_idle_shared(st, |s| s.retiring);
    }
}

/// What a shared connection reports through its
/// [`Reporter`](crate::pool::protocol::Reporter): its slots declared (which
/// tells the origin how many to plan for), a slot limit that rose lets
/// waiters in, a GOAWAY retires the connection (and may teach the origin a
/// budget); any of them may call for connections.
impl<P: Protocol> Changes for OriginPool<P> {
    fn changed(self: Arc<Self>, id: u64) {
        let connects = {
            let mut st = self.lock();
            let Some(slot) = st.shared_conns.get(id) else {
                return; // not pooled yet (it reads the signals then), or gone
            };
            if let Some(served) = slot.conn.conn.take_served() {
                self.learn_budget(&mut st, served);
            }
            let mut hint_moved = false;
            // Learning may have closed idle connections: find it again.
            if let Some(slot) = st.shared_conns.get_mut(id) {
                if let (false, Some(declared)) = (slot.declared, slot.conn.conn.declared()) {
                    // Its declaration plans the next connections, as if it
                    // had come before the connection was pooled.
                    slot.declared = true;
                    let hint = Some(declared.max(1));
                    if st.slots_hint != hint {
                        st.slots_hint = hint;
                        // Connections not yet declared offer up to the hint.
                        st.shared_conns.offer_all();
                        hint_moved = true;
                    }
                }
                let slot = st.shared_conns.get_mut(id).expect("found above");
                if !slot.conn.accepts_streams(Instant::now()) {
                    slot.retiring = true;
                }
                if slot.retiring {
                    self.forget_idle_shared(&mut st, |s| s.retiring);
                } else {
                    // Its limit may have risen (or fallen to none).
                    st.shared_conns.note_limit(id);
                    st.shared_conns.offer(id);
                    self.serve_streams(&mut st, id);
                }
            }
            if hint_moved {
                self.serve_any(&mut st);
            }
            self.connects_needed(&mut st)
        };
        self.spawn_connects(connects);
    }
}

impl<P: Protocol> OriginPool<P> {
    /// Drops the pool's handle on idle shared connections matching `forget`,
    /// which closes them.
    pub(super) fn forget_idle_shared(
        &self,
        st: &mut State<P>,
        forget: impl Fn(&SharedSlot<P>) -> bool,
    ) {
        st.shared_conns.retain(|s| s.active > 0 || !forget(s));
    }
}
