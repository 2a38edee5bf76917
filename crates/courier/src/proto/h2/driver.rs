//! The task that runs one connection's I/O: writes what streams queued, reads
//! frames and hands them out, answers PINGs, and sends its own to detect a
//! dead peer. Streams are written from the first write on, with the preface;
//! the server's must be a SETTINGS frame, by a deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};

use super::closed;
use super::conn::{Local, Shared, State};
use super::deadline::Timer;
use super::error::{ConnError, StreamError};
use super::flood::Glitch;
use super::frame::{self, setting, Head, Reason};
use super::grow::Adaptive;
pub(crate) use super::keepalive::KeepAliveConfig;
use super::keepalive::{Watch, PING_PAYLOAD};
use super::linger;
use super::readbuf::ReadBuf;
use super::recv::{self, Reader};
use super::recv_flow::RecvFlow;
use super::signals::Signals;

/// Unwritten bytes past which the driver stops reading (see [`Driver::run`]).
const MAX_BACKLOG: usize = 4 * 1024 * 1024;
/// Reads one run makes before it lets the streams' readers run (it runs
/// again after them). Read until the socket was empty, a fast download was
/// copied out of the kernel's socket buffer into megabytes of the client's
/// own, faster than its reader took it, and the allocator trimmed and
/// faulted those megabytes in again for every download (HTTP/1.1's reader
/// reads the socket itself; the README's "Long links" has the figures).
const READS_PER_RUN: usize = 4;
/// A write buffer that grew past this is freed once written.
const KEEP_WRITE: usize = 64 * 1024;
/// The pool's handle on a connection. Dropping it lets the connection close
/// once its last stream is done.
pub(crate) struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.lock().release_handle();
    }
}

/// Runs a connection until it closes.
pub(crate) struct Driver<S> {
    /// The connection; handed to [`linger`] after an error's GOAWAY.
    io: Option<S>,
    shared: Arc<Shared>,
    /// What the pool is told, once the connection's lock is let go.
    signals: Arc<Signals>,
    reader: Reader,
    /// Freed when no stream is open, so an idle connection holds none, and
    /// when the socket runs dry after reads that brought no stream's frame.
    rbuf: ReadBuf,
    /// Bytes were read since the socket last ran dry ...
    read_since_dry: bool,
    /// ... and of them, a frame of some stream.
    stream_frames: bool,
    /// Bytes the frame cut by the last read still needs.
    frame_rest: usize,
    writing: BytesMut,
    /// Bytes were written since the last flush that completed: a flush
    /// left pending (a TLS record the socket had no room for) must be
    /// finished even if nothing more is written.
    unflushed: bool,
    /// Bytes queued behind `writing` when last looked.
    backlog: usize,
    /// No stream was open when last looked (no lock taken just to ask).
    idle: bool,
    wakers: Vec<Waker>,
    /// Keep-alive PINGs and the PING after a GOAWAY.
    watch: Watch,
    /// The streams' deadlines ([`super::deadline`]).
    deadlines: Timer,
    /// The server's first frame header was read (and was a SETTINGS
    /// frame's, its preface; the deadline holds until the frame is applied).
    preface_read: bool,
    /// See [`Driver::poll`].
    deferred: bool,
    /// Writing what is queued (a GOAWAY last), then done.
    closing: bool,
    /// After a GOAWAY for an error: close so that the peer reads it
    /// ([`linger`]).
    lingers: bool,
}

/// Starts a connection over `io`: the preface and courier's SETTINGS are
/// queued, to be written by the driver's first run.
#[cfg(any(test, feature = "internal-hooks"))]
pub(crate) fn handshake<S>(
    io: S,
    local: Local,
    keep_alive: KeepAliveConfig,
    assumed_max_streams: usize,
    signals: Arc<Signals>,
) -> (Handle, Driver<S>) {
    handshake_with(
        io,
        local,
        None,
        keep_alive,
        assumed_max_streams,
        signals,
        None,
    )
}

/// [`handshake`], with receive windows that grow up to `adaptive`'s
/// ceilings (see [`super::grow`]; `None`: fixed windows), and a deadline
/// for the server's SETTINGS (`preface_by`), past which the connection
/// fails with [`StreamError::NoSettings`].
pub(crate) fn handshake_with<S>(
    io: S,
    local: Local,
    adaptive: Option<Adaptive>,
    keep_alive: KeepAliveConfig,
    assumed_max_streams: usize,
    signals: Arc<Signals>,
    preface_by: Option<tokio::time::Instant>,
) -> (Handle, Driver<S>) {
    let local = Local {
        stream_window: local.stream_window.clamp(1, frame::MAX_WINDOW),
        conn_window: local
            .conn_window
            .clamp(frame::DEFAULT_WINDOW, frame::MAX_WINDOW),
        ..local
    };
    // The receive windows as `local` says: the connection's is raised by the
    // WINDOW_UPDATE below.
    let recv = RecvFlow::new(local, adaptive, tokio::time::Instant::now());
    let mut state = State::new(recv, assumed_max_streams, Arc::clone(&signals));
    state.send_settings(&[
        (setting::ENABLE_PUSH, 0),
        (setting::INITIAL_WINDOW_SIZE, local.stream_window),
        (
            setting::MAX_HEADER_LIST_SIZE,
            u32::try_from(local.max_header_list).unwrap_or(u32::MAX),
        ),
    ]);
    let raise = local.conn_window - frame::DEFAULT_WINDOW;
    if raise > 0 {
        state.send.window_update(0, raise);
    }
    let deadlines = Timer::new(state.deadlines.epoch());
    let shared = state.into_shared();
    let driver = Driver {
        io: Some(io),
        shared: Arc::clone(&shared),
        signals,
        reader: Reader::new(local.max_header_list),
        rbuf: ReadBuf::default(),
        read_since_dry: false,
        stream_frames: false,
        frame_rest: 0,
        writing: BytesMut::new(),
        unflushed: false,
        backlog: 0,
        idle: true,
        wakers: Vec::new(),
        watch: Watch::new(keep_alive, preface_by),
        deadlines,
        preface_read: false,
        deferred: false,
        closing: false,
        lingers: false,
    };
    (Handle { shared }, driver)
}

/// Why reading stopped.
enum End {
    Eof,
    Io(io::Error),
    Conn(ConnError),
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Driver<S> {
    fn run(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut reads = 0;
        loop {
            let mut progress = false;
            // A server that sends without reading what courier writes (PINGs
            // to answer, say) would grow the write buffer without bound: past
            // this much unwritten, reading waits for writing.
            let backlog = self.writing.len() + self.backlog;
            if reads == READS_PER_RUN {
                // The streams' readers run before more is read (see READS_PER_RUN).
                cx.waker().wake_by_ref();
            } else if !self.closing && backlog < MAX_BACKLOG {
                reads += 1;
                match self.read(cx) {
                    Poll::Ready(Ok(())) => progress = true,
                    Poll::Ready(Err(End::Conn(e))) => {
                        tracing::debug!(reason = %e.reason, what = e.what, "HTTP/2 connection error");
                        self.close_with(
                            e.reason,
                            e.what,
                            StreamError::Protocol {
                                reason: e.reason,
                                what: e.what,
                            },
                        );
                        progress = true;
                    }
                    Poll::Ready(Err(End::Eof)) => {
                        // After a GOAWAY, say so: a response cut there was
                        // dropped by a server going away, not lost in transit.
                        let error = if self.shared.lock().goaway.is_received() {
                            StreamError::ClosedAfterGoaway
                        } else if !self.preface_read {
                            StreamError::Closed("the server closed the connection before its SETTINGS (does it speak HTTP/2?)")
                        } else {
                            StreamError::Closed("the server closed the connection")
                        };
                        self.fail(error);
                        return Poll::Ready(());
                    }
                    Poll::Ready(Err(End::Io(e))) => {
                        self.fail(StreamError::Io(Arc::new(e)));
                        return Poll::Ready(());
                    }
                    Poll::Pending => {
                        // No response due, or a quiet connection: what came
                        // since the socket last ran dry was only the
                        // connection's own frames (SETTINGS, the ACK of a
                        // keep-alive PING) while its streams wait. Either
                        // way, hold no read buffer until more comes. A
                        // connection whose streams are being answered keeps
                        // it for the next read, and so does a run that read
                        // nothing (one woken to write requests).
                        let quiet = self.read_since_dry && !self.stream_frames;
                        if self.idle || quiet {
                            self.rbuf.release();
                        }
                        self.read_since_dry = false;
                        self.stream_frames = false;
                    }
                }
                let pong = std::mem::take(&mut self.reader.pong);
                let shared = &self.shared;
                let ping = |while_idle| {
                    let mut st = shared.lock();
                    let due = st.counts.active() > 0 || while_idle;
                    if due {
                        st.send.ping(false, PING_PAYLOAD);
                    }
                    due
                };
                if self.watch.keep_alive_expired(cx, pong, ping) {
                    tracing::debug!("HTTP/2 peer stopped answering PINGs; closing the connection");
                    self.fail(StreamError::Closed(
                        "the server stopped answering keep-alive PINGs",
                    ));
                    return Poll::Ready(());
                }
                if self
                    .watch
                    .preface_expired(cx, self.signals.settings_received())
                {
                    tracing::debug!(
                        "HTTP/2 server sent no SETTINGS in time; closing the connection"
                    );
                    self.fail(StreamError::NoSettings);
                    return Poll::Ready(());
                }
                let probe_sent = || self.shared.lock().goaway.take_probe();
                if self.watch.goaway_probe_expired(cx, pong, probe_sent) {
                    tracing::debug!(
                        "HTTP/2 peer went silent after its GOAWAY; closing the connection"
                    );
                    self.fail(StreamError::Closed(
                        "the server went silent after its GOAWAY",
                    ));
                    return Poll::Ready(());
                }
            }
            self.collect(cx);
            match self.write(cx) {
                Poll::Ready(Ok(true)) => progress = true,
                // Everything queued (the GOAWAY last) is written and flushed.
                Poll::Ready(Ok(false)) if self.closing => {
                    if let Some(io) = self.io.take().filter(|_| self.lingers) {
                        tokio::spawn(linger::close(io));
                    }
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(false)) | Poll::Pending => {}
                Poll::Ready(Err(e)) => {
                    self.fail(StreamError::Io(Arc::new(e)));
                    return Poll::Ready(());
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }

    /// Reads once and handles every whole frame read so far.
    fn read(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), End>> {
        let Some(io) = self.io.as_mut() else {
            return Poll::Ready(Err(End::Eof));
        };
        let n = match self.rbuf.poll_read(Pin::new(io), cx, self.frame_rest) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(End::Io(e))),
            Poll::Ready(Ok(n)) => n,
        };
        if n == 0 {
            return Poll::Ready(Err(End::Eof));
        }
        self.read_since_dry = true;
        let result = self.handle_frames();
        // Before the streams are woken: a request refused by a GOAWAY must
        // find the pool already knowing the connection is retired (and what
        // the GOAWAY taught) when it asks for another.
        self.signals.report();
        for w in self.wakers.drain(..) {
            w.wake();
        }
        Poll::Ready(result)
    }

    fn handle_frames(&mut self) -> Result<(), End> {
        let mut st = self.shared.lock();
        self.frame_rest = 0;
        let rbuf = self.rbuf.bytes();
        while rbuf.len() >= frame::HEADER_LEN {
            let head: [u8; frame::HEADER_LEN] = rbuf[..frame::HEADER_LEN]
                .try_into()
                .expect("length checked");
            if !self.preface_read {
                recv::preface(&head).map_err(End::Conn)?;
                self.preface_read = true;
            }
            let head = Head::parse(&head);
            self.stream_frames |= head.stream != 0;
            if head.len > frame::DEFAULT_MAX_FRAME_SIZE {
                return Err(End::Conn(ConnError {
                    reason: Reason::FRAME_SIZE_ERROR,
                    what: "frame larger than SETTINGS_MAX_FRAME_SIZE",
                }));
            }
            let whole = frame::HEADER_LEN + head.len as usize;
            if rbuf.len() < whole {
                // The rest of the frame is still to come: the next read
                // makes room for it.
                self.frame_rest = whole - rbuf.len();
                break;
            }
            rbuf.advance(frame::HEADER_LEN);
            let payload = rbuf.split_to(head.len as usize).freeze();
            let frame = match frame::decode(head, payload) {
                Ok(frame) => frame,
                Err(e) => match e.stream {
                    Some(id) => {
                        st.glitch(Glitch::Malformed).map_err(End::Conn)?;
                        closed::stream_error(&mut st, id, e.reason, e.what, &mut self.wakers)
                            .map_err(End::Conn)?;
                        continue;
                    }
                    None => {
                        return Err(End::Conn(ConnError {
                            reason: e.reason,
                            what: e.what,
                        }))
                    }
                },
            };
            self.reader
                .on_frame(&mut st, frame, &mut self.wakers)
                .map_err(End::Conn)?;
        }
        Ok(())
    }

    /// Takes what streams queued, and decides whether the connection is done.
    fn collect(&mut self, cx: &mut Context<'_>) {
        let mut st = self.shared.lock();
        st.driver_running(cx.waker());
        st.fill_data(&mut self.wakers);
        if !self.closing && st.is_done() {
            // Nobody will open another stream: say goodbye and close.
            st.send.goaway(Reason::NO_ERROR, &[]);
            self.closing = true;
            st.fail_all(
                StreamError::NotOpened("the connection was closed"),
                &mut self.wakers,
            );
        }
        st.send.take_queued(&mut self.writing);
        self.backlog = st.send.queued_len();
        self.idle = st.counts.active() == 0;
        let earliest = st.take_earliest_deadline();
        drop(st);
        for w in self.wakers.drain(..) {
            w.wake();
        }
        self.deadlines
            .run(cx, earliest, &self.shared, &mut self.wakers);
    }

    /// Writes the taken frames, and finishes a flush left pending; `Ok(true)`
    /// if any bytes went out.
    fn write(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if self.writing.is_empty() && !self.unflushed {
            return Poll::Ready(Ok(false));
        }
        let Some(io) = self.io.as_mut() else {
            return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
        };
        while !self.writing.is_empty() {
            let n = std::task::ready!(Pin::new(&mut *io).poll_write(cx, &self.writing))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.writing.advance(n);
            self.unflushed = true;
        }
        // TLS buffers a record; it must reach the socket now.
        std::task::ready!(Pin::new(io).poll_flush(cx))?;
        self.unflushed = false;
        if self.writing.capacity() > KEEP_WRITE {
            self.writing = BytesMut::new();
        } else {
            self.writing.clear();
        }
        Poll::Ready(Ok(true))
    }

    /// Fails every stream and closes after writing a GOAWAY.
    fn close_with(&mut self, reason: Reason, what: &'static str, error: StreamError) {
        let mut st = self.shared.lock();
        st.send.goaway(reason, what.as_bytes());
        st.fail_all(error, &mut self.wakers);
        drop(st);
        self.closing = true;
        self.lingers = true;
        for w in self.wakers.drain(..) {
            w.wake();
        }
    }

    /// Fails every stream; the connection cannot be written to any more.
    fn fail(&mut self, error: StreamError) {
        let mut st = self.shared.lock();
        st.fail_all(error, &mut self.wakers);
        drop(st);
        for w in self.wakers.drain(..) {
            w.wake();
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Future for Driver<S> {
    type Output = ();

    /// Runs one scheduler round after being woken, not at once.
    ///
    /// A request's task that queues a stream wakes the driver; run straight
    /// away (tokio runs a task woken by the running one next), the driver
    /// would write each HEADERS frame alone: measured with hyper's client, 2
    /// requests per `writev` and three times the system time. Deferred to the
    /// back of the run queue, it finds every stream the other ready tasks
    /// queued in the meantime and writes them together, and reads every
    /// response that arrived, for the cost of one extra poll per wake-up.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if !this.deferred {
            this.deferred = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.deferred = false;
        // Every way out fails the streams first, which tells the pool.
        this.run(cx)
    }
}

impl<S> Drop for Driver<S> {
    /// Dropped unfinished (its runtime shut down, say), nothing will read or
    /// write the connection again: its streams and the pool must not wait on it.
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if !st.is_failed() {
            st.fail_all(
                StreamError::Closed("the connection's task was dropped"),
                &mut self.wakers,
            );
        }
        drop(st);
        for w in self.wakers.drain(..) {
            w.wake();
        }
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
