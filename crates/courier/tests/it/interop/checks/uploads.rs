//! Request bodies: buffered and streamed uploads echoed, chunked coding,
//! `Expect: 100-continue`.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use courier::Body;
use http::header::TRANSFER_ENCODING;
use tokio::sync::mpsc;

use super::super::fixtures::pattern;
use super::super::target::{Proto, Target, EXPECT_FROM};
use super::super::tolerance::Tolerance;
use super::{ensure, na, ok, CheckResult, Failure};

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

/// Sends an upload and checks the echo. `expect`: the request goes with
/// `Expect: 100-continue` (see [`sends_expect`]). A timeout of such an
/// upload through a server known to stall them is marked for
/// [`Tolerance::UploadStall`] (see [`stalled`]); `sized`: the body's length
/// is known (so it goes with `content-length`): an empty echo of one that
/// is not, from a server known to drop such HTTP/3 uploads, is marked for
/// [`Tolerance::H3StreamedUploadDropped`]; nothing else is.
async fn upload(
    t: &Target,
    request: courier::ServiceRequestBuilder,
    sent: &[u8],
    expect: bool,
    sized: bool,
) -> CheckResult {
    let res = request
        .send()
        .await
        .map_err(|e| stalled(t, expect, "no response head", e))?;
    ensure(res.status() == 200, || format!("status {}", res.status()))?;
    ensure(res.version() == t.proto.version(), || {
        format!("version {:?}", res.version())
    })?;
    let body = res
        .bytes()
        .await
        .map_err(|e| stalled(t, expect, "the head came, the echo stalled", e))?;
    if let Some(why) = t.caps.h3_streamed_upload_dropped {
        if body.is_empty() && !sent.is_empty() && !sized {
            return Err(Failure {
                kind: "mismatch".into(),
                detail: format!("echoed 0 bytes of {} ({why})", sent.len()),
                absorbed: Some(Tolerance::H3StreamedUploadDropped),
            });
        }
    }
    ensure(body.len() == sent.len(), || {
        format!("echoed {} bytes of {}", body.len(), sent.len())
    })?;
    ensure(body[..] == sent[..], || "echoed bytes differ".into())?;
    ok()
}

/// Whether courier sends an upload with `Expect: 100-continue`: over
/// HTTP/1.1 only, when the caller asks (`explicit`) or the body is streamed
/// (`len` unknown) or longer than [`EXPECT_FROM`], unless the target turned
/// the header off (`Caps::expect_broken`).
pub(super) fn sends_expect(t: &Target, explicit: bool, len: Option<usize>) -> bool {
    let by_size = t.caps.expect_broken.is_none() && len.is_none_or(|n| n as u64 > EXPECT_FROM);
    matches!(t.proto, Proto::H1 | Proto::TlsH1) && (explicit || by_size)
}

/// The failure of an upload: within [`Tolerance::UploadStall`]'s scope (a
/// `timeout`, of an upload sent with `Expect: 100-continue` over HTTP/1.1,
/// through a server whose caps say it stalls them: Caddy's
/// `Caps::upload_stalls`, with its evidence) it is marked for the
/// tolerance, which counts and bounds it; anything else fails.
pub(super) fn stalled(t: &Target, expect: bool, phase: &str, err: courier::Error) -> Failure {
    match t.caps.upload_stalls {
        Some(why) if expect && err.kind() == courier::ErrorKind::Timeout => Failure {
            kind: err.kind().as_str().to_owned(),
            detail: format!("{phase}: {err} ({why})"),
            absorbed: Some(Tolerance::UploadStall),
        },
        _ => Failure::from(err),
    }
}

/// POST of a buffered body (Content-Length), echoed whole.
pub async fn echo(t: &Target) -> CheckResult {
    let data = pattern(BUFFERED);
    let expect = sends_expect(t, false, Some(data.len()));
    let client = t.client();
    for _ in 0..2 {
        let request = client.post(t.url("/echo")).body(data.clone());
        upload(t, request, &data, expect, true).await?;
    }
    ok()
}

/// PUT of a streamed body (chunked over HTTP/1.1), echoed whole while the
/// upload is still going.
pub async fn echo_stream(t: &Target) -> CheckResult {
    let data = pattern(STREAMED);
    let request = t.client().put(t.url("/echo")).body(streamed(data.clone()));
    upload(t, request, &data, sends_expect(t, false, None), false).await
}

/// HTTP/1.1 chunked coding both ways: a streamed upload and a response the
/// server sends chunked (a compressed or a streamed echo response).
pub async fn chunked(t: &Target) -> CheckResult {
    if t.proto.is_multiplexed() {
        // A body is framed by DATA frames and the stream's end.
        return na(format!("{:?} has no chunked coding", t.proto.version()));
    }
    let client = t.client();
    let is_chunked = |res: &courier::Response| {
        res.headers()
            .get(TRANSFER_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"))
    };
    let data = pattern(STREAMED / 4);
    let expect = sends_expect(t, false, None);
    let res = client
        .post(t.url("/echo"))
        .body(streamed(data.clone()))
        .send()
        .await
        .map_err(|e| stalled(t, expect, "no response head", e))?;
    let seen = is_chunked(&res);
    ensure(res.status() == 200, || format!("status {}", res.status()))?;
    ensure(res.version() == t.proto.version(), || {
        format!("version {:?}", res.version())
    })?;
    let body = res
        .bytes()
        .await
        .map_err(|e| stalled(t, expect, "the head came, the echo stalled", e))?;
    ensure(body[..] == data[..], || {
        format!(
            "echoed {} bytes of {}, or they differ",
            body.len(),
            data.len()
        )
    })?;
    let res = client
        .get(t.url(t.caps.gzip_path))
        .header("accept-encoding", "gzip")
        .send()
        .await?;
    let seen = seen || is_chunked(&res);
    res.bytes().await?;
    if !seen {
        return na("the server sent no chunked response (the upload was chunked)");
    }
    ok()
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
    let expect = sends_expect(t, true, Some(data.len()));
    let client = t.client();
    for _ in 0..2 {
        let request = client
            .post(t.url("/echo"))
            .header("expect", "100-continue")
            .body(data.clone());
        upload(t, request, &data, expect, true).await?;
    }
    super::bodies::small_again(t, &client).await
}
