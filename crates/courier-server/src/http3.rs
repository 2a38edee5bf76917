//! HTTP/3: the connection driver (h3) on the QUIC endpoint (`quic.rs`),
//! which hands each request to the same [`CourierService`] as HTTP/1.1 and
//! HTTP/2.
//!
//! Control events map as on HTTP/2 (`http2.rs`): a graceful close is a
//! GOAWAY, then the connection closes once its requests are done; a
//! connection-level fault closes it at once (CONNECTION_CLOSE with
//! H3_NO_ERROR for `/fault/close` and the mid-body faults, H3_INTERNAL_ERROR
//! for `/fault/reset`); `/fault/rst-stream` resets the request's stream.
//!
//! Unlike TCP, closing a QUIC connection discards whatever it has not sent
//! yet, so a graceful close waits (boundedly) for the client to close first,
//! and the mid-body faults' partial bodies may arrive in part or not at all:
//! the client sees a truncated response either way.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, Response, StatusCode};
use http_body::Body;
use quinn::VarInt;
use tokio::task::JoinSet;

use crate::control::{Control, Event};
use crate::fault::RawFault;
use crate::protocol::{Protocol, EARLY_DATA};
use crate::request_body::RequestBody;
use crate::service::CourierService;
use crate::state::ConnState;
use crate::tls::ZeroRtt;

/// HTTP/3 error codes (RFC 9114 §8.1) used to close connections.
pub(crate) const H3_NO_ERROR: VarInt = VarInt::from_u32(0x100);
const H3_INTERNAL_ERROR: VarInt = VarInt::from_u32(0x102);

/// Largest request header section accepted (SETTINGS_MAX_FIELD_SECTION_SIZE).
const MAX_FIELD_SECTION: u64 = 256 * 1024;

/// After a GOAWAY and the last response, how long the client gets to close
/// the connection itself (which loses nothing) before the server does.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Serves one QUIC connection attempt until it ends or the server stops.
pub(crate) async fn serve(incoming: quinn::Incoming, state: &Arc<ConnState>) {
    let ctx = state.ctx();
    let mut control = Control::new(state);
    let connecting = match incoming.accept() {
        Ok(connecting) => connecting,
        Err(err) => {
            tracing::debug!(conn = state.id(), "QUIC connection refused: {err}");
            return;
        }
    };
    // With 0-RTT the connection is served at once, its handshake going on
    // (quinn's 0.5-RTT): requests that arrive before it completes came as
    // early data. The handshake is then bounded by QUIC's idle timeout.
    let handshaken = Arc::new(AtomicBool::new(true));
    let connecting = match ctx.zero_rtt {
        ZeroRtt::Off => connecting,
        ZeroRtt::Accept | ZeroRtt::Reject => match connecting.into_0rtt() {
            Ok((conn, established)) => {
                handshaken.store(false, Ordering::Release);
                let done = Arc::clone(&handshaken);
                tokio::spawn(async move {
                    established.await;
                    done.store(true, Ordering::Release);
                });
                ctx.count_http3_connection();
                tokio::select! {
                    () = drive(&conn, state, &mut control, &handshaken) => {}
                    () = ctx.shutdown_requested() => {
                        conn.close(H3_NO_ERROR, b"server shutdown");
                    }
                }
                return;
            }
            Err(connecting) => connecting,
        },
    };
    // The handshake is bounded like TCP's: by the idle timeout and closes.
    let conn = tokio::select! {
        res = control.unless_closed(connecting) => match res {
            Some(Ok(conn)) => conn,
            Some(Err(err)) => {
                tracing::debug!(conn = state.id(), "QUIC handshake failed: {err}");
                return;
            }
            None => return,
        },
        () = ctx.shutdown_requested() => return,
    };
    ctx.count_http3_connection();
    tokio::select! {
        () = drive(&conn, state, &mut control, &handshaken) => {}
        () = ctx.shutdown_requested() => {
            conn.close(H3_NO_ERROR, b"server shutdown");
        }
    }
}

/// Accepts requests until the connection ends, a fault ends it, or a
/// graceful close has let every request finish.
async fn drive(
    conn: &quinn::Connection,
    state: &Arc<ConnState>,
    control: &mut Control<'_>,
    handshaken: &AtomicBool,
) {
    let id = state.id();
    let mut builder = h3::server::builder();
    builder.max_field_section_size(MAX_FIELD_SECTION);
    let built = builder.build::<_, Bytes>(h3_quinn::Connection::new(conn.clone()));
    let mut h3conn = match control.unless_closed(built).await {
        Some(Ok(h3conn)) => h3conn,
        Some(Err(err)) => {
            tracing::debug!(conn = id, "HTTP/3 setup failed: {err}");
            return;
        }
        None => {
            conn.close(H3_NO_ERROR, b"");
            return;
        }
    };
    let service = Arc::new(CourierService::new(Arc::clone(state), Protocol::Http3));
    // The connection's requests: dropped (aborted) with it.
    let mut requests = JoinSet::new();
    let mut closing = false;
    loop {
        tokio::select! {
            accepted = h3conn.accept() => match accepted {
                Ok(Some(resolver)) => {
                    // Read here, as the stream is accepted: a request the
                    // handshake had not yet confirmed was early data.
                    let early = !handshaken.load(Ordering::Acquire);
                    if early {
                        state.ctx().early_requests.fetch_add(1, Ordering::Relaxed);
                    }
                    requests.spawn(request(resolver, Arc::clone(&service), conn.clone(), early));
                }
                // The client's GOAWAY, and its requests are done.
                Ok(None) => break,
                Err(err) => {
                    tracing::debug!(conn = id, "HTTP/3 connection ended: {err}");
                    return;
                }
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {
                if closing && requests.is_empty() {
                    break;
                }
            }
            event = control.next() => match event {
                Event::GracefulClose => {
                    closing = true;
                    // GOAWAY: streams the client opened later are refused.
                    // h3's argument is how many requests past the last one
                    // accepted may still come: with 0 the GOAWAY names the
                    // last accepted stream itself, which RFC 9114 §5.2 reads
                    // as "not processed" while it is being answered (a
                    // client may then send it again). 1 names the next.
                    if let Err(err) = h3conn.shutdown(1).await {
                        tracing::debug!(conn = id, "HTTP/3 GOAWAY failed: {err}");
                        return;
                    }
                    if requests.is_empty() {
                        break;
                    }
                }
                Event::Fault(fault) => {
                    tracing::trace!(conn = id, "closing HTTP/3 connection for {fault:?}");
                    let (code, reason): (_, &[u8]) = match fault {
                        RawFault::Reset => (H3_INTERNAL_ERROR, b"fault/reset"),
                        _ => (H3_NO_ERROR, b"fault/close"),
                    };
                    conn.close(code, reason);
                    return;
                }
            },
        }
    }
    tokio::select! {
        _ = conn.closed() => {}
        () = tokio::time::sleep(CLOSE_GRACE) => conn.close(H3_NO_ERROR, b""),
    }
}

type Resolver = h3::server::RequestResolver<h3_quinn::Connection, Bytes>;

/// A request's content-length: `Err` unless every copy is `1*DIGIT` and
/// all are the same (as courier's client reads a response's).
fn declared_length(headers: &http::HeaderMap) -> Result<Option<u64>, ()> {
    let mut declared = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        let digits = value.as_bytes();
        if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return Err(());
        }
        let n = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
            .ok_or(())?;
        if declared.is_some_and(|d| d != n) {
            return Err(());
        }
        declared = Some(n);
    }
    Ok(declared)
}

/// One request stream, until answered or the connection is gone (a fault,
/// or a request that never answers).
async fn request(
    resolver: Resolver,
    service: Arc<CourierService>,
    conn: quinn::Connection,
    early: bool,
) {
    tokio::select! {
        () = respond(resolver, &service, early) => {}
        _ = conn.closed() => {}
    }
}

async fn respond(resolver: Resolver, service: &CourierService, early: bool) {
    let (mut req, stream) = match resolver.resolve_request().await {
        Ok(resolved) => resolved,
        Err(err) => {
            tracing::debug!("HTTP/3 request unreadable: {err}");
            return;
        }
    };
    // RFC 8470 §5.1: the request came in early data (the client's own
    // header says nothing).
    req.headers_mut().remove(EARLY_DATA);
    if early {
        req.headers_mut()
            .insert(EARLY_DATA, HeaderValue::from_static("1"));
    }
    // RFC 9110 §9.3.2: HEAD's response is the head alone (hyper drops
    // the body on HTTP/1.1 and HTTP/2; here it is not sent).
    let head_only = req.method() == http::Method::HEAD;
    let (mut send, recv) = stream.split();
    // hyper holds HTTP/1.1 and HTTP/2 bodies to their content-length; h3
    // 0.0.8 does not (RFC 9114 §4.1.2: a mismatch is malformed).
    let Ok(declared) = declared_length(req.headers()) else {
        let why = Bytes::from_static(b"content-length must be digits, every copy the same\n");
        let head = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(CONTENT_LENGTH, why.len())
            .body(())
            .expect("a valid response head");
        if send.send_response(head).await.is_ok() && send.send_data(why).await.is_ok() {
            let _ = send.finish().await;
        }
        return;
    };
    let req = req.map(|()| RequestBody::http3(recv, declared));
    let Ok(response) = service.handle(req).await else {
        // `/fault/rst-stream`.
        send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
        return;
    };
    let (mut head, mut body) = response.into_parts();
    // hyper adds the length itself on HTTP/1.1 and HTTP/2; say it here too.
    if let Some(len) = body.size_hint().exact() {
        let bodyless = matches!(
            head.status,
            StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
        );
        if !bodyless && !head.headers.contains_key(CONTENT_LENGTH) {
            head.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
    }
    if let Err(err) = send.send_response(Response::from_parts(head, ())).await {
        tracing::debug!("HTTP/3 response head not sent: {err}");
        send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
        return;
    }
    loop {
        if head_only {
            // Its body is dropped unsent: the response ends with its head.
            break;
        }
        match poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if data.is_empty() {
                    continue;
                }
                if let Err(err) = send.send_data(data).await {
                    tracing::debug!("HTTP/3 response body cut short: {err}");
                    return;
                }
            }
            Some(Err(err)) => {
                // The request body failed under `/echo`.
                tracing::debug!("HTTP/3 response body failed: {err}");
                send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
                return;
            }
            None => break,
        }
    }
    if let Err(err) = send.finish().await {
        tracing::debug!("HTTP/3 response end not sent: {err}");
    }
}
