//! What the driver does with each frame the server sends.

use std::task::Waker;

use bytes::{Bytes, BytesMut};

use super::closed;
use super::conn::State;
use super::error::StreamError;
use super::frame::{self, setting, Frame, Reason};
use super::head::{Block, BlockDecoder, BlockError};
use super::streams::Stream;

/// A connection error: courier sends GOAWAY with `reason` and closes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnError {
    pub(crate) reason: Reason,
    pub(crate) what: &'static str,
}

fn conn_error(reason: Reason, what: &'static str) -> ConnError {
    ConnError { reason, what }
}

fn protocol(what: &'static str) -> ConnError {
    conn_error(Reason::PROTOCOL_ERROR, what)
}

/// A header block being assembled from HEADERS and CONTINUATION frames.
struct Pending {
    stream: u32,
    end_stream: bool,
    block: BytesMut,
}

/// The receiving half of the driver: header block assembly and HPACK.
pub(crate) struct Reader {
    blocks: BlockDecoder,
    pending: Option<Pending>,
    /// A header block may not grow past this (HPACK must decode a block
    /// whole, so it is held whole).
    max_block: usize,
    /// A PING ACK arrived since the driver last looked.
    pub(crate) pong: bool,
}

impl Reader {
    pub(crate) fn new(max_header_list: usize) -> Reader {
        Reader {
            blocks: BlockDecoder::new(super::hpack::DEFAULT_TABLE_SIZE, max_header_list),
            pending: None,
            max_block: max_header_list.saturating_mul(2).max(64 * 1024),
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
            return Err(protocol("a header block was interrupted by another frame"));
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
                    return Err(protocol("HEADERS on a stream courier did not open"));
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
                });
                Ok(())
            }
            Frame::Continuation {
                stream,
                end_headers,
                fragment,
            } => {
                let Some(pending) = self.pending.as_mut() else {
                    return Err(protocol("CONTINUATION without a header block"));
                };
                if pending.stream != stream {
                    return Err(protocol("CONTINUATION on another stream"));
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
                    return Err(conn_error(
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
                } = self.pending.take().expect("checked above");
                self.on_block(st, stream, end_stream, &block, wakers)
            }
            Frame::RstStream { stream, reason } => {
                if st.is_idle(stream) {
                    return Err(protocol("RST_STREAM on a stream courier did not open"));
                }
                on_reset(st, stream, reason, wakers);
                Ok(())
            }
            Frame::Settings { ack: true, .. } => Ok(()),
            Frame::Settings { settings, .. } => on_settings(st, settings.iter()),
            Frame::PushPromise { .. } => Err(protocol("PUSH_PROMISE, with push disabled")),
            Frame::Ping { ack: true, .. } => {
                self.pong = true;
                Ok(())
            }
            Frame::Ping {
                ack: false,
                payload,
            } => {
                frame::encode_ping(&mut st.out, true, payload);
                st.wake_driver();
                Ok(())
            }
            Frame::GoAway {
                last_stream,
                reason,
                debug,
            } => {
                on_goaway(st, last_stream, reason, &debug, wakers);
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                on_window_update(st, stream, increment, wakers)
            }
            Frame::Ignored => Ok(()),
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
        let trailers = st.streams.by_id(id).is_some_and(|(_, s)| s.head_received);
        // Decoded whatever becomes of the stream: HPACK must see every block.
        let decoded = self.blocks.decode(block, trailers);
        let open = st
            .streams
            .by_id(id)
            .filter(|(_, s)| s.error.is_none() && !s.recv_end);
        let Some((key, stream)) = open else {
            // Gone, failed or ended: a broken HPACK table matters, and
            // whether the server had closed the stream itself.
            return match decoded {
                Err(BlockError::Compression(what)) => {
                    Err(conn_error(Reason::COMPRESSION_ERROR, what))
                }
                _ => closed::late_frame(st, id, "HEADERS on a stream the server closed"),
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
            Err(BlockError::Compression(what)) => Err(conn_error(Reason::COMPRESSION_ERROR, what)),
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
            Ok(Block::Informational) => Ok(()),
            Ok(Block::Response(parts)) => {
                let no_body = stream.head_request
                    || parts.status == http::StatusCode::NO_CONTENT
                    || parts.status == http::StatusCode::NOT_MODIFIED;
                let declared = parts
                    .headers
                    .get(http::header::CONTENT_LENGTH)
                    .map(|v| std::str::from_utf8(v.as_bytes()).ok()?.parse::<u64>().ok());
                match declared {
                    Some(None) => return malformed(st, "invalid content-length", wakers),
                    Some(Some(n)) if !no_body => stream.content_length = Some(n),
                    _ => {}
                }
                if end_stream && stream.content_length.is_some_and(|n| n > 0) {
                    return malformed(st, "content-length with no body", wakers);
                }
                stream.head_received = true;
                stream.head = Some(parts);
                stream.recv_end = end_stream;
                stream.wake(wakers);
                st.deactivate(key, id);
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
                stream.recv_end = true;
                stream.wake(wakers);
                st.deactivate(key, id);
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
    let flow = i64::from(flow_len);
    if flow > st.recv_window {
        return Err(conn_error(
            Reason::FLOW_CONTROL_ERROR,
            "DATA past the connection window",
        ));
    }
    st.recv_window -= flow;
    if st.is_idle(id) {
        return Err(protocol("DATA on a stream courier did not open"));
    }
    let padding = (flow_len as usize) - data.len();
    let late = match st.streams.by_id(id) {
        Some((_, stream)) => stream.recv_end && !stream.rst_sent,
        None => true,
    };
    if late {
        // A closed stream: the bytes still count.
        st.release_connection(flow_len as usize);
        return closed::late_frame(st, id, "DATA on a stream the server closed");
    }
    let (key, stream) = st.streams.by_id(id).expect("found above");
    match admit(stream, flow, data.len(), end_stream) {
        Admit::Take => {}
        refused => {
            // The bytes still count against the connection's window.
            st.release_connection(flow_len as usize);
            if let Admit::Reset(reason, what) = refused {
                st.reset(key, id, reason, StreamError::Malformed(what), wakers);
            }
            return Ok(());
        }
    }
    if !data.is_empty() {
        stream.data.push(data);
    }
    stream.recv_end = end_stream;
    stream.wake(wakers);
    if padding > 0 {
        // Padding is never read: granted back at once.
        st.release_stream(key, id, padding);
        st.release_connection(padding);
    }
    if end_stream {
        st.deactivate(key, id);
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
fn admit(stream: &mut Stream, flow: i64, len: usize, end_stream: bool) -> Admit {
    if stream.error.is_some() {
        return Admit::Drop;
    }
    if flow > stream.recv_window {
        return Admit::Reset(Reason::FLOW_CONTROL_ERROR, "DATA past the stream window");
    }
    stream.recv_window -= flow;
    if !stream.head_received {
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

fn on_reset(st: &mut State, id: u32, reason: Reason, wakers: &mut Vec<Waker>) {
    let Some((key, stream)) = st.streams.by_id(id) else {
        return;
    };
    if stream.error.is_some() {
        return;
    }
    if stream.recv_end && (reason == Reason::NO_ERROR || stream.sent_end) {
        // The response is whole; the server wants no more of the request
        // (NO_ERROR, RFC 9113 §8.1), or the stream was already closed both
        // ways and the reset only crossed our END_STREAM (§5.1): either way
        // the response stands. An upload still going stops (its pipe is woken
        // to see that).
        stream.sent_end = true;
        if let Some(w) = stream.upload.as_mut().and_then(|u| u.waker.take()) {
            wakers.push(w);
        }
        st.deactivate(key, id);
        return;
    }
    // Already closed on courier's side too: nothing to send back.
    stream.sent_end = true;
    stream.recv_end = true;
    st.reset(key, id, reason, StreamError::Reset(reason), wakers);
}

fn on_settings(
    st: &mut State,
    settings: impl Iterator<Item = (u16, u32)>,
) -> Result<(), ConnError> {
    for (id, value) in settings {
        match id {
            setting::HEADER_TABLE_SIZE => st.encoder.set_max_table_size(value as usize),
            setting::MAX_CONCURRENT_STREAMS => {
                let max = usize::try_from(value).unwrap_or(usize::MAX);
                let rose = max > st.peer.max_streams;
                st.peer.max_streams = max;
                st.signals.set_max_streams(max);
                if rose {
                    st.wake_openers();
                }
            }
            setting::INITIAL_WINDOW_SIZE => {
                let delta = i64::from(value) - st.peer.initial_window;
                st.peer.initial_window = i64::from(value);
                let mut ready = Vec::new();
                for (key, stream) in st.streams.iter_mut() {
                    stream.send_window += delta;
                    if stream.send_window > i64::from(frame::MAX_WINDOW) {
                        return Err(conn_error(
                            Reason::FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE overflowed a stream window",
                        ));
                    }
                    if delta > 0 && stream.upload.is_some() {
                        ready.push((key, stream.id));
                    }
                }
                for (key, id) in ready {
                    st.mark_ready(key, id);
                }
            }
            setting::MAX_FRAME_SIZE => st.peer.max_frame = value,
            _ => {}
        }
    }
    frame::encode_settings_ack(&mut st.out);
    st.wake_driver();
    st.signals.settings_arrived();
    Ok(())
}

fn on_goaway(st: &mut State, last: u32, reason: Reason, data: &[u8], wakers: &mut Vec<Waker>) {
    tracing::debug!(
        last_stream = last,
        %reason,
        debug_data = %String::from_utf8_lossy(data),
        "HTTP/2 server sent GOAWAY"
    );
    st.goaway = Some(st.goaway.map_or(last, |before| before.min(last)));
    st.signals.set_goaway();
    let unprocessed: Vec<_> = st
        .streams
        .iter_mut()
        .filter(|(_, s)| s.id > last && s.error.is_none())
        .map(|(key, s)| (key, s.id))
        .collect();
    for (key, id) in unprocessed {
        if let Some(stream) = st.streams.get(key, id) {
            // Nothing to reset: the server has forgotten the stream.
            stream.sent_end = true;
            stream.recv_end = true;
        }
        st.reset(
            key,
            id,
            reason,
            StreamError::GoAway {
                reason,
                unprocessed: true,
            },
            wakers,
        );
    }
    st.wake_openers();
    st.wake_driver();
}

fn on_window_update(
    st: &mut State,
    id: u32,
    increment: u32,
    wakers: &mut Vec<Waker>,
) -> Result<(), ConnError> {
    let max = i64::from(frame::MAX_WINDOW);
    if id == 0 {
        st.send_window += i64::from(increment);
        if st.send_window > max {
            return Err(conn_error(
                Reason::FLOW_CONTROL_ERROR,
                "connection window above 2^31-1",
            ));
        }
        if !st.send_ready.is_empty() {
            st.wake_driver();
        }
        return Ok(());
    }
    if st.is_idle(id) {
        return Err(protocol("WINDOW_UPDATE on a stream courier did not open"));
    }
    let Some((key, stream)) = st.streams.by_id(id) else {
        return Ok(());
    };
    stream.send_window += i64::from(increment);
    if stream.send_window > max {
        st.reset(
            key,
            id,
            Reason::FLOW_CONTROL_ERROR,
            StreamError::Malformed("stream window above 2^31-1"),
            wakers,
        );
        return Ok(());
    }
    if stream.upload.is_some() && !stream.sent_end {
        st.mark_ready(key, id);
        st.wake_driver();
    }
    Ok(())
}
