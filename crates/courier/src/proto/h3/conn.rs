//! An HTTP/3 connection's handle (cloned by every request on it) and its
//! driver, the task that sets up our control stream and reads the server's
//! unidirectional streams ([`control`](super::control)) until the
//! connection ends.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use http::Request;
use tokio::sync::watch;
use tokio::time::Instant;

use super::body::RecvBody;
use super::closed::QuicClosed;
use super::code;
use super::control;
use super::deadline::{Deadlines, Kept};
use super::early::{Phase, PhaseWatch, Remembered};
use super::frame::{self, setting, stream_type};
use super::head::{self, HeadError};
use super::request::{self, Answer};
use super::signals::Signals;
use super::template;
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::{Driver, SendError};

/// What the connection enforces on the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    /// Largest response header section accepted (our
    /// SETTINGS_MAX_FIELD_SECTION_SIZE, sent to the server too): the
    /// client's `max_response_headers_size`, as HTTP/2's header list.
    pub(crate) max_field_section: u64,
    /// Slots assumed until the server's stream limit shows (HTTP/2's 100).
    pub(crate) assumed_streams: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_field_section: 64 * 1024,
            assumed_streams: 100,
        }
    }
}

/// One HTTP/3 connection; clones share it.
#[derive(Clone)]
pub(crate) struct Connection {
    pub(super) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(super) quic: quinn::Connection,
    pub(super) signals: Arc<Signals>,
    /// Set as QUIC closes the connection (`closed.rs`): the pool's check
    /// per request, without quinn's lock.
    quic_closed: Arc<QuicClosed>,
    /// The requests' deadlines, kept by the driver's timer.
    deadlines: Arc<Deadlines>,
    pub(super) config: Config,
    /// The server's SETTINGS_MAX_FIELD_SECTION_SIZE (unlimited until its
    /// SETTINGS say otherwise, RFC 9114 §4.2.2).
    pub(super) peer_max_field_section: AtomicU64,
    /// The last final response head, replayed when it comes again.
    last_head: head::Replay,
    /// Where the handshake stands for early data ([`Phase::Full`] without
    /// 0-RTT).
    phase: watch::Sender<Phase>,
    /// The phase is settled (not [`Phase::Early`]): what every request
    /// asks, read without the watch's lock.
    settled: AtomicBool,
    /// The server's settings from the resumed session, in force while
    /// 0-RTT is (RFC 9114 §7.2.4.2).
    remembered: Remembered,
    /// The server's SETTINGS arrived on this connection.
    settings_arrived: AtomicBool,
    /// Told the server's SETTINGS once they arrive, to remember them for
    /// the next resumed connection.
    remember: Mutex<Option<RememberFn>>,
    /// The last request head, sent again when it comes again.
    last_request: template::Template,
    /// The client's default headers, written after a request's own fields
    /// (as HTTP/2's encoder writes them), not added to the request: adding
    /// them cost every request its header map's two allocations.
    defaults: http::HeaderMap,
}

/// Keeps a server's settings for a later connection that resumes.
pub(crate) type RememberFn = Box<dyn FnOnce(Remembered) + Send + Sync>;

/// What a connection resumed from an earlier one brings to HTTP/3.
#[derive(Default)]
pub(crate) struct Resume {
    /// 0-RTT is on: QUIC's word on whether the server took the early data
    /// (resolves when the handshake completes) and the latest the
    /// handshake may complete.
    pub(crate) early: Option<(quinn::ZeroRttAccepted, Instant)>,
    /// Told how that handshake ended (`Some(accepted)`, `None` past the
    /// deadline), for the client's TLS metrics.
    pub(crate) settled: Option<Box<dyn FnOnce(Option<bool>) + Send>>,
    /// The server's settings remembered with the session.
    pub(crate) remembered: Remembered,
    /// Where to remember this connection's server settings.
    pub(crate) remember: Option<RememberFn>,
}

impl Inner {
    /// The server broke the protocol (RFC 9114 §8): the connection is
    /// closed with `code`, and `why` kept, so a request sent after it
    /// reports the server's fault, not a bare "closed".
    pub(super) fn fail(&self, code: u64, why: String) {
        tracing::debug!(code, %why, "HTTP/3 connection error");
        // The cause first: a request task on another worker that sees the
        // connection lost must find why, or it takes the loss for a
        // network's and sends the request again.
        self.signals.set_failed(why);
        let code = quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX);
        self.quic.close(code, b"");
        self.signals.report();
    }

    /// A request stream ended; after a GOAWAY, the last one closes the
    /// connection (the server waits for that, and it loses nothing).
    pub(super) fn stream_ended(&self, answered: bool) {
        let left = self.signals.stream_ended(answered);
        if left == 0 && self.signals.goaway_id().is_some() {
            self.quic.close(code::NO_ERROR.into(), b"");
        }
        self.signals.report();
    }
}

/// Sets HTTP/3 up over an established QUIC connection: opens our control
/// stream and writes our SETTINGS (it does not wait for the server's). The
/// driver must be spawned.
///
/// # Errors
/// [`ErrorKind::Connect`] when the control stream cannot be opened or
/// written (the connection closed).
pub(crate) async fn handshake(
    quic: quinn::Connection,
    config: Config,
    defaults: http::HeaderMap,
    resume: Resume,
) -> Result<(Connection, Driver), Error> {
    let signals = Arc::new(Signals::new(config.assumed_streams));
    let control = open_control(&quic, &config).await?;
    let Resume {
        early,
        settled,
        remembered,
        remember,
    } = resume;
    // Until the server's SETTINGS arrive, a 0-RTT connection goes by the
    // remembered ones (unlimited when none: the protocol's default).
    let peer_max = match early {
        Some(_) => remembered
            .get(setting::MAX_FIELD_SECTION_SIZE)
            .unwrap_or(u64::MAX),
        None => u64::MAX,
    };
    let phase = if early.is_some() {
        Phase::Early
    } else {
        Phase::Full
    };
    let inner = Arc::new(Inner {
        quic,
        signals,
        quic_closed: Arc::default(),
        deadlines: Arc::default(),
        config,
        peer_max_field_section: AtomicU64::new(peer_max),
        last_head: head::Replay::default(),
        last_request: template::Template::default(),
        settled: AtomicBool::new(phase.settled()),
        phase: watch::Sender::new(phase),
        remembered,
        settings_arrived: AtomicBool::new(false),
        remember: Mutex::new(remember),
        defaults,
    });
    // The driver holds the connection weakly: when the last handle and the
    // last request are gone, `Inner`'s drop closes QUIC and the driver ends.
    let control = control::drive(
        Arc::downgrade(&inner),
        inner.quic.clone(),
        Arc::clone(&inner.signals),
        Arc::clone(&inner.quic_closed),
        Arc::clone(&inner.deadlines),
        config.max_field_section,
        control,
    );
    let driver: Driver = match early {
        None => Box::pin(control),
        Some((accepted, deadline)) => {
            let weak = Arc::downgrade(&inner);
            let quic = inner.quic.clone();
            Box::pin(async move {
                let settle = async move {
                    let outcome = tokio::time::timeout_at(deadline, accepted).await.ok();
                    if let Some(settled) = settled {
                        settled(outcome);
                    }
                    // Rejected early data took our control stream and
                    // SETTINGS with it: they are sent again first.
                    let again = match outcome {
                        Some(false) => open_control(&quic, &config)
                            .await
                            .map_err(|e| tracing::debug!("HTTP/3 after 0-RTT rejected: {e}"))
                            .ok(),
                        _ => None,
                    };
                    if let Some(inner) = weak.upgrade() {
                        inner.settle(outcome);
                    }
                    // Kept open as long as the connection is driven.
                    again
                };
                let (again, ()) = tokio::join!(settle, control);
                drop(again);
            })
        }
    };
    Ok((Connection { inner }, driver))
}

/// Opens our control stream and writes our SETTINGS.
async fn open_control(
    quic: &quinn::Connection,
    config: &Config,
) -> Result<quinn::SendStream, Error> {
    let setup =
        |e: &dyn std::fmt::Display| Error::new(ErrorKind::Connect, format!("HTTP/3 setup: {e}"));
    let mut control = quic.open_uni().await.map_err(|e| setup(&e))?;
    let mut hello = Vec::with_capacity(32);
    crate::proto::h3::varint::put(&mut hello, stream_type::CONTROL);
    // No dynamic table, nothing blocked (RFC 9204 §5): then QPACK holds no
    // state across streams (see `qpack`).
    frame::put_settings(
        &mut hello,
        &[
            (setting::QPACK_MAX_TABLE_CAPACITY, 0),
            (setting::QPACK_BLOCKED_STREAMS, 0),
            (setting::MAX_FIELD_SECTION_SIZE, config.max_field_section),
        ],
    );
    control.write_all(&hello).await.map_err(|e| setup(&e))?;
    Ok(control)
}

impl Drop for Inner {
    /// No handle and no request is left: the connection closes (as h3's
    /// did when its last request opener went), or it would live on with
    /// its driver until the idle timeout.
    fn drop(&mut self) {
        self.quic.close(code::NO_ERROR.into(), b"");
    }
}

impl Inner {
    /// A response's field section, decoded or replayed ([`head::Replay`]).
    pub(super) fn response_head(&self, block: &[u8]) -> Result<head::ResponseHead, HeadError> {
        self.last_head
            .response(block, self.config.max_field_section)
    }

    /// A request's head encoded, or the last one's bytes again
    /// ([`template::Template`]).
    pub(super) fn request_head<B>(
        &self,
        request: &Request<B>,
        content_length: Option<u64>,
    ) -> Result<head::EncodedHead, &'static str> {
        self.last_request
            .request(request, content_length, &self.defaults)
    }

    /// The server's SETTINGS arrived (on a 0-RTT connection, read only
    /// once the handshake settled, see `control.rs`).
    ///
    /// # Errors
    /// Why they break the remembered settings the client went by in early
    /// data (H3_SETTINGS_ERROR).
    pub(super) fn peer_settings(&self, pairs: &[(u64, u64)]) -> Result<(), String> {
        let remember = self
            .remember
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Remembered even when they break the old ones: they are the
        // server's word now, and the next connection goes by them (else
        // every 0-RTT connection to it would fail the same way).
        if let Some(remember) = remember {
            remember(Remembered::of(pairs));
        }
        if self.phase() == Phase::Accepted {
            if let Some(why) = self.remembered.broken_by(pairs) {
                return Err(why);
            }
        }
        // Absent, the size is unlimited (RFC 9114 §4.2.2): the fresh
        // SETTINGS replace any remembered value.
        let max = pairs
            .iter()
            .find(|(id, _)| *id == setting::MAX_FIELD_SECTION_SIZE)
            .map_or(u64::MAX, |&(_, max)| max);
        self.peer_max_field_section.store(max, Ordering::Release);
        self.settings_arrived.store(true, Ordering::Release);
        self.signals.set_settings(pairs.to_vec());
        Ok(())
    }

    /// Where the handshake stands for early data.
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// The handshake is settled ([`Phase::settled`]).
    pub(crate) fn settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    /// A watch on [`Self::phase`].
    pub(crate) fn phase_watch(&self) -> PhaseWatch {
        self.phase.subscribe()
    }

    /// The 0-RTT handshake completed: `Some(accepted)`, or `None` past its
    /// deadline (the connection is closed: nothing more is sent on it).
    fn settle(&self, accepted: Option<bool>) {
        let phase = match accepted {
            Some(true) => Phase::Accepted,
            Some(false) => {
                // The early data never happened: neither did the settings
                // it went by (the server's fresh ones, once they arrive,
                // start from the defaults).
                if !self.settings_arrived.load(Ordering::Acquire) {
                    self.peer_max_field_section
                        .store(u64::MAX, Ordering::Release);
                }
                Phase::Rejected
            }
            None => {
                self.quic.close(code::NO_ERROR.into(), b"handshake timeout");
                Phase::Rejected
            }
        };
        tracing::debug!(?phase, "HTTP/3 0-RTT handshake settled");
        self.phase.send_replace(phase);
        // After the watch: settled here means settled there.
        self.settled.store(true, Ordering::Release);
        self.signals.report();
    }
}

impl Connection {
    /// What the connection tells the pool.
    pub(crate) fn signals(&self) -> &Arc<Signals> {
        &self.inner.signals
    }

    /// The connection has ended (or is ending: QUIC has closed it, as its
    /// close reason would say, read without its lock: see `closed.rs`).
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.signals.is_closed() || self.inner.quic_closed.get()
    }

    /// The QUIC connection (its statistics, its close reason).
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn quic(&self) -> &quinn::Connection {
        &self.inner.quic
    }

    /// The server's address.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn remote_addr(&self) -> std::net::SocketAddr {
        self.inner.quic.remote_address()
    }

    /// Closes the connection now (CONNECTION_CLOSE with H3_NO_ERROR);
    /// requests in flight fail.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn close(&self) {
        self.inner.quic.close(code::NO_ERROR.into(), b"");
    }

    /// Sends `request` (its URI absolute) and waits for the response head,
    /// until `deadline` if one is given: the connection keeps it
    /// ([`deadline`](super::deadline)), and past it the request fails with
    /// the request timeout's error.
    ///
    /// # Errors
    /// A [`SendError`] that says whether the request may be sent again
    /// (refused after a GOAWAY, on a connection already closed, lost with
    /// the connection) and hands it back when it may.
    ///
    /// A plain function, not an `async fn`: a wrapper's future was one more
    /// copy of the whole request future on every request. `B`: the body as
    /// the caller holds it, made from the response's where the answer is
    /// made (the transport's `Source`).
    pub(crate) fn send<B: From<Box<RecvBody>> + Send + 'static>(
        &self,
        request: Request<Body>,
        deadline: Option<Instant>,
    ) -> impl std::future::Future<Output = Result<Answer<B>, SendError>> + Send + 'static {
        let kept = deadline.map(|at| Kept::new(Arc::clone(&self.inner.deadlines), at));
        request::send(Arc::clone(&self.inner), request, kept)
    }
}
