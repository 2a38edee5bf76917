//! The origin's shared connections, found by id, and the one to take the
//! next stream found without walking them all.
//!
//! Why: with 1,000,000 long polls at 100 streams per connection an origin
//! holds 10,000 shared connections, and every checkout walked all of them
//! for the busiest with room, every stream's end walked them for its
//! connection, and every unlock walked them again for the gauges. Here a
//! connection is found by id in a map, the candidates for the next stream
//! wait in a heap, busiest first, and the gauges' figures are kept as the
//! streams come and go.
//!
//! The heap is lazy. Its invariant: every connection that is not retiring
//! has an entry with its current number of active streams, or has no room
//! (then it gets one again when a stream ends or its peer raises its limit,
//! both of which the origin reports here). Entries that no longer match
//! (the count moved on, the connection retired or closed, it is full) are
//! dropped when they come to the top, and the heap is rebuilt when stale
//! entries outnumber the connections, so each operation is O(log n)
//! amortised.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use tokio::time::Instant;

use super::locked::Published;
use super::SharedSlot;
use crate::pool::protocol::Protocol;

pub(super) struct SharedConns<P: Protocol> {
    by_id: HashMap<u64, SharedSlot<P>, BuildHasherDefault<IdHasher>>,
    /// Candidates for the next stream: most active streams first, then the
    /// oldest connection (the lowest id).
    room: BinaryHeap<(usize, Reverse<u64>)>,
    /// The gauges' figures for these connections: idle ones and streams in
    /// use, by label.
    tally: Published,
    /// Connections whose peer allowed no stream when last looked at.
    says_none: usize,
    /// Heap entries looked at by [`pick`](Self::pick), for the tests of
    /// its cost.
    #[cfg(test)]
    pub(super) examined: usize,
}

impl<P: Protocol> Default for SharedConns<P> {
    fn default() -> Self {
        SharedConns {
            by_id: HashMap::default(),
            room: BinaryHeap::new(),
            tally: Published::default(),
            says_none: 0,
            #[cfg(test)]
            examined: 0,
        }
    }
}

/// Hashes the pool's own connection ids (a counter, never a peer's): one
/// multiply, where the default SipHash cost about 140 instructions a lookup
/// and an HTTP/2 request makes about seven (checkout, start, end, offers).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; this is for completeness.
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, id: u64) {
        // Fibonacci hashing: the table takes its control bits from the top
        // and its bucket from the bottom, and the product mixes both.
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl<P: Protocol> SharedConns<P> {
    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub(super) fn get(&self, id: u64) -> Option<&SharedSlot<P>> {
        self.by_id.get(&id)
    }

    /// For flags only (`retiring`, `declared`, `idle_since`): stream counts
    /// change through [`start_stream`](Self::start_stream) and
    /// [`end_stream`](Self::end_stream), which keep the books.
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut SharedSlot<P>> {
        self.by_id.get_mut(&id)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &SharedSlot<P>> {
        self.by_id.values()
    }

    /// For flags only, as [`get_mut`](Self::get_mut).
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut SharedSlot<P>> {
        self.by_id.values_mut()
    }

    pub(super) fn insert(&mut self, slot: SharedSlot<P>) {
        let id = slot.conn.id;
        self.count(&slot, 1);
        if let Some(old) = self.by_id.insert(id, slot) {
            self.count(&old, -1);
        }
        self.note_limit(id);
        self.offer(id);
    }

    pub(super) fn remove(&mut self, id: u64) -> Option<SharedSlot<P>> {
        let slot = self.by_id.remove(&id)?;
        self.count(&slot, -1);
        self.says_none -= usize::from(slot.noted_max == 0);
        Some(slot)
    }

    /// Keeps the connections `keep` says to keep.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&SharedSlot<P>) -> bool) {
        let gone: Vec<u64> = self
            .by_id
            .values()
            .filter(|s| !keep(s))
            .map(|s| s.conn.id)
            .collect();
        for id in gone {
            self.remove(id);
        }
    }

    /// Counts a new stream on `id`; the last of the origin's `budget`
    /// retires it.
    pub(super) fn start_stream(&mut self, id: u64, budget: Option<usize>) {
        let Some(slot) = self.by_id.get_mut(&id) else {
            return;
        };
        slot.active += 1;
        slot.opened += 1;
        if budget.is_some_and(|b| slot.opened >= b) {
            slot.retiring = true;
        }
        let i = slot.conn.label.index();
        self.tally.slots[i] += 1;
        self.tally.idle[i] -= u64::from(slot.active == 1);
        self.offer(id);
    }

    /// A stream on `id` ended: its active streams now, if it is still here.
    pub(super) fn end_stream(&mut self, id: u64) -> Option<usize> {
        let slot = self.by_id.get_mut(&id)?;
        slot.active -= 1;
        let (active, i) = (slot.active, slot.conn.label.index());
        self.tally.slots[i] -= 1;
        self.tally.idle[i] += u64::from(active == 0);
        self.offer(id);
        Some(active)
    }

    /// Puts `id` among the candidates with its current count (its room is
    /// checked when it comes to the top). Called whenever its count moves
    /// or it may have gained room.
    pub(super) fn offer(&mut self, id: u64) {
        let Some(slot) = self.by_id.get_mut(&id) else {
            return;
        };
        if slot.retiring {
            return;
        }
        slot.left_full_at = None;
        let active = slot.active;
        if self.by_id.len() == 1 {
            // The origin's one connection (HTTP/2's usual case): every
            // entry is about it, and only the newest is current. Kept at
            // one, the heap costs a checkout one pop, not a sift through
            // the stale entries of the last 64 streams.
            self.room.clear();
        }
        self.room.push((active, Reverse(id)));
        if self.room.len() > 2 * self.by_id.len() + 64 {
            self.offer_all();
        }
    }

    /// Rebuilds the candidates from the connections: after the origin's
    /// slot hint changed (connections not yet declared may have gained
    /// room), or when stale entries pile up.
    pub(super) fn offer_all(&mut self) {
        self.room = self
            .by_id
            .values_mut()
            .filter(|s| !s.retiring)
            .map(|s| {
                s.left_full_at = None;
                (s.active, Reverse(s.conn.id))
            })
            .collect();
    }

    /// Its peer's stream limit may have changed: remembers it, and whether it
    /// allows none (see [`any_says_none`](Self::any_says_none)).
    pub(super) fn note_limit(&mut self, id: u64) {
        let Some(slot) = self.by_id.get_mut(&id) else {
            return;
        };
        let max = slot.conn.max_streams();
        let (was_none, none) = (slot.noted_max == 0, max == 0);
        slot.noted_max = max;
        if none != was_none {
            if none {
                self.says_none += 1;
            } else {
                self.says_none -= 1;
            }
        }
    }

    /// A live connection whose peer allows no stream for now.
    pub(super) fn any_says_none(&self) -> bool {
        self.says_none > 0
            && self
                .by_id
                .values()
                .any(|s| !s.retiring && s.conn.max_streams() == 0)
    }

    /// The connection to take the next stream: the busiest with room, so
    /// that the least busy ones can go idle and close. Connections found
    /// past their lifetime or going away on the way are retired (and
    /// forgotten when idle). The caller starts a stream on the one picked.
    pub(super) fn pick(
        &mut self,
        budget: Option<usize>,
        hint: Option<usize>,
        now: Instant,
    ) -> Option<u64> {
        while let Some((active, Reverse(id))) = self.room.pop() {
            #[cfg(test)]
            {
                self.examined += 1;
            }
            let Some(slot) = self.by_id.get_mut(&id) else {
                continue;
            };
            if slot.active != active || slot.retiring {
                continue;
            }
            if !slot.conn.accepts_streams(now) {
                slot.retiring = true;
                if slot.active == 0 {
                    // Dropping the pool's handle lets it close.
                    self.remove(id);
                }
                continue;
            }
            if slot.has_room(budget, hint) {
                return Some(id);
            }
            slot.left_full_at = Some(slot.conn.max_streams());
        }
        None
    }

    /// The gauges' figures for these connections (`budget` and `hint` as
    /// the origin has them, for the debug check of the candidates).
    pub(super) fn tally(&self, budget: Option<usize>, hint: Option<usize>) -> &Published {
        #[cfg(debug_assertions)]
        self.check_books(budget, hint);
        let _ = (budget, hint);
        &self.tally
    }

    /// The figures kept as streams came and went are what the connections
    /// say, and every connection that may take a stream is a candidate.
    #[cfg(debug_assertions)]
    fn check_books(&self, budget: Option<usize>, hint: Option<usize>) {
        if std::thread::panicking() {
            // Unwinding from a panic (this check's, say) through other
            // unlocks: a second panic would abort the process.
            return;
        }
        let mut counted = Published::default();
        for slot in self.by_id.values() {
            let i = slot.conn.label.index();
            counted.idle[i] += u64::from(slot.active == 0);
            counted.slots[i] += slot.active as u64;
        }
        debug_assert_eq!(counted, self.tally, "shared connections' gauges");
        let says_none = self.by_id.values().filter(|s| s.noted_max == 0).count();
        debug_assert_eq!(says_none, self.says_none, "connections allowing none");
        // Each candidate once is enough for the check (the heap is a multiset).
        let offered: std::collections::HashSet<(usize, u64)> =
            self.room.iter().map(|&(a, Reverse(id))| (a, id)).collect();
        for slot in self.by_id.values() {
            // A limit that rose since the origin last looked, or since a
            // pick found the connection full (it may have dipped and come
            // back), is reported on its way here (the connection's driver
            // sets it first), and the report offers the connection.
            // The limit is read once: the driver may raise it on another
            // thread between two reads, which then said "not moved" and
            // "room" (a panic with the books right and the report on its way).
            let max = slot.conn.max_streams();
            let limit_moved =
                max != slot.noted_max || slot.left_full_at.is_some_and(|at| at != max);
            debug_assert!(
                slot.retiring
                    || offered.contains(&(slot.active, slot.conn.id))
                    || limit_moved
                    || !slot.has_room_at(max, budget, hint),
                "connection {} with room is no candidate",
                slot.conn.id
            );
        }
    }

    fn count(&mut self, slot: &SharedSlot<P>, sign: i64) {
        let i = slot.conn.label.index();
        let apply = |n: &mut u64, by: u64| {
            *n = if sign > 0 { *n + by } else { *n - by };
        };
        apply(&mut self.tally.idle[i], u64::from(slot.active == 0));
        apply(&mut self.tally.slots[i], slot.active as u64);
    }
}
