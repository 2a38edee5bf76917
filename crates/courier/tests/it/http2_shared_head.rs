//! HTTP/2 shares the header map of a head the server repeats
//! (`proto/h2/head.rs`: from the third same block on, every response holds
//! the connection's kept map, not a copy). A shared head must read and
//! change as an owned one: a caller that changes one response's headers or
//! extensions changes its own, never the next response's, and decompression
//! (which removes `Content-Encoding` and `Content-Length`) leaves the kept
//! map as the server sent it.

use courier::Response;

use crate::support::h2::*;

/// The head of every response: literals that are not indexed, so that
/// each block decodes the same way and is replayed from the third on.
fn head(stream: u32, content_length: usize) -> Vec<u8> {
    let mut block = vec![STATUS_200];
    block.extend(field("x-a", b"1"));
    block.extend(field("content-encoding", b"gzip"));
    block.extend(field(
        "content-length",
        content_length.to_string().as_bytes(),
    ));
    frame(HEADERS, END_HEADERS, stream, &block)
}

/// A mark a caller puts in one response's extensions.
#[derive(Clone)]
struct Mine;

/// Changes `res`'s headers and extensions as a caller may, checks it sees
/// its changes, and hands back the response rebuilt from `into_http`.
fn change(mut res: Response, i: usize) -> Response {
    assert!(res.headers().get("x-mine").is_none(), "response {i}");
    assert!(res.extensions().get::<Mine>().is_none(), "response {i}");
    res.headers_mut()
        .insert("x-mine", http::HeaderValue::from_static("changed"));
    res.headers_mut().remove("x-a");
    res.extensions_mut().insert(Mine);
    assert_eq!(res.headers().get("x-mine").unwrap(), "changed");
    assert!(res.headers().get("x-a").is_none());
    let http = res.into_http();
    assert_eq!(http.headers().get("x-mine").unwrap(), "changed");
    assert!(http.headers().get("x-a").is_none());
    Response::from_http(http)
}

#[tokio::test]
async fn a_changed_header_stays_with_its_response_when_the_head_repeats() {
    let gzipped = crate::support::compress("gzip", b"ok").await;
    let body = gzipped.clone();
    let (url, server) = serve_one(move |mut peer| async move {
        while let Some(stream) = peer.next_request().await {
            let mut out = head(stream, body.len());
            out.extend(frame(DATA, END_STREAM, stream, &body));
            if !peer.try_send(&out).await {
                break;
            }
        }
    })
    .await;
    let client = h2c().build().unwrap();
    for i in 0..6 {
        // Decoded by the client: the encoding's headers go from this
        // response alone.
        let res = within("a decoded response", client.get(&url).send())
            .await
            .unwrap();
        assert_eq!(res.headers().get("x-a").unwrap(), "1", "response {i}");
        assert!(res.headers().get("content-encoding").is_none(), "{i}");
        assert!(res.headers().get("content-length").is_none(), "{i}");
        let res = change(res, i);
        assert_eq!(&res.bytes().await.unwrap()[..], b"ok", "response {i}");
        // The caller asks for the encoding itself: the head as it was sent.
        let res = within(
            "an encoded response",
            client.get(&url).header("accept-encoding", "gzip").send(),
        )
        .await
        .unwrap();
        assert_eq!(res.headers().get("x-a").unwrap(), "1", "response {i}");
        assert_eq!(res.headers().get("content-encoding").unwrap(), "gzip");
        let length = gzipped.len().to_string();
        assert_eq!(res.headers().get("content-length").unwrap(), &length[..]);
        let res = change(res, i);
        assert_eq!(res.bytes().await.unwrap(), gzipped, "response {i}");
    }
    assert_eq!(client.metrics().connections_established, 1);
    drop(client);
    within("the server script to end", server).await.unwrap();
}
