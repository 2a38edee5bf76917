//! A streamed upload whose request is dropped before its body ended must
//! never reach the server as a whole body (the caller asked for more bytes
//! than went out). HTTP/3 finished such a stream on drop, so a server took
//! the cut body for the whole (fixed in `proto/h3/reader.rs`, tested in
//! `http3_deadline.rs`); these are its siblings on HTTP/1.1 and HTTP/2,
//! for a request dropped by its caller and one cut by its timeout.
//!
//! Servers are scripts on loopback that read what the client writes until
//! it closes or cancels; every wait is bounded.

use std::time::Duration;

use bytes::Bytes;
use courier::{Client, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::support::channel_body;
use crate::support::h2::*;

/// How the request ends before its body does.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// The caller drops the request's future.
    Dropped,
    /// The request's timeout passes.
    TimedOut,
}

const CUTS: [Cut; 2] = [Cut::Dropped, Cut::TimedOut];

/// Sends a PUT of `url` with a streamed body, one piece, then cuts it as
/// `cut` says once `sent` fires (the server saw the piece).
async fn cut_upload(
    client: &Client,
    url: &str,
    length: Option<u64>,
    cut: Cut,
    sent: oneshot::Receiver<()>,
) {
    let (tx, body) = channel_body();
    tx.send(Bytes::from_static(b"first piece;")).unwrap();
    let mut request = client.put(url).body(body);
    if let Some(length) = length {
        request = request.header("content-length", length.to_string());
    }
    if matches!(cut, Cut::TimedOut) {
        request = request.timeout(Duration::from_millis(300));
    }
    let sending = tokio::spawn(async move { request.send().await.map(|_| ()) });
    within("the server to see the first piece", sent)
        .await
        .unwrap();
    match cut {
        Cut::Dropped => {
            sending.abort();
            assert!(within("the abort", sending)
                .await
                .unwrap_err()
                .is_cancelled());
        }
        Cut::TimedOut => {
            let e = within("the timeout", sending).await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Timeout, "{e:?}");
        }
    }
    // The body's sender outlives the cut: the body never ended.
    drop(tx);
}

/// HTTP/1.1, chunked and with a declared length: the server reads to the
/// connection's close and must not find the body's end in what came.
#[tokio::test]
async fn a_cut_http1_upload_never_reaches_its_end() {
    for length in [None, Some(1_000)] {
        for cut in CUTS {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/", listener.local_addr().unwrap());
            let (sent_tx, sent_rx) = oneshot::channel();
            let server = tokio::spawn(async move {
                let (mut io, _) = within("a connection", listener.accept()).await.unwrap();
                let mut seen = Vec::new();
                let mut sent_tx = Some(sent_tx);
                let mut continued = false;
                let mut chunk = [0u8; 4096];
                loop {
                    let n = within("the client's bytes or its close", io.read(&mut chunk))
                        .await
                        .unwrap_or(0);
                    if n == 0 {
                        return seen;
                    }
                    seen.extend_from_slice(&chunk[..n]);
                    // A streamed body waits for the server's go-ahead.
                    if !continued && seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        io.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                            .await
                            .unwrap();
                        continued = true;
                    }
                    if seen.windows(12).any(|w| w == b"first piece;") {
                        if let Some(tx) = sent_tx.take() {
                            tx.send(()).unwrap();
                        }
                    }
                }
            });
            let client = Client::builder().http1_only().build().unwrap();
            cut_upload(&client, &url, length, cut, sent_rx).await;
            let seen = within("the server", server).await.unwrap();
            let text = String::from_utf8_lossy(&seen);
            let head_end = text.find("\r\n\r\n").expect("a request head") + 4;
            let body = &seen[head_end..];
            match length {
                // No last chunk: the server cannot take it for a whole body.
                None => assert!(!body.ends_with(b"0\r\n\r\n"), "{cut:?}: {text}"),
                Some(n) => assert!((body.len() as u64) < n, "{cut:?}: {text}"),
            }
        }
    }
}

/// HTTP/2: the stream is reset with CANCEL, and no DATA of it carries
/// END_STREAM; the connection serves on.
#[tokio::test]
async fn a_cut_http2_upload_is_reset_never_ended() {
    for cut in CUTS {
        let (sent_tx, sent_rx) = oneshot::channel();
        let (url, server) = serve_one(move |mut peer| async move {
            let s = peer.expect_request().await;
            let mut sent_tx = Some(sent_tx);
            let rst = loop {
                let f = peer.next().await.expect("the client closed the connection");
                if f.stream != s {
                    continue;
                }
                match f.ty {
                    DATA => {
                        assert!(!f.has(END_STREAM), "the cut body was ended: {f:?}");
                        if let Some(tx) = sent_tx.take() {
                            tx.send(()).unwrap();
                        }
                    }
                    RST_STREAM => break f,
                    _ => {}
                }
            };
            assert_eq!(rst.u32_at(0), CANCEL, "RST_STREAM error code: {rst:?}");
            let next = peer.expect_request().await;
            peer.respond(next, b"after").await;
            peer.drain().await;
        })
        .await;
        let client = h2c().build().unwrap();
        cut_upload(&client, &url, None, cut, sent_rx).await;
        assert_eq!(fetch(&client, &url).await.unwrap(), "after", "{cut:?}");
        drop(client);
        within("the server", server).await.unwrap();
    }
}
