//! What an HTTP/2 connection tells the pool: whether the server's first
//! SETTINGS arrived (until then the stream limit is a guess), its
//! SETTINGS_MAX_CONCURRENT_STREAMS as it changes, and GOAWAY (after which the
//! connection takes no new streams). Atomics, so the pool reads them without
//! the connection's lock.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// What the connection has seen, shared with the pool.
#[derive(Debug)]
pub(crate) struct Signals {
    settings: AtomicBool,
    goaway: AtomicBool,
    closed: AtomicBool,
    max_streams: AtomicUsize,
    changed: Notify,
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
            changed: Notify::new(),
        }
    }

    /// The server's first SETTINGS frame has been read in full.
    pub(crate) fn settings_received(&self) -> bool {
        self.settings.load(Ordering::Acquire)
    }

    /// The server sent GOAWAY: no new streams on this connection.
    pub(crate) fn goaway_received(&self) -> bool {
        self.goaway.load(Ordering::Acquire)
    }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(crate) fn max_streams(&self) -> usize {
        self.max_streams.load(Ordering::Acquire)
    }

    /// Waits for the server's first SETTINGS; false if the connection ended first.
    pub(crate) async fn wait_for_settings(&self) -> bool {
        loop {
            let changed = self.changed.notified();
            if self.settings_received() {
                return true;
            }
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            changed.await;
        }
    }

    /// The connection has ended (its bytes stopped, or its driver returned).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// The server's SETTINGS (all of them) have been applied.
    pub(crate) fn settings_arrived(&self) {
        self.settings.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    pub(crate) fn set_max_streams(&self, n: usize) {
        self.max_streams.store(n, Ordering::Release);
    }

    /// No new streams on this connection (GOAWAY, or stream ids used up).
    pub(crate) fn set_goaway(&self) {
        self.goaway.store(true, Ordering::Release);
    }
}
