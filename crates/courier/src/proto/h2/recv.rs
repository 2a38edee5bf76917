//! What the driver does with each frame the server sends.

use std::task::Waker;

use bytes::{Bytes, BytesMut};

use super::closed;
use super::conn::State;
use super::control;
use super::error::{ConnError, StreamError};
use super::flood::{self, Glitch};
use super::frame::{self, Frame, Reason};
use super::goaway;
use super::head::{Block, BlockDecoder, BlockError};
use super::stream_state::legal;
use super::streams::Stream;
use crate::proto::fields::MAX_INTERIM;

/// Checks the server's first frame header: its preface is a SETTINGS frame
/// (RFC 9113 §3.4), anything else a connection error. A server that does not
/// speak HTTP/2 shows here, mostly an HTTP/1.1 one answering the client's
/// preface with a status line (whose bytes would otherwise read as a frame
/// too large).
pub(crate) fn preface(first: &[u8; frame::HEADER_LEN]) -> Result<(), ConnError> {
    if first.starts_with(b"HTTP/1.") {
        return Err(ConnError::protocol(
            "the server answered in HTTP/1.x: it does not speak HTTP/2 (by prior knowledge)",
        ));
    }
    let head = frame::Head::parse(first);
    if head.kind != frame::kind::SETTINGS || head.flags & frame::ACK != 0 {
        return Err(ConnError::protocol(
            "the server's first frame was not SETTINGS: no HTTP/2 server preface",
        ));
    }
    Ok(())
}

/// SETTINGS parameters one frame may carry; RFC 9113 defines 6 and a frame
/// may hold 2730, each applied in turn (nghttp2's limit).
const MAX_SETTINGS: usize = 32;

/// A header block being assembled from HEADERS and CONTINUATION frames.
struct Pending {
    stream: u32,
    end_stream: bool,
    block: BytesMut,
    /// CONTINUATION frames so far.
    continuations: usize,
}

/// The receiving half of the driver: header block assembly and HPACK.
pub(crate) struct Reader {
    blocks: BlockDecoder,
    pending: Option<Pending>,
    /// A header block may not grow past this (HPACK must decode a block
    /// whole, so it is held whole).
    max_block: usize,
    /// Nor be split in more CONTINUATION frames than this (the 2024
    /// CONTINUATION flood: tiny frames, each costing a pass).
    max_continuations: usize,
    /// A PING ACK arrived since the driver last looked.
    pub(crate) pong: bool,
}

impl Reader {
    pub(crate) fn new(max_header_list: usize) -> Reader {
        let max_block = max_header_list.saturating_mul(2).max(64 * 1024);
        Reader {
            blocks: BlockDecoder::new(super::hpack::DEFAULT_TABLE_SIZE, max_header_list),
            pending: None,
            max_block,
            max_continuations: max_continuations(max_block),
            pong: false,
        }
    }

    pub(crate) fn on_frame(
        &mut self,
        st: &mut State,
        frame: Frame,
        wakers: &mut Vec<Waker>,
    ) -> Result<(), ConnError> {
        if self.pending.is_some() && !matches!(frame, Frame::Continuation { .. }) {
            return Err(ConnError::protocol(
                "a header block was interrupted by another frame",
            ));
        }
        match frame {
            Frame::Data {
                stream,
                end_stream,
                data,
                flow_len,
            } => on_data(st, stream, end_stream, data, flow_len, wakers),
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                fragment,
            } => {
                if st.is_idle(stream) {
                    return Err(ConnError::protocol(
                        "HEADERS on a stream courier did not open",
                    ));
                }
                if end_headers {
                    return self.on_block(st, stream, end_stream, &fragment, wakers);
                }
                let mut block = BytesMut::with_capacity(fragment.len() * 2);
                block.extend_from_slice(&fragment);
                self.pending = Some(Pending {
                    stream,
                    end_stream,
                    block,
                    continuations: 0,
                });
                Ok(())
            }
            Frame::Continuation {
                stream,
                end_headers,
                fragment,
            } => {
                let Some(pending) = self.pending.as_mut() else {
                    return Err(ConnError::protocol("CONTINUATION without a header block"));
                };
                if pending.stream != stream {
                    return Err(ConnError::protocol("CONTINUATION on another stream"));
                }
                pending.continuations += 1;
                if pending.continuations > self.max_continuations {
                    return Err(ConnError::flooded("peer flooded CONTINUATION frames"));
                }
                if fragment.is_empty() && !end_headers {
                    st.glitch(Glitch::EmptyContinuation)?;
                }
                if pending.block.len() + fragment.len() > self.max_block {
                    if let Some((key, _)) = st.streams.by_id(stream) {
                        st.reset(
                            key,
                            stream,
                            Reason::CANCEL,
                            StreamError::HeadersTooLarge,
                            wakers,
                        );
                    }
                    return Err(ConnError::new(
                        Reason::ENHANCE_YOUR_CALM,
                        "header block too large to decode",
                    ));
                }
                pending.block.extend_from_slice(&fragment);
                if !end_headers {
                    return Ok(());
                }
                let Pending {
                    stream,
                    end_stream,
                    block,
                    ..
                } = self.pending.take().expect("checked above");
                self.on_block(st, stream, end_stream, &block, wakers)
            }
            Frame::RstStream { stream, reason } => {
                if st.is_idle(stream) {
                    return Err(ConnError::protocol(
                        "RST_STREAM on a stream courier did not open",
                    ));
                }
                if !on_reset(st, stream, reason, wakers) {
                    st.glitch(Glitch::ClosedStream)?;
                }
                Ok(())
            }
            // ACKs of SETTINGS courier did not send are glitches.
            Frame::Settings { ack: true, .. } if st.settings_acked() => Ok(()),
            Frame::Settings { ack: true, .. } => st.glitch(Glitch::Settings),
            Frame::Settings { settings, .. } => {
                st.glitch(Glitch::Settings)?;
                if settings.iter().count() > MAX_SETTINGS {
                    return Err(ConnError::flooded("peer flooded SETTINGS parameters"));
                }
                control::on_settings(st, settings.iter())
            }
            Frame::PushPromise { .. } => {
                Err(ConnError::protocol("PUSH_PROMISE, with push disabled"))
            }
            Frame::Ping { ack: true, .. } => {
                // One a keep-alive interval: time pays for them.
                st.glitch(Glitch::Ping)?;
                self.pong = true;
                Ok(())
            }
            Frame::Ping {
                ack: false,
                payload,
            } => {
                st.glitch(Glitch::Ping)?;
                st.send.ping(true, payload);
                st.wake_driver();
                Ok(())
            }
            Frame::GoAway {
                last_stream,
                reason,
                debug,
            } => {
                if st.goaway.is_received() {
                    // A graceful shutdown sends two; more do nothing.
                    st.glitch(Glitch::GoAway)?;
                }
                goaway::on_goaway(st, last_stream, reason, &debug, wakers);
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                control::on_window_update(st, stream, increment, wakers)
            }
            Frame::Ignored => st.glitch(Glitch::Ignored),
        }
    }

    fn on_block(
        &mut self,
        st: &mut State,
        id: u32,
        end_stream: bool,
        block: &[u8],
        wakers: &mut Vec<Waker>,
    ) -> Result<(), ConnError> {
        // A stream no longer open to the server's frames decodes as trailers:
        // the block is then only checked for HPACK errors, which are the same.
        let trailers = st
            .streams
            .by_id(id)
            .is_some_and(|(_, s)| !s.state().is_awaiting_head());
        // Decoded whatever becomes of the stream: HPACK must see every block.
        let decoded = self.blocks.decode(block, trailers);
        let open = st
            .streams
            .by_id(id)
            .filter(|(_, s)| !s.state().is_recv_closed());
        let Some((key, stream)) = open else {
            // Gone, failed or ended: a broken HPACK table matters, and
            // whether the server had closed the stream itself.
            return match decoded {
                Err(BlockError::Compression(what)) => {
                    Err(ConnError::new(Reason::COMPRESSION_ERROR, what))
                }
                _ => {
                    closed::late_frame(st, id, "HEADERS on a stream the server closed")?;
                    st.glitch(Glitch::ClosedStream)
                }
            };
        };
        let malformed = |st: &mut State, what, wakers: &mut Vec<Waker>| {
            st.reset(
                key,
                id,
                Reason::PROTOCOL_ERROR,
                StreamError::Malformed(what),
                wakers,
            );
            Ok(())
        };
        match decoded {
            Err(BlockError::Compression(what)) => {
                Err(ConnError::new(Reason::COMPRESSION_ERROR, what))
            }
            Err(BlockError::TooLarge) => {
                st.reset(
                    key,
                    id,
                    Reason::CANCEL,
                    StreamError::HeadersTooLarge,
                    wakers,
                );
                Ok(())
            }
            Err(BlockError::Malformed(what)) => malformed(st, what, wakers),
            Ok(Block::Informational) if end_stream => {
                malformed(st, "END_STREAM on an informational response", wakers)
            }
            Ok(Block::Informational) => {
                stream.informational = stream.informational.saturating_add(1);
                // Past the bound: a server that holds a request on them for
                // ever while other streams' work pays its flood budget.
                if stream.informational > MAX_INTERIM {
                    return Err(ConnError::flooded(Glitch::Informational.what()));
                }
                st.glitch(Glitch::Informational)
            }
            Ok(Block::Response(head, declared)) => {
                let status = head.parts.status;
                let no_body = stream.head_request
                    || status == http::StatusCode::NO_CONTENT
                    || status == http::StatusCode::NOT_MODIFIED;
                // Every copy must declare the same length (RFC 9110 §8.6):
                // two lengths are two framings, as malformed as a bad one.
                let length = match declared.length() {
                    Ok(length) => length,
                    Err(what) => return malformed(st, what, wakers),
                };
                // A response that cannot have content reads as empty: DATA
                // with a payload is malformed, as it is on HTTP/3.
                stream.content_length = if no_body { Some(0) } else { length };
                if end_stream && stream.content_length.is_some_and(|n| n > 0) {
                    return malformed(st, "content-length with no body", wakers);
                }
                legal(stream.transition(&mut st.counts, |s| {
                    s.recv_head()?;
                    if end_stream {
                        s.recv_end()?;
                    }
                    Ok(())
                }));
                stream.wake(wakers);
                st.streams.set_head(key, head, length);
                st.check_counts();
                st.earn(flood::PER_RESPONSE);
                Ok(())
            }
            Ok(Block::Trailers(headers)) => {
                if !end_stream {
                    return malformed(st, "trailers without END_STREAM", wakers);
                }
                if stream.content_length.is_some_and(|n| n > 0) {
                    return malformed(st, "body shorter than its content-length", wakers);
                }
                stream.trailers = Some(Box::new(headers));
                legal(stream.transition(&mut st.counts, |s| s.recv_end()));
                stream.wake(wakers);
                st.check_counts();
                Ok(())
            }
        }
    }
}

fn on_data(
    st: &mut State,
    id: u32,
    end_stream: bool,
    data: Bytes,
    flow_len: u32,
    wakers: &mut Vec<Waker>,
) -> Result<(), ConnError> {
    if let Err(e) = st.recv.consume(flow_len) {
        return Err(ConnError::new(
            e.reason(),
            "DATA past the connection window",
        ));
    }
    if st.is_idle(id) {
        return Err(ConnError::protocol("DATA on a stream courier did not open"));
    }
    let padding = (flow_len as usize) - data.len();
    let late = match st.streams.by_id(id) {
        Some((_, stream)) => stream.state().is_recv_closed() && !stream.rst_sent,
        None => true,
    };
    if late {
        // A closed stream: the bytes still count.
        st.release_connection(flow_len as usize);
        closed::late_frame(st, id, "DATA on a stream the server closed")?;
        return st.glitch(Glitch::ClosedStream);
    }
    let State {
        streams, counts, ..
    } = &mut *st;
    let (key, stream) = streams.by_id(id).expect("found above");
    match admit(stream, flow_len, data.len(), end_stream) {
        Admit::Take => {}
        refused => {
            // The bytes still count against the connection's window.
            st.release_connection(flow_len as usize);
            return match refused {
                Admit::Reset(reason, what) => {
                    st.reset(key, id, reason, StreamError::Malformed(what), wakers);
                    Ok(())
                }
                _ => st.glitch(Glitch::ClosedStream),
            };
        }
    }
    let empty = data.is_empty();
    if !empty {
        stream.data.push(data);
    }
    if end_stream {
        legal(stream.transition(counts, |s| s.recv_end()));
    }
    stream.wake(wakers);
    if padding > 0 {
        // Padding is never read: granted back at once.
        st.release_stream(key, id, padding);
        st.release_connection(padding);
    }
    st.check_counts();
    if empty && !end_stream {
        // Padding alone included: it is granted straight back, so costs the
        // server nothing.
        return st.glitch(Glitch::EmptyData);
    }
    if !empty {
        st.earn(1);
    }
    Ok(())
}

/// What a stream does with a DATA frame.
enum Admit {
    Take,
    /// The stream already failed: the frame is dropped.
    Drop,
    /// The frame breaks the stream's rules: the stream is reset.
    Reset(Reason, &'static str),
}

/// Checks a DATA frame of `len` bytes (`flow` with padding) against the
/// stream's state, window and Content-Length, and takes it off the last two.
fn admit(stream: &mut Stream, flow: u32, len: usize, end_stream: bool) -> Admit {
    if stream.state().is_failed() {
        return Admit::Drop;
    }
    if let Err(e) = stream.recv_window.consume(flow) {
        return Admit::Reset(e.reason(), "DATA past the stream window");
    }
    if stream.state().is_awaiting_head() {
        return Admit::Reset(Reason::PROTOCOL_ERROR, "DATA before the response head");
    }
    if let Some(left) = stream.content_length.as_mut() {
        let len = len as u64;
        if len > *left {
            return Admit::Reset(
                Reason::PROTOCOL_ERROR,
                "body longer than its content-length",
            );
        }
        *left -= len;
        if end_stream && *left > 0 {
            return Admit::Reset(
                Reason::PROTOCOL_ERROR,
                "body shorter than its content-length",
            );
        }
    }
    Admit::Take
}

/// Applies a RST_STREAM; false if it did nothing (its stream gone, failed,
/// or already closed both ways).
fn on_reset(st: &mut State, id: u32, reason: Reason, wakers: &mut Vec<Waker>) -> bool {
    let State {
        streams, counts, ..
    } = &mut *st;
    let Some((key, stream)) = streams.by_id(id) else {
        return false;
    };
    if stream.state().is_failed() {
        return false;
    }
    let send_closed = stream.state().is_send_closed();
    if stream.state().is_recv_closed() && (reason == Reason::NO_ERROR || send_closed) {
        // The response is whole; the server wants no more of the request
        // (NO_ERROR, RFC 9113 §8.1), or the stream was already closed both
        // ways and the reset only crossed our END_STREAM (§5.1): either way
        // the response stands. An upload still going stops (its pipe is woken
        // to see that). Again, it does nothing.
        let stops = !send_closed;
        if stops {
            legal(stream.transition(counts, |s| s.send_end()));
        }
        if let Some(w) = stream.upload.as_mut().and_then(|u| u.waker.take()) {
            wakers.push(w);
        }
        st.check_counts();
        return stops;
    }
    // Already closed on the server's side: nothing to send back.
    st.fail_stream(key, id, StreamError::Reset(reason), wakers);
    true
}

/// The CONTINUATION frames a block of `max_block` bytes may take: what the
/// largest block needs in frames of the default maximum size, a quarter more
/// for frames not filled, and at least 8 (h2's and nghttp2's bounds alike).
fn max_continuations(max_block: usize) -> usize {
    let frames = max_block / frame::DEFAULT_MAX_FRAME_SIZE as usize;
    (frames + frames / 4).max(8)
}
