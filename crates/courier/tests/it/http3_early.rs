//! 0-RTT over HTTP/3 (feature `http3`, `ClientBuilder::tls_early_data`)
//! against the built-in server with early data on: a resumed connection
//! sends requests safe to replay in early data and holds every other one
//! for the handshake; `425 Too Early` and rejected early data are sent
//! again once after the handshake; tickets stay with their origin.
//!
//! The server counts a request as early when its stream arrived before
//! the QUIC handshake completed ([`ServerHandle::requests_early`]) and
//! tells the request itself with `early-data: 1` (RFC 8470 §5.1). The
//! client reaches it through a relay that holds the server's datagrams
//! back by [`DELAY`]: a resumed handshake over loopback takes well under a
//! millisecond, often less than the client takes to hand its first request
//! to the new connection, which then goes after the handshake, not early.

use std::time::Duration;

use courier::{Client, ClientBuilder};
use courier_server::{ServerConfig, ServerHandle, TestPki, ZeroRtt};
use http::StatusCode;

use crate::support::udp_delay::UdpDelay;
use crate::support::{eventually, server_with};

/// Every wait in this module is bounded by this.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);
/// How long the relay holds the server's datagrams (an emulated one-way
/// delay): the window in which requests go early.
pub(crate) const DELAY: Duration = Duration::from_millis(50);

/// The built-in server with HTTP/3 and `zero_rtt`, behind the relay.
pub(crate) struct Server {
    handle: ServerHandle,
    pub(crate) relay: UdpDelay,
}

impl std::ops::Deref for Server {
    type Target = ServerHandle;
    fn deref(&self) -> &ServerHandle {
        &self.handle
    }
}

pub(crate) async fn server(pki: &TestPki, zero_rtt: ZeroRtt) -> Server {
    let handle = server_with(ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1", "localhost"])),
        http3: true,
        quic_0rtt: zero_rtt,
        ..ServerConfig::default()
    })
    .await;
    let relay = UdpDelay::start(handle.http3_addr().expect("HTTP/3 address"), DELAY).await;
    Server { handle, relay }
}

pub(crate) fn builder(pki: &TestPki) -> ClientBuilder {
    Client::builder()
        .add_root_certificate(pki.ca_pem())
        .http3_prior_knowledge()
        .pool_idle_timeout(None)
}

pub(crate) fn url(server: &Server, path: &str) -> String {
    format!("https://{}{path}", server.relay.addr)
}

/// `status` and body of `request`, within [`LIMIT`].
pub(crate) async fn answer(request: courier::RequestBuilder) -> (StatusCode, String) {
    tokio::time::timeout(LIMIT, async {
        let response = request.send().await.expect("a response");
        let status = response.status();
        (status, response.text().await.expect("a body"))
    })
    .await
    .expect("an answer within the limit")
}

/// A first connection that gets the server's session ticket, then goes
/// away (`/close`: 200, then GOAWAY), so the next request dials again and
/// resumes.
pub(crate) async fn first_connection(client: &Client, server: &Server) {
    let early = client.metrics().tls_early_data;
    let (status, _) = answer(client.get(url(server, "/close"))).await;
    assert_eq!(status, StatusCode::OK);
    eventually("the first connection closed", LIMIT, || {
        client.metrics().connections_open_http3 == 0
    })
    .await;
    assert_eq!(
        client.metrics().tls_early_data,
        early,
        "a first connection has no 0-RTT"
    );
}

/// The second connection resumes and its GET goes in early data: the
/// server saw it before the handshake completed, and said so to it.
#[tokio::test]
async fn a_resumed_connection_sends_a_get_in_0rtt() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &server).await;

    let (status, headers) = answer(client.get(url(&server, "/headers"))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.contains(r#""early-data":"1""#), "{headers}");
    assert_eq!(server.requests_early(), 1);
    let m = client.metrics();
    assert_eq!(m.tls_early_data, 1);
    assert_eq!(m.connections_established_http3, 2);
}

/// With the knob off (the default) nothing goes early, though the server
/// would take it.
#[tokio::test]
async fn no_early_data_unless_asked() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).build().expect("client");
    first_connection(&client, &server).await;

    let (status, headers) = answer(client.get(url(&server, "/headers"))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!headers.contains("early-data"), "{headers}");
    assert_eq!(server.requests_early(), 0);
    assert_eq!(client.metrics().tls_early_data, 0);
    assert_eq!(client.metrics().connections_established_http3, 2);
}

/// On a resumed connection, a POST (and a GET with a body) waits for the
/// handshake while a bare GET beside it goes early.
#[tokio::test]
async fn only_requests_safe_to_replay_go_early() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &server).await;

    let (post, get_with_body, get) = tokio::join!(
        answer(client.post(url(&server, "/headers")).body("replay me not")),
        answer(client.get(url(&server, "/headers")).body("a body")),
        answer(client.get(url(&server, "/headers"))),
    );
    for (what, (status, headers)) in [("POST", &post), ("GET with a body", &get_with_body)] {
        assert_eq!(*status, StatusCode::OK, "{what}");
        assert!(
            !headers.contains("early-data"),
            "{what} went early: {headers}"
        );
    }
    assert_eq!(get.0, StatusCode::OK);
    assert!(get.1.contains(r#""early-data":"1""#), "{}", get.1);
    assert_eq!(server.requests_early(), 1);
    assert_eq!(client.metrics().connections_established_http3, 2);
}

/// `425 Too Early` to a request sent early: sent again once after the
/// handshake, and its answer then is the caller's. A server that answers
/// 425 again after the handshake gets its 425 returned: one resend, no
/// more (RFC 8470 §5.2).
#[tokio::test]
async fn too_early_is_sent_again_once_after_the_handshake() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &server).await;

    let served = server.requests_served();
    let (status, body) = answer(client.get(url(&server, "/too-early"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(server.requests_early(), 1, "the first try went early");
    assert_eq!(server.requests_served() - served, 2, "425, then 200");

    // A third connection: again early, and 425 for good.
    let (status, _) = answer(client.get(url(&server, "/close"))).await;
    assert_eq!(status, StatusCode::OK);
    eventually("the second connection closed", LIMIT, || {
        client.metrics().connections_open_http3 == 0
    })
    .await;
    let served = server.requests_served();
    let (status, _) = answer(client.get(url(&server, "/too-early/always"))).await;
    assert_eq!(status.as_u16(), 425);
    assert_eq!(server.requests_served() - served, 2, "one resend, no more");
    assert_eq!(server.requests_early(), 2);
    assert_eq!(client.metrics().tls_early_data, 2);
}

/// A server that rejects the early data (it forgot the session): the
/// requests sent early are sent again after the handshake, on the same
/// connection, and answered.
#[tokio::test]
async fn rejected_early_data_is_sent_again_after_the_handshake() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Reject).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &server).await;

    let (a, b) = tokio::join!(
        answer(client.get(url(&server, "/headers"))),
        answer(
            client
                .post(url(&server, "/headers"))
                .body("after the handshake")
        ),
    );
    for (status, headers) in [&a, &b] {
        assert_eq!(*status, StatusCode::OK);
        assert!(!headers.contains("early-data"), "{headers}");
    }
    let m = client.metrics();
    assert_eq!(m.tls_early_data, 1, "the client did send early data");
    assert_eq!(server.requests_early(), 0, "the server took none of it");
    assert_eq!(
        m.connections_established_http3, 2,
        "resent on the same connection"
    );
    assert_eq!(m.requests_failed, 0);
}

/// A ticket is offered only to the origin that issued it: another port of
/// the same host (another server here) gets a full handshake and no early
/// data, so a request with credentials meant for one origin never rides
/// on keys another origin can read.
#[tokio::test]
async fn a_ticket_from_one_origin_is_never_used_for_another() {
    let pki = TestPki::new();
    let a = server(&pki, ZeroRtt::Accept).await;
    let b = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &a).await;

    let (status, headers) = answer(
        client
            .get(url(&b, "/headers"))
            .header("authorization", "Bearer for-b-only")
            .header("cookie", "b=1"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.contains("for-b-only"), "{headers}");
    assert!(!headers.contains("early-data"), "{headers}");
    assert_eq!(b.requests_early(), 0);
    assert_eq!(
        client.metrics().tls_early_data,
        0,
        "no ticket of b's own yet"
    );
    assert_eq!(a.requests_early(), 0);
}

/// Figures for docs/src/http3.md: time to the first response on a resumed
/// connection, with and without 0-RTT, through the relay (the server's
/// datagrams held [`DELAY`]: a 50 ms round trip). Medians of 5 rounds each,
/// alternated, each with a client of its own (one connection to get a
/// ticket, then the resumed one measured). Without 0-RTT the request waits
/// a round trip for the handshake; with it, it goes in the first flight.
#[tokio::test]
async fn time_to_first_response_with_and_without_0rtt() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..5 {
        for (i, early) in [true, false].into_iter().enumerate() {
            let client = builder(&pki).tls_early_data(early).build().expect("client");
            first_connection(&client, &server).await;
            let started = std::time::Instant::now();
            let (status, _) = answer(client.get(url(&server, "/get"))).await;
            times[i].push(started.elapsed());
            assert_eq!(status, StatusCode::OK);
            assert_eq!(client.metrics().tls_early_data, u64::from(early));
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (early, full) = (median(&mut times[0]), median(&mut times[1]));
    println!(
        "time to first response, resumed, {} ms round trip: 0-RTT {early:?}, without {full:?} (medians of 5)",
        DELAY.as_millis()
    );
    assert!(early < full, "0-RTT {early:?} against {full:?}");
}

/// The TOML key of the same name turns it on for a factory's client, and
/// only for it.
#[tokio::test]
async fn the_toml_key_turns_0rtt_on() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let dir = std::env::temp_dir().join(format!("courier-0rtt-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("ca.pem"), pki.ca_pem()).expect("ca");
    std::fs::write(
        dir.join("clients.toml"),
        "[defaults]\nroot_certificates = [\"ca.pem\"]\nhttp_version = \"http3\"\n\n\
         [clients.early]\ntls_early_data = true\n",
    )
    .expect("toml");
    let factory = courier::ClientFactory::builder()
        .config_file(dir.join("clients.toml"))
        .expect("config")
        .build()
        .expect("factory");
    for (name, early) in [("early", 1), ("plain", 0)] {
        // The pool under the factory's layers, as configured.
        let client = factory.client(name).client();
        first_connection(&client, &server).await;
        let before = server.requests_early();
        let (status, _) = answer(client.get(url(&server, "/get"))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(server.requests_early() - before, early, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
