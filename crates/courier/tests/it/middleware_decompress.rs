//! Decompression: the four codecs, streaming, the size limit, pass-through cases.

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

fn decompressing(max: Option<u64>) -> courier::ServiceClient {
    Stack::new()
        .decompression(DecompressionConfig::default().max_size(max))
        .client(Client::new())
}

#[tokio::test]
async fn every_codec_is_decoded() {
    let srv = compressing_server().await;
    let client = decompressing(Some(10 << 20));
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
    let srv = compressing_server().await;
    let client = decompressing(None);
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
    let client = decompressing(Some(limit));

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
    let srv = compressing_server().await;
    let err = decompressing(None)
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
    let srv = compressing_server().await;
    let client = decompressing(None);

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
    let no_zstd = Stack::new()
        .decompression(DecompressionConfig::default().zstd(false))
        .client(Client::new());
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
    let srv = encodings_server().await;
    let client = decompressing(None);
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
    let srv = encodings_server().await;
    let client = decompressing(None);
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
