//! HTTP/2 keep-alive PING detects a peer that stopped answering.
//!
//! The keep-alive timers are tokio's (`proto/h2/keepalive.rs`), so the test
//! runs on paused time and checks when the connection was given up exactly:
//! one interval of silence, then the PING's timeout. The silent server runs on
//! the test's runtime over loopback, so the clock does not jump while the
//! handshake is on its way.
//!
//! The client's own request timeout is on that clock too (`client/send.rs`
//! takes its deadline from `tokio::time::Instant`), so it counts paused time
//! like everything else here, however far the clock is moved.

use std::time::Duration;

use courier::{Client, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An h2c "server" that completes the handshake and then never answers
/// anything again — not requests, not PINGs — while keeping the socket open.
async fn silent_h2_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Server preface: an empty SETTINGS frame, then ACK the client's.
                let settings = [0, 0, 0, 4, 0, 0, 0, 0, 0];
                let ack = [0, 0, 0, 4, 1, 0, 0, 0, 0];
                if stream.write_all(&settings).await.is_err()
                    || stream.write_all(&ack).await.is_err()
                {
                    return;
                }
                let mut sink = [0u8; 4096];
                while let Ok(n) = stream.read(&mut sink).await {
                    if n == 0 {
                        return;
                    }
                }
            });
        }
    });
    url
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_stops_answering_pings_is_detected() {
    let url = silent_h2_server().await;
    let interval = Duration::from_millis(200);
    let timeout = Duration::from_millis(300);
    let client = Client::builder()
        .http2_prior_knowledge()
        .http2_keep_alive_interval(Some(interval))
        .http2_keep_alive_timeout(timeout)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let err = client.get(url).send().await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed, "{err}");
    // Each connection is given up one interval of silence plus the PING's
    // timeout after it opened; the request was sent on a second connection
    // after the first died under it (a stale retry), hence one period each.
    let connections = client.metrics().connections_established;
    assert!(connections >= 1);
    let period = interval + timeout;
    assert_eq!(
        took,
        period * connections as u32,
        "{connections} connection(s) given up after {took:?}, not {period:?} each"
    );
}
