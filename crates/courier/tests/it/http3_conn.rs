//! courier's HTTP/3 connection (`proto/h3` over `connect/quic`), driven
//! directly through the internal hooks (the pool binds it later) against
//! the built-in server over QUIC on loopback: requests with and without
//! bodies, a large response, the server's stream limit (the connection
//! waits for a stream, it does not fail), a dropped body, GOAWAY, shutdown,
//! and a response head over the client's limit.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use courier::http3_hooks::{Http3Connection, Http3Dialer, Http3Options, Resend};
use courier::{Body, Certificate, ErrorKind};
use courier_server::{ServerConfig, ServerHandle, TestPki, BYTES_ALPHABET};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;

use crate::support::{eventually, server_with};

mod cost;

/// Every wait in this module is bounded by this.
const LIMIT: Duration = Duration::from_secs(20);

struct H3 {
    server: ServerHandle,
    dialer: Http3Dialer,
}

async fn h3_server(config: ServerConfig, options: Http3Options) -> H3 {
    let pki = TestPki::new();
    let server = server_with(ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        http3: true,
        ..config
    })
    .await;
    let root = Certificate::from_pem(pki.ca_pem().as_bytes()).expect("CA");
    let dialer = Http3Dialer::new(Http3Options {
        root: Some(root),
        ..options
    })
    .expect("dialer");
    H3 { server, dialer }
}

impl H3 {
    async fn connect(&self) -> Http3Connection {
        let addr = self.server.http3_addr().expect("HTTP/3 address");
        bounded("connect", self.dialer.connect(addr, "127.0.0.1"))
            .await
            .expect("HTTP/3 connect")
    }

    fn request(&self, method: Method, path: &str, body: Body) -> Request<Body> {
        let addr = self.server.http3_addr().expect("HTTP/3 address");
        Request::builder()
            .method(method)
            .uri(format!("https://{addr}{path}"))
            .body(body)
            .expect("request")
    }
}

async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

/// Sends and reads the whole body.
async fn fetch(conn: &Http3Connection, req: Request<Body>) -> (http::response::Parts, Bytes) {
    let response = bounded("send", conn.send(req))
        .await
        .unwrap_or_else(|e| panic!("send: {:?}", e.error));
    let body = bounded("body", response.body.collect())
        .await
        .expect("body")
        .to_bytes();
    (response.head, body)
}

fn pattern_ok(body: &[u8]) -> bool {
    body.iter()
        .enumerate()
        .all(|(i, b)| *b == BYTES_ALPHABET[i % 64])
}

fn connection_id(head: &http::response::Parts) -> u64 {
    head.headers["x-connection-id"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("number")
}

#[tokio::test]
async fn get_twice_on_one_connection() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    let (head, body) = fetch(&conn, h3.request(Method::GET, "/bytes/1000", Body::empty())).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.version, http::Version::HTTP_3);
    assert_eq!(body.len(), 1000);
    assert!(pattern_ok(&body));
    let (again, _) = fetch(&conn, h3.request(Method::GET, "/bytes/10", Body::empty())).await;
    assert_eq!(connection_id(&again), connection_id(&head));
    assert_eq!(h3.server.connections_h3(), 1);
    assert_eq!(conn.served(), 2);
    assert_eq!(conn.open_streams(), 0);
    let settings = conn
        .peer_settings()
        .expect("the server's SETTINGS, read by the tap");
    // SETTINGS_MAX_FIELD_SECTION_SIZE (0x06): the server's 256 KiB.
    assert!(settings.contains(&(0x06, 256 * 1024)), "{settings:?}");
}

#[tokio::test]
async fn post_a_streamed_body() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    // 4 MiB in 16 KiB pieces: past both flow-control windows, so the
    // body is sent while the echo comes back.
    let piece: Bytes = (0..16 * 1024).map(|i| (i % 251) as u8).collect();
    let pieces = 256;
    let stream = futures_util::stream::iter(
        std::iter::repeat_n(piece.clone(), pieces).map(Ok::<_, std::io::Error>),
    );
    let req = h3.request(Method::POST, "/echo", Body::wrap_stream(stream));
    let (head, body) = fetch(&conn, req).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(body.len(), piece.len() * pieces);
    assert!(body.chunks(piece.len()).all(|c| c == piece));
}

#[tokio::test]
async fn ten_mib_response() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    let n = 10 * 1024 * 1024;
    let response = bounded(
        "send",
        conn.send(h3.request(Method::GET, &format!("/bytes/{n}"), Body::empty())),
    )
    .await
    .expect("send");
    assert_eq!(
        http_body::Body::size_hint(&response.body).exact(),
        Some(n as u64)
    );
    let body = bounded("body", response.body.collect())
        .await
        .expect("body")
        .to_bytes();
    assert_eq!(body.len(), n);
    assert!(pattern_ok(&body));
}

#[tokio::test]
async fn two_hundred_requests_wait_for_the_stream_limit() {
    let limit = 10;
    let h3 = h3_server(
        ServerConfig {
            max_concurrent_streams: Some(limit),
            ..ServerConfig::default()
        },
        Http3Options::default(),
    )
    .await;
    let conn = h3.connect().await;
    assert_eq!(
        (conn.slots(), conn.declared()),
        (88, None),
        "seven eighths of the assumed 100 until seen"
    );
    let h3 = Arc::new(h3);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..200 {
        let conn = conn.clone();
        let req = h3.request(Method::GET, "/delay/20ms", Body::empty());
        tasks.spawn(async move { fetch(&conn, req).await });
    }
    let mut ids = std::collections::HashSet::new();
    while let Some(done) = bounded("200 requests", tasks.join_next()).await {
        let (head, body) = done.expect("request task");
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(&body[..], b"ok");
        ids.insert(connection_id(&head));
    }
    assert_eq!(ids.len(), 1, "all on one connection");
    assert_eq!(conn.served(), 200);
    assert_eq!(
        (conn.slots(), conn.declared()),
        (limit as usize, Some(limit as usize)),
        "the server's MAX_STREAMS, learnt from the waits"
    );
}

#[tokio::test]
async fn a_dropped_body_leaves_the_connection_usable() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    for _ in 0..3 {
        let mut response = bounded(
            "send",
            conn.send(h3.request(Method::GET, "/bytes/52428800", Body::empty())),
        )
        .await
        .expect("send");
        let first = bounded("first chunk", response.body.frame())
            .await
            .expect("a frame")
            .expect("data");
        assert!(first.is_data());
        drop(response);
    }
    eventually("the dropped streams freed", LIMIT, || {
        conn.open_streams() == 0
    })
    .await;
    let (head, body) = fetch(&conn, h3.request(Method::GET, "/bytes/10", Body::empty())).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(body.len(), 10);
    assert_eq!(
        conn.served(),
        1,
        "the dropped ones were not answered in full"
    );
    assert_eq!(h3.server.connections_h3(), 1);
}

#[tokio::test]
async fn body_limit_and_content_length_are_held() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    let mut response = bounded(
        "send",
        conn.send(h3.request(Method::GET, "/bytes/100000", Body::empty())),
    )
    .await
    .expect("send");
    response.body.limit(50_000);
    let err = bounded("body", response.body.collect())
        .await
        .expect_err("over the limit");
    assert_eq!(err.kind(), ErrorKind::BodyTooLarge);
    let (head, _) = fetch(&conn, h3.request(Method::GET, "/bytes/1", Body::empty())).await;
    assert_eq!(head.status, StatusCode::OK);
}

#[tokio::test]
async fn goaway_finishes_what_was_sent_and_refuses_what_is_new() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    let slow = {
        let conn = conn.clone();
        let req = h3.request(Method::GET, "/delay/500ms", Body::empty());
        tokio::spawn(async move { fetch(&conn, req).await })
    };
    eventually("the slow request open", LIMIT, || conn.open_streams() == 1).await;
    h3.server.goaway_all();
    eventually("GOAWAY seen", LIMIT, || conn.goaway_id().is_some()).await;
    assert!(!conn.accepts_requests());
    assert_eq!(
        conn.take_served(),
        Some(1),
        "GOAWAY past the one stream it took"
    );
    let refused = bounded(
        "send after GOAWAY",
        conn.send(h3.request(Method::POST, "/echo", Body::from("again"))),
    )
    .await
    .expect_err("refused");
    assert_eq!(refused.error.kind(), ErrorKind::Refused);
    assert_eq!(refused.resend, Resend::Refused);
    assert!(
        refused.request.is_some(),
        "handed back to be sent elsewhere"
    );
    let (head, body) = bounded("the slow one", slow).await.expect("task");
    assert_eq!(
        head.status,
        StatusCode::OK,
        "in flight before GOAWAY: answered"
    );
    assert_eq!(&body[..], b"ok");
    eventually("closed once idle", LIMIT, || conn.is_closed()).await;
}

#[tokio::test]
async fn server_shutdown_closes_the_connection() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    let (head, _) = fetch(&conn, h3.request(Method::GET, "/bytes/1", Body::empty())).await;
    assert_eq!(head.status, StatusCode::OK);
    let req = h3.request(Method::GET, "/bytes/1", Body::empty());
    let H3 { server, .. } = h3;
    bounded("shutdown", server.shutdown()).await;
    eventually("closed", LIMIT, || conn.is_closed()).await;
    assert!(!conn.accepts_requests());
    let err = bounded("send on a closed connection", conn.send(req))
        .await
        .expect_err("closed");
    assert_eq!(err.error.kind(), ErrorKind::ConnectionClosed);
    assert_eq!(err.resend, Resend::Unsent);
}

/// A request sent on a connection we closed for the server's protocol
/// error reports that error (Protocol), not a bare ConnectionClosed: the
/// corpus_h3 case `second-qpack-encoder-stream` saw ConnectionClosed when
/// the close came before the request was sent (a flake under load; here
/// the close is waited for, so the order is fixed). Siblings: a second
/// control stream, a reserved HTTP/2 frame on the control stream.
#[tokio::test]
async fn a_request_after_a_protocol_close_reports_the_protocol_error() {
    let encoder_twice: &[&[u8]] = &[&[0x02], &[0x02]];
    let control_twice: &[&[u8]] = &[&[0x00, 0x04, 0x00]];
    let h2_ping: &[&[u8]] = &[];
    for (what, streams, control_tail) in [
        ("second QPACK encoder stream", encoder_twice, &[][..]),
        ("second control stream", control_twice, &[][..]),
        (
            "HTTP/2 PING on the control stream",
            h2_ping,
            &[0x06, 0x08, 0, 0, 0, 0, 0, 0, 0, 0][..],
        ),
    ] {
        let (endpoint, cert) = quic_endpoint(b"h3");
        let addr = endpoint.local_addr().unwrap();
        let streams: Vec<Vec<u8>> = streams.iter().map(|s| s.to_vec()).collect();
        let tail = control_tail.to_vec();
        tokio::spawn(async move {
            let Some(incoming) = endpoint.accept().await else {
                return;
            };
            let Ok(conn) = incoming.await else { return };
            let Ok(mut control) = conn.open_uni().await else {
                return;
            };
            let _ = control
                .write_all(&[[0x00, 0x04, 0x00].as_slice(), &tail].concat())
                .await;
            let mut held = Vec::new();
            for bytes in streams {
                if let Ok(mut s) = conn.open_uni().await {
                    let _ = s.write_all(&bytes).await;
                    held.push(s);
                }
            }
            conn.closed().await;
            drop((control, held, endpoint));
        });
        let dialer = Http3Dialer::new(Http3Options {
            root: Some(Certificate::from_der(&cert).expect("certificate")),
            ..Http3Options::default()
        })
        .expect("dialer");
        let conn = bounded("connect", dialer.connect(addr, "127.0.0.1"))
            .await
            .expect("connect");
        eventually(what, LIMIT, || conn.is_closed()).await;
        let req = Request::get(format!("https://{addr}/"))
            .body(Body::empty())
            .expect("request");
        let err = bounded("send", conn.send(req)).await.expect_err(what);
        assert_eq!(
            err.error.kind(),
            ErrorKind::Protocol,
            "{what}: {:?}",
            err.error
        );
        assert_eq!(err.resend, Resend::Unsent, "{what}");
    }
}

/// A hostile HTTP/3 server on raw quinn: SETTINGS saying nothing, then
/// `response` (HTTP/3 frames) on every request stream, whatever the
/// client's SETTINGS said; it keeps the connection open until the client
/// closes it. Returns its address and its certificate.
async fn raw_h3_peer(response: Vec<u8>) -> (std::net::SocketAddr, Certificate) {
    let (endpoint, cert) = quic_endpoint(b"h3");
    let addr = endpoint.local_addr().unwrap();
    tokio::spawn(async move {
        let Some(incoming) = endpoint.accept().await else {
            return;
        };
        let Ok(conn) = incoming.await else { return };
        // Control stream (type 0), an empty SETTINGS frame.
        let Ok(mut control) = conn.open_uni().await else {
            return;
        };
        let _ = control.write_all(&[0x00, 0x04, 0x00]).await;
        while let Ok((mut send, _recv)) = conn.accept_bi().await {
            let _ = send.write_all(&response).await;
            let _ = send.finish();
        }
        drop(control);
        drop(endpoint);
    });
    let root = Certificate::from_der(&cert).expect("certificate");
    (addr, root)
}

/// A quinn server on loopback speaking `alpn` (TLS 1.3), with a fresh
/// self-signed certificate for 127.0.0.1: the raw servers of this module.
fn quic_endpoint(alpn: &[u8]) -> (quinn::Endpoint, rustls::pki_types::CertificateDer<'static>) {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let endpoint = quinn::Endpoint::server(
        quinn::ServerConfig::with_crypto(Arc::new(crypto)),
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    (endpoint, cert.cert.der().clone())
}

/// A HEADERS frame: `:status 200` (QPACK static index 25) and a literal
/// `x-big` field of `len` bytes.
fn headers_frame_with_a_big_field(len: usize) -> Vec<u8> {
    let mut block = vec![0x00, 0x00, 0xc0 | 25, 0x20 | 5];
    block.extend_from_slice(b"x-big");
    // Value length: a 7-bit prefixed integer (RFC 7541 §5.1).
    let mut n = len;
    if n < 127 {
        block.push(n as u8);
    } else {
        block.push(0x7f);
        n -= 127;
        while n >= 128 {
            block.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        block.push(n as u8);
    }
    block.extend(std::iter::repeat_n(b'a', len));
    let mut frame = vec![0x01];
    // Frame length as a QUIC varint (2 or 4 bytes here).
    let l = block.len() as u32;
    if l < 16384 {
        frame.extend_from_slice(&(0x4000 | l as u16).to_be_bytes());
    } else {
        frame.extend_from_slice(&(0x8000_0000 | l).to_be_bytes());
    }
    frame.extend(block);
    frame
}

#[tokio::test]
async fn a_response_head_over_the_limit_is_a_typed_error() {
    // 64 KiB of header value against the client's 16 KiB: the server
    // ignores the SETTINGS that said so.
    let (addr, root) = raw_h3_peer(headers_frame_with_a_big_field(64 * 1024)).await;
    let dialer = Http3Dialer::new(Http3Options {
        root: Some(root),
        max_field_section: 16 * 1024,
        ..Http3Options::default()
    })
    .expect("dialer");
    let conn = bounded("connect", dialer.connect(addr, "127.0.0.1"))
        .await
        .expect("connect");
    let req = || {
        Request::get(format!("https://{addr}/"))
            .body(Body::empty())
            .expect("request")
    };
    let err = bounded("send", conn.send(req()))
        .await
        .expect_err("head over the limit");
    assert_eq!(
        err.error.kind(),
        ErrorKind::HeadersTooLarge,
        "{:?}",
        err.error
    );
    assert_eq!(err.resend, Resend::No);
    // The stream was stopped, not the connection.
    assert!(!conn.is_closed());
    eventually("the stream freed", LIMIT, || conn.open_streams() == 0).await;

    // Within the limit, the same peer's head is read.
    let (addr, root) = raw_h3_peer(headers_frame_with_a_big_field(1000)).await;
    let dialer = Http3Dialer::new(Http3Options {
        root: Some(root),
        max_field_section: 16 * 1024,
        ..Http3Options::default()
    })
    .expect("dialer");
    let conn = bounded("connect", dialer.connect(addr, "127.0.0.1"))
        .await
        .expect("connect");
    let response = bounded("send", conn.send(req()))
        .await
        .expect("within the limit");
    assert_eq!(response.head.status, StatusCode::OK);
    assert_eq!(response.head.headers["x-big"].len(), 1000);
}

/// A response of `pieces` as DATA frames (an empty piece is an empty DATA
/// frame), after a HEADERS frame with `:status 200` (QPACK static 25).
fn response_in_data_frames(pieces: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0x01, 0x03, 0x00, 0x00, 0xc0 | 25];
    for piece in pieces {
        assert!(piece.len() < 64, "one-byte varint lengths");
        out.extend_from_slice(&[0x00, piece.len() as u8]);
        out.extend_from_slice(piece);
    }
    out
}

/// An empty DATA frame is allowed anywhere in a body (RFC 9114 §7.2.1 sets
/// no minimum length); Caddy 2.6.2 sends one before a gzip stream's last
/// 8 bytes. h3 0.0.8 answers "no more data" for one, and the trailers
/// read that followed took the next DATA frame for a connection error
/// (H3_FRAME_UNEXPECTED: the interop suite's Caddy h3 gzip cells).
#[tokio::test]
async fn empty_data_frames_do_not_end_the_body() {
    let cases: [&[&[u8]]; 4] = [
        &[b"abc", b"", b"def"],
        &[b"", b"abc", b"def"],
        &[b"abc", b"", b"", b"def", b""],
        &[b"abc", b"def", b""],
    ];
    for pieces in cases {
        let (addr, root) = raw_h3_peer(response_in_data_frames(pieces)).await;
        let dialer = Http3Dialer::new(Http3Options {
            root: Some(root),
            ..Http3Options::default()
        })
        .expect("dialer");
        let conn = bounded("connect", dialer.connect(addr, "127.0.0.1"))
            .await
            .expect("connect");
        let req = Request::get(format!("https://{addr}/"))
            .body(Body::empty())
            .expect("request");
        let response = bounded("send", conn.send(req))
            .await
            .unwrap_or_else(|e| panic!("{pieces:?}: send: {:?}", e.error));
        let body = bounded("body", response.body.collect())
            .await
            .unwrap_or_else(|e| panic!("{pieces:?}: body: {e:#}"))
            .to_bytes();
        assert_eq!(&body[..], b"abcdef", "{pieces:?}");
        assert!(!conn.is_closed(), "{pieces:?}");
    }
}

/// A request body of known length goes with its `content-length`, as over
/// HTTP/1.1 and HTTP/2, and an empty one where the method carries a body
/// (POST, PUT, PATCH); a GET without one says nothing. Without it Caddy
/// 2.6.2's reverse_proxy forwarded HTTP/3 uploads as empty (the interop
/// suite's Caddy h3 echo cells).
#[tokio::test]
async fn a_body_of_known_length_says_it() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    let cases = [
        (Method::POST, Body::from("hello"), Some("5")),
        (Method::PUT, Body::empty(), Some("0")),
        (Method::GET, Body::empty(), None),
    ];
    for (method, body, want) in cases {
        let (head, json) = fetch(&conn, h3.request(method.clone(), "/headers", body)).await;
        assert_eq!(head.status, StatusCode::OK);
        let seen: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
        assert_eq!(
            seen.get("content-length").and_then(|v| v.as_str()),
            want,
            "{method}: {seen}"
        );
    }
}

/// A large upload over loopback (MTU 65,536): MTU discovery climbs past
/// Ethernet's 1,452 toward the jumbo ceiling, and the GSO batches quinn
/// builds of such datagrams must still fit one UDP send (65,507 bytes):
/// quinn-udp drops a batch the kernel refuses with EMSGSIZE without a word,
/// so with a ceiling of 8,952 (ten datagrams, 89,520 bytes) every full
/// batch was lost and a 64 MiB download over a 9,000-byte link crawled.
#[tokio::test]
async fn a_large_upload_over_a_jumbo_path_loses_no_batch() {
    const SIZE: usize = 16 << 20;
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    // Discovery runs in the first round trips; a few requests give it time.
    for _ in 0..20 {
        let req = h3.request(Method::GET, "/bytes/16", Body::empty());
        let response = bounded("warm-up", conn.send(req)).await.expect("send");
        bounded("warm-up body", response.body.collect())
            .await
            .expect("body");
    }
    let (mtu, lost_before) = conn.path_stats();
    assert!(mtu > 1452, "discovery stayed at {mtu}");
    let req = h3.request(Method::POST, "/echo", Body::from(vec![b'u'; SIZE]));
    let response = bounded("upload", conn.send(req)).await.expect("send");
    let echoed = bounded("echo", response.body.collect())
        .await
        .expect("body")
        .to_bytes();
    assert_eq!(echoed.len(), SIZE);
    let (mtu, lost) = conn.path_stats();
    // Loopback loses nothing; a refused batch is ten packets at once.
    assert!(
        lost - lost_before < 10,
        "{} packets lost on loopback at a datagram size of {mtu}",
        lost - lost_before
    );
}

/// Bodiless requests whose responses are read to their end: no stream is
/// stopped or reset, by either side. The built-in server stopped every
/// request stream (it dropped the finished request body unread, and quinn
/// stops a stream dropped before its end is read): a STOP_SENDING frame
/// per request for the client to receive and acknowledge.
#[tokio::test]
async fn bodiless_requests_read_to_the_end_stop_no_stream() {
    let h3 = h3_server(ServerConfig::default(), Http3Options::default()).await;
    let conn = h3.connect().await;
    // The built-in server (h3) opens a reserved ("grease") stream with its
    // control stream, which the client stops as it should: counted out
    // after a first exchange.
    let req = h3.request(Method::GET, "/bytes/1", Body::empty());
    let response = bounded("first", conn.send(req)).await.expect("send");
    bounded("first body", response.body.collect())
        .await
        .expect("body");
    let before = conn.stop_stats();
    for path in ["/bytes/128", "/bytes/0", "/status/204", "/bytes/70000"] {
        for _ in 0..5 {
            let req = h3.request(Method::GET, path, Body::empty());
            let response = bounded("send", conn.send(req)).await.expect("send");
            bounded("body", response.body.collect())
                .await
                .expect("body");
        }
    }
    // HEAD's response has no body to read: it is over with its head.
    let req = h3.request(Method::HEAD, "/bytes/128", Body::empty());
    let response = bounded("HEAD", conn.send(req)).await.expect("send");
    assert_eq!(response.head.status, StatusCode::OK);
    bounded("HEAD body", response.body.collect())
        .await
        .expect("body");
    // A last exchange, so that a frame about the others has arrived.
    let req = h3.request(Method::GET, "/bytes/1", Body::empty());
    let response = bounded("last", conn.send(req)).await.expect("send");
    bounded("last body", response.body.collect())
        .await
        .expect("body");
    let after = conn.stop_stats();
    assert_eq!(
        (
            after.0 - before.0,
            after.1 - before.1,
            after.2 - before.2,
            after.3 - before.3
        ),
        (0, 0, 0, 0),
        "STOP_SENDING sent, received; RESET_STREAM sent, received"
    );
}

/// How a bodiless request's stream goes on the wire, under a multi-thread
/// runtime (quinn's connection task can then run on the other worker
/// between a request's write and its finish, so the FIN leaves alone in a
/// STREAM frame of its own): the client's STREAM frames sent per request
/// (1: HEADERS and FIN together), and STOP_SENDING frames per request.
///
/// `cargo test -p courier-http --features http3 --release --test it http3_conn::frames_per_bodiless_request -- --ignored --nocapture`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: prints frames per request"]
async fn frames_per_bodiless_request() {
    const REQUESTS: usize = 10_000;
    const IN_FLIGHT: usize = 64;
    let h3 = Arc::new(h3_server(ServerConfig::default(), Http3Options::default()).await);
    let conn = Arc::new(h3.connect().await);
    let (tx_before, rx_before) = conn.stream_frames();
    let (stop_tx_before, stop_rx_before, _, _) = conn.stop_stats();
    let mut tasks = Vec::new();
    for _ in 0..IN_FLIGHT {
        let (h3, conn) = (Arc::clone(&h3), Arc::clone(&conn));
        tasks.push(tokio::spawn(async move {
            for _ in 0..REQUESTS / IN_FLIGHT {
                let req = h3.request(Method::GET, "/bytes/128", Body::empty());
                let response = bounded("send", conn.send(req)).await.expect("send");
                bounded("body", response.body.collect())
                    .await
                    .expect("body");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let n = (REQUESTS / IN_FLIGHT * IN_FLIGHT) as f64;
    let (tx, rx) = conn.stream_frames();
    let (stop_tx, stop_rx, _, _) = conn.stop_stats();
    println!(
        "per request: {:.4} STREAM frames sent, {:.4} received; {:.4} STOP_SENDING sent, {:.4} received",
        (tx - tx_before) as f64 / n,
        (rx - rx_before) as f64 / n,
        (stop_tx - stop_tx_before) as f64 / n,
        (stop_rx - stop_rx_before) as f64 / n,
    );
}
