//! The `h2` crate's reading of a case (see `harness.rs` for the server, the
//! records and how h2's errors map onto [`Class`]).

use std::net::SocketAddr;

use bytes::Bytes;
use tokio::net::TcpStream;

use super::harness::{server, Frames, STEP};
use super::record::{h2_answer, is_second, Class, Record, Second};

type SendRequest = h2::client::SendRequest<Bytes>;

/// An h2 client connection; push off, as courier has it (a PUSH_PROMISE is
/// then a connection error for both, RFC 9113 §8.4).
async fn h2_connect(addr: SocketAddr) -> Option<SendRequest> {
    let tcp = TcpStream::connect(addr).await.ok()?;
    let (send, conn) = tokio::time::timeout(
        STEP,
        h2::client::Builder::new().enable_push(false).handshake(tcp),
    )
    .await
    .ok()?
    .ok()?;
    // The connection's task ends with the connection (or the case's runtime).
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Some(send)
}

/// h2's reading: the first request and the next on one connection, or on
/// a new one if h2 no longer takes streams on the first.
pub async fn h2_reads(frames: Frames, close: bool) -> Record {
    let server = server(frames, close).await;
    let addr = server.addr;
    let url = format!("http://{addr}/");
    let mut send = h2_connect(addr).await.expect("h2 handshake on loopback");
    let first = h2_answer(&mut send, &url, STEP).await;
    let second = match h2_answer(&mut send, &url, STEP).await {
        Ok(answer) if is_second(&answer) => Second::Reused,
        Ok(answer) => Second::Wrong(format!("{answer:?}")),
        // A connection that only makes the request wait (no stream allowed)
        // is kept, as courier keeps it.
        Err(Class::Timeout) => Second::Failed(Class::Timeout),
        // Not taken on this connection: a new one, as courier's pool would.
        Err(_) => match h2_connect(addr).await {
            None => Second::Failed(Class::Connection),
            Some(mut fresh) => match h2_answer(&mut fresh, &url, STEP).await {
                Ok(answer) if is_second(&answer) => Second::Redialed,
                Ok(answer) => Second::Wrong(format!("{answer:?}")),
                Err(class) => Second::Failed(class),
            },
        },
    };
    drop(server);
    Record {
        first,
        second,
        kind: None,
    }
}
