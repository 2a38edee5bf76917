//! Upgrades over HTTP/2: extended CONNECT (RFC 8441) against the `h2`
//! crate's server (enabled or not, its stream limit), and what a caller may
//! not send (`:protocol` off CONNECT, or over HTTP/1.1).

use std::time::Duration;

use bytes::Bytes;
use courier::http::{Method, Request};
use courier::{Body, Client, ErrorKind, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::eventually;

const LIMIT: Duration = Duration::from_secs(10);

/// An h2c server (the `h2` crate) allowing `streams` at once, extended
/// CONNECT enabled or not; an accepted extended CONNECT gets a 200 and its
/// DATA echoed, END_STREAM for END_STREAM.
async fn server(enable: bool, streams: u32) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut builder = h2::server::Builder::new();
                builder.max_concurrent_streams(streams);
                if enable {
                    builder.enable_connect_protocol();
                }
                let Ok(mut conn) = builder.handshake::<_, Bytes>(socket).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    tokio::spawn(async move {
                        let protocol = req.extensions().get::<h2::ext::Protocol>().cloned();
                        // (The h2 crate refuses a plain CONNECT with a
                        // :scheme or :path as malformed.)
                        let plain = req.method() == Method::CONNECT && protocol.is_none();
                        let status = if plain || protocol.is_some_and(|p| p.as_str() == "echo") {
                            200
                        } else {
                            400
                        };
                        let head = http::Response::builder().status(status).body(()).unwrap();
                        let Ok(mut send) = respond.send_response(head, status != 200) else {
                            return;
                        };
                        if status != 200 {
                            return;
                        }
                        let mut body = req.into_body();
                        while let Some(Ok(data)) = body.data().await {
                            let _ = body.flow_control().release_capacity(data.len());
                            if send.send_data(data, false).is_err() {
                                return;
                            }
                        }
                        let _ = send.send_data(Bytes::new(), true);
                    });
                }
            });
        }
    });
    addr
}

fn extended_connect(url: &str) -> Request<Body> {
    let mut req = Request::builder()
        .method(Method::CONNECT)
        .uri(url)
        .body(Body::empty())
        .unwrap();
    req.extensions_mut().insert(Protocol::from_static("echo"));
    req
}

fn h2c() -> Client {
    Client::builder().http2_prior_knowledge().build().unwrap()
}

#[tokio::test]
async fn an_extended_connect_gives_a_stream_both_ways_ended_by_shutdown() {
    let addr = server(true, 100).await;
    let client = h2c();
    let res = client
        .execute(extended_connect(&format!("http://{addr}/chat")))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.version(), courier::http::Version::HTTP_2);
    let mut io = res.upgrade().await.unwrap();
    // More than the stream's initial 64 KiB window each way: DATA goes out
    // as the server's WINDOW_UPDATEs allow.
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 249) as u8).collect();
    let (mut r, mut w) = tokio::io::split(&mut io);
    let write = async {
        w.write_all(&data).await.unwrap();
        // END_STREAM: the server ends its side in turn, so the read ends.
        w.shutdown().await.unwrap();
    };
    let read = async {
        let mut echoed = Vec::new();
        r.read_to_end(&mut echoed).await.unwrap();
        echoed
    };
    let (_, echoed) = tokio::time::timeout(LIMIT, async { tokio::join!(write, read) })
        .await
        .expect("the echo within the limit");
    assert!(echoed == data, "{} bytes came back changed", echoed.len());
    assert_eq!(client.metrics().upgrades, 1);
}

#[tokio::test]
async fn a_server_that_did_not_enable_extended_connect_is_refused_typed() {
    let addr = server(false, 100).await;
    let client = h2c();
    let err = client
        .execute(extended_connect(&format!("http://{addr}/chat")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade, "{err}");
    // The connection is fine for everything else.
    assert_eq!(client.metrics().connections_open, 1);
}

#[tokio::test]
async fn a_protocol_goes_only_with_connect_and_only_over_http2() {
    let addr = server(true, 100).await;
    let mut get = extended_connect(&format!("http://{addr}/"));
    *get.method_mut() = Method::GET;
    let err = h2c().execute(get).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
    // HTTP/1.1 has no :protocol: refused before anything is written.
    let server = crate::support::server().await;
    let url = format!("http://{}/", server.local_addr());
    let err = Client::new()
        .execute(extended_connect(&url))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
}

#[tokio::test]
async fn an_upgraded_stream_holds_its_slot_until_dropped() {
    // One stream at a time, one connection: while the upgraded stream is
    // open, another waits (and gives up); dropping it resets the stream and
    // frees the slot.
    let addr = server(true, 1).await;
    let client = Client::builder()
        .http2_prior_knowledge()
        .max_connections_per_host(1)
        .pool_queue_timeout(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let url = format!("http://{addr}/chat");
    // The first request learns the server's limit of 1 from its SETTINGS.
    let first = client.execute(extended_connect(&url)).await.unwrap();
    let io = first.upgrade().await.unwrap();
    assert_eq!(client.metrics().http2_streams_active, 1);
    let err = client.execute(extended_connect(&url)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PoolQueueTimeout, "{err}");
    drop(io);
    eventually("the slot freed", LIMIT, || {
        client.metrics().http2_streams_active == 0
    })
    .await;
    let mut again = client
        .execute(extended_connect(&url))
        .await
        .unwrap()
        .upgrade()
        .await
        .unwrap();
    again.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    tokio::time::timeout(LIMIT, again.read_exact(&mut buf))
        .await
        .expect("within the limit")
        .unwrap();
    assert_eq!(&buf, b"ping");
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn a_plain_connect_over_http2_carries_only_its_authority_and_tunnels() {
    let addr = server(false, 100).await;
    let client = h2c();
    let res = client
        .request(Method::CONNECT, format!("http://{addr}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut io = res.upgrade().await.unwrap();
    io.write_all(b"through").await.unwrap();
    let mut buf = [0u8; 7];
    tokio::time::timeout(LIMIT, io.read_exact(&mut buf))
        .await
        .expect("within the limit")
        .unwrap();
    assert_eq!(&buf, b"through");
}

#[tokio::test]
async fn a_connect_with_a_body_of_its_own_is_an_invalid_request() {
    let addr = server(true, 100).await;
    let err = h2c()
        .request(Method::CONNECT, format!("http://{addr}"))
        .body("early")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
}

#[tokio::test]
async fn an_extended_connect_waits_for_the_servers_settings_which_cannot_take_it_back() {
    use crate::support::h2::{settings, Peer, GOAWAY, HEADERS, PROTOCOL_ERROR, SETTINGS};
    const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let client = h2c();
    let request = client.execute(extended_connect(&format!("http://{addr}/chat")));
    let request = tokio::spawn(request);
    // No SETTINGS yet: sent at once, the request would be refused (the
    // server has not enabled extended CONNECT).
    let mut peer = Peer::accept_raw(&listener).await;
    let first = peer.read().await;
    assert_eq!(first.ty, SETTINGS, "{first:?}");
    peer.send(&settings(&[(ENABLE_CONNECT_PROTOCOL, 1)])).await;
    let headers = loop {
        let frame = peer.read().await;
        if frame.ty == HEADERS {
            break frame;
        }
    };
    assert!(headers.contains(b":protocol") && headers.contains(b"echo"));
    // Enabled, then disabled: a connection error.
    peer.send(&settings(&[(ENABLE_CONNECT_PROTOCOL, 0)])).await;
    let goaway = loop {
        let frame = peer.read().await;
        if frame.ty == GOAWAY {
            break frame;
        }
    };
    assert_eq!(goaway.code(), PROTOCOL_ERROR);
    let err = tokio::time::timeout(LIMIT, request)
        .await
        .expect("within the limit")
        .unwrap()
        .unwrap_err();
    assert_ne!(err.kind(), ErrorKind::Upgrade, "{err}");
}

#[tokio::test]
async fn a_connect_the_server_refused_unprocessed_is_sent_again_and_tunnels() {
    use crate::support::h2::{frame, rst_stream, status, Peer, DATA, END_HEADERS, HEADERS};
    const REFUSED_STREAM: u32 = 0x7;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let client = h2c();
    let request = tokio::spawn(
        client
            .request(Method::CONNECT, format!("http://{addr}"))
            .send(),
    );
    let mut peer = Peer::accept(&listener, &[]).await;
    let mut refused = false;
    let stream = loop {
        let f = peer.read().await;
        if f.ty != HEADERS {
            continue;
        }
        if !refused {
            // Refused unprocessed: courier sends it again, whatever the method.
            peer.send(&rst_stream(f.stream, REFUSED_STREAM)).await;
            refused = true;
            continue;
        }
        break f.stream;
    };
    peer.send(&frame(HEADERS, END_HEADERS, stream, &status(200)))
        .await;
    peer.send(&frame(DATA, 0, stream, b"hi")).await;
    let res = tokio::time::timeout(LIMIT, request)
        .await
        .expect("within the limit")
        .unwrap()
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut io = res.upgrade().await.unwrap();
    let mut buf = [0u8; 2];
    tokio::time::timeout(LIMIT, io.read_exact(&mut buf))
        .await
        .expect("within the limit")
        .unwrap();
    assert_eq!(&buf, b"hi");
}
