//! Opening a request stream: counted against the server's credit (its
//! MAX_STREAMS, of which quinn shows only that an open waits), keeping
//! the connection alive while it waits, and giving up after a short grace
//! on credit the server keeps back, so the request goes to another
//! connection (`signals` says why a server keeps credit back).

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;

use super::conn::Inner;

/// Opens a request stream, counting it and any wait for the server's
/// credit (the one sign of its MAX_STREAMS quinn gives, see `signals`).
pub(super) async fn open(inner: &Inner) -> Result<(quinn::SendStream, quinn::RecvStream), Open> {
    let mut opening = pin!(inner.quic.open_bi());
    // Held while the open waits for credit: the connection keeps itself
    // alive for it (`quic_idle`'s PINGs), as for an open stream.
    let mut waiting = None;
    // Made only when the open waits (most never do).
    let mut grace: Option<Pin<Box<tokio::time::Sleep>>> = None;
    let stream = std::future::poll_fn(|cx| {
        let polled = opening.as_mut().poll(cx);
        if polled.is_ready() {
            return polled.map(Opened::Stream);
        }
        if waiting.is_none() {
            waiting = Some(inner.signals.blocked_open());
            inner.signals.open_blocked();
            inner.signals.report();
            // With none open, no stream's end would ever offer the
            // connection again, and without a pool there is nowhere else
            // to go: the open waits for the credit as it comes (the
            // server's MAX_STREAMS 0, or credit granted late).
            if inner.signals.open() > 0 && inner.signals.pooled() {
                let wait = credit_grace(inner.quic.rtt());
                grace = Some(Box::pin(tokio::time::sleep(wait)));
            }
        }
        match grace.as_mut().map(|g| g.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Opened::Starved),
            _ => Poll::Pending,
        }
    })
    .await;
    drop(waiting);
    match stream {
        Opened::Stream(stream) => {
            let stream = stream.map_err(Open::Lost)?;
            inner.signals.stream_opened();
            Ok(stream)
        }
        Opened::Starved => {
            inner.signals.starve();
            inner.signals.report();
            Err(Open::Starved)
        }
    }
}

/// How an open ended.
enum Opened<T> {
    Stream(T),
    /// No credit within the grace.
    Starved,
}

/// Why no stream was opened.
pub(super) enum Open {
    /// The connection is gone.
    Lost(quinn::ConnectionError),
    /// The server's credit did not come within [`credit_grace`]: the
    /// request goes to another connection (it was not sent).
    Starved,
}

/// How long an open waits for the server's stream credit before its
/// request moves on: a few round trips, for credit on its way (a stream's
/// comes back a round trip after it ends), and no more, for credit the
/// server keeps back (see `signals`).
fn credit_grace(rtt: Duration) -> Duration {
    (rtt * 4).clamp(Duration::from_millis(20), Duration::from_millis(500))
}
