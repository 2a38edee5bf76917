//! The sending part of a connection (h2's `Send`): the HPACK encoder and the
//! buffer frames are queued in for the driver, the stream ids, courier's
//! connection send window, the server's settings (what it accepts), and the
//! streams whose bodies wait to be framed.
//!
//! Its fields are its own: the connection ([`super::conn`]) asks it to queue
//! frames and hands it the streams and the counts when bodies are framed, as
//! h2's `Send` is handed its store and counts.

use std::collections::VecDeque;
use std::task::Waker;

use bytes::BytesMut;

use super::counts::Counts;
use super::encode::{self, Head};
use super::error::ConnError;
use super::flow::{self, FlowError, SendWindow};
use super::frame::{self, Reason};
use super::hpack;
use super::settings::Peer;
use super::stream_state::legal;
use super::streams::{Key, Streams};
use super::template::Template;

/// Ids past this are not allowed (RFC 9113 §5.1.1): a connection that has
/// used them all takes no new streams.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// A streamed body is read ahead of the window by at most this much, so a
/// slow server holds the body back instead of letting it pile up here.
pub(crate) const HIGH_WATER: usize = 64 * 1024;

/// What courier sends on a connection, and what it may still send.
pub(crate) struct Sender {
    /// The server's settings: what it accepts.
    peer: Peer,
    encoder: hpack::Encoder,
    /// The last request head's HPACK block, to copy for the same head.
    template: Template,
    /// Frames queued for the driver to write.
    out: BytesMut,
    next_id: u32,
    /// What courier may still send on the connection.
    window: SendWindow,
    /// The most `window` has been: a connection WINDOW_UPDATE that leaves it
    /// below this gives back window DATA used; above it, it does nothing.
    window_high: SendWindow,
    /// Streams with body bytes queued, waiting for the driver (and window).
    ready: VecDeque<(Key, u32)>,
    /// The first stream whose HEADERS are still in `out`, not yet handed to
    /// the socket: if the connection fails now, it and later ones were never
    /// sent, and may be sent again elsewhere.
    unsent_from: Option<u32>,
    /// SETTINGS frames courier sent (the preface's, then growth's) not yet
    /// acknowledged: their ACKs are expected, any other is a glitch.
    settings_unacked: u8,
}

impl Sender {
    /// Nothing sent yet: the client preface comes first.
    pub(crate) fn new() -> Sender {
        let mut out = BytesMut::new();
        out.extend_from_slice(frame::PREFACE);
        Sender {
            peer: Peer {
                max_frame: frame::DEFAULT_MAX_FRAME_SIZE,
                initial_window: frame::DEFAULT_WINDOW,
                max_header_list: None,
                connect_protocol: false,
            },
            encoder: hpack::Encoder::new(),
            template: Template::default(),
            out,
            next_id: 1,
            window: SendWindow::new(frame::DEFAULT_WINDOW),
            window_high: SendWindow::new(frame::DEFAULT_WINDOW),
            ready: VecDeque::new(),
            unsent_from: None,
            settings_unacked: 0,
        }
    }

    /// Whether stream ids at or above `id` were never opened (idle streams:
    /// frames for them are a protocol error).
    pub(crate) fn is_idle(&self, id: u32) -> bool {
        id % 2 == 0 || id >= self.next_id
    }

    /// Every stream id has been used.
    pub(crate) fn ids_used_up(&self) -> bool {
        self.next_id > MAX_STREAM_ID
    }

    /// Takes the next stream id, whose HEADERS are queued next.
    pub(crate) fn next_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        self.unsent_from.get_or_insert(id);
        id
    }

    /// The first stream whose HEADERS were not handed to the socket yet.
    pub(crate) fn unsent_from(&self) -> Option<u32> {
        self.unsent_from
    }

    /// Queues a request's HEADERS (and CONTINUATIONs).
    pub(crate) fn headers(&mut self, id: u32, head: &Head<'_>, end_stream: bool) {
        let max_frame = self.peer.max_frame;
        encode::request(
            &mut self.encoder,
            &mut self.template,
            &mut self.out,
            id,
            head,
            end_stream,
            max_frame,
        );
    }

    /// The send window every new stream starts with (the server's
    /// SETTINGS_INITIAL_WINDOW_SIZE).
    pub(crate) fn initial_window(&self) -> u32 {
        self.peer.initial_window
    }

    /// The server allows extended CONNECT (RFC 8441).
    pub(crate) fn connect_protocol(&self) -> bool {
        self.peer.connect_protocol
    }

    /// The server's SETTINGS_ENABLE_CONNECT_PROTOCOL.
    pub(crate) fn set_connect_protocol(&mut self, value: u32) -> Result<(), ConnError> {
        // RFC 8441 §3: once allowed, it cannot be taken back.
        if self.peer.connect_protocol && value == 0 {
            return Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                "SETTINGS_ENABLE_CONNECT_PROTOCOL went from 1 to 0",
            ));
        }
        self.peer.connect_protocol = value == 1;
        Ok(())
    }

    /// The server's SETTINGS_INITIAL_WINDOW_SIZE; the one it replaces.
    pub(crate) fn set_initial_window(&mut self, value: u32) -> u32 {
        std::mem::replace(&mut self.peer.initial_window, value)
    }

    /// The server's SETTINGS_MAX_HEADER_LIST_SIZE, if it said one.
    pub(crate) fn max_header_list(&self) -> Option<u32> {
        self.peer.max_header_list
    }

    /// The server's SETTINGS_MAX_HEADER_LIST_SIZE.
    pub(crate) fn set_max_header_list(&mut self, value: u32) {
        self.peer.max_header_list = Some(value);
    }

    /// The server's SETTINGS_MAX_FRAME_SIZE.
    pub(crate) fn set_max_frame(&mut self, value: u32) {
        self.peer.max_frame = value;
    }

    /// Queues a whole body in one DATA frame with END_STREAM, if it fits
    /// the connection's window and `stream_window` (both spent); false if not.
    pub(crate) fn whole_body(
        &mut self,
        id: u32,
        data: &[u8],
        stream_window: &mut SendWindow,
    ) -> bool {
        if data.len() > self.peer.max_frame as usize
            || flow::consume_both(&mut self.window, stream_window, data.len()).is_err()
        {
            return false;
        }
        frame::encode_data(&mut self.out, id, data, true);
        true
    }

    pub(crate) fn rst_stream(&mut self, id: u32, reason: Reason) {
        frame::encode_rst_stream(&mut self.out, id, reason);
    }

    pub(crate) fn ping(&mut self, ack: bool, payload: [u8; 8]) {
        frame::encode_ping(&mut self.out, ack, payload);
    }

    pub(crate) fn goaway(&mut self, reason: Reason, debug: &[u8]) {
        frame::encode_goaway(&mut self.out, 0, reason, debug);
    }

    pub(crate) fn window_update(&mut self, id: u32, increment: u32) {
        frame::encode_window_update(&mut self.out, id, increment);
    }

    /// Queues a SETTINGS frame of courier's, whose ACK is then expected.
    pub(crate) fn settings(&mut self, settings: &[(u16, u32)]) {
        frame::encode_settings(&mut self.out, settings);
        // Growth sends one at a time, after the preface's was acknowledged.
        self.settings_unacked = self.settings_unacked.saturating_add(1);
    }

    /// A SETTINGS ACK arrived: false if courier was owed none (a glitch).
    pub(crate) fn settings_acked(&mut self) -> bool {
        if self.settings_unacked == 0 {
            return false;
        }
        self.settings_unacked -= 1;
        true
    }

    /// Acknowledges the server's SETTINGS.
    pub(crate) fn settings_ack(&mut self) {
        frame::encode_settings_ack(&mut self.out);
    }

    /// The server's SETTINGS_HEADER_TABLE_SIZE.
    pub(crate) fn set_header_table_size(&mut self, size: usize) {
        self.encoder.set_max_table_size(size);
    }

    /// A connection WINDOW_UPDATE; whether it gives back window DATA used
    /// (the window was below the most it has been), not only inflates it.
    pub(crate) fn increase_window(&mut self, increment: u32) -> Result<bool, FlowError> {
        let gives_back = self.window < self.window_high;
        self.window.increase(increment)?;
        self.window_high = self.window_high.max(self.window);
        Ok(gives_back)
    }

    /// Queues stream `id` for the driver to frame its body bytes.
    pub(crate) fn queue_ready(&mut self, key: Key, id: u32) {
        self.ready.push_back((key, id));
    }

    /// Some stream waits for window to send its body.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The connection failed: nothing more is sent.
    pub(crate) fn clear_ready(&mut self) {
        self.ready.clear();
    }

    /// Hands what is queued to the driver's `writing` buffer, if that is
    /// empty: from then on it is as good as sent.
    pub(crate) fn take_queued(&mut self, writing: &mut BytesMut) {
        if writing.is_empty() && !self.out.is_empty() {
            std::mem::swap(writing, &mut self.out);
            self.unsent_from = None;
        }
    }

    /// Bytes queued and not yet handed to the driver.
    pub(crate) fn queued_len(&self) -> usize {
        self.out.len()
    }

    /// Frames queued body bytes, as far as the windows allow, waking the
    /// bodies' feeders that have room again.
    pub(crate) fn fill_data(
        &mut self,
        streams: &mut Streams,
        counts: &mut Counts,
        wakers: &mut Vec<Waker>,
    ) {
        let max_frame = self.peer.max_frame;
        // One pass over the streams waiting now: a stream blocked on the
        // connection's window goes to the back, so the END_STREAM or trailers
        // of another (which need no window) are not held behind it.
        for _ in 0..self.ready.len() {
            let Some((key, id)) = self.ready.pop_front() else {
                break;
            };
            let Some(stream) = streams.get(key, id) else {
                continue;
            };
            // Out of the slot while it is framed (a box moved, not copied), so
            // the stream's state can change beside it.
            let Some(mut up) = stream.upload.take() else {
                continue;
            };
            let mut conn_blocked = false;
            while !stream.state().is_send_closed() {
                let Some(chunk) = up.queued.front_mut() else {
                    if up.end {
                        match up.trailers.take() {
                            Some(trailers) => encode::trailers(
                                &mut self.encoder,
                                &mut self.out,
                                id,
                                &trailers,
                                max_frame,
                            ),
                            None => frame::encode_data(&mut self.out, id, &[], true),
                        }
                        legal(stream.transition(counts, |s| s.send_end()));
                    }
                    break;
                };
                let room = flow::room(self.window, stream.send_window);
                let n = chunk.len().min(max_frame as usize).min(room);
                if n == 0 {
                    conn_blocked = self.window.available() == 0;
                    break;
                }
                let part = chunk.split_to(n);
                if chunk.is_empty() {
                    up.queued.pop_front();
                }
                up.queued_len -= n;
                let end = up.end && up.queued.is_empty() && up.trailers.is_none();
                frame::encode_data(&mut self.out, id, &part, end);
                if end {
                    legal(stream.transition(counts, |s| s.send_end()));
                }
                // Within the room of both: cannot fail.
                let spent = flow::consume_both(&mut self.window, &mut stream.send_window, n);
                debug_assert!(spent.is_ok());
            }
            if up.queued_len < HIGH_WATER {
                if let Some(w) = up.waker.take() {
                    wakers.push(w);
                }
            }
            if !conn_blocked {
                // Done, or waiting for its own window (a WINDOW_UPDATE for it
                // puts it back in the list).
                up.ready = false;
            }
            stream.upload = Some(up);
            if conn_blocked {
                // Sent on once the server grants the connection more window.
                self.ready.push_back((key, id));
            }
        }
    }
}
