//! HTTP/3: the built-in server driven by h3's client over QUIC on loopback —
//! the regular endpoints, faults, the stream limit, the idle timeout, and the
//! `alt-svc` that advertises it on TCP.

use std::time::{Duration, Instant};

use crate::support::clients::{self, client_config, fetch_h1, fetch_h2, get};
use crate::support::h3client::{self, H3Client};
use crate::support::{bounded, pattern_byte};
use bytes::Bytes;
use courier_server::{start, ServerConfig, ServerHandle, TestPki};
use http::{Method, StatusCode};

/// A TLS server with HTTP/3 on, and the CA its clients must trust.
async fn h3_server(config: ServerConfig) -> (ServerHandle, String) {
    let pki = TestPki::new();
    let server = start(ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        http3: true,
        ..config
    })
    .await
    .expect("start HTTP/3 server");
    (server, pki.ca_pem())
}

async fn h3_client(server: &ServerHandle, ca_pem: &str) -> H3Client {
    let addr = server.http3_addr().expect("HTTP/3 address");
    h3client::connect(addr, ca_pem)
        .await
        .expect("HTTP/3 connect")
}

#[tokio::test]
async fn get_bytes_over_http3() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    assert_eq!(
        server.http3_addr(),
        Some(server.local_addr()),
        "UDP on the TCP listener's address and port number"
    );
    let client = h3_client(&server, &ca).await;
    let n = 300_000;
    let response = client.get(&format!("/bytes/{n}")).await.expect("GET");
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.headers["content-length"], n.to_string().as_str());
    assert_eq!(response.body.len(), n);
    assert!(response
        .body
        .iter()
        .enumerate()
        .all(|(i, b)| *b == pattern_byte(i)));
    // A second request reuses the connection.
    let again = client.get("/bytes/10").await.expect("second GET");
    assert_eq!(again.connection_id(), response.connection_id());
    assert_eq!(server.connections_h3(), 1);
    assert!(
        response.headers.get("alt-svc").is_none(),
        "no alt-svc on HTTP/3 itself"
    );
}

#[tokio::test]
async fn echo_streams_a_large_body_back() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let body: Bytes = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    let response = client
        .request(Method::POST, "/echo", Some(body.clone()))
        .await
        .expect("POST /echo");
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.body, body);
}

#[tokio::test]
async fn delay_answers_after_the_delay() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let started = Instant::now();
    let response = client.get("/delay/150ms").await.expect("GET /delay");
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(&response.body[..], b"ok");
    let status = client.get("/status/418").await.expect("GET /status");
    assert_eq!(status.status, StatusCode::IM_A_TEAPOT);
}

#[tokio::test]
async fn rst_stream_resets_only_the_stream() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let err = client
        .get("/fault/rst-stream")
        .await
        .expect_err("stream reset");
    assert!(
        err.contains("H3_INTERNAL_ERROR") || err.contains("reset"),
        "{err}"
    );
    let after = client
        .get("/bytes/5")
        .await
        .expect("connection still usable");
    assert_eq!(after.body.len(), 5);
}

#[tokio::test]
async fn fault_close_and_reset_end_the_connection() {
    for (path, code) in [("/fault/close", 0x100u32), ("/fault/reset", 0x102)] {
        let (server, ca) = h3_server(ServerConfig::default()).await;
        let client = h3_client(&server, &ca).await;
        client.get(path).await.expect_err("no response");
        let reason = bounded("connection closed", client.conn.closed()).await;
        match reason {
            quinn::ConnectionError::ApplicationClosed(close) => {
                assert_eq!(close.error_code, quinn::VarInt::from_u32(code), "{path}")
            }
            other => panic!("{path}: {other}"),
        }
    }
}

#[tokio::test]
async fn mid_body_faults_truncate_the_response() {
    for path in ["/fault/close-mid-body", "/fault/chunked-mid-body"] {
        let (server, ca) = h3_server(ServerConfig::default()).await;
        let client = h3_client(&server, &ca).await;
        match client.get(path).await {
            Err(_) => {}
            Ok(response) => panic!("{path}: a complete response: {response:?}"),
        }
    }
}

#[tokio::test]
async fn http1_only_faults_answer_400_and_no_answer_hangs() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    for path in ["/fault/garbage", "/fault/malformed-status"] {
        let response = client.get(path).await.expect(path);
        assert_eq!(response.status, StatusCode::BAD_REQUEST, "{path}");
    }
    let hanging = tokio::time::timeout(Duration::from_millis(300), client.get("/fault/no-answer"));
    assert!(hanging.await.is_err(), "no-answer answered");
    assert_eq!(client.get("/bytes/1").await.expect("usable").body.len(), 1);
}

#[tokio::test]
async fn goaway_fault_answers_then_closes() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let response = client.get("/fault/goaway").await.expect("answered");
    assert_eq!(response.status, StatusCode::OK);
    // The server closes after the grace period unless the client does first.
    bounded("connection closed after GOAWAY", client.conn.closed()).await;
    let next = h3_client(&server, &ca).await;
    assert_ne!(
        next.get("/bytes/1")
            .await
            .expect("new connection")
            .connection_id(),
        response.connection_id()
    );
}

/// The limit is QUIC's MAX_STREAMS: the ninth request waits for a stream,
/// so sixteen delays on eight streams take two rounds, and eight take one.
#[tokio::test]
async fn concurrent_streams_up_to_the_limit() {
    let delay = Duration::from_millis(300);
    let (server, ca) = h3_server(ServerConfig {
        max_concurrent_streams: Some(8),
        ..Default::default()
    })
    .await;
    let client = h3_client(&server, &ca).await;
    for (requests, rounds) in [(8u32, 1u32), (16, 2)] {
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..requests {
            let client = client.clone();
            tasks.push(tokio::spawn(async move { client.get("/delay/300").await }));
        }
        for task in tasks {
            let response = task.await.expect("task").expect("GET /delay");
            assert_eq!(response.status, StatusCode::OK);
        }
        let elapsed = started.elapsed();
        assert!(elapsed >= delay * rounds, "{requests}: {elapsed:?}");
        assert!(elapsed < delay * (rounds + 1), "{requests}: {elapsed:?}");
    }
    assert_eq!(server.connections_h3(), 1);
}

/// At the default limit (100), a hundred requests in flight on one
/// connection take one round.
#[tokio::test]
async fn a_hundred_streams_at_the_default_limit() {
    let delay = Duration::from_millis(300);
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.get("/delay/300").await })
        })
        .collect();
    for task in tasks {
        let response = task.await.expect("task").expect("GET /delay");
        assert_eq!(response.status, StatusCode::OK);
    }
    let elapsed = started.elapsed();
    assert!(elapsed >= delay && elapsed < delay * 2, "{elapsed:?}");
    assert_eq!(server.connections_h3(), 1);
    assert_eq!(server.requests_served(), 100);
}

/// "No limit" is HTTP/2's `None`; QUIC needs a number, and 2^32 had the
/// server allocate stream state for ever instead of finishing the handshake.
#[tokio::test]
async fn no_stream_limit_still_serves() {
    let (server, ca) = h3_server(ServerConfig {
        max_concurrent_streams: None,
        ..Default::default()
    })
    .await;
    let client = h3_client(&server, &ca).await;
    assert_eq!(client.get("/bytes/3").await.expect("GET").body.len(), 3);
}

#[tokio::test]
async fn idle_timeout_closes_an_idle_connection() {
    let (server, ca) = h3_server(ServerConfig {
        idle_timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    })
    .await;
    let client = h3_client(&server, &ca).await;
    // A request longer than the timeout is not cut off.
    client.get("/delay/400").await.expect("busy is not idle");
    bounded("idle close", client.conn.closed()).await;
    assert_eq!(server.connections_h3(), 1);
}

#[tokio::test]
async fn shutdown_closes_http3_connections() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    client.get("/bytes/1").await.expect("GET");
    bounded("shutdown", server.shutdown()).await;
    bounded("connection closed", client.conn.closed()).await;
}

#[tokio::test]
async fn tcp_responses_advertise_http3() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let port = server.http3_addr().expect("HTTP/3").port();
    let expected = format!("h3=\":{port}\"; ma=86400");
    for alpn in [b"h2".as_slice(), b"http/1.1"] {
        let tls = clients::tls(
            server.local_addr(),
            &client_config(&ca, &[alpn]),
            "127.0.0.1",
        )
        .await
        .expect("TLS");
        let response = if alpn == b"h2" {
            let (mut sender, _conn) = clients::h2(tls).await;
            fetch_h2(&mut sender, get(&server.url("/bytes/1"))).await
        } else {
            let (mut sender, _conn) = clients::h1(tls).await;
            fetch_h1(&mut sender, get(&server.url("/bytes/1"))).await
        }
        .expect("TCP fetch");
        assert_eq!(response.headers["alt-svc"], expected.as_str());
    }
}

#[tokio::test]
async fn without_http3_no_alt_svc_and_no_udp() {
    let pki = TestPki::new();
    let server = start(ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        ..Default::default()
    })
    .await
    .expect("start");
    assert_eq!(server.http3_addr(), None);
    let tls = clients::tls(
        server.local_addr(),
        &client_config(&pki.ca_pem(), &[b"h2"]),
        "127.0.0.1",
    )
    .await
    .expect("TLS");
    let (mut sender, _conn) = clients::h2(tls).await;
    let response = fetch_h2(&mut sender, get(&server.url("/bytes/1")))
        .await
        .expect("fetch");
    assert!(response.headers.get("alt-svc").is_none());
}

#[tokio::test]
async fn http3_needs_tls() {
    let err = start(ServerConfig {
        http3: true,
        ..Default::default()
    })
    .await
    .expect_err("HTTP/3 without TLS");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

/// A request stream written by hand on the client's QUIC connection: a
/// `POST /echo` HEADERS frame (QPACK, static table and literals), then
/// `frames`, then FIN. Returns the response's DATA payloads, joined.
async fn raw_upload(client: &H3Client, authority: &str, frames: &[u8]) -> Vec<u8> {
    raw_upload_declaring(client, authority, &[], frames)
        .await
        .expect("response")
}

/// [`raw_upload`] with a `content-length` field of each of `lengths`; the
/// response's DATA payloads, or why the response stream failed.
async fn raw_upload_declaring(
    client: &H3Client,
    authority: &str,
    lengths: &[&str],
    frames: &[u8],
) -> Result<Vec<u8>, quinn::ReadToEndError> {
    let mut block = vec![0x00, 0x00, 0xc0 | 20, 0xc0 | 23]; // :method POST, :scheme https
    block.extend_from_slice(&[0x51, 5]); // :path, literal value
    block.extend_from_slice(b"/echo");
    block.extend_from_slice(&[0x50, authority.len() as u8]); // :authority
    block.extend_from_slice(authority.as_bytes());
    for length in lengths {
        block.extend_from_slice(&[0x54, length.len() as u8]); // content-length
        block.extend_from_slice(length.as_bytes());
    }
    let mut request = vec![0x01, block.len() as u8];
    request.extend(block);
    request.extend_from_slice(frames);
    let (mut send, mut recv) = bounded("open", client.conn.open_bi())
        .await
        .expect("stream");
    bounded("write", send.write_all(&request))
        .await
        .expect("write");
    send.finish().expect("finish");
    let response = bounded("response", recv.read_to_end(1 << 20)).await?;
    // Frames: type and length as QUIC varints (RFC 9000 §16).
    fn varint(bytes: &[u8], at: &mut usize) -> u64 {
        let len = 1 << (bytes[*at] >> 6);
        let mut value = u64::from(bytes[*at] & 0x3f);
        for b in &bytes[*at + 1..*at + len] {
            value = (value << 8) | u64::from(*b);
        }
        *at += len;
        value
    }
    let (mut at, mut data) = (0, Vec::new());
    while at < response.len() {
        let kind = varint(&response, &mut at);
        let len = varint(&response, &mut at) as usize;
        if kind == 0x00 {
            data.extend_from_slice(&response[at..at + len]);
        }
        at += len;
    }
    Ok(data)
}

/// An upload whose body does not match its content-length is malformed
/// (RFC 9114 §4.1.2): `/echo` must not answer it as a whole request (it
/// echoed `hello` for a declared 10, which a proxy in front would have
/// forwarded as a request 5 bytes short). A content-length that is not
/// `1*DIGIT` in every copy, every copy the same, is refused with a 400.
#[tokio::test]
async fn an_upload_that_breaks_its_content_length_is_not_answered_whole() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let authority = server.http3_addr().expect("address").to_string();
    let data = |bytes: &[u8]| [&[0x00, bytes.len() as u8][..], bytes].concat();
    let hello = data(b"hello");
    for (what, lengths) in [("shorter", &["10"][..]), ("longer", &["3"][..])] {
        let echoed = raw_upload_declaring(&client, &authority, lengths, &hello).await;
        assert!(echoed.is_err(), "{what}: answered {echoed:?}");
    }
    for bad in [&["+5"][..], &["5", "6"][..], &["5, 5"][..], &[""][..]] {
        let echoed = raw_upload_declaring(&client, &authority, bad, &hello).await;
        // The 400's body says why; never the upload echoed.
        let echoed = String::from_utf8_lossy(&echoed.expect("a 400")).into_owned();
        assert!(echoed.contains("content-length"), "{bad:?}: {echoed}");
    }
    let exact = raw_upload_declaring(&client, &authority, &["5", "5"], &hello).await;
    assert_eq!(exact.expect("answered"), b"hello");
    // The connection is still good for a regular request.
    let after = client.get("/bytes/3").await.expect("GET after");
    assert_eq!(after.status, StatusCode::OK);
}

/// Uploads whose DATA frames are empty somewhere (RFC 9114 allows them),
/// or end in trailers: `/echo` answers every byte sent. h3 0.0.8 answers
/// "no more data" for an empty DATA frame as it does at the end, and the
/// server's request body took it for the end.
#[tokio::test]
async fn uploads_with_empty_data_frames_are_read_whole() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    let authority = server.http3_addr().expect("address").to_string();
    let empty = [0x00, 0x00];
    let data = |bytes: &[u8]| [&[0x00, bytes.len() as u8][..], bytes].concat();
    // Trailers: `x-t: 1`, a literal with a literal name.
    let trailers = [0x01, 0x08, 0x00, 0x00, 0x23, b'x', b'-', b't', 0x01, b'1'];
    let cases: Vec<(&str, Vec<u8>, &[u8])> = vec![
        (
            "empty, then data",
            [&empty[..], &data(b"hello")].concat(),
            b"hello",
        ),
        (
            "data, empty, data",
            [data(b"he"), empty.to_vec(), data(b"llo")].concat(),
            b"hello",
        ),
        (
            "two empty, then data",
            [&empty[..], &empty[..], &data(b"hello")].concat(),
            b"hello",
        ),
        ("only an empty one", empty.to_vec(), b""),
        ("no DATA at all", Vec::new(), b""),
        (
            "data, empty, trailers",
            [data(b"hello"), empty.to_vec(), trailers.to_vec()].concat(),
            b"hello",
        ),
        (
            "data, trailers",
            [data(b"hello"), trailers.to_vec()].concat(),
            b"hello",
        ),
    ];
    for (what, frames, expected) in cases {
        let echoed = raw_upload(&client, &authority, &frames).await;
        assert_eq!(
            String::from_utf8_lossy(&echoed),
            String::from_utf8_lossy(expected),
            "{what}"
        );
    }
    // The connection is still good for a regular request.
    let after = client.get("/bytes/3").await.expect("GET after");
    assert_eq!(after.status, StatusCode::OK);
}

/// A request the client finished with its head (no body) was read to its
/// end: the server stops no request stream it has all of. Stopping each
/// one cost the client a STOP_SENDING frame per request, and an ACK.
#[tokio::test]
async fn bodiless_requests_are_not_stopped() {
    assert_eq!(
        stops_for_bodiless_gets(false).await,
        0,
        "STOP_SENDING for streams the client had finished"
    );
}

/// A bodiless request whose FIN reaches the server only after the server
/// dropped its request body (here: after the whole response) is not
/// stopped either: its end, when it comes, is read. Before, every such
/// stream got a STOP_SENDING (20 for 20 GETs).
#[tokio::test]
async fn bodiless_requests_finished_late_are_not_stopped() {
    assert_eq!(
        stops_for_bodiless_gets(true).await,
        0,
        "STOP_SENDING for bodiless streams the client finished late"
    );
}

/// A server with the default configuration, and an HTTP/3 client of it
/// without grease (h3's client would open a reserved stream, which the
/// server rightly stops, and these tests count STOP_SENDING frames).
async fn ungreased() -> (ServerHandle, H3Client) {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let addr = server.http3_addr().expect("HTTP/3 address");
    let client = h3client::connect_with(addr, &ca, false)
        .await
        .expect("HTTP/3 connect");
    (server, client)
}

/// The STOP_SENDING frames a client gets for 20 bodiless GETs, each
/// finished with its head or, when `late`, after its whole response.
async fn stops_for_bodiless_gets(late: bool) -> u64 {
    let (_server, client) = ungreased().await;
    let before = client.conn.stats().frame_rx;
    let requests = 20;
    for _ in 0..requests {
        let response = if late {
            client.get_finished_late("/bytes/128").await
        } else {
            client.get("/bytes/128").await
        };
        let response = response.expect("GET");
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(response.body.len(), 128);
    }
    // One more exchange, finished at once: a STOP_SENDING for the last
    // late one would have come before its answer.
    let last = client.get("/bytes/1").await.expect("GET");
    assert_eq!(last.status, StatusCode::OK);
    let after = client.conn.stats().frame_rx;
    assert!(
        after.stream - before.stream >= requests,
        "{requests} responses came in STREAM frames: {after:?}"
    );
    after.stop_sending - before.stop_sending
}

/// A response to HEAD has no content (RFC 9110 §9.3.2): its head says the
/// length a GET would get, and no DATA follows. hyper drops the body on
/// HTTP/1.1 and HTTP/2; over HTTP/3 the server sent it.
#[tokio::test]
async fn head_responses_carry_no_body() {
    let (server, ca) = h3_server(ServerConfig::default()).await;
    let client = h3_client(&server, &ca).await;
    for path in ["/bytes/128", "/bytes/70000", "/get"] {
        let response = client
            .request(Method::HEAD, path, None)
            .await
            .expect("HEAD");
        assert_eq!(response.status, StatusCode::OK, "{path}");
        assert_eq!(response.body.len(), 0, "{path}: a body for HEAD");
    }
    let response = client
        .request(Method::HEAD, "/bytes/128", None)
        .await
        .expect("HEAD");
    assert_eq!(response.headers["content-length"], "128");
}

/// A request whose body is still coming when the server drops it unread
/// is stopped, as before: the server does not want the rest.
#[tokio::test]
async fn a_body_still_coming_is_stopped() {
    let (_server, client) = ungreased().await;
    let before = client.conn.stats().frame_rx;
    let response = client
        .post_unfinished("/bytes/16", Bytes::from_static(b"more to come"))
        .await
        .expect("POST");
    assert_eq!(response.status, StatusCode::OK);
    // One more exchange: the stop, sent as the body was dropped, came
    // before its answer.
    client.get("/bytes/1").await.expect("GET");
    let after = client.conn.stats().frame_rx;
    assert!(after.stop_sending - before.stop_sending >= 1, "{after:?}");
}
