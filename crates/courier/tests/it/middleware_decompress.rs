//! Decompression: the four codecs, streaming, the size limit, pass-through
//! cases; each through `DecompressionLayer` and through a plain `Client`,
//! which decodes with the same code by default.

use crate::support::compress;
use crate::support::middleware::{reply, scripted, with_header};
use bytes::Bytes;
use courier::middleware::{DecompressionConfig, Stack};
use courier::{Client, ErrorKind};

/// Text that compresses well but is not trivial.
fn sample(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| b"the quick brown fox jumps over the lazy dog "[i % 44])
        .collect()
}

/// Serves `/{encoding}/{len}` compressed with that encoding; `/plain` as is.
async fn compressing_server() -> crate::support::middleware::Scripted {
    scripted(|req| async move {
        let mut parts = req.uri.path().trim_start_matches('/').split('/');
        let encoding = parts.next().unwrap().to_owned();
        let len: usize = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        if encoding == "plain" {
            return reply(200, sample(len));
        }
        if encoding == "corrupt" {
            return with_header(
                reply(200, &b"\x1f\x8b\x08\x00garbage"[..]),
                "content-encoding",
                "gzip",
            );
        }
        let body = compress(&encoding, &sample(len)).await;
        let name = if encoding == "raw-deflate" {
            "deflate"
        } else {
            encoding.as_str()
        };
        with_header(reply(200, body), "content-encoding", name)
    })
    .await
}

/// Who decodes: the layer, or the client under an empty stack (a plain
/// `Client`'s own decoding; `ServiceClient` only to share the tests).
#[derive(Debug, Clone, Copy)]
enum By {
    Layer,
    Client,
}

const BOTH: [By; 2] = [By::Layer, By::Client];

fn decompressing_with(by: By, config: DecompressionConfig) -> courier::ServiceClient {
    match by {
        By::Layer => Stack::new().decompression(config).client(Client::new()),
        By::Client => Stack::new().client(Client::builder().decompression(config).build().unwrap()),
    }
}

fn decompressing(by: By, max: Option<u64>) -> courier::ServiceClient {
    decompressing_with(by, DecompressionConfig::default().max_size(max))
}

#[tokio::test]
async fn every_codec_is_decoded() {
    for by in BOTH {
        every_codec_is_decoded_by(by).await;
    }
}

async fn every_codec_is_decoded_by(by: By) {
    let srv = compressing_server().await;
    let client = decompressing(by, Some(10 << 20));
    for encoding in ["gzip", "deflate", "raw-deflate", "br", "zstd"] {
        let res = client
            .get(srv.url(&format!("/{encoding}/100000")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert!(
            res.headers().get("content-encoding").is_none(),
            "{encoding}"
        );
        assert!(res.headers().get("content-length").is_none(), "{encoding}");
        let body = res.bytes().await.unwrap();
        assert_eq!(body.len(), 100_000, "{encoding}");
        assert_eq!(body, Bytes::from(sample(100_000)), "{encoding}");
    }
    let asked = srv.seen()[0].header("accept-encoding").unwrap().to_owned();
    assert_eq!(asked, "gzip, deflate, br, zstd");
    // Every decoded body was read to its end: one connection throughout.
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn bodies_stream_in_pieces() {
    for by in BOTH {
        bodies_stream_in_pieces_by(by).await;
    }
}

async fn bodies_stream_in_pieces_by(by: By) {
    let srv = compressing_server().await;
    let client = decompressing(by, None);
    let mut res = client.get(srv.url("/gzip/1000000")).send().await.unwrap();
    let mut chunks = 0;
    let mut total = 0;
    while let Some(chunk) = res.chunk().await.unwrap() {
        chunks += 1;
        total += chunk.len();
    }
    assert_eq!(total, 1_000_000);
    assert!(
        chunks > 10,
        "decoded incrementally, not in one piece: {chunks}"
    );
}

#[tokio::test]
async fn a_decompression_bomb_stops_at_the_limit() {
    for by in BOTH {
        a_decompression_bomb_stops_at_the_limit_by(by).await;
    }
}

async fn a_decompression_bomb_stops_at_the_limit_by(by: By) {
    // 64 MiB of zeros is a ~64 KiB gzip body.
    let bomb = compress("gzip", &vec![0u8; 64 << 20]).await;
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let bomb = Bytes::from(bomb);
    let srv = scripted(move |_| {
        let bomb = bomb.clone();
        async move { with_header(reply(200, bomb), "content-encoding", "gzip") }
    })
    .await;
    let limit = 1 << 20;
    let client = decompressing(by, Some(limit));

    let err = client
        .get(srv.url("/"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BodyTooLarge);
    let message = format!("{err:#}");
    assert!(
        message.contains("decompressed body exceeds the limit of 1048576 bytes"),
        "{message}"
    );

    // Streaming stops at the limit too, having produced little more than it.
    let mut res = client.get(srv.url("/")).send().await.unwrap();
    let mut total = 0u64;
    let err = loop {
        match res.chunk().await {
            Ok(Some(c)) => total += c.len() as u64,
            Ok(None) => panic!("the bomb was fully decoded"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), ErrorKind::BodyTooLarge);
    assert!(total <= limit, "{total}");
}

#[tokio::test]
async fn corrupt_data_is_a_decompression_error() {
    for by in BOTH {
        corrupt_data_is_a_decompression_error_by(by).await;
    }
}

async fn corrupt_data_is_a_decompression_error_by(by: By) {
    let srv = compressing_server().await;
    let err = decompressing(by, None)
        .get(srv.url("/corrupt"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decompression, "{err}");
}

#[tokio::test]
async fn pass_through_cases() {
    for by in BOTH {
        pass_through_cases_by(by).await;
    }
}

async fn pass_through_cases_by(by: By) {
    let srv = compressing_server().await;
    let client = decompressing(by, None);

    // Not compressed.
    let res = client.get(srv.url("/plain/10")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap(), Bytes::from(sample(10)));

    // The caller asked for an encoding itself: the body is left as sent.
    let res = client
        .get(srv.url("/gzip/1000"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let raw = res.bytes().await.unwrap();
    assert_eq!(&raw[..2], b"\x1f\x8b");

    // A codec turned off is neither asked for nor decoded.
    let no_zstd = decompressing_with(by, DecompressionConfig::default().zstd(false));
    let res = no_zstd.get(srv.url("/zstd/100")).send().await.unwrap();
    assert_eq!(res.headers()["content-encoding"], "zstd");
    assert_eq!(
        srv.seen().last().unwrap().header("accept-encoding"),
        Some("gzip, deflate, br")
    );
}

/// Serves `/{case}`: `sample(1000)` under the `Content-Encoding` field lines
/// the case names, encoded accordingly.
async fn encodings_server() -> crate::support::middleware::Scripted {
    scripted(|req| async move {
        let gz = compress("gzip", &sample(1000)).await;
        let (lines, body): (&[&str], Vec<u8>) = match req.uri.path() {
            "/two-lines" => (&["gzip", "gzip"], compress("gzip", &gz).await),
            "/identity-then-gzip" => (&["identity", "gzip"], gz),
            "/gzip-then-unknown" => (&["gzip", "x-unknown"], gz),
            "/unknown" => (&["x-unknown"], gz),
            "/case-and-blanks" => (&[" , GZip ,, ", ""], gz),
            "/too-many" => (&["gzip, gzip", "gzip"], gz),
            "/empty" => (&["gzip"], Vec::new()),
            "/trailing-garbage" => (&["gzip"], [&gz[..], b"garbage!"].concat()),
            "/trailing-zeros" => (&["gzip"], [&gz[..], &[0u8; 16][..]].concat()),
            other => panic!("{other}"),
        };
        let mut res = reply(200, body);
        for line in lines {
            res.headers_mut()
                .append("content-encoding", line.parse().unwrap());
        }
        res
    })
    .await
}

fn encodings(res: &courier::Response) -> Vec<String> {
    res.headers()
        .get_all("content-encoding")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// RFC 9110 §8.4: the field lines of `Content-Encoding` are one list, in the
/// order applied. Exactly one known coding (identity and empty elements
/// aside) is decoded, and `Content-Encoding` and `Content-Length` go; any
/// other list (stacked codings, an unknown one) leaves the body and every
/// header as sent.
#[tokio::test]
async fn content_encoding_field_lines_are_one_list() {
    for by in BOTH {
        content_encoding_field_lines_are_one_list_by(by).await;
    }
}

async fn content_encoding_field_lines_are_one_list_by(by: By) {
    let srv = encodings_server().await;
    let client = decompressing(by, None);
    let gz = compress("gzip", &sample(1000)).await;
    for (path, decoded) in [
        ("/identity-then-gzip", true),
        ("/case-and-blanks", true),
        ("/two-lines", false),
        ("/gzip-then-unknown", false),
        ("/unknown", false),
        ("/too-many", false),
    ] {
        let res = client.get(srv.url(path)).send().await.unwrap();
        let sent = res.headers().get("content-length").cloned();
        let lines = encodings(&res);
        let body = res.bytes().await.unwrap();
        if decoded {
            assert_eq!(lines, Vec::<String>::new(), "{path}");
            assert_eq!(sent, None, "{path}: Content-Length of the encoded body");
            assert_eq!(body, Bytes::from(sample(1000)), "{path}");
        } else {
            assert!(!lines.is_empty(), "{path}: Content-Encoding removed");
            assert_eq!(
                sent.map(|v| v.to_str().unwrap().parse::<usize>().unwrap()),
                Some(body.len()),
                "{path}"
            );
            if path == "/two-lines" {
                assert_eq!(lines, ["gzip", "gzip"]);
                assert_eq!(body, Bytes::from(compress("gzip", &gz).await), "{path}");
            } else {
                assert_eq!(body, Bytes::from(gz.clone()), "{path}");
            }
        }
    }
}

/// An empty body under `Content-Encoding: gzip` is an empty body (as curl
/// and Go read it), not "unexpected end of file"; bytes after the gzip
/// stream are a decode error, as Go's reader makes them (no silent
/// truncation of what the server meant).
#[tokio::test]
async fn empty_bodies_decode_to_nothing_and_trailing_bytes_are_errors() {
    for by in BOTH {
        empty_bodies_decode_to_nothing_and_trailing_bytes_are_errors_by(by).await;
    }
}

async fn empty_bodies_decode_to_nothing_and_trailing_bytes_are_errors_by(by: By) {
    let srv = encodings_server().await;
    let client = decompressing(by, None);
    let res = client.get(srv.url("/empty")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(encodings(&res), Vec::<String>::new());
    assert_eq!(res.bytes().await.unwrap(), Bytes::new());
    for path in ["/trailing-garbage", "/trailing-zeros"] {
        let res = client.get(srv.url(path)).send().await.unwrap();
        let err = res.bytes().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decompression, "{path}: {err}");
    }
}

/// Issue 28: `Client::new()` decodes; reqwest's toggles turn a codec off
/// (neither asked for nor decoded); a range is not asked for encoded.
#[tokio::test]
async fn a_plain_client_decodes_by_default_with_reqwest_toggles() {
    let srv = compressing_server().await;
    let res = Client::new()
        .get(srv.url("/gzip/5000"))
        .send()
        .await
        .unwrap();
    assert!(res.headers().get("content-encoding").is_none());
    assert_eq!(res.bytes().await.unwrap(), Bytes::from(sample(5000)));
    assert_eq!(
        srv.seen().last().unwrap().header("accept-encoding"),
        Some("gzip, deflate, br, zstd")
    );

    let client = Client::builder().no_gzip().brotli(false).build().unwrap();
    let res = client.get(srv.url("/gzip/100")).send().await.unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert_eq!(
        srv.seen().last().unwrap().header("accept-encoding"),
        Some("deflate, zstd")
    );
    let none = Client::builder()
        .no_gzip()
        .no_deflate()
        .no_brotli()
        .no_zstd()
        .build()
        .unwrap();
    let res = none.get(srv.url("/plain/10")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap(), Bytes::from(sample(10)));
    assert_eq!(srv.seen().last().unwrap().header("accept-encoding"), None);

    // A range of bytes is not asked for as a range of gzip.
    let res = Client::new()
        .get(srv.url("/plain/10"))
        .header("range", "bytes=0-4")
        .send()
        .await
        .unwrap();
    drop(res);
    assert_eq!(srv.seen().last().unwrap().header("accept-encoding"), None);

    // Default headers that name their own encoding stand, undecoded.
    let mut defaults = courier::http::HeaderMap::new();
    defaults.insert("accept-encoding", "gzip".parse().unwrap());
    let own = Client::builder().default_headers(defaults).build().unwrap();
    let res = own.get(srv.url("/gzip/100")).send().await.unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
}

/// A decompression layer over a client that decodes: the layer's
/// `Accept-Encoding` goes out, and the body is decoded once, by the layer.
#[tokio::test]
async fn a_decompression_layer_over_a_client_decodes_once() {
    let srv = compressing_server().await;
    let client = Stack::new()
        .decompression(DecompressionConfig::default().zstd(false).brotli(false))
        .client(Client::new());
    let res = client.get(srv.url("/gzip/5000")).send().await.unwrap();
    assert!(res.headers().get("content-encoding").is_none());
    assert_eq!(res.bytes().await.unwrap(), Bytes::from(sample(5000)));
    assert_eq!(
        srv.seen().last().unwrap().header("accept-encoding"),
        Some("gzip, deflate")
    );
}
