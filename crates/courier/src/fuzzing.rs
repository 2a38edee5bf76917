//! Entry points for the fuzz targets in `fuzz/`: the code of ours that reads
//! bytes from the network or strings from the user. Not part of the public API.

use std::sync::{Arc, OnceLock};

use http::Uri;

use crate::pool::sniff::{FrameWatch, Signals};

/// Feeds `data` to the HTTP/2 frame watcher in pieces cut at `cuts`, and
/// returns what it concluded: (settings received, GOAWAY received, max streams).
/// The answer must not depend on where the pieces were cut.
pub fn watch_frames(data: &[u8], cuts: &[usize]) -> (bool, bool, usize) {
    let signals = Arc::new(Signals::new(100));
    let mut watch = FrameWatch::new((), Arc::clone(&signals));
    let mut start = 0;
    for &cut in cuts {
        let end = cut.clamp(start, data.len());
        watch.observe(&data[start..end]);
        start = end;
    }
    watch.observe(&data[start..]);
    (
        signals.settings_received(),
        signals.goaway_received(),
        signals.max_streams(),
    )
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

/// Answers one GET with `data` verbatim (then closes) over an in-memory
/// HTTP/1.1 connection, and reads the response as a caller would.
pub async fn respond_with(data: &[u8]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let client = crate::Client::builder()
        .timeout(std::time::Duration::from_secs(1))
        .max_response_body_size(Some(1 << 20))
        .build()
        .expect("valid configuration");
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
    origin.adopt_http1(near);
    if let Ok(res) = client.get(&uri).send().await {
        let _ = res.bytes().await;
    }
    let m = client.metrics();
    assert_eq!(m.requests_active, 0);
    assert_eq!(m.requests_queued, 0);
}
