//! The connection's driver: the server's unidirectional streams (RFC 9114
//! §6.2, RFC 9204 §4.2), each read by a task of its own until the
//! connection ends, with our control stream held open meanwhile.
//!
//! - The control stream: one; SETTINGS first and once (a frame before it
//!   is H3_MISSING_SETTINGS, a second H3_FRAME_UNEXPECTED); DATA, HEADERS,
//!   PUSH_PROMISE and MAX_PUSH_ID on it are H3_FRAME_UNEXPECTED; a
//!   CANCEL_PUSH is H3_ID_ERROR (we allowed no push); GOAWAY ids must name
//!   a request stream and may only fall (H3_ID_ERROR); its end is
//!   H3_CLOSED_CRITICAL_STREAM.
//! - The QPACK encoder stream: one; with the capacity of 0 we announced,
//!   anything but "capacity 0" is QPACK_ENCODER_STREAM_ERROR. The decoder
//!   stream: one; read and dropped (it only acknowledges what we never
//!   use). Either ending is H3_CLOSED_CRITICAL_STREAM; a second of a kind
//!   is H3_STREAM_CREATION_ERROR.
//! - Push streams (we never send MAX_PUSH_ID) and unknown types: stopped
//!   with STOP_SENDING at once, so they cost nothing; how many may be open
//!   at once is quinn's limit on incoming unidirectional streams.
//!
//! The driver also keeps the requests' deadlines ([`super::deadline`]).
//!
//! Every error closes the connection with its code through
//! [`Inner::fail`], which keeps the cause for requests sent after it.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use bytes::{Buf, Bytes};

use super::closed::QuicClosed;
use super::code;
use super::conn::Inner;
use super::deadline::{Deadlines, Timer};
use super::early;
use super::frame::{stream_type, Frame};
use super::qpack;
use super::reader::{poll_chunk, ReadError, StreamReader};
use super::signals::Signals;
use super::varint;

/// Which critical streams the server has opened (one of each).
#[derive(Default)]
struct Opened {
    control: AtomicBool,
    encoder: AtomicBool,
    decoder: AtomicBool,
}

/// A connection error: the code and why.
type Fault = (u64, String);

/// Runs until the connection ends. `control` is our control stream: held
/// open (its end would be the server's H3_CLOSED_CRITICAL_STREAM).
///
/// The connection is held weakly (`inner`), so the driver does not keep it
/// alive: its handles and requests do (see `Inner`'s drop).
pub(crate) async fn drive(
    inner: Weak<Inner>,
    quic: quinn::Connection,
    signals: Arc<Signals>,
    quic_closed: Arc<QuicClosed>,
    deadlines: Arc<Deadlines>,
    max_field_section: u64,
    control: quinn::SendStream,
) {
    // Kept until the driver ends: quinn's close sets the flag through it.
    let mut closed = pin!(quic.closed());
    quic_closed.watch(closed.as_mut());
    let opened = Arc::new(Opened::default());
    // The requests' deadlines are timed here, beside the streams' accepts.
    let mut timer = Timer::new(deadlines);
    loop {
        let mut accept = pin!(quic.accept_uni());
        let accepted = poll_fn(|cx| {
            timer.poll(cx);
            accept.as_mut().poll(cx)
        })
        .await;
        let Ok(recv) = accepted else {
            break;
        };
        let stream = serve(
            Weak::clone(&inner),
            max_field_section,
            Arc::clone(&opened),
            recv,
        );
        tokio::spawn(stream);
    }
    drop(control);
    tracing::debug!(reason = ?quic.close_reason(), "HTTP/3 connection ended");
    signals.set_closed();
    signals.report();
}

/// One unidirectional stream from the server, to its end.
async fn serve(inner: Weak<Inner>, max: u64, opened: Arc<Opened>, mut recv: quinn::RecvStream) {
    let Some((kind, rest)) = read_type(&mut recv).await else {
        return;
    };
    let first = |flag: &AtomicBool| !flag.swap(true, Ordering::AcqRel);
    let result = match kind {
        stream_type::CONTROL if first(&opened.control) => {
            control_stream(&inner, StreamReader::new(recv, max, rest)).await
        }
        stream_type::QPACK_ENCODER if first(&opened.encoder) => encoder_stream(recv, rest).await,
        stream_type::QPACK_DECODER if first(&opened.decoder) => decoder_stream(recv).await,
        stream_type::CONTROL | stream_type::QPACK_ENCODER | stream_type::QPACK_DECODER => Err((
            code::STREAM_CREATION_ERROR,
            format!("a second unidirectional stream of type {kind:#x}"),
        )),
        stream_type::PUSH => {
            // We never sent MAX_PUSH_ID: refused, nothing of it read.
            let _ = recv.stop(quinn::VarInt::from_u32(code::ID_ERROR as u32));
            Ok(())
        }
        _ => {
            // A type we do not know (§9): refused, nothing of it read.
            let _ = recv.stop(quinn::VarInt::from_u32(code::STREAM_CREATION_ERROR as u32));
            Ok(())
        }
    };
    if let Err((code, why)) = result {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.quic.close_reason().is_none() {
            inner.fail(
                code,
                format!("HTTP/3 connection closed: the server broke the protocol ({why})"),
            );
        }
    }
}

/// A unidirectional stream's type, and what came after it in its chunk;
/// `None` if the stream or the connection ended first.
async fn read_type(recv: &mut quinn::RecvStream) -> Option<(u64, Bytes)> {
    let mut head = [0u8; 8];
    let mut have = 0;
    loop {
        let mut chunk = poll_fn(|cx| poll_chunk(recv, cx, 8 - have)).await.ok()??;
        let n = chunk.len().min(8 - have);
        head[have..have + n].copy_from_slice(&chunk[..n]);
        have += n;
        chunk.advance(n);
        if let Some((kind, len)) = varint::get(&head[..have]) {
            // Bytes read past the type (at most 7, as a chunk is read to
            // the varint's longest form) go back in front of the rest.
            let mut rest = head[len..have].to_vec();
            rest.extend_from_slice(&chunk);
            return Some((kind, Bytes::from(rest)));
        }
    }
}

/// Where a critical stream's read failed: its end, or a reset, is the
/// server closing it; a lost connection is nothing more to do.
fn critical_end(e: Option<ReadError>, what: &str) -> Result<(), Fault> {
    match e {
        Some(ReadError::Lost(_) | ReadError::Closed | ReadError::ZeroRttRejected) => Ok(()),
        Some(ReadError::Frame(e)) => Err((e.code(), format!("{what}: {e}"))),
        Some(ReadError::Reset(_)) | None => {
            Err((code::CLOSED_CRITICAL_STREAM, format!("its {what} closed")))
        }
    }
}

async fn control_stream(inner: &Weak<Inner>, mut reader: StreamReader) -> Result<(), Fault> {
    let unexpected = |what: &str| {
        Err((
            code::FRAME_UNEXPECTED,
            format!("{what} on its control stream"),
        ))
    };
    let mut settings = false;
    loop {
        let frame = match reader.frame().await {
            Ok(Some(frame)) => frame,
            Ok(None) => return critical_end(None, "control stream"),
            Err(e) => return critical_end(Some(e), "control stream"),
        };
        if matches!(frame, Frame::Settings(_)) {
            // On a 0-RTT connection the fresh SETTINGS are checked against
            // the remembered ones only if the server took the early data:
            // wait for QUIC to say (the handshake completes about when the
            // server's 1-RTT data, these SETTINGS, can be read at all).
            let Some(phase) = inner.upgrade().map(|inner| inner.phase_watch()) else {
                return Ok(());
            };
            early::settled(phase).await;
        }
        // Held only while a frame is handled: the driver keeps nothing alive.
        let Some(inner) = inner.upgrade() else {
            return Ok(());
        };
        match frame {
            Frame::Settings(pairs) if !settings => {
                settings = true;
                inner
                    .peer_settings(&pairs)
                    .map_err(|why| (code::SETTINGS_ERROR, why))?;
            }
            _ if !settings => {
                return Err((
                    code::MISSING_SETTINGS,
                    "its control stream did not begin with SETTINGS".into(),
                ))
            }
            Frame::Settings(_) => return unexpected("a second SETTINGS"),
            Frame::Goaway(id) => goaway(&inner, id)?,
            Frame::CancelPush(id) => {
                return Err((
                    code::ID_ERROR,
                    format!("CANCEL_PUSH {id} of a push never allowed"),
                ))
            }
            Frame::MaxPushId(_) => return unexpected("MAX_PUSH_ID (a client's frame)"),
            Frame::Data(_) => return unexpected("DATA"),
            Frame::Headers(_) => return unexpected("HEADERS"),
            Frame::PushPromise(_) => return unexpected("PUSH_PROMISE"),
        }
    }
}

/// The server's GOAWAY (§5.2): the first request stream it will not
/// process; later ones may only lower it.
fn goaway(inner: &Inner, id: u64) -> Result<(), Fault> {
    if id % 4 != 0 {
        return Err((
            code::ID_ERROR,
            format!("GOAWAY {id} names no request stream"),
        ));
    }
    if let Some(before) = inner.signals.goaway_id() {
        if id > before {
            return Err((code::ID_ERROR, format!("GOAWAY {id} after GOAWAY {before}")));
        }
    }
    inner.signals.set_goaway(id);
    // Nothing in flight: nothing to wait for.
    if inner.signals.open() == 0 {
        inner.quic.close(code::NO_ERROR.into(), b"");
    }
    inner.signals.report();
    Ok(())
}

async fn encoder_stream(mut recv: quinn::RecvStream, rest: Bytes) -> Result<(), Fault> {
    let check = |bytes: &[u8]| {
        qpack::check_encoder_stream(bytes)
            .map_err(|e| (code::QPACK_ENCODER_STREAM_ERROR, e.to_string()))
    };
    check(&rest)?;
    loop {
        match poll_fn(|cx| poll_chunk(&mut recv, cx, usize::MAX)).await {
            Ok(Some(chunk)) => check(&chunk)?,
            Ok(None) => return critical_end(None, "QPACK encoder stream"),
            Err(e) => return critical_end(Some(e), "QPACK encoder stream"),
        }
    }
}

async fn decoder_stream(mut recv: quinn::RecvStream) -> Result<(), Fault> {
    loop {
        match poll_fn(|cx| poll_chunk(&mut recv, cx, usize::MAX)).await {
            Ok(Some(_)) => {}
            Ok(None) => return critical_end(None, "QPACK decoder stream"),
            Err(e) => return critical_end(Some(e), "QPACK decoder stream"),
        }
    }
}
