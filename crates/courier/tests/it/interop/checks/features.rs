//! Protocol features: trailers, 1xx, gzip (decompression middleware) and
//! redirects (redirect middleware).

use courier::middleware::{DecompressionConfig, RedirectConfig, Stack};
use http::header::CONTENT_ENCODING;
use http_body_util::BodyExt;

use super::super::fixtures::{pattern, text};
use super::super::target::{Proto, Target};
use super::{ensure, na, ok, CheckResult};

const TRAILERS_BODY: usize = 64 * 1024;

/// `GET /trailers` with `TE: trailers` (some servers, hypercorn among
/// them, send trailers only to clients that say they accept them): the
/// body, then an `x-checksum` trailer with its sha256.
pub async fn trailers(t: &Target) -> CheckResult {
    if !t.caps.trailers {
        return na("the server sends no trailers");
    }
    if matches!(t.proto, Proto::H1 | Proto::TlsH1) && !t.caps.h1_trailers {
        return na("the server sends trailers over HTTP/2 only");
    }
    let res = t
        .client()
        .get(t.url("/trailers"))
        .header("te", "trailers")
        .send()
        .await?;
    ensure(res.status() == 200, || format!("status {}", res.status()))?;
    if let Some(why) = t.caps.h3_trailers_unended {
        return unended(t, res, why).await;
    }
    let collected = res.into_http().into_body().collect().await?;
    let trailers = collected.trailers().cloned();
    let body = collected.to_bytes();
    let expected = pattern(TRAILERS_BODY);
    ensure(body[..] == expected[..], || {
        format!("body of {} bytes differs", body.len())
    })?;
    let sum = trailers
        .as_ref()
        .and_then(|t| t.get("x-checksum"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let want = sha256_hex(&expected);
    ensure(sum.as_deref() == Some(want.as_str()), || {
        format!("trailer x-checksum {sum:?}, trailers {trailers:?}")
    })?;
    ok()
}

/// The trailers check against a server whose stream never ends after its
/// trailer section (`Caps::h3_trailers_unended`): the body is read under
/// the mode's timeout; trailers and an end pass as anywhere, the whole body
/// byte for byte and then no end (the deadline, or the connection's idle
/// timeout) is marked for [`Tolerance::H3TrailersUnended`], anything else
/// fails.
async fn unended(t: &Target, res: courier::Response, why: &'static str) -> CheckResult {
    let expected = pattern(TRAILERS_BODY);
    let mut body = res.into_http().into_body();
    let mut data = Vec::new();
    let mut trailers = None;
    let end = loop {
        match tokio::time::timeout(t.mode.timeout, body.frame()).await {
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(bytes) => data.extend_from_slice(&bytes),
                Err(frame) => trailers = frame.into_trailers().ok(),
            },
            Ok(None) => break None,
            Ok(Some(Err(e))) => break Some(format!("{e:#}")),
            Err(_) => break Some(format!("no end within {:?}", t.mode.timeout)),
        }
    };
    ensure(data == expected, || {
        format!("body of {} bytes differs", data.len())
    })?;
    match end {
        Some(end) => Err(super::Failure {
            kind: "body".into(),
            detail: format!("the whole body, then {end} ({why})"),
            absorbed: Some(super::super::tolerance::Tolerance::H3TrailersUnended),
        }),
        None => {
            let sum = trailers
                .as_ref()
                .and_then(|t| t.get("x-checksum"))
                .and_then(|v| v.to_str().ok());
            let want = sha256_hex(&expected);
            ensure(sum == Some(want.as_str()), || {
                format!("trailer x-checksum {sum:?}, trailers {trailers:?}")
            })?;
            ok()
        }
    }
}

fn sha256_hex(data: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `GET /early-hints`: a 103 first, then the 200 `ok` is what courier returns.
pub async fn early_hints(t: &Target) -> CheckResult {
    if !t.caps.early_hints {
        return na("the server sends no 103");
    }
    let client = t.client();
    for _ in 0..2 {
        let res = client.get(t.url("/early-hints")).send().await?;
        ensure(res.status() == 200, || format!("status {}", res.status()))?;
        let body = res.text().await?;
        ensure(body == "ok", || format!("body {body:?}"))?;
    }
    ok()
}

/// gzip: the server compresses `text.txt` for a client that accepts gzip,
/// and the decompression middleware gives back the original text.
pub async fn gzip(t: &Target) -> CheckResult {
    let client = t.client();
    let res = client
        .get(t.url(t.caps.gzip_path))
        .header("accept-encoding", "gzip")
        .send()
        .await?;
    let encoding = res.headers().get(CONTENT_ENCODING).cloned();
    res.bytes().await?;
    ensure(encoding.as_ref().is_some_and(|e| e == "gzip"), || {
        format!("content-encoding {encoding:?}")
    })?;
    let decompressing = t.stacked(&Stack::new().decompression(DecompressionConfig::default()));
    let res = decompressing.get(t.url(t.caps.gzip_path)).send().await?;
    ensure(res.status() == 200, || format!("status {}", res.status()))?;
    let body = res.text().await?;
    ensure(body == text(), || {
        format!("{} bytes of text differ", body.len())
    })?;
    ok()
}

/// `/redirect/3` followed to its end by the redirect middleware.
pub async fn redirect(t: &Target) -> CheckResult {
    let following = t.stacked(&Stack::new().redirect(RedirectConfig::default()));
    let res = following.get(t.url("/redirect/3")).send().await?;
    ensure(res.status() == 200, || format!("status {}", res.status()))?;
    let body = res.text().await?;
    ensure(body == t.caps.redirect_done, || format!("body {body:?}"))?;
    ok()
}
