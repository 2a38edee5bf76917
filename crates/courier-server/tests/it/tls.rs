//! TLS: ALPN protocol choice, certificates from `TestPki` (good and
//! broken), session resumption counters, and HTTP/1.1 faults through TLS.

use std::sync::Arc;

use crate::support::bounded;
use crate::support::clients::{self, client_config, fetch_h1, fetch_h2, get, rustls_error};
use courier_server::{start, ServerConfig, ServerHandle, TestPki, TlsConfig};
use http::{StatusCode, Version};
use rustls::{CertificateError, HandshakeKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const H2: &[u8] = b"h2";
const HTTP1: &[u8] = b"http/1.1";

async fn tls_server(tls: TlsConfig, config: ServerConfig) -> ServerHandle {
    start(ServerConfig {
        tls: Some(tls),
        ..config
    })
    .await
    .expect("start TLS server")
}

#[tokio::test]
async fn alpn_negotiates_h2() {
    let pki = TestPki::new();
    let server = tls_server(
        pki.server_config(&["localhost", "127.0.0.1"]),
        ServerConfig::default(),
    )
    .await;
    assert!(server.is_tls());
    let port = server.local_addr().port();
    assert_eq!(
        server.url("/bytes/1"),
        format!("https://127.0.0.1:{port}/bytes/1")
    );

    let config = client_config(&pki.ca_pem(), &[H2, HTTP1]);
    // The URL's host is an IP address: verified against the IP SAN.
    let stream = clients::tls(server.local_addr(), &config, "127.0.0.1")
        .await
        .expect("TLS handshake");
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(H2));
    let (mut h2, _task) = clients::h2(stream).await;
    let response = fetch_h2(&mut h2, get(&server.url("/bytes/70000")))
        .await
        .expect("response");
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.version, Version::HTTP_2);
    assert_eq!(response.body.len(), 70_000);
    assert_eq!(response.connection_id(), 1);
    assert_eq!(server.connections_h2(), 1);
    assert_eq!(server.tls_handshakes(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn http1_only_server_negotiates_http1() {
    let pki = TestPki::new();
    let config = ServerConfig {
        http2: false,
        ..Default::default()
    };
    let server = tls_server(pki.server_config(&["localhost"]), config).await;
    let client = client_config(&pki.ca_pem(), &[H2, HTTP1]);
    let stream = clients::tls(server.local_addr(), &client, "localhost")
        .await
        .expect("TLS handshake");
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(HTTP1));
    let (mut h1, _task) = clients::h1(stream).await;
    let response = fetch_h1(&mut h1, get("/json/20")).await.expect("response");
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.version, Version::HTTP_11);
    assert_eq!(response.body.len(), 20);
    assert_eq!(server.connections_h2(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn no_alpn_means_http1() {
    let pki = TestPki::new();
    let server = tls_server(pki.server_config(&["localhost"]), ServerConfig::default()).await;
    let client = client_config(&pki.ca_pem(), &[]);
    let stream = clients::tls(server.local_addr(), &client, "localhost")
        .await
        .expect("TLS handshake");
    assert_eq!(stream.get_ref().1.alpn_protocol(), None);
    let (mut h1, _task) = clients::h1(stream).await;
    let response = fetch_h1(&mut h1, get("/bytes/3")).await.expect("response");
    assert_eq!(response.version, Version::HTTP_11);
    assert_eq!(server.connections_h2(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn second_connection_resumes_the_session() {
    let pki = TestPki::new();
    let server = tls_server(pki.server_config(&["localhost"]), ServerConfig::default()).await;
    let client = client_config(&pki.ca_pem(), &[H2]);
    let mut kinds = Vec::new();
    for _ in 0..2 {
        let stream = clients::tls(server.local_addr(), &client, "localhost")
            .await
            .expect("TLS handshake");
        kinds.push(stream.get_ref().1.handshake_kind());
        // A full exchange: the client has read the session tickets (sent
        // right after the handshake) and the server has finished its side.
        let (mut h2, _task) = clients::h2(stream).await;
        fetch_h2(&mut h2, get(&server.url("/bytes/1")))
            .await
            .expect("response");
    }
    assert_eq!(
        kinds,
        [Some(HandshakeKind::Full), Some(HandshakeKind::Resumed)]
    );
    assert_eq!(server.tls_handshakes(), 2);
    assert_eq!(server.tls_resumed(), 1);
    server.shutdown().await;
}

/// Connects with a client trusting `trusted_pem` and returns the rustls
/// error the handshake failed with.
async fn rejection(server: &ServerHandle, trusted_pem: &str, name: &str) -> rustls::Error {
    let client = client_config(trusted_pem, &[H2, HTTP1]);
    let err = clients::tls(server.local_addr(), &client, name)
        .await
        .expect_err("handshake must fail");
    rustls_error(&err)
        .unwrap_or_else(|| panic!("not a rustls error: {err:?}"))
        .clone()
}

#[tokio::test]
async fn expired_certificate_is_rejected() {
    let pki = TestPki::new();
    let server = tls_server(
        pki.expired_server_config(&["localhost"]),
        ServerConfig::default(),
    )
    .await;
    let err = rejection(&server, &pki.ca_pem(), "localhost").await;
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. }
            )
        ),
        "{err:?}"
    );
    assert_eq!(server.tls_handshakes(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_name_is_rejected() {
    let pki = TestPki::new();
    let server = tls_server(
        pki.server_config(&["other.example"]),
        ServerConfig::default(),
    )
    .await;
    for name in ["localhost", "127.0.0.1"] {
        let err = rejection(&server, &pki.ca_pem(), name).await;
        assert!(
            matches!(
                err,
                rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                        | CertificateError::NotValidForNameContext { .. }
                )
            ),
            "{name}: {err:?}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_ca_is_rejected() {
    let pki = TestPki::new();
    let server = tls_server(pki.server_config(&["localhost"]), ServerConfig::default()).await;
    let stranger = TestPki::new();
    let err = rejection(&server, &stranger.ca_pem(), "localhost").await;
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
        ),
        "{err:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn self_signed_config_is_trusted_through_its_pem() {
    let (tls, ca_pem) = TlsConfig::self_signed(&["localhost", "127.0.0.1", "::1"]);
    let server = tls_server(tls, ServerConfig::default()).await;
    let client = client_config(&ca_pem, &[H2]);
    for name in ["localhost", "127.0.0.1"] {
        clients::tls(server.local_addr(), &client, name)
            .await
            .unwrap_or_else(|err| panic!("{name}: {err}"));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn from_pem_loads_a_certificate_and_key() {
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .expect("params")
        .self_signed(&key)
        .expect("cert");
    let tls = TlsConfig::from_pem(&cert.pem(), &key.serialize_pem()).expect("from_pem");
    assert_eq!(tls.cert_chain().len(), 1);
    assert_eq!(tls, tls.clone());
    let server = tls_server(tls, ServerConfig::default()).await;
    let client = client_config(&cert.pem(), &[HTTP1]);
    let stream = clients::tls(server.local_addr(), &client, "localhost")
        .await
        .expect("self-signed leaf as its own root");
    let (mut h1, _task) = clients::h1(stream).await;
    assert!(fetch_h1(&mut h1, get("/bytes/1")).await.is_ok());
    server.shutdown().await;

    let err = TlsConfig::from_pem("not pem", &key.serialize_pem()).expect_err("no cert");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    let err = TlsConfig::from_pem(&cert.pem(), "").expect_err("no key");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);

    // A key that does not belong to the certificate fails at start.
    let other = rcgen::KeyPair::generate().expect("key");
    let mismatched = TlsConfig::from_pem(&cert.pem(), &other.serialize_pem()).expect("parses");
    let err = start(ServerConfig {
        tls: Some(mismatched),
        ..Default::default()
    })
    .await
    .expect_err("key does not match");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn http1_raw_faults_travel_inside_tls() {
    let pki = TestPki::new();
    let server = tls_server(pki.server_config(&["localhost"]), ServerConfig::default()).await;
    let client = client_config(&pki.ca_pem(), &[HTTP1]);
    let mut stream = clients::tls(server.local_addr(), &client, "localhost")
        .await
        .expect("TLS handshake");
    // A normal response first, then the fault on the same connection.
    let requests = b"GET /bytes/5 HTTP/1.1\r\nhost: localhost\r\n\r\n\
                     GET /fault/malformed-status HTTP/1.1\r\nhost: localhost\r\n\r\n";
    bounded("write", stream.write_all(requests))
        .await
        .expect("write");
    let mut received = Vec::new();
    // The fault ends with close_notify, so this is a clean EOF.
    bounded("read", stream.read_to_end(&mut received))
        .await
        .expect("read to a clean end");
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("\r\n\r\nABCDE"), "{text}");
    assert!(
        text.ends_with("ABCDEHTTP/1.1 abc nonsense\r\n\r\n"),
        "{text}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn goaway_works_over_tls_h2() {
    let pki = TestPki::new();
    let server = tls_server(pki.server_config(&["127.0.0.1"]), ServerConfig::default()).await;
    let client: Arc<rustls::ClientConfig> = client_config(&pki.ca_pem(), &[H2]);
    let stream = clients::tls(server.local_addr(), &client, "127.0.0.1")
        .await
        .expect("TLS handshake");
    let (mut h2, task) = clients::h2(stream).await;
    let response = fetch_h2(&mut h2, get(&server.url("/fault/goaway")))
        .await
        .expect("answered");
    assert_eq!(response.status, StatusCode::OK);
    bounded("connection ends", task)
        .await
        .expect("join")
        .expect("clean close");
    server.shutdown().await;
}
