//! HTTP/3 request streams as the server sees them on the wire (feature
//! `http3`): a raw quinn server reads each request stream and counts the
//! QUIC STREAM frames it took. A request whose body is known up front
//! (none, empty, or buffered) must end with its last frame: one STREAM
//! frame carrying HEADERS (and DATA) with FIN, not a later empty STREAM
//! frame with FIN alone. hypercorn with aioquic mishandles that late FIN
//! (a `KeyError` that kills its QUIC listener, the interop suite's old
//! `hypercorn-h3-late-fin`); quic-go and curl send the FIN with the
//! headers too.

use std::sync::Arc;
use std::time::Duration;

use courier::{Certificate, Client};
use http::StatusCode;
use tokio::sync::mpsc;

/// Every wait in this module is bounded by this.
const LIMIT: Duration = Duration::from_secs(20);

/// What the server saw of one request stream.
#[derive(Debug)]
struct Seen {
    /// Bytes of HTTP/3 frames on the stream (up to its FIN).
    bytes: usize,
    /// STREAM frames the connection received while the stream was read:
    /// the server reads one request at a time, and the client sends
    /// nothing else meanwhile.
    stream_frames: u64,
}

/// A raw HTTP/3 server on quinn: empty SETTINGS, then for each request
/// stream, read to its FIN, report it, answer `:status 200` with FIN.
async fn counting_server() -> (std::net::SocketAddr, Certificate, mpsc::Receiver<Seen>) {
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
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let endpoint = quinn::Endpoint::server(
        quinn::ServerConfig::with_crypto(Arc::new(crypto)),
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let Some(incoming) = endpoint.accept().await else {
            return;
        };
        let Ok(conn) = incoming.await else { return };
        let Ok(mut control) = conn.open_uni().await else {
            return;
        };
        let _ = control.write_all(&[0x00, 0x04, 0x00]).await;
        // The client's unidirectional streams: control, QPACK encoder and
        // decoder (each starts with its one-byte type), and h3's grease
        // stream (any other type), which it finishes. Their frames must all
        // be in before a request stream's are counted.
        let (setup_tx, mut setup) = tokio::sync::watch::channel(false);
        let uni = conn.clone();
        tokio::spawn(async move {
            let mut kept = Vec::new();
            for _ in 0..4 {
                let Ok(mut recv) = uni.accept_uni().await else {
                    return;
                };
                let Ok(Some(first)) = recv.read_chunk(64, true).await else {
                    return;
                };
                if matches!(first.bytes.first(), Some(0x00 | 0x02 | 0x03)) {
                    kept.push(recv);
                } else if recv.read_to_end(1024).await.is_err() {
                    return;
                }
            }
            let _ = setup_tx.send(true);
            // Open until the connection ends.
            let _ = uni.closed().await;
            drop(kept);
        });
        let mut first = true;
        loop {
            let before = conn.stats().frame_rx.stream;
            let Ok((mut send, mut recv)) = conn.accept_bi().await else {
                break;
            };
            let Ok(bytes) = recv.read_to_end(1 << 20).await else {
                break;
            };
            let stream_frames = conn.stats().frame_rx.stream - before;
            // The first is answered once the setup is in: the client sends
            // the next request after the answer, so its count is its own.
            if std::mem::take(&mut first) && setup.wait_for(|done| *done).await.is_err() {
                break;
            }
            // HEADERS: `:status 200` (QPACK static index 25).
            let _ = send.write_all(&[0x01, 0x03, 0x00, 0x00, 0xc0 | 25]).await;
            let _ = send.finish();
            if tx
                .send(Seen {
                    bytes: bytes.len(),
                    stream_frames,
                })
                .await
                .is_err()
            {
                break;
            }
        }
        drop(control);
        drop(endpoint);
    });
    let root = Certificate::from_der(cert.cert.der()).expect("certificate");
    (addr, root, rx)
}

async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

/// Requests in sequence on one connection, each checked: its stream took
/// one STREAM frame, FIN included. The requests are sent from a task on
/// the runtime's workers, as a service sends them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_known_whole_ends_with_its_last_frame() {
    let late = bounded("the requests", tokio::spawn(requests_in_sequence()))
        .await
        .expect("task");
    assert!(late.is_empty(), "FIN not with the last frame: {late:#?}");
}

/// The same, sent from the test's own thread (`block_on`, as a program's
/// `main` does), where quinn's connection task runs at once on a worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_known_whole_ends_with_its_last_frame_from_block_on() {
    let late = requests_in_sequence().await;
    assert!(late.is_empty(), "FIN not with the last frame: {late:#?}");
}

/// Sends each kind of request known whole, 8 times, and returns those
/// whose stream took more than one STREAM frame.
async fn requests_in_sequence() -> Vec<String> {
    let (addr, root, mut seen) = counting_server().await;
    let client = Client::builder()
        .add_root_certificate(root)
        .http3_prior_knowledge()
        .build()
        .expect("client");
    let url = format!("https://{addr}/");
    // The connection's first request is not counted: the client's
    // unidirectional streams go beside it.
    let first = bounded("first GET", client.get(&url).send())
        .await
        .expect("first GET");
    assert_eq!(first.status(), StatusCode::OK);
    bounded("the server's view", seen.recv())
        .await
        .expect("server running");
    // Each fits in one packet.
    let requests: Vec<(&str, courier::RequestBuilder)> = vec![
        ("GET", client.get(&url)),
        ("HEAD", client.head(&url)),
        ("DELETE", client.delete(&url)),
        ("POST with an empty body", client.post(&url).body("")),
        (
            "POST with a small body",
            client.post(&url).body("0123456789"),
        ),
        ("PUT with 600 bytes", client.put(&url).body(vec![b'x'; 600])),
    ];
    let mut late = Vec::new();
    for round in 0..8 {
        for (what, request) in &requests {
            let request = request.try_clone().expect("clonable");
            let response = bounded(what, request.send())
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(response.status(), StatusCode::OK, "{what}");
            let stream = bounded("the server's view", seen.recv())
                .await
                .expect("server running");
            assert!(stream.bytes > 0, "{what}: {stream:?}");
            if stream.stream_frames != 1 {
                late.push(format!("round {round}, {what}: {stream:?}"));
            }
        }
    }
    late
}
