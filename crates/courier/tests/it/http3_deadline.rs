//! An HTTP/3 request past its deadline, as the server sees it: a QUIC
//! server of the test's own (quinn, no HTTP/3 library) that never answers,
//! and reads what the client does with the request's stream. The client's
//! side of it (each request fails at its own deadline on one connection's
//! timer, the others go on) is `http3_client.rs` and `proto/h3/deadline.rs`.

use std::sync::Arc;
use std::time::Duration;

use courier::{Body, Certificate, Client, ErrorKind};

use crate::corpus::tls::{identity, root_pem};

/// Every wait in this module is bounded by this.
const LIMIT: Duration = Duration::from_secs(20);

/// H3_REQUEST_CANCELLED (RFC 9114 §8.1).
const REQUEST_CANCELLED: u32 = 0x10c;

fn server() -> quinn::Endpoint {
    let id = identity();
    let tls = crate::support::h3_tls(&id.cert, &id.key);
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    quinn::Endpoint::server(config, ([127, 0, 0, 1], 0).into()).expect("QUIC server")
}

/// How the client left a request stream the server never answered.
#[derive(Debug, PartialEq, Eq)]
struct Left {
    /// The code of the client's STOP_SENDING (`None`: none came).
    stopped: Option<u32>,
    /// The code of the client's RESET_STREAM (`None`: the request was
    /// finished, whole or not).
    reset: Option<u32>,
}

/// Accepts one connection, sets HTTP/3 up (an empty SETTINGS), and for
/// each of `requests` streams reports how the client left it.
async fn never_answer(endpoint: quinn::Endpoint, requests: usize) -> Vec<Left> {
    let (conn, control) = crate::support::h3_accept(&endpoint).await;
    let mut left = Vec::new();
    for _ in 0..requests {
        let (send, mut recv) = conn.accept_bi().await.expect("a request stream");
        let reset = match recv.read_to_end(1 << 20).await {
            Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
                Some(u32::try_from(code.into_inner()).expect("code"))
            }
            _ => None,
        };
        let stopped = send
            .stopped()
            .await
            .ok()
            .flatten()
            .map(|code| u32::try_from(code.into_inner()).expect("code"));
        left.push(Left { stopped, reset });
    }
    drop(control);
    left
}

/// A request past its deadline fails with the request timeout's error,
/// and its stream is cancelled on the wire: STOP_SENDING with
/// H3_REQUEST_CANCELLED for a GET (quinn's own drop stopped it with code
/// 0 before), and a body still being sent is reset with it (quinn's drop
/// finished the stream before: the server took the body cut short for the
/// whole of it).
#[tokio::test]
async fn a_request_past_its_deadline_is_cancelled_on_the_wire() {
    let endpoint = server();
    let addr = endpoint.local_addr().expect("address");
    let server = tokio::spawn(never_answer(endpoint.clone(), 2));
    let root = Certificate::from_pem(root_pem().as_bytes()).expect("root");
    let client = Client::builder()
        .add_root_certificate(root)
        .http3_prior_knowledge()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    let url = format!("https://{addr}/");

    let err = tokio::time::timeout(LIMIT, client.get(&url).send())
        .await
        .expect("bounded")
        .expect_err("never answered");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err:#}");

    // A body that never ends: a part sent, then nothing.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
    tx.send(Ok(bytes::Bytes::from_static(b"a part of it")))
        .await
        .expect("sent");
    let body = Body::wrap_stream(tokio_stream_of(rx));
    let err = tokio::time::timeout(LIMIT, client.post(&url).body(body).send())
        .await
        .expect("bounded")
        .expect_err("never answered");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err:#}");

    let left = tokio::time::timeout(LIMIT, server)
        .await
        .expect("bounded")
        .expect("server");
    let cancelled = Some(REQUEST_CANCELLED);
    assert_eq!(
        left,
        [
            Left {
                stopped: cancelled,
                reset: None
            },
            Left {
                stopped: cancelled,
                reset: cancelled
            },
        ]
    );
    drop(tx);
}

/// The receiver as a stream of body chunks.
fn tokio_stream_of<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
