//! QUIC handshakes in the client's TLS metrics, against the built-in
//! server's HTTP/3 behind `http3_early`'s relay (the server's datagrams
//! held [`DELAY`], so every handshake takes at least that long): each
//! completed handshake counts once, under HTTP/3's label, with its
//! duration to the handshake's end (for a 0-RTT connection too, whose
//! requests went before it), and a resumed session counts as resumed —
//! which quinn does not say; the client reads it in the server's
//! `ServerHello`.

use courier::{Client, MetricsSnapshot};
use courier_server::{TestPki, ZeroRtt};
use http::StatusCode;

use crate::http3_early::{answer, builder, first_connection, server, url, Server, DELAY, LIMIT};
use crate::support::eventually;

/// A second connection (the first one went away after `/close`) and its
/// handshake counted: the metrics then.
async fn second_connection(client: &Client, server: &Server) -> MetricsSnapshot {
    let (status, _) = answer(client.get(url(server, "/get"))).await;
    assert_eq!(status, StatusCode::OK);
    // A 0-RTT connection's response may come before its handshake ends.
    eventually("the second handshake counted", LIMIT, || {
        client.metrics().tls_handshakes_http3 == 2
    })
    .await;
    client.metrics()
}

/// Durations recorded once per handshake, each at least the relay's
/// delay (a handshake is a round trip through it), in HTTP/3's histogram
/// and in the total.
fn one_duration_per_handshake(m: &MetricsSnapshot) {
    let h3 = &m.tls_handshake_duration_http3;
    assert_eq!(h3.count(), m.tls_handshakes_http3, "{m:?}");
    assert_eq!(m.tls_handshake_duration.count(), m.tls_handshakes, "{m:?}");
    assert_eq!(m.tls_handshakes, m.tls_handshakes_http3, "no TCP here");
    assert!(
        h3.min() >= DELAY,
        "a handshake shorter than a round trip: {h3:?}"
    );
}

/// Without 0-RTT: the first connection does a full handshake, the second
/// resumes; one duration each.
#[tokio::test]
async fn a_second_quic_connection_counts_as_resumed() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).build().expect("client");
    first_connection(&client, &server).await;
    let m = client.metrics();
    assert_eq!(
        (m.tls_handshakes_http3, m.tls_resumed_http3),
        (1, 0),
        "{m:?}"
    );
    one_duration_per_handshake(&m);

    let m = second_connection(&client, &server).await;
    assert_eq!(
        (m.tls_handshakes_http3, m.tls_resumed_http3),
        (2, 1),
        "{m:?}"
    );
    assert_eq!(m.tls_resumed, 1, "the total counts it");
    assert_eq!(
        (
            m.tls_early_data,
            m.tls_early_data_accepted,
            m.tls_early_data_rejected
        ),
        (0, 0, 0)
    );
    assert_eq!((m.tls_handshakes_http1, m.tls_handshakes_http2), (0, 0));
    one_duration_per_handshake(&m);
}

/// With 0-RTT accepted: resumed, the early data counted as accepted, and
/// the handshake's duration runs to its end, not to the dial's return
/// (which is at once: the GET went early).
#[tokio::test]
async fn a_0rtt_handshake_counts_when_it_completes() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Accept).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &server).await;

    let m = second_connection(&client, &server).await;
    assert_eq!(server.requests_early(), 1, "the GET went early");
    assert_eq!(
        (m.tls_handshakes_http3, m.tls_resumed_http3),
        (2, 1),
        "{m:?}"
    );
    assert_eq!(
        (
            m.tls_early_data,
            m.tls_early_data_accepted,
            m.tls_early_data_rejected
        ),
        (1, 1, 0)
    );
    assert_eq!(m.tls_handshakes_current, 0);
    one_duration_per_handshake(&m);
}

/// A server that forgot the session: no resumption, and the early data
/// counted as rejected.
#[tokio::test]
async fn rejected_0rtt_counts_as_rejected_and_not_resumed() {
    let pki = TestPki::new();
    let server = server(&pki, ZeroRtt::Reject).await;
    let client = builder(&pki).tls_early_data(true).build().expect("client");
    first_connection(&client, &server).await;

    let m = second_connection(&client, &server).await;
    assert_eq!(
        (m.tls_handshakes_http3, m.tls_resumed_http3),
        (2, 0),
        "{m:?}"
    );
    assert_eq!(
        (
            m.tls_early_data,
            m.tls_early_data_accepted,
            m.tls_early_data_rejected
        ),
        (1, 0, 1)
    );
    one_duration_per_handshake(&m);
}
