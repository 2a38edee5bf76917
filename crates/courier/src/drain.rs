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

use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::metrics::Metrics;
use crate::pool::Lease;

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
    pub(crate) fn start(&self, body: Incoming, lease: Lease, remaining: Option<u64>) {
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

async fn drain(mut body: Incoming, lease: Lease, policy: DrainPolicy) {
    let origin = Arc::clone(lease.origin());
    let max_bytes = policy.max_bytes;
    let read_to_end = async move {
        let mut read = 0u64;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            if let Some(data) = frame.data_ref() {
                read += data.len() as u64;
                if read > max_bytes {
                    return false;
                }
            }
        }
        true
    };
    let deadline = tokio::time::sleep(policy.timeout);
    tokio::pin!(read_to_end, deadline);

    let grace = tokio::time::sleep(DRAIN_GRACE.min(policy.timeout));
    let quick = tokio::select! {
        ok = &mut read_to_end => Some(ok),
        _ = grace => None,
    };
    let ok = match quick {
        Some(ok) => {
            record(&policy, ok);
            // One step: un-count the drain and hand the connection over, so
            // no waiter dials in between.
            origin.drain_finished(if ok { lease.into_reusable() } else { None });
            return;
        }
        None => {
            origin.drain_slow();
            tokio::select! {
                ok = &mut read_to_end => ok,
                _ = &mut deadline => false,
            }
        }
    };
    record(&policy, ok);
    if ok {
        lease.release();
    }
    // Otherwise dropping the lease closes the connection.
}

fn record(policy: &DrainPolicy, ok: bool) {
    if ok {
        policy.metrics.drains_completed.inc();
    } else {
        policy.metrics.drains_aborted.inc();
    }
}
