//! Request bodies: buffered and streamed uploads echoed, chunked coding,
//! `Expect: 100-continue`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use courier::Body;
use http::header::TRANSFER_ENCODING;
use tokio::sync::mpsc;

use super::super::fixtures::pattern;
use super::super::target::Target;
use super::{ensure, na, ok, CheckResult};

const BUFFERED: usize = 256 * 1024;
const STREAMED: usize = 1024 * 1024;
const PIECE: usize = 16 * 1024;

/// A streamed upload: pieces arrive from a producer task, so the body's
/// length is unknown and its end comes when the producer says so.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|piece| piece.map(|p| Ok(http_body::Frame::data(p))))
    }
}

/// `data` as a streamed body, produced in `PIECE`s by a task of its own at
/// most one a millisecond (16 MB/s, a disk or a network source): a server
/// that answers as it reads (an echo behind a proxy) answers before the
/// upload ends, which is what this is meant to exercise (Go's net/http,
/// Caddy 2.6.2, discards up to 256 KiB of a body its handler answered
/// before reading; see `tests/http1_half_duplex.rs`).
fn streamed(data: Vec<u8>) -> Body {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        let data = Bytes::from(data);
        let mut pace = tokio::time::interval(Duration::from_millis(1));
        for start in (0..data.len()).step_by(PIECE) {
            pace.tick().await;
            let end = (start + PIECE).min(data.len());
            if tx.send(data.slice(start..end)).await.is_err() {
                return;
            }
        }
    });
    Body::wrap(ChannelBody(rx))
}

async fn echoed(t: &Target, res: courier::Response, sent: &[u8]) -> CheckResult {
    ensure(res.status() == 200, || format!("status {}", res.status()))?;
    ensure(res.version() == t.proto.version(), || {
        format!("version {:?}", res.version())
    })?;
    let body = res.bytes().await?;
    ensure(body.len() == sent.len(), || {
        format!("echoed {} bytes of {}", body.len(), sent.len())
    })?;
    ensure(body[..] == sent[..], || "echoed bytes differ".into())?;
    ok()
}

/// POST of a buffered body (Content-Length), echoed whole.
pub async fn echo(t: &Target) -> CheckResult {
    let data = pattern(BUFFERED);
    let client = t.client();
    for _ in 0..2 {
        let res = client
            .post(t.url("/echo"))
            .body(data.clone())
            .send()
            .await?;
        echoed(t, res, &data).await?;
    }
    ok()
}

/// PUT of a streamed body (chunked over HTTP/1.1), echoed whole while the
/// upload is still going.
pub async fn echo_stream(t: &Target) -> CheckResult {
    let data = pattern(STREAMED);
    let res = t
        .client()
        .put(t.url("/echo"))
        .body(streamed(data.clone()))
        .send()
        .await?;
    echoed(t, res, &data).await
}

/// HTTP/1.1 chunked coding both ways: a streamed upload and a response the
/// server sends chunked (a compressed or a streamed echo response).
pub async fn chunked(t: &Target) -> CheckResult {
    if t.proto.is_h2() {
        return na("HTTP/2 has no chunked coding");
    }
    let client = t.client();
    let is_chunked = |res: &courier::Response| {
        res.headers()
            .get(TRANSFER_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"))
    };
    let data = pattern(STREAMED / 4);
    let res = client
        .post(t.url("/echo"))
        .body(streamed(data.clone()))
        .send()
        .await?;
    let mut seen = is_chunked(&res);
    echoed(t, res, &data).await?;
    let res = client
        .get(t.url(t.caps.gzip_path))
        .header("accept-encoding", "gzip")
        .send()
        .await?;
    seen |= is_chunked(&res);
    res.bytes().await?;
    if !seen {
        return na("the server sent no chunked response (the upload was chunked)");
    }
    ok()
}

/// An upload check's result, where a timeout through a server known to stall
/// such uploads whatever the client does (`Caps::upload_stalls`) is n/a
/// with the evidence: the server's race, not courier's.
pub async fn unless_stalled(t: &Target, check: impl Future<Output = CheckResult>) -> CheckResult {
    match (check.await, t.caps.upload_stalls) {
        (Err(f), Some(why)) if f.kind == "timeout" => na(format!("stalled ({}): {why}", f.detail)),
        (result, _) => result,
    }
}

/// `Expect: 100-continue` on an upload: the server's 100 (or its direct
/// answer) is handled and the body echoed. courier does not wait for the
/// 100 before sending the body (RFC 9110 allows it), so this checks how it
/// reads the interim response, not that it waits. n/a where the server
/// itself does not serve such a request reliably, whatever the client
/// does (`Caps::expect_broken`, with the evidence where it is set): a
/// check that passes or fails on the server's race would make the suite
/// non-deterministic and say nothing about courier.
pub async fn expect_continue(t: &Target) -> CheckResult {
    if let Some(why) = t.caps.expect_broken {
        return na(why);
    }
    let data = pattern(64 * 1024);
    let client = t.client();
    for _ in 0..2 {
        let res = client
            .post(t.url("/echo"))
            .header("expect", "100-continue")
            .body(data.clone())
            .send()
            .await?;
        echoed(t, res, &data).await?;
    }
    super::bodies::small_again(t, &client).await
}
