//! Settling a new connection's transport (the TLS handshake, or the preface
//! detection) and protocol, then running the protocol driver.
//!
//! | server | transport | protocol |
//! |---|---|---|
//! | TLS | rustls handshake | ALPN: `h2` → HTTP/2, `http/1.1` → HTTP/1.1, none → HTTP/1.1 (HTTP/2 if that is all it serves) |
//! | plain, both protocols | TCP | the first bytes: the HTTP/2 preface → h2c, anything else → HTTP/1.1 |
//! | plain, one protocol | TCP | that one, no detection |

use std::io;
use std::sync::Arc;

use rustls::HandshakeKind;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::control::Control;
use crate::detect::{self, Rewind};
use crate::protocol::Protocol;
use crate::state::{ConnState, ServerContext};
use crate::tls::ALPN_H2;
use crate::transport::Transport;

/// Settles transport and protocol, then runs the protocol driver.
///
/// The handshake and the preface detection are bounded like an idle
/// connection: the idle timeout, `close_idle_connections` and `goaway_all`
/// all close a connection that is still in them.
pub(crate) async fn serve(stream: TcpStream, state: &Arc<ConnState>) {
    let ctx = state.ctx();
    let mut control = Control::new(state);
    let started = match ctx.tls_acceptor() {
        Some(acceptor) => {
            let handshake = handshake(acceptor, stream, ctx);
            match control.unless_closed(handshake).await {
                Some(Ok((tls, protocol))) => Some((Transport::Tls(Box::new(tls)), protocol)),
                Some(Err(err)) => {
                    tracing::debug!(conn = state.id(), "TLS handshake failed: {err}");
                    None
                }
                None => None,
            }
        }
        None => match (ctx.serves_http1(), ctx.serves_http2()) {
            (true, true) => match control.unless_closed(detect::sniff(stream)).await {
                Some(Ok(Some((rewind, protocol)))) => Some((Transport::Plain(rewind), protocol)),
                Some(Err(err)) => {
                    tracing::debug!(conn = state.id(), "reading the first bytes failed: {err}");
                    None
                }
                Some(Ok(None)) | None => None,
            },
            (false, _) => Some((Transport::Plain(Rewind::plain(stream)), Protocol::Http2)),
            (true, false) => Some((Transport::Plain(Rewind::plain(stream)), Protocol::Http1)),
        },
    };
    match started {
        Some((transport, Protocol::Http1)) => {
            crate::http1::serve(transport, state, &mut control).await;
        }
        Some((transport, Protocol::Http2 | Protocol::Http3)) => {
            crate::http2::serve(transport, state, &mut control).await;
        }
        None => {}
    }
}

/// Runs the server side of the handshake, counts it, and returns the
/// stream with the protocol ALPN chose.
///
/// Without ALPN the client gets HTTP/1.1, or HTTP/2 if that is all the
/// server speaks. A client offering only protocols the server lacks fails
/// inside rustls (`no_application_protocol` alert).
pub(crate) async fn handshake(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
    ctx: &ServerContext,
) -> io::Result<(TlsStream<TcpStream>, Protocol)> {
    let stream = acceptor.accept(stream).await?;
    let (_, session) = stream.get_ref();
    ctx.count_tls_handshake(session.handshake_kind() == Some(HandshakeKind::Resumed));
    let protocol = match session.alpn_protocol() {
        Some(ALPN_H2) => Protocol::Http2,
        Some(_) => Protocol::Http1,
        None if ctx.serves_http1() => Protocol::Http1,
        None => Protocol::Http2,
    };
    Ok((stream, protocol))
}
