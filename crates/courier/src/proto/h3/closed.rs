//! Whether QUIC closed the connection, read without quinn's lock.
//!
//! Why: the pool asks whether a connection is closed for every request
//! (when it picks one, and when it hands the lease out), and quinn answers
//! only under its connection's lock (`close_reason`): about 90
//! instructions a request over HTTP/3, where HTTP/2 reads a flag. Our
//! driver learns of the close only when its task next runs, so the flag
//! it sets then came too late to stand for quinn's answer. This one is set
//! at the moment quinn closes: quinn wakes whoever waits on `closed()`
//! when it records the close, and the driver waits there with a waker that
//! sets the flag (`std::task::Wake`, no task behind it).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

/// Set when QUIC closes the connection (either side, any reason).
#[derive(Default)]
pub(crate) struct QuicClosed(AtomicBool);

impl QuicClosed {
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Polls quinn's `closed` future (`quinn::Connection::closed`) once
    /// with a waker that sets the flag: from then on quinn's close sets it
    /// as it happens. The future must be kept (and not polled again with
    /// another waker) for as long as the flag is to follow quinn.
    pub(crate) fn watch<F: Future>(self: &Arc<Self>, closed: Pin<&mut F>) {
        let waker = Waker::from(Arc::clone(self));
        if closed.poll(&mut Context::from_waker(&waker)).is_ready() {
            self.set();
        }
    }
}

impl Wake for QuicClosed {
    fn wake(self: Arc<Self>) {
        self.set();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.set();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::QuicClosed;

    /// The flag follows the watched future: unset while it waits, set by
    /// its wake (quinn's close), or at once when it was ready already.
    #[tokio::test]
    async fn the_flag_is_set_by_the_wake_of_what_it_watches() {
        let notify = Arc::new(tokio::sync::Notify::new());
        let flag = Arc::new(QuicClosed::default());
        let waiting = notify.notified();
        tokio::pin!(waiting);
        flag.watch(waiting.as_mut());
        assert!(!flag.get(), "set before the close");
        notify.notify_waiters();
        assert!(flag.get(), "not set by the close");

        let ready = Arc::new(QuicClosed::default());
        ready.watch(std::pin::pin!(std::future::ready(())));
        assert!(ready.get(), "not set by a close that came first");
    }
}
