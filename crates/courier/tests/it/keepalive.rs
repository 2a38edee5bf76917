//! HTTP/2 keep-alive PING detects a peer that stopped answering.

use std::time::{Duration, Instant};

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

#[tokio::test]
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
    let started = Instant::now();
    let err = client.get(url).send().await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed, "{err}");
    assert!(took >= interval, "{took:?}");
    assert!(
        took < interval + timeout + Duration::from_millis(700),
        "{took:?}"
    );
}
