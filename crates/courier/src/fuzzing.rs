//! Entry points for the fuzz targets in `fuzz/`: the code of ours that reads
//! bytes from the network or strings from the user. Not part of the public API.

use std::sync::{Arc, OnceLock};

use http::Uri;

mod differential;
#[cfg(feature = "http3")]
mod h3;
#[cfg(feature = "http3")]
mod heads;
#[cfg(feature = "http3")]
mod requests;

pub use differential::{http1_read_one, http1_two_requests, Http1Answer, Http1Outcome, Http1Read};
#[cfg(feature = "http3")]
pub use h3::{alt_svc, h3_frames};
#[cfg(feature = "http3")]
pub use heads::heads_differential;
#[cfg(feature = "http3")]
pub use requests::request_heads_differential;

/// Answers one GET with `data` verbatim, written in pieces cut at `cuts`,
/// over an in-memory HTTP/2 connection, and reads the response as a caller
/// would. Whatever the bytes, the request must end with a response or an
/// error, within its timeout, without a panic.
pub async fn http2_respond_with(data: &[u8], cuts: &[usize]) {
    use std::future::poll_fn;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::proto::h2::conn::Local;
    use crate::proto::h2::driver;
    use crate::proto::h2::request::{send, Target};
    use crate::proto::h2::signals::Signals;

    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let local = Local {
        stream_window: 65_535,
        conn_window: 1 << 20,
        max_header_list: 16 * 1024,
    };
    let (handle, driver) = driver::handshake(
        near,
        local,
        driver::KeepAliveConfig::OFF,
        100,
        Arc::new(Signals::new(100)),
    );
    tokio::spawn(driver);
    let mut pieces = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        let end = cut.clamp(start, data.len());
        pieces.push(data[start..end].to_vec());
        start = end;
    }
    pieces.push(data[start..].to_vec());
    tokio::spawn(async move {
        // The client's preface, SETTINGS and first HEADERS.
        let mut buf = [0u8; 1024];
        if far.read(&mut buf).await.unwrap_or(0) == 0 {
            return;
        }
        for piece in pieces {
            if far.write_all(&piece).await.is_err() {
                return;
            }
        }
        let _ = far.shutdown().await;
        // Keep reading so the client's writes never block.
        while far.read(&mut buf).await.unwrap_or(0) > 0 {}
    });
    let scheme = http::uri::Scheme::HTTP;
    let authority = http::uri::Authority::from_static("fuzz.invalid");
    let defaults = http::HeaderMap::new();
    let target = Target {
        scheme: &scheme,
        authority: &authority,
        defaults: &defaults,
    };
    let request = http::Request::get("http://fuzz.invalid/")
        .body(crate::Body::empty())
        .expect("valid request");
    let exchange = async {
        let mut sending = send(&handle, request, None);
        let answer = poll_fn(|cx| sending.poll_send(cx, &target)).await;
        if let Ok(answer) = answer {
            let mut body = answer.body;
            let mut read = 0usize;
            while let Some(Ok(frame)) = poll_fn(|cx| body.poll_frame(cx)).await {
                read += frame.data_ref().map_or(0, |d| d.len());
                if read > 1 << 20 {
                    break;
                }
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), exchange).await;
}

/// Decodes `blocks` in turn as one connection's HPACK header blocks (the
/// dynamic table carries from one to the next), each into a response head
/// as the connection does. Returns how many decoded; must never panic.
pub fn hpack_blocks(blocks: &[&[u8]]) -> usize {
    let mut decoder = crate::proto::h2::head::BlockDecoder::new(4096, 16 * 1024);
    blocks
        .iter()
        .filter(|block| decoder.decode(block, false).is_ok())
        .count()
}

/// Parses a URL and header as a request would, without sending it; returns
/// whether the request would be accepted.
pub fn build_request(url: &str, name: &str, value: &[u8]) -> bool {
    let client = client();
    let Ok(request) = client.get(url).header(name, value).build() else {
        return false;
    };
    client.pool().origin(request.uri()).is_ok()
}

/// Parses a URL alone into an origin.
pub fn origin_of(url: &str) -> bool {
    match url.parse::<Uri>() {
        Ok(uri) => client().pool().origin(&uri).is_ok(),
        Err(_) => false,
    }
}

/// One client for every input: building one parses the web PKI roots.
fn client() -> &'static crate::Client {
    static CLIENT: OnceLock<crate::Client> = OnceLock::new();
    CLIENT.get_or_init(crate::Client::new)
}

/// A client for one input: one attempt only, and nowhere to dial (a resend
/// would look `fuzz.invalid` up: slow, and outside the input's control).
fn one_attempt_client() -> crate::Client {
    crate::Client::builder()
        .timeout(std::time::Duration::from_secs(1))
        .max_response_body_size(Some(1 << 20))
        .http2_max_refused_retries(0)
        .retry_stale_connections(false)
        .resolve("fuzz.invalid", ([127, 0, 0, 1], 1).into())
        .no_env_proxy()
        .build()
        .expect("valid configuration")
}

/// Answers one GET with `data` verbatim (then closes) over an in-memory
/// HTTP/1.1 connection, and reads the response as a caller would.
pub async fn respond_with(data: &[u8]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let client = one_attempt_client();
    let uri = Uri::from_static("http://fuzz.invalid/");
    let Ok(origin) = client.pool().origin(&uri) else {
        return;
    };
    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let answer = data.to_vec();
    tokio::spawn(async move {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match far.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let _ = far.write_all(&answer).await;
        let _ = far.shutdown().await;
    });
    origin.adopt_exclusive(near);
    if let Ok(res) = client.get(&uri).send().await {
        let _ = res.bytes().await;
    }
    let m = client.metrics();
    assert_eq!(m.requests_active, 0);
    assert_eq!(m.requests_queued, 0);
}

/// Answers one GET with the server's SETTINGS and then `data` verbatim
/// (then closes) over an in-memory HTTP/2 connection the pool adopts, and
/// reads the response through the public API (`send`, then `bytes()`), as
/// [`respond_with`] does for HTTP/1.1. Whatever the bytes: a response or a
/// typed error within the timeout, no panic, and the pool clean after.
/// Returns the body, or the error the request or its body ended with.
pub async fn respond_with_http2(data: &[u8]) -> Result<bytes::Bytes, crate::Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let client = one_attempt_client();
    let uri = Uri::from_static("http://fuzz.invalid/");
    let origin = client.pool().origin(&uri)?;
    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let answer = data.to_vec();
    tokio::spawn(async move {
        // An empty SETTINGS frame, the server's preface.
        if far.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.is_err() {
            return;
        }
        // The client's preface, then frames up to its request's HEADERS:
        // an answer before it would be on a stream not yet open.
        let mut preface = [0u8; 24];
        if far.read_exact(&mut preface).await.is_err() {
            return;
        }
        loop {
            let mut head = [0u8; 9];
            if far.read_exact(&mut head).await.is_err() {
                return;
            }
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let mut payload = vec![0u8; len];
            if far.read_exact(&mut payload).await.is_err() {
                return;
            }
            if head[3] == 0x1 {
                break;
            }
        }
        let mut buf = [0u8; 1024];
        let _ = far.write_all(&answer).await;
        let _ = far.shutdown().await;
        // Keep reading so the client's writes never block.
        while far.read(&mut buf).await.unwrap_or(0) > 0 {}
    });
    origin.adopt_shared(near);
    let outcome = match client.get(&uri).send().await {
        Ok(res) => res.bytes().await,
        Err(e) => Err(e),
    };
    let m = client.metrics();
    assert_eq!(m.requests_active, 0);
    assert_eq!(m.requests_queued, 0);
    outcome
}

#[cfg(test)]
mod tests {
    /// A well-formed answer comes back whole through the adopted connection.
    #[tokio::test]
    async fn an_adopted_http2_connection_serves_a_response() {
        // HEADERS (:status 200, END_HEADERS) then DATA "hello" with END_STREAM, on stream 1.
        let mut data = vec![0, 0, 1, 1, 4, 0, 0, 0, 1, 0x88];
        data.extend_from_slice(&[0, 0, 5, 0, 1, 0, 0, 0, 1]);
        data.extend_from_slice(b"hello");
        let body = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            super::respond_with_http2(&data),
        )
        .await
        .expect("no hang");
        assert_eq!(&body.expect("a response")[..], b"hello");
    }
}
