//! What an HTTP/2 connection tells the pool: whether the server's first
//! SETTINGS arrived (until then the stream limit is an assumption, and the
//! connection takes requests within it), its
//! SETTINGS_MAX_CONCURRENT_STREAMS as it changes, GOAWAY (after which the
//! connection takes no new streams), and how many streams the server serves
//! on one connection when a GOAWAY shows it. Atomics, so the pool reads them
//! without the connection's lock.
//!
//! A change the pool must act on at once (the first SETTINGS tell it how
//! many streams to plan for; a limit that rose lets waiters in; a GOAWAY
//! retires the connection and teaches a budget) is also reported to
//! a [`Listener`] installed for the pool (by the client's binding,
//! `client/transport.rs`), by [`Signals::report`]: the connection's driver
//! calls it once it has let go of the connection's lock (the pool takes its
//! own lock, and holds it while it drops connections, which takes theirs).
//! The listener is a trait of this module, so HTTP/2 needs nothing of the
//! pool.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

pub(crate) use crate::served::Served;

/// What the connection has seen, shared with the pool.
#[derive(Debug)]
pub(crate) struct Signals {
    settings: AtomicBool,
    goaway: AtomicBool,
    closed: AtomicBool,
    max_streams: AtomicUsize,
    /// The limit the server's first SETTINGS frame left: what it declares,
    /// as opposed to a lowering under load later (set before `settings`).
    declared: AtomicUsize,
    /// A [`Served`] packed as `count << 1 | certain`; 0 until a GOAWAY
    /// showed one, and once the pool took it.
    served: AtomicUsize,
    /// Something the pool acts on changed since it was last told.
    unreported: AtomicBool,
    listener: OnceLock<Listening>,
}

/// Whoever keeps the connection and acts on what it reports (the pool).
pub(crate) trait Listener: Send + Sync {
    /// Something in connection `id`'s [`Signals`] changed; called with no
    /// lock of the connection held.
    fn changed(self: Arc<Self>, id: u64);
}

/// Where [`Signals::report`] goes: the listener, and the connection's id there.
struct Listening {
    listener: Weak<dyn Listener>,
    id: u64,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listening").field("id", &self.id).finish()
    }
}

impl Signals {
    /// `assumed_max_streams` stands until a SETTINGS frame names the limit;
    /// a server whose SETTINGS omit it keeps that value too.
    pub(crate) fn new(assumed_max_streams: usize) -> Signals {
        Signals {
            settings: AtomicBool::new(false),
            goaway: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            max_streams: AtomicUsize::new(assumed_max_streams),
            declared: AtomicUsize::new(assumed_max_streams),
            served: AtomicUsize::new(0),
            unreported: AtomicBool::new(false),
            listener: OnceLock::new(),
        }
    }

    /// Changes are reported to `listener` as connection `id`'s from now on.
    pub(crate) fn listen(&self, listener: Weak<dyn Listener>, id: u64) {
        let _ = self.listener.set(Listening { listener, id });
    }

    /// The server's first SETTINGS frame has been read in full.
    pub(crate) fn settings_received(&self) -> bool {
        self.settings.load(Ordering::Acquire)
    }

    /// The stream limit the server's first SETTINGS frame declared, once it
    /// has been read.
    pub(crate) fn declared_max_streams(&self) -> Option<usize> {
        self.settings_received()
            .then(|| self.declared.load(Ordering::Acquire))
    }

    /// The server sent GOAWAY: no new streams on this connection.
    pub(crate) fn goaway_received(&self) -> bool {
        self.goaway.load(Ordering::Acquire)
    }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(crate) fn max_streams(&self) -> usize {
        self.max_streams.load(Ordering::Acquire)
    }

    /// The connection has ended (its bytes stopped, or its driver returned).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// A SETTINGS frame of the server's (all of it) has been applied.
    pub(crate) fn settings_arrived(&self) {
        // Only the driver calls this: the first call is the first frame.
        if !self.settings.load(Ordering::Acquire) {
            self.declared.store(self.max_streams(), Ordering::Release);
            self.settings.store(true, Ordering::Release);
            self.unreported.store(true, Ordering::Release);
        }
    }

    pub(crate) fn set_max_streams(&self, n: usize) {
        if self.max_streams.swap(n, Ordering::AcqRel) != n {
            self.unreported.store(true, Ordering::Release);
        }
    }

    /// No new streams on this connection (GOAWAY, or stream ids used up).
    pub(crate) fn set_goaway(&self) {
        self.goaway.store(true, Ordering::Release);
        self.unreported.store(true, Ordering::Release);
    }

    /// A GOAWAY showed how many streams the server serves per connection.
    pub(crate) fn set_served(&self, served: Served) {
        let packed = served.count.max(1) << 1 | usize::from(served.certain);
        self.served.store(packed, Ordering::Release);
        self.unreported.store(true, Ordering::Release);
    }

    /// What [`set_served`](Self::set_served) learnt, once.
    pub(crate) fn take_served(&self) -> Option<Served> {
        match self.served.swap(0, Ordering::AcqRel) {
            0 => None,
            n => Some(Served {
                count: n >> 1,
                certain: n & 1 == 1,
            }),
        }
    }

    /// Tells the origin what changed since it was last told. Call with no
    /// lock held.
    pub(crate) fn report(&self) {
        if !self.unreported.load(Ordering::Acquire)
            || !self.unreported.swap(false, Ordering::AcqRel)
        {
            return;
        }
        let Some(listening) = self.listener.get() else {
            return; // not in a pool yet: it reads the signals when it takes the connection
        };
        if let Some(listener) = listening.listener.upgrade() {
            listener.changed(listening.id);
        }
    }
}
