//! The state a connection's streams share with its driver, behind one lock.
//!
//! Requests open streams from their own tasks: under the lock, a request
//! takes the next stream id, HPACK-encodes its head straight into the
//! connection's write buffer (ids and HPACK state must follow wire order, and
//! the lock gives both), and wakes the driver, which writes whatever has been
//! queued in one go. The driver reads frames, and under the same lock hands
//! each stream its head, its data and its errors. A request's life takes a
//! handful of uncontended lock round trips: open, take the head, read the
//! body, close.
//!
//! `State` is made of parts, each a type in a leaf file with fields of its
//! own (after h2's `Recv`/`Send`/`Counts`): [`Streams`], [`Counts`],
//! [`Sender`], [`RecvFlow`], [`GoingAway`]. No part imports another's file
//! to change its fields: `State` decides which part talks to which (opening
//! a stream takes an id and queues HEADERS in the sender, sizes the stream's
//! windows from both ends' settings, and settles the counts), here and in
//! the files that add to it (`release`, `control`, `closed`, `goaway`, and
//! `recv`'s frame handlers). The connection's failure, its flood budget and
//! the resets it remembers are private to this file, behind methods.

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::Method;

use super::counts::Counts;
use super::deadline::Deadlines;
pub(crate) use super::encode::Head;
use super::error::{ConnError, StreamError};
use super::flood::{self, Budget, Glitch};
use super::frame::Reason;
use super::going_away::GoingAway;
use super::recv_flow::RecvFlow;
use super::resets::Resets;
use super::sender::Sender;
pub(crate) use super::settings::Local;
use super::signals::Signals;
use super::stream_state::legal;
use super::streams::{Key, Stream, Streams, Upload};

pub(crate) struct Shared {
    state: Mutex<State>,
    /// When the connection began: its streams' deadlines are kept relative
    /// to it ([`super::deadline`]).
    epoch: tokio::time::Instant,
}

impl Shared {
    /// When the connection began (see [`super::deadline::mark`]).
    pub(crate) fn epoch(&self) -> tokio::time::Instant {
        self.epoch
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is a bug in courier; the state is
        // still consistent enough to fail the streams, so keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a stream for a GET with no body, as a request would (tests).
    #[cfg(test)]
    pub(crate) async fn open_get(&self) -> Result<(Key, u32), StreamError> {
        use http::uri::{Authority, Scheme};
        use http::HeaderMap;

        let headers = HeaderMap::new();
        let head = Head {
            method: &Method::GET,
            scheme: &Scheme::HTTP,
            authority: &Authority::from_static("test.invalid"),
            path: "/",
            headers: &headers,
            defaults: &headers,
            withheld: &[],
            content_length: None,
            protocol: None,
            deadline: None,
        };
        std::future::poll_fn(|cx| self.lock().poll_open(cx, &head, &mut Outgoing::Empty)).await
    }
}

/// Everything streams and driver share: the parts, each with its own
/// fields ([`Streams`], [`Counts`], [`Sender`], [`RecvFlow`], [`GoingAway`]),
/// and what ties them together.
pub(crate) struct State {
    pub(crate) streams: Streams,
    /// Streams the server counts against its SETTINGS_MAX_CONCURRENT_STREAMS,
    /// its limit, and the requests waiting for room.
    pub(crate) counts: Counts,
    /// What courier sends, and may still send.
    pub(crate) send: Sender,
    /// What the server may still send, and how that grows.
    pub(crate) recv: RecvFlow,
    /// The server's GOAWAY, if it sent one.
    pub(crate) goaway: GoingAway,
    pub(crate) signals: Arc<Signals>,
    driver: Option<Waker>,
    /// The driver has been woken and not yet run: more wakes are redundant.
    driver_woken: bool,
    /// The connection is over: every stream has been failed with this.
    failed: Option<StreamError>,
    /// The pool dropped its handle: close once the last stream is done.
    handle_dropped: bool,
    /// Streams courier reset, after their slots were freed.
    resets: Resets,
    /// Frames the server may yet send that cost work and do nothing.
    flood: Budget,
    /// The streams' deadlines, as the driver's timer needs them.
    pub(crate) deadlines: Deadlines,
}

/// The request body, as far as opening the stream is concerned.
pub(crate) enum Outgoing {
    Empty,
    Buffered(Bytes),
    /// Fed later, through [`super::send::Pipe`].
    Streamed,
}

impl State {
    pub(crate) fn new(recv: RecvFlow, max_streams: usize, signals: Arc<Signals>) -> State {
        State {
            streams: Streams::default(),
            counts: Counts::new(max_streams),
            send: Sender::new(),
            recv,
            goaway: GoingAway::default(),
            signals,
            driver: None,
            driver_woken: false,
            failed: None,
            handle_dropped: false,
            resets: Resets::default(),
            flood: Budget::new(),
            deadlines: Deadlines::new(tokio::time::Instant::now()),
        }
    }

    /// Spends the connection's flood budget on one `glitch` (see [`flood`]).
    pub(crate) fn glitch(&mut self, glitch: Glitch) -> Result<(), ConnError> {
        self.flood.spend(glitch).map_err(ConnError::flooded)
    }

    /// Gives the flood budget back `frames` (work the server asked for).
    pub(crate) fn earn(&mut self, frames: u32) {
        self.flood.earn(frames);
    }

    /// Queues a SETTINGS frame of courier's, whose ACK is then expected.
    pub(crate) fn send_settings(&mut self, settings: &[(u16, u32)]) {
        self.send.settings(settings);
        self.wake_driver();
    }

    /// A SETTINGS ACK arrived: false if courier was owed none (a glitch).
    pub(crate) fn settings_acked(&mut self) -> bool {
        if !self.send.settings_acked() {
            return false;
        }
        self.recv.settings_acked();
        true
    }

    /// Whether the connection failed (every stream with it).
    pub(crate) fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Why the connection failed.
    #[cfg(test)]
    pub(crate) fn failure(&self) -> Option<&StreamError> {
        self.failed.as_ref()
    }

    /// The pool let go of the connection: it closes once its last stream is
    /// done.
    pub(crate) fn release_handle(&mut self) {
        self.handle_dropped = true;
        self.wake_driver();
    }

    /// Nobody will open another stream, and none is left: the connection
    /// may close.
    pub(crate) fn is_done(&self) -> bool {
        self.streams.is_empty()
            && (self.handle_dropped || self.goaway.is_received() || self.failed.is_some())
    }

    /// Whether a late frame on stream `id` (not idle, no longer read) is one
    /// the server sent before it saw courier's RST_STREAM.
    pub(crate) fn reset_by_courier(&mut self, id: u32) -> bool {
        match self.streams.by_id(id) {
            Some((_, stream)) => stream.rst_sent,
            None => self.resets.tolerates(id),
        }
    }

    pub(crate) fn into_shared(self) -> Arc<Shared> {
        Arc::new(Shared {
            epoch: self.deadlines.epoch(),
            state: Mutex::new(self),
        })
    }

    /// The driver will run and write what was queued.
    pub(crate) fn wake_driver(&mut self) {
        if !self.driver_woken {
            self.driver_woken = true;
            if let Some(w) = &self.driver {
                w.wake_by_ref();
            }
        }
    }

    /// The driver is running now: later queueing must wake it again.
    pub(crate) fn driver_running(&mut self, waker: &Waker) {
        self.driver_woken = false;
        match &self.driver {
            Some(w) if w.will_wake(waker) => {}
            _ => self.driver = Some(waker.clone()),
        }
    }

    /// Whether stream ids at or above `id` were never opened (idle streams:
    /// frames for them are a protocol error).
    pub(crate) fn is_idle(&self, id: u32) -> bool {
        self.send.is_idle(id)
    }

    /// Opens a stream for `head`, or says why not. Pending while the server's
    /// stream limit is reached: the pool keeps within the limit, so this
    /// waits only across a lowered limit or a stream the server has not yet
    /// closed.
    pub(crate) fn poll_open(
        &mut self,
        cx: &mut Context<'_>,
        head: &Head<'_>,
        body: &mut Outgoing,
    ) -> Poll<Result<(Key, u32), StreamError>> {
        if let Some(e) = &self.failed {
            return Poll::Ready(Err(match e {
                e if e.is_unprocessed() => e.clone(),
                _ => StreamError::NotOpened("the connection is closed"),
            }));
        }
        if self.goaway.is_received() {
            return Poll::Ready(Err(StreamError::NotOpened("the server sent GOAWAY")));
        }
        if self.send.ids_used_up() {
            return Poll::Ready(Err(StreamError::NotOpened("stream ids used up")));
        }
        if head.protocol.is_some() {
            // Extended CONNECT waits for the server's SETTINGS, which say
            // whether it is allowed (RFC 8441 §4).
            if !self.signals.settings_received() {
                self.counts.wait(cx);
                return Poll::Pending;
            }
            if !self.send.connect_protocol() {
                return Poll::Ready(Err(StreamError::NoExtendedConnect));
            }
        }
        if let Some(max) = self.send.max_header_list() {
            let size = super::header_list::size(head);
            if size > u64::from(max) {
                return Poll::Ready(Err(StreamError::FieldsOverPeerLimit { size, max }));
            }
        }
        if self.counts.is_full() {
            self.counts.wait(cx);
            return Poll::Pending;
        }
        let id = self.send.next_id();
        if self.send.ids_used_up() {
            // Let the pool open a fresh connection for what comes next.
            self.signals.set_goaway();
        }
        let end_stream = matches!(body, Outgoing::Empty)
            || matches!(body, Outgoing::Buffered(b) if b.is_empty());
        self.send.headers(id, head, end_stream);
        let mut stream = Stream::new(
            id,
            self.send.initial_window(),
            self.recv.stream_window(),
            end_stream,
        );
        self.counts.opened();
        stream.head_request = head.method == Method::HEAD;
        if let Some(mark) = head.deadline {
            stream.deadline = mark;
            self.deadlines.keep(mark);
        }
        stream.waker = Some(cx.waker().clone());
        let queued = match std::mem::replace(body, Outgoing::Empty) {
            Outgoing::Empty => None,
            Outgoing::Buffered(data) if data.is_empty() => None,
            Outgoing::Buffered(data) => {
                if self.send.whole_body(id, &data, &mut stream.send_window) {
                    // The common case: the whole body fits the windows and one frame.
                    legal(stream.transition(&mut self.counts, |s| s.send_end()));
                    None
                } else {
                    let mut upload = Upload {
                        end: true,
                        ..Upload::default()
                    };
                    upload.queued_len = data.len();
                    upload.queued.push_back(data);
                    Some(upload)
                }
            }
            Outgoing::Streamed => Some(Upload::default()),
        };
        let ready = queued.as_ref().is_some_and(|u| u.queued_len > 0);
        stream.upload = queued.map(Box::new);
        let key = self.streams.insert(stream, self.counts.max());
        if ready {
            self.mark_ready(key, id);
        }
        self.wake_driver();
        self.check_counts();
        Poll::Ready(Ok((key, id)))
    }

    /// Frames queued body bytes, as far as the windows allow.
    pub(crate) fn fill_data(&mut self, wakers: &mut Vec<Waker>) {
        self.send
            .fill_data(&mut self.streams, &mut self.counts, wakers);
        self.check_counts();
    }

    /// Queues `stream` for the driver to send its body bytes.
    pub(crate) fn mark_ready(&mut self, key: Key, id: u32) {
        if let Some(upload) = self
            .streams
            .get(key, id)
            .and_then(|s| s.upload.as_deref_mut())
        {
            if !upload.ready {
                upload.ready = true;
                self.send.queue_ready(key, id);
            }
        }
    }

    /// Checks, in debug builds, that the count of open streams is what the
    /// streams say: every transition settles it, so it cannot drift.
    pub(crate) fn check_counts(&self) {
        #[cfg(debug_assertions)]
        {
            // Walking the streams costs O(n) per change: bounded for tests.
            if self.streams.len() <= 4096 {
                debug_assert_eq!(self.counts.active(), self.streams.open_count());
            }
        }
    }

    /// Fails `stream` with `error`, resetting it with `reason` if courier
    /// still had it open.
    pub(crate) fn reset(
        &mut self,
        key: Key,
        id: u32,
        reason: Reason,
        error: StreamError,
        wakers: &mut Vec<Waker>,
    ) {
        self.close(key, id, Some(reason), error, wakers);
    }

    /// Fails `stream` with `error`, sending nothing: the server reset it or
    /// forgot it (GOAWAY), so it is closed on its side already.
    pub(crate) fn fail_stream(
        &mut self,
        key: Key,
        id: u32,
        error: StreamError,
        wakers: &mut Vec<Waker>,
    ) {
        self.close(key, id, None, error, wakers);
    }

    /// Closes `stream` as failed, with RST_STREAM `reset` if courier resets
    /// it and the server could still send. A failed stream keeps its first
    /// cause.
    fn close(
        &mut self,
        key: Key,
        id: u32,
        reset: Option<Reason>,
        error: StreamError,
        wakers: &mut Vec<Waker>,
    ) {
        let Some(stream) = self.streams.get(key, id) else {
            return;
        };
        let window = stream.recv_window.available();
        let closed = stream.transition(&mut self.counts, |state| match reset {
            Some(_) => state.reset(error),
            None => state.fail(error).map(|()| false),
        });
        let Ok(send_rst) = closed else {
            return;
        };
        stream.rst_sent = send_rst;
        let unread = stream.data.discard();
        stream.wake(wakers);
        if let (true, Some(reason)) = (send_rst, reset) {
            self.send.rst_stream(id, reason);
            self.wake_driver();
            // What the server sent before it sees the reset is no flood.
            self.flood.earn(flood::after_reset(window));
        }
        self.release_connection(unread);
        self.check_counts();
    }

    /// The request let go of its stream (its future or its body was
    /// dropped): frees the stream, resetting it (CANCEL) if it was still open.
    pub(crate) fn drop_handle(&mut self, key: Key, id: u32) {
        let Some(stream) = self.streams.get(key, id) else {
            return;
        };
        // The waker is the dropping request's own: nobody to wake.
        stream.waker = None;
        let mut wakers = Vec::new();
        self.reset(
            key,
            id,
            Reason::CANCEL,
            StreamError::Reset(Reason::CANCEL),
            &mut wakers,
        );
        // The reset closed it, which took it off the server's count.
        let removed = self.streams.remove(key);
        debug_assert!(removed.as_ref().is_some_and(Stream::is_closed));
        if removed.is_some_and(|s| s.rst_sent) {
            self.resets.remember(id);
        }
        if self.streams.is_empty() && (self.handle_dropped || self.goaway.is_received()) {
            // Nothing left for the connection to do: let the driver close it.
            self.wake_driver();
        }
        for w in wakers {
            w.wake();
        }
    }

    /// Fails every stream and every request waiting to open one: the
    /// connection is over.
    pub(crate) fn fail_all(&mut self, error: StreamError, wakers: &mut Vec<Waker>) {
        if self.failed.is_none() {
            self.failed = Some(error.clone());
        }
        // Before anyone is woken: a request failed here and sent again must
        // not be given this connection by the pool.
        self.signals.close();
        let unsent_from = self.send.unsent_from().unwrap_or(u32::MAX);
        // Woken after the streams, once the lock is let go.
        let openers = self.counts.take_waiters();
        for (_, stream) in self.streams.iter_mut() {
            if !stream.is_closed() {
                let error = if stream.id >= unsent_from {
                    StreamError::NotOpened("the connection failed before the request was written")
                } else {
                    error.clone()
                };
                legal(stream.transition(&mut self.counts, |s| s.fail(error)));
            }
            stream.wake(wakers);
        }
        self.check_counts();
        self.send.clear_ready();
        wakers.extend(openers);
    }
}
