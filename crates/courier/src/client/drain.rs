//! Draining an unread response body so its connection can be reused.
//!
//! Closing a connection because the caller did not read a few hundred bytes
//! costs a new TCP (and TLS) handshake on the next request. Go's net/http users
//! learned to drain by hand (go-github #317: 4x faster); courier does it for
//! everyone, in the background, within limits: past `max_response_drain_size`
//! bytes or `response_drain_timeout`, closing is cheaper than reading.
//!
//! For the first [`DRAIN_GRACE`] of a drain, the origin's waiters count on the
//! draining connection instead of dialing a new one, so the common pattern
//! "send, read part of the body, drop, send again" reuses one connection.

use std::sync::Arc;
use std::time::Duration;

use std::future::poll_fn;

use crate::client::transport::Lease;
use crate::client::transport::Source;
use crate::metrics::Metrics;

/// How long a waiter may count on a draining connection before dialing.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_millis(100);

/// The limits a drain works within, copied into every response body.
#[derive(Clone)]
pub(crate) struct DrainPolicy {
    pub(crate) max_bytes: u64,
    pub(crate) timeout: Duration,
    pub(crate) metrics: Arc<Metrics>,
}

impl DrainPolicy {
    /// Decides what to do with an unfinished body whose response was dropped.
    /// `remaining` is what the Content-Length says is left, when known.
    pub(crate) fn start(&self, body: Source, lease: Lease, remaining: Option<u64>) {
        if remaining.is_some_and(|r| r > self.max_bytes) || self.max_bytes == 0 {
            // Known to be over the limit: close now instead of reading.
            self.metrics.drains_aborted.inc();
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.metrics.drains_aborted.inc();
            return;
        };
        lease.origin().drain_started();
        runtime.spawn(drain(body, lease, self.clone()));
    }
}

async fn drain(mut body: Source, mut lease: Lease, policy: DrainPolicy) {
    let origin = Arc::clone(lease.origin());
    let max_bytes = policy.max_bytes;
    // Owns the lease, so giving up on it (the deadline) closes the connection.
    let read_to_end = async move {
        let mut read = 0u64;
        let ok = loop {
            match poll_fn(|cx| body.poll_frame(Some(&mut lease), cx)).await {
                None => break true,
                Some(Err(_)) => break false,
                Some(Ok(frame)) => {
                    read += frame.data_ref().map_or(0, |d| d.len() as u64);
                    if read > max_bytes {
                        break false;
                    }
                }
            }
        };
        (ok, lease)
    };
    let deadline = tokio::time::sleep(policy.timeout);
    tokio::pin!(read_to_end, deadline);

    let grace = tokio::time::sleep(DRAIN_GRACE.min(policy.timeout));
    let quick = tokio::select! {
        ok = &mut read_to_end => Some(ok),
        _ = grace => None,
    };
    if let Some((ok, lease)) = quick {
        record(&policy, ok);
        // One step: un-count the drain and hand the connection over, so
        // no waiter dials in between.
        origin.drain_finished(if ok { lease.into_reusable() } else { None });
        return;
    }
    origin.drain_slow();
    let slow = tokio::select! {
        done = &mut read_to_end => Some(done),
        _ = &mut deadline => None,
    };
    match slow {
        Some((true, lease)) => {
            record(&policy, true);
            lease.release();
        }
        // Dropping the lease closes the connection.
        _ => record(&policy, false),
    }
}

fn record(policy: &DrainPolicy, ok: bool) {
    if ok {
        policy.metrics.drains_completed.inc();
    } else {
        policy.metrics.drains_aborted.inc();
    }
}
