//! TLS: verification by default, ALPN, resumption, certificate errors.

use std::time::{Duration, Instant};

use crate::support::{fetch, server_with};
use courier::{Client, ErrorKind};
use courier_server::{ServerConfig, ServerHandle, TestPki, TlsConfig};
use http::Version;

fn tls_server(tls: TlsConfig, http2: bool) -> ServerConfig {
    ServerConfig {
        tls: Some(tls),
        http2,
        max_concurrent_streams: Some(100),
        ..ServerConfig::default()
    }
}

/// The URL by host name, so SNI and name verification are exercised.
fn url(srv: &ServerHandle, path: &str) -> String {
    format!("https://localhost:{}{path}", srv.local_addr().port())
}

fn trusting(pki: &TestPki) -> courier::ClientBuilder {
    Client::builder().add_root_certificate(pki.ca_pem())
}

#[tokio::test]
async fn alpn_picks_http2_and_long_polls_spread_over_three_connections() {
    // Three full handshakes with resumption off; with it on (the default),
    // the two connections opened after the first one resume its session.
    for resumption in [false, true] {
        let m = three_connections_over_tls(resumption).await;
        if resumption {
            assert!(m.tls_resumed <= 2, "{m:?}");
        } else {
            assert_eq!(m.tls_resumed, 0, "three full handshakes: {m:?}");
        }
    }
}

async fn three_connections_over_tls(resumption: bool) -> courier::MetricsSnapshot {
    let pki = TestPki::new();
    let srv = server_with(tls_server(
        pki.server_config(&["localhost", "127.0.0.1"]),
        true,
    ))
    .await;
    let client = trusting(&pki)
        .tls_session_resumption(resumption)
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..250)
        .map(|_| {
            let request = client.get(url(&srv, "/delay/1000"));
            tokio::spawn(async move {
                let started = Instant::now();
                let res = request.send().await?;
                let version = res.version();
                res.bytes().await?;
                Ok::<_, courier::Error>((version, started.elapsed()))
            })
        })
        .collect();
    for t in tasks {
        let (version, took) = t.await.unwrap().unwrap();
        assert_eq!(version, Version::HTTP_2);
        assert!(took < Duration::from_millis(1600), "{took:?}");
    }
    let m = client.metrics();
    assert_eq!(m.connections_established_http2, 3, "{m:?}");
    assert_eq!(m.tls_handshakes, 3);
    assert_eq!(srv.tls_handshakes(), 3);
    assert_eq!(srv.tls_resumed(), m.tls_resumed);
    m
}

#[tokio::test]
async fn an_http1_only_server_gets_http1_and_the_usual_pool() {
    let pki = TestPki::new();
    let srv = server_with(tls_server(pki.server_config(&["localhost"]), false)).await;
    let client = trusting(&pki).max_connections_per_host(4).build().unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let request = client.get(url(&srv, "/delay/50"));
            tokio::spawn(async move {
                let res = request.send().await?;
                assert_eq!(res.version(), Version::HTTP_11);
                res.bytes().await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    for _ in 0..20 {
        fetch(&client, url(&srv, "/bytes/10")).await;
    }
    let m = client.metrics();
    assert!(m.connections_established <= 4, "{m:?}");
    assert_eq!(m.connections_established_http2, 0);
    assert!(m.time_in_queue.count() >= 12);
    assert_eq!(m.tls_handshakes, m.connections_established);
}

#[tokio::test]
async fn http2_lifetime_rotation_under_load_resumes_tls_sessions() {
    let pki = TestPki::new();
    let srv = server_with(tls_server(pki.server_config(&["localhost"]), true)).await;
    let client = trusting(&pki)
        .pooled_connection_lifetime(Some(Duration::from_secs(1)))
        .build()
        .unwrap();
    // Until the third connection (two rotations) or a deadline: counted, not
    // timed, since a loaded machine may take longer than 3.5 s for them.
    let started = Instant::now();
    let workers: Vec<_> = (0..10)
        .map(|_| {
            let client = client.clone();
            let url = url(&srv, "/delay/10");
            tokio::spawn(async move {
                while client.metrics().connections_established_http2 < 3
                    && started.elapsed() < Duration::from_secs(30)
                {
                    let res = client.get(&url).send().await?;
                    assert_eq!(res.version(), Version::HTTP_2);
                    res.bytes().await?;
                }
                Ok::<_, courier::Error>(())
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap().unwrap();
    }
    let m = client.metrics();
    assert!(m.connections_established_http2 >= 3, "{m:?}");
    assert!(m.tls_resumed > 0, "{m:?}");
    assert_eq!(m.requests_failed, 0);
    assert_eq!(srv.tls_resumed(), m.tls_resumed);
}

#[tokio::test]
async fn certificate_errors_are_tls_errors() {
    let pki = TestPki::new();
    let good = server_with(tls_server(pki.server_config(&["localhost"]), true)).await;
    let wrong_name = server_with(tls_server(pki.server_config(&["other.test"]), true)).await;
    let expired = server_with(tls_server(pki.expired_server_config(&["localhost"]), true)).await;

    // Unknown CA: the default client trusts only the web PKI.
    let err = Client::new().get(url(&good, "/")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");

    let client = trusting(&pki).build().unwrap();
    for srv in [&wrong_name, &expired] {
        let err = client.get(url(srv, "/")).send().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Tls, "{err}");
        assert!(err.is_connect());
    }
    assert_eq!(client.metrics().tls_handshake_failures, 2);
    // And the trusted, valid one works.
    let res = client.get(url(&good, "/bytes/5")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 5);
}

#[tokio::test]
async fn verification_can_be_turned_off_by_name() {
    let pki = TestPki::new();
    let srv = server_with(tls_server(pki.server_config(&["other.test"]), true)).await;
    let client = Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    let res = client.get(url(&srv, "/bytes/5")).send().await.unwrap();
    assert_eq!(res.version(), Version::HTTP_2);
}

#[tokio::test]
async fn http2_only_fails_clearly_against_an_http1_only_server() {
    let pki = TestPki::new();
    let srv = server_with(tls_server(pki.server_config(&["localhost"]), false)).await;
    let client = trusting(&pki).http2_prior_knowledge().build().unwrap();
    let err = client.get(url(&srv, "/")).send().await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Protocol | ErrorKind::Tls),
        "{err}"
    );
}

#[tokio::test]
async fn bad_root_certificate_is_a_build_error() {
    let err = Client::builder()
        .add_root_certificate("not a certificate")
        .build()
        .unwrap_err();
    // A configuration error, not "TLS handshake failed": nothing was dialed.
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    let err = courier::Identity::from_pem_pair(b"not a chain", b"not a key").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
}
