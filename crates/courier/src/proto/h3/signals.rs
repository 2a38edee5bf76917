//! What an HTTP/3 connection tells whoever keeps it (the pool): how many
//! request streams it may have open (the peer's MAX_STREAMS for
//! bidirectional streams, as far as it can be observed), how many are
//! open, GOAWAY and its id, closed, and how many requests it served.
//! Atomics, read without a lock; a change the pool must act on is also
//! reported to a [`Listener`] the binding installs (as HTTP/2's signals).
//!
//! quinn does not expose the peer's stream limit: opening a stream past it
//! just waits for credit. So the limit is learnt: until a stream open has
//! had to wait, the connection assumes `assumed` slots (100, the HTTP/2
//! default); once one waited, the most streams ever open at once (the
//! high-water mark) is the limit, since QUIC's limit counts every stream
//! not yet freed, and a wait means that count reached it. The high-water
//! mark rather than the count at the wait, because a stream's credit comes
//! back a round trip after its response ends: at that moment fewer are
//! open than the limit allows.
//!
//! Until then, the connection plans for seven eighths of the limit, not
//! all of it: a server may keep freed credit to itself for a while, and
//! quinn's does (it announces MAX_STREAMS only once more than an eighth of
//! its limit was freed since the last one). A client that plans for the
//! whole limit meets that kept-back credit whenever a burst of its streams
//! ends together, and on a connection of long polls, "more streams end"
//! is the next round: up to an eighth of the polls waited in the stream
//! open for a whole round. With an eighth left unplanned, an open waits
//! only for the acknowledgements of the streams the client saw end (see
//! [`planned`]). A learnt limit is a count that was open at once, within
//! the plan already.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// No GOAWAY yet.
const NO_GOAWAY: u64 = u64::MAX;

/// The streams a connection plans for under a server's `limit`: all but
/// the eighth a quinn server may keep back. With `limit - limit / 8` open
/// at most, a new stream's credit is there whenever the server has freed
/// every stream the client saw end: the server has announced at least
/// `freed + limit - limit / 8`, and the client has opened fewer.
fn planned(limit: usize) -> usize {
    limit - limit / 8
}

impl crate::connect::quic_idle::Waiting for Signals {
    /// A request stream open, or a request waiting for the server's
    /// stream credit: either waits on the server, so the connection's
    /// idle timeout must not end it.
    fn busy(&self) -> bool {
        self.open() > 0 || self.blocked.load(Ordering::Acquire) > 0
    }
    fn woken(&self) -> &tokio::sync::Notify {
        &self.woken
    }
}

/// Whoever keeps the connection and acts on what it reports (the pool).
pub(crate) trait Listener: Send + Sync {
    /// Something in connection `id`'s [`Signals`] changed; called with no
    /// lock of the connection held.
    fn changed(self: Arc<Self>, id: u64);
}

struct Listening {
    listener: Weak<dyn Listener>,
    id: u64,
}

/// What the connection has seen, shared with the pool.
pub(crate) struct Signals {
    /// Request streams open (opened, response not ended nor dropped).
    open: AtomicUsize,
    /// Requests waiting in a stream open for the server's credit
    /// (MAX_STREAMS), with no stream of their own yet.
    blocked: AtomicUsize,
    /// The most that were ever open at once.
    peak: AtomicUsize,
    /// The slots the pool may use: the assumption, then what was learnt.
    max_streams: AtomicUsize,
    /// A stream open had to wait: `max_streams` is learnt.
    learnt: AtomicBool,
    /// The GOAWAY's stream id, [`NO_GOAWAY`] before one.
    goaway: AtomicU64,
    closed: AtomicBool,
    /// Requests whose response ended.
    served: AtomicUsize,
    /// A GOAWAY's served count not yet taken by the pool (`usize::MAX`: none).
    goaway_served: AtomicUsize,
    unreported: AtomicBool,
    listener: OnceLock<Listening>,
    /// The server's SETTINGS as sent (for 0-RTT later, RFC 9114 §7.2.4.2).
    settings: OnceLock<Vec<(u64, u64)>>,
    /// Why we closed the connection, when the server broke the protocol:
    /// a request sent after it reports that, not a bare "closed".
    failure: OnceLock<String>,
    /// Woken when the first request after none starts: the keep-alive
    /// sleeps on it while the connection is idle (`connect::quic_idle`).
    woken: tokio::sync::Notify,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("open", &self.open())
            .field("slots", &self.slots())
            .field("declared", &self.declared())
            .field("goaway", &self.goaway_id())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Signals {
    /// `assumed` slots until the limit is learnt.
    pub(crate) fn new(assumed: usize) -> Signals {
        Signals {
            open: AtomicUsize::new(0),
            blocked: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            max_streams: AtomicUsize::new(assumed),
            learnt: AtomicBool::new(false),
            goaway: AtomicU64::new(NO_GOAWAY),
            closed: AtomicBool::new(false),
            served: AtomicUsize::new(0),
            goaway_served: AtomicUsize::new(usize::MAX),
            unreported: AtomicBool::new(false),
            listener: OnceLock::new(),
            settings: OnceLock::new(),
            failure: OnceLock::new(),
            woken: tokio::sync::Notify::new(),
        }
    }

    /// Changes are reported to `listener` as connection `id`'s from now on.
    pub(crate) fn listen(&self, listener: Weak<dyn Listener>, id: u64) {
        let _ = self.listener.set(Listening { listener, id });
    }

    /// How many requests the pool may have on the connection at once.
    pub(crate) fn slots(&self) -> usize {
        let max = self.max_streams.load(Ordering::Acquire);
        match self.learnt.load(Ordering::Acquire) {
            true => max,
            false => planned(max),
        }
    }

    /// The peer's stream limit, once observed (a stream open waited).
    pub(crate) fn declared(&self) -> Option<usize> {
        self.learnt
            .load(Ordering::Acquire)
            .then(|| self.max_streams.load(Ordering::Acquire))
    }

    /// Request streams open now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Neither GOAWAY nor closed: new requests may go here.
    pub(crate) fn accepts_requests(&self) -> bool {
        self.goaway_id().is_none() && !self.is_closed()
    }

    /// The id of the server's (lowest) GOAWAY: request streams from it on
    /// were not and will not be processed.
    pub(crate) fn goaway_id(&self) -> Option<u64> {
        match self.goaway.load(Ordering::Acquire) {
            NO_GOAWAY => None,
            id => Some(id),
        }
    }

    /// The connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Requests answered in full on the connection so far.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn served(&self) -> usize {
        self.served.load(Ordering::Acquire)
    }

    /// How many request streams the server took before its GOAWAY (its id
    /// over 4: client bidirectional ids are 0, 4, 8...), once, for the pool
    /// to cap later connections by.
    pub(crate) fn take_served(&self) -> Option<usize> {
        match self.goaway_served.swap(usize::MAX, Ordering::AcqRel) {
            usize::MAX => None,
            n => Some(n),
        }
    }

    /// A stream open had to wait for the peer's credit.
    pub(crate) fn open_blocked(&self) {
        let limit = self.peak.load(Ordering::Acquire);
        let learnt = self.learnt.swap(true, Ordering::AcqRel);
        if !learnt || self.max_streams.load(Ordering::Acquire) != limit {
            self.max_streams.store(limit, Ordering::Release);
            self.unreported.store(true, Ordering::Release);
        }
    }

    /// A request stream was opened.
    pub(crate) fn stream_opened(&self) {
        let open = self.open.fetch_add(1, Ordering::AcqRel) + 1;
        if open == 1 {
            self.woken.notify_one();
        }
        let peak = self.peak.fetch_max(open, Ordering::AcqRel).max(open);
        // More open at once than a learnt limit: the peer granted more since.
        if self.learnt.load(Ordering::Acquire) && peak > self.max_streams.load(Ordering::Acquire) {
            self.max_streams.store(peak, Ordering::Release);
            self.unreported.store(true, Ordering::Release);
        }
    }

    /// A request began waiting for stream credit; the guard ends the
    /// wait, however the open ends (opened, failed or dropped).
    pub(crate) fn blocked_open(&self) -> BlockedOpen<'_> {
        if self.blocked.fetch_add(1, Ordering::AcqRel) == 0 {
            self.woken.notify_one();
        }
        BlockedOpen(self)
    }

    /// A request stream ended (`answered`: its response was read to the end).
    /// Returns how many are still open.
    pub(crate) fn stream_ended(&self, answered: bool) -> usize {
        if answered {
            self.served.fetch_add(1, Ordering::AcqRel);
        }
        let left = self.open.fetch_sub(1, Ordering::AcqRel) - 1;
        if self.goaway_id().is_some() {
            self.unreported.store(true, Ordering::Release);
        }
        left
    }

    /// The server sent GOAWAY with `id`; a later one may only lower it
    /// (h3 closes the connection on one that rises).
    pub(crate) fn set_goaway(&self, id: u64) {
        let previous = self.goaway.fetch_min(id, Ordering::AcqRel);
        if previous == NO_GOAWAY {
            let served = usize::try_from(id / 4).unwrap_or(usize::MAX - 1);
            self.goaway_served.store(served, Ordering::Release);
        }
        self.unreported.store(true, Ordering::Release);
    }

    /// The server's SETTINGS arrived (only the first counts: h3 closes the
    /// connection on a second).
    pub(crate) fn set_settings(&self, settings: Vec<(u64, u64)>) {
        let _ = self.settings.set(settings);
    }

    /// The server's SETTINGS, once they arrived: (identifier, value) pairs.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn peer_settings(&self) -> Option<&[(u64, u64)]> {
        self.settings.get().map(Vec::as_slice)
    }

    /// We closed the connection because the server broke the protocol
    /// (`why`); the first cause is kept. Closed too.
    pub(crate) fn set_failed(&self, why: String) {
        let _ = self.failure.set(why);
        self.set_closed();
    }

    /// Why we closed the connection, if the server broke the protocol.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    pub(crate) fn set_closed(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.unreported.store(true, Ordering::Release);
        }
    }

    /// Tells the listener what changed since it was last told. Call with no
    /// lock held.
    pub(crate) fn report(&self) {
        if !self.unreported.swap(false, Ordering::AcqRel) {
            return;
        }
        let Some(listening) = self.listener.get() else {
            return;
        };
        if let Some(listener) = listening.listener.upgrade() {
            listener.changed(listening.id);
        }
    }
}

/// A request waiting for stream credit ([`Signals::blocked_open`]), counted
/// until dropped.
pub(crate) struct BlockedOpen<'a>(&'a Signals);

impl Drop for BlockedOpen<'_> {
    fn drop(&mut self) {
        self.0.blocked.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_the_high_water_mark_at_a_wait() {
        let s = Signals::new(100);
        assert_eq!((s.slots(), s.declared()), (88, None), "seven eighths");
        for _ in 0..10 {
            s.stream_opened();
        }
        // Two responses end; the next open waits for credit a round trip away.
        s.stream_ended(true);
        s.stream_ended(true);
        s.open_blocked();
        assert_eq!((s.slots(), s.declared()), (10, Some(10)));
        assert_eq!(s.open(), 8);
        assert_eq!(s.served(), 2);
        for _ in 0..5 {
            s.stream_opened();
        }
        assert_eq!(s.slots(), 13, "the peer granted more than was learnt");
    }

    /// An eighth of the limit left unplanned, rounded as quinn rounds what
    /// it keeps back (it announces once more than `limit / 8` are freed).
    #[test]
    fn the_plan_leaves_the_kept_back_eighth() {
        let plans: Vec<_> = [0, 1, 7, 8, 16, 100, 512]
            .into_iter()
            .map(|limit| Signals::new(limit).slots())
            .collect();
        assert_eq!(plans, [0, 1, 7, 7, 14, 88, 448]);
    }

    #[test]
    fn goaway_only_lowers_and_is_taken_once() {
        let s = Signals::new(100);
        assert!(s.accepts_requests());
        s.set_goaway(40);
        s.set_goaway(80);
        assert_eq!(s.goaway_id(), Some(40));
        assert!(!s.accepts_requests());
        assert_eq!(s.take_served(), Some(10));
        assert_eq!(s.take_served(), None);
    }

    #[test]
    fn reports_reach_the_listener_once_per_change() {
        struct Count(AtomicUsize);
        impl Listener for Count {
            fn changed(self: Arc<Self>, id: u64) {
                assert_eq!(id, 7);
                self.0.fetch_add(1, Ordering::AcqRel);
            }
        }
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let s = Signals::new(100);
        let weak: Weak<dyn Listener> = Arc::downgrade(&count) as Weak<dyn Listener>;
        s.listen(weak, 7);
        s.report();
        assert_eq!(count.0.load(Ordering::Acquire), 0, "nothing changed");
        s.set_closed();
        s.report();
        s.report();
        assert_eq!(count.0.load(Ordering::Acquire), 1);
    }
}
