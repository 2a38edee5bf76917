//! A new HTTP/2 connection's first requests go out with the client's preface,
//! not a round trip later behind the server's SETTINGS (RFC 9113 §3.4 lets a
//! client send at once; Go's transport and Chromium do, assuming 100 streams
//! until the SETTINGS say otherwise). What the SETTINGS then allow holds:
//! streams past a lower limit are refused by the server and sent again, a
//! limit of 0 makes requests wait without dialing more, and a server that
//! sends no SETTINGS (it does not speak HTTP/2, or says nothing) fails the
//! requests with a typed error, once, by the connect timeout.
//!
//! Servers are scripts written frame by frame (h2c by prior knowledge on
//! loopback), as in `http2_wire.rs`; every wait is bounded by [`LIMIT`].

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use courier::ErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::support::h2::*;

/// `:status: 200` with `body`, ending the stream.
fn ok(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = frame(HEADERS, END_HEADERS, stream, &[STATUS_200]);
    out.extend(frame(DATA, END_STREAM, stream, body));
    out
}

/// Reads the client's frames until `n` requests' HEADERS came; their streams.
async fn requests(peer: &mut Peer, n: usize) -> Vec<u32> {
    let mut streams = Vec::new();
    while streams.len() < n {
        let f = peer.read().await;
        if f.ty == HEADERS {
            streams.push(f.stream);
        }
    }
    streams
}

#[tokio::test]
async fn the_first_request_goes_out_before_the_servers_settings() {
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept_raw(&listener).await;
        // Nothing sent yet: the request must come without the server's
        // SETTINGS (waiting for them, the client would wait here for ever).
        let s = requests(&mut peer, 1).await[0];
        let mut out = settings(&[]);
        out.extend(frame(SETTINGS, ACK, 0, &[]));
        out.extend(ok(s, b"early"));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "early");
    drop(client);
    within("the server script", server).await.unwrap();
}

/// The server allows 2 streams, which the client learns only after it sent
/// 5: the 3 past the limit are refused (as nginx, h2 and Go's server refuse
/// them) and sent again within the limit, on the same connection.
#[tokio::test]
async fn streams_past_the_servers_first_limit_are_refused_and_sent_again() {
    const SENT: usize = 5;
    const LIMIT_STREAMS: u32 = 2;
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept_raw(&listener).await;
        let early = requests(&mut peer, SENT).await;
        let mut out = settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, LIMIT_STREAMS)]);
        for &s in &early[LIMIT_STREAMS as usize..] {
            out.extend(rst_stream(s, REFUSED_STREAM));
        }
        peer.send(&out).await;
        // Until the client acknowledged the limit it may still open streams
        // it queued before; after, never more than the limit at once.
        let mut open: Vec<u32> = early[..LIMIT_STREAMS as usize].to_vec();
        let mut acked = false;
        let mut served = 0;
        while served < SENT {
            if let Some(&s) = open.first() {
                peer.send(&ok(s, b"within")).await;
                open.remove(0);
                served += 1;
                continue;
            }
            let f = peer.read().await;
            match f.ty {
                SETTINGS if f.has(ACK) => acked = true,
                SETTINGS => peer.send(&frame(SETTINGS, ACK, 0, &[])).await,
                HEADERS => {
                    open.push(f.stream);
                    assert!(
                        !acked || open.len() <= LIMIT_STREAMS as usize,
                        "{} streams open past a limit of {LIMIT_STREAMS}",
                        open.len()
                    );
                }
                _ => {}
            }
        }
        peer.drain().await;
    })
    .await;
    let client = h2c().http2_multiple_connections(false).build().unwrap();
    let fetches: Vec<_> = (0..SENT)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    for f in fetches {
        assert_eq!(within("a request", f).await.unwrap().unwrap(), "within");
    }
    let m = client.metrics();
    drop(client);
    within("the server script", server).await.unwrap();
    assert_eq!(m.refused_stream_retries, 3, "{m:?}");
    assert_eq!(m.connections_established, 1, "{m:?}");
}

/// A limit learnt from one connection bounds what the next ones are given
/// before their own SETTINGS: a server that allows 2 is not sent 100 streams
/// on every new connection only to refuse 98.
#[tokio::test]
async fn later_connections_are_given_no_more_than_the_limit_the_first_declared() {
    const LIMIT_STREAMS: usize = 2;
    // The most requests one connection sent before it acknowledged the
    // server's SETTINGS (before it could have known the limit).
    let most = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&most);
    let (url, _, server) = raw_server(move |io| {
        let most = Arc::clone(&seen);
        async move {
            let limit = [(SETTINGS_MAX_CONCURRENT_STREAMS, LIMIT_STREAMS as u32)];
            let Some(peer) = Peer::handshake(io, &limit).await else {
                return;
            };
            let mut peer = peer.without_deadline();
            let (mut early, mut acked) = (0, false);
            while let Some(f) = peer.try_read().await {
                match f.ty {
                    SETTINGS if f.has(ACK) => acked = true,
                    SETTINGS => {
                        peer.try_send(&frame(SETTINGS, ACK, 0, &[])).await;
                    }
                    HEADERS => {
                        if !acked {
                            early += 1;
                            most.fetch_max(early, SeqCst);
                        }
                        peer.try_send(&ok(f.stream, b"ok")).await;
                    }
                    _ => {}
                }
            }
        }
    })
    .await;
    let client = h2c().build().unwrap();
    // The first connection learns the limit; then 6 at once need more.
    fetch(&client, &url).await.unwrap();
    let fetches: Vec<_> = (0..3 * LIMIT_STREAMS)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    for f in fetches {
        within("a request", f).await.unwrap().unwrap();
    }
    let m = client.metrics();
    drop(client);
    server.abort();
    assert!(m.connections_established > 1, "{m:?}");
    assert!(
        most.load(SeqCst) <= LIMIT_STREAMS,
        "{} requests on one connection before its SETTINGS were read",
        most.load(SeqCst)
    );
}

/// A server on 127.0.0.1 that runs `conn` on every connection it accepts,
/// counting them: its URL, the count, and the accept loop's task.
async fn raw_server<F, Fut>(conn: F) -> (String, Arc<AtomicUsize>, JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    let task = tokio::spawn(async move {
        while let Ok((io, _)) = listener.accept().await {
            counted.fetch_add(1, SeqCst);
            tokio::spawn(conn(io));
        }
    });
    (url, accepted, task)
}

/// An HTTP/1.1 server (nginx or Apache on a port without HTTP/2) answers
/// the client's preface with a status line and closes.
async fn http1_only(mut io: TcpStream) {
    let mut buf = vec![0u8; 4096];
    let mut seen = Vec::new();
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let _ = io.write_all(answer).await;
    // Read what else comes, so the close is a FIN, not a reset.
    let _ = io.shutdown().await;
    while matches!(io.read(&mut buf).await, Ok(n) if n > 0) {}
}

#[tokio::test]
async fn prior_knowledge_to_an_http1_server_fails_each_request_once_as_a_protocol_error() {
    let (url, accepted, server) = raw_server(http1_only).await;
    let client = h2c().build().unwrap();
    let fetches: Vec<_> = (0..10)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    for f in fetches {
        let err = within("a request", f)
            .await
            .unwrap()
            .expect_err("no HTTP/2 server");
        assert_eq!(err.kind(), ErrorKind::Protocol, "{err:?}");
        let chain = format!("{err} {:?}", std::error::Error::source(&err));
        assert!(chain.contains("HTTP/1"), "says why: {chain}");
    }
    let m = client.metrics();
    drop(client);
    server.abort();
    // All ten went on the first connection; none was sent again.
    assert_eq!(accepted.load(SeqCst), 1, "{m:?}");
    assert_eq!(m.refused_stream_retries + m.stale_retries, 0, "{m:?}");
}

/// Reads, never answers: no SETTINGS ever.
async fn silent(mut io: TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(io.read(&mut buf).await, Ok(n) if n > 0) {}
}

#[tokio::test]
async fn a_server_that_never_sends_its_settings_fails_the_request_at_the_connect_timeout() {
    let (url, accepted, server) = raw_server(silent).await;
    let connect_timeout = Duration::from_millis(300);
    // The request's own deadline is far: the connect timeout must end it.
    let client = h2c().connect_timeout(connect_timeout).build().unwrap();
    let started = Instant::now();
    let err = within("the request", fetch(&client, &url))
        .await
        .expect_err("no SETTINGS, no answer");
    let elapsed = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::ConnectTimeout, "{err:?}");
    assert!(
        elapsed >= connect_timeout && elapsed < LIMIT / 2,
        "{elapsed:?}"
    );
    drop(client);
    server.abort();
    assert_eq!(accepted.load(SeqCst), 1, "not sent again");
}
