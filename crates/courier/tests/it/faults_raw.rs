//! Faults the built-in server cannot produce, from raw servers written here:
//! resets before, during and after the response head, broken chunked framing,
//! malformed header lines, a slowloris response, a TLS peer that skips
//! close_notify, an HTTP/2 server that lowers its stream limit mid-connection,
//! and one that refuses streams.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{read_head, Pieces};
use courier::{Client, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A server that answers every connection's first request with `script`.
async fn raw_server<F, Fut>(script: F) -> String
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let script = Arc::new(script);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                if read_head(&mut stream).await {
                    script(stream).await;
                }
            });
        }
    });
    url
}

/// Closes with RST instead of FIN.
fn reset(stream: TcpStream) {
    // A zero linger never blocks on drop (tokio deprecates the setter for
    // the non-zero case).
    #[allow(deprecated)]
    let _ = stream.set_linger(Some(Duration::ZERO));
    drop(stream);
}

async fn write_then_reset(mut stream: TcpStream, bytes: &'static [u8]) {
    let _ = stream.write_all(bytes).await;
    let _ = stream.flush().await;
    reset(stream);
}

async fn kind_of(client: &Client, url: &str) -> Result<usize, ErrorKind> {
    let res = client.get(url).send().await.map_err(|e| e.kind())?;
    res.bytes().await.map(|b| b.len()).map_err(|e| e.kind())
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_millis(800))
        .build()
        .unwrap()
}

#[tokio::test]
async fn resets_and_broken_framing() {
    let cases: Vec<(&str, String, Result<usize, ErrorKind>)> = vec![
        (
            "reset before the head",
            raw_server(|s| async move { reset(s) }).await,
            Err(ErrorKind::ConnectionClosed),
        ),
        (
            "reset during the head",
            raw_server(|s| write_then_reset(s, b"HTTP/1.1 200 OK\r\ncontent-le")).await,
            Err(ErrorKind::ConnectionClosed),
        ),
        (
            "reset after the head",
            raw_server(|s| write_then_reset(s, b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc")).await,
            Err(ErrorKind::Body),
        ),
        (
            "close mid-body without content-length",
            raw_server(|mut s| async move {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n").await;
            })
            .await,
            Err(ErrorKind::Body),
        ),
        (
            "invalid chunk size",
            raw_server(|mut s| async move {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n").await;
                let _ = s.flush().await;
                tokio::time::sleep(Duration::from_secs(5)).await;
            })
            .await,
            Err(ErrorKind::Body),
        ),
        (
            "header line without a colon",
            raw_server(|mut s| async move {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nthis is not a header\r\ncontent-length: 0\r\n\r\n").await;
            })
            .await,
            Err(ErrorKind::Protocol),
        ),
        (
            "body to EOF (HTTP/1.0 style) is complete at a clean close",
            raw_server(|mut s| async move {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it").await;
            })
            .await,
            Ok(9),
        ),
    ];
    let client = client();
    for (what, url, expected) in cases {
        let started = Instant::now();
        let got = kind_of(&client, &url).await;
        assert_eq!(got, expected, "{what}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{what} took too long"
        );
    }
    let m = client.metrics();
    assert_eq!(m.requests_active, 0);
    assert_eq!(m.connections_open, m.connections_idle);
}

#[tokio::test]
async fn slowloris_response_is_cut_by_the_timeout() {
    let url = raw_server(|mut s| async move {
        // One byte every 100 ms: always progressing, never done.
        for b in b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello".iter() {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let started = Instant::now();
    let got = Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap()
        .get(&url)
        .send()
        .await;
    assert_eq!(got.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_millis(900));
}

#[tokio::test]
async fn tls_truncation_without_close_notify_is_an_error() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if !read_head(&mut tls).await {
                    return;
                }
                // A body delimited by the end of the connection, then the TCP
                // connection dropped without close_notify: a truncation.
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\npartial")
                    .await;
                let _ = tls.flush().await;
                let (tcp, _) = tls.into_inner();
                drop(tcp);
            });
        }
    });
    let client = Client::builder()
        .add_root_certificate(cert.cert.pem())
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let got = kind_of(&client, &format!("https://localhost:{port}/")).await;
    assert_eq!(
        got,
        Err(ErrorKind::Body),
        "a truncated TLS body must not look complete"
    );
}

/// An HTTP/2 server (h2c) written frame by frame: it advertises 4 streams,
/// and on the first connection lowers that to 1 as soon as the first request
/// arrives, telling the test once the client has acknowledged the change.
/// Every stream is answered `:status 200` after `hold`.
async fn stream_limit_lowering_server(hold: Duration) -> (String, tokio::sync::mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (lowered_tx, lowered_rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((stream, _)) = listener.accept().await {
            let lowered = first.then(|| lowered_tx.clone());
            first = false;
            tokio::spawn(serve_h2(stream, hold, lowered, None));
        }
    });
    (url, lowered_rx)
}

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// `data_received`, when given, counts the DATA payload bytes the client sent.
/// The server never sends WINDOW_UPDATE, so a client may send at most the
/// initial 65,535-byte window of body.
async fn serve_h2(
    stream: TcpStream,
    hold: Duration,
    lowered: Option<tokio::sync::mpsc::Sender<()>>,
    data_received: Option<Arc<std::sync::atomic::AtomicUsize>>,
) {
    const SETTINGS: u8 = 0x4;
    const HEADERS: u8 = 0x1;
    const DATA: u8 = 0x0;
    let (mut rd, wr) = stream.into_split();
    let wr = Arc::new(tokio::sync::Mutex::new(wr));
    let mut preface = [0u8; 24];
    if rd.read_exact(&mut preface).await.is_err() {
        return;
    }
    let max4 = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 4]);
    if wr.lock().await.write_all(&max4).await.is_err() {
        return;
    }
    let mut lowering_sent = false;
    let mut lowered = lowered;
    loop {
        let mut head = [0u8; 9];
        if rd.read_exact(&mut head).await.is_err() {
            return;
        }
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        if rd.read_exact(&mut payload).await.is_err() {
            return;
        }
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        match (head[3], head[4] & 0x1 != 0) {
            (SETTINGS, false) => {
                let ack = frame(SETTINGS, 0x1, 0, &[]);
                if wr.lock().await.write_all(&ack).await.is_err() {
                    return;
                }
            }
            // The client's ACK of our lowered limit: it has applied it.
            (SETTINGS, true) if lowering_sent => {
                if let Some(tx) = lowered.take() {
                    let _ = tx.send(()).await;
                }
            }
            (HEADERS, _) => {
                if lowered.is_some() && !lowering_sent {
                    lowering_sent = true;
                    let max1 = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1]);
                    if wr.lock().await.write_all(&max1).await.is_err() {
                        return;
                    }
                }
                let wr = wr.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(hold).await;
                    // HEADERS, END_STREAM | END_HEADERS, ":status 200" (static index 8).
                    let _ = wr
                        .lock()
                        .await
                        .write_all(&frame(HEADERS, 0x5, id, &[0x88]))
                        .await;
                });
            }
            (DATA, _) => {
                if let Some(count) = &data_received {
                    count.fetch_add(payload.len(), std::sync::atomic::Ordering::SeqCst);
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn http2_server_lowering_its_stream_limit_is_followed() {
    let hold = Duration::from_millis(300);
    let (url, mut lowered) = stream_limit_lowering_server(hold).await;
    let client = Client::builder().http2_prior_knowledge().build().unwrap();
    let first = {
        let request = client.get(&url);
        tokio::spawn(async move { request.send().await.map(|r| r.status()) })
    };
    // The first connection now allows 1 stream, and it is in use.
    tokio::time::timeout(Duration::from_secs(5), lowered.recv())
        .await
        .expect("the client acknowledged the lowered limit");
    let started = Instant::now();
    let rest: Vec<_> = (0..3)
        .map(|_| {
            let request = client.get(&url);
            tokio::spawn(async move { request.send().await.map(|r| r.status()) })
        })
        .collect();
    for t in rest {
        assert_eq!(t.await.unwrap().unwrap(), 200);
    }
    // Queued behind the full connection they would finish one `hold` apart;
    // on a second connection they finish together.
    assert!(started.elapsed() < hold * 2, "{:?}", started.elapsed());
    assert_eq!(first.await.unwrap().unwrap(), 200);
    assert_eq!(client.metrics().connections_established, 2);
}

#[tokio::test]
async fn a_server_that_stops_reading_an_upload_hits_the_timeout() {
    // Accepts, reads nothing: the upload fills the socket buffers and stalls.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let client = Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client
        .post(&url)
        .body(vec![0u8; 32 * 1024 * 1024])
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(client.metrics().requests_active, 0);
}

#[tokio::test]
async fn http2_flow_control_stall_hits_the_timeout() {
    // The server reads the upload but never opens its flow-control window.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let received = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_h2(
                stream,
                Duration::from_secs(30),
                None,
                Some(count.clone()),
            ));
        }
    });
    let client = Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client
        .post(&url)
        .body(vec![1u8; 1024 * 1024])
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(1));
    let sent = received.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        sent <= 65_535,
        "the client sent {sent} bytes past the window"
    );
    let m = client.metrics();
    assert_eq!((m.requests_active, m.http2_streams_active), (0, 0));
}

#[tokio::test]
async fn a_server_that_speaks_first_gets_a_protocol_error_not_a_dialing_loop() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.2\r\n").await;
                read_head(&mut stream).await;
            });
        }
    });
    let client = client();
    let started = Instant::now();
    assert_eq!(kind_of(&client, &url).await, Err(ErrorKind::Protocol));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn an_idle_connection_with_unasked_bytes_is_not_reused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (junk_sent, mut junk_seen) = tokio::sync::mpsc::channel::<()>(1);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let junk_sent = junk_sent.clone();
            tokio::spawn(async move {
                while read_head(&mut stream).await {
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                        .await;
                    // Then, unasked, what a confused server might send.
                    let _ = stream.write_all(b"HTTP/1.1 500 Stray\r\n\r\n").await;
                    let _ = junk_sent.send(()).await;
                }
            });
        }
    });
    let client = client();
    assert_eq!(kind_of(&client, &url).await, Ok(2));
    junk_seen.recv().await.unwrap();
    // The stray bytes are in the idle connection's socket: checkout must see
    // them and dial again, not read them as the next response.
    assert_eq!(kind_of(&client, &url).await, Ok(2));
    assert_eq!(client.metrics().connections_established, 2);
}

/// Reads the head, answers 413 at once, then never reads the body: an
/// upload stalls in the socket buffers while the answer waits to be read.
async fn answering_before_reading_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            if read_head(&mut stream).await {
                let _ = stream
                    .write_all(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 4\r\n\r\nnope")
                    .await;
            }
            held.push(stream);
        }
    });
    url
}

#[tokio::test]
async fn an_answer_sent_before_the_upload_is_read_is_returned() {
    let url = answering_before_reading_server().await;
    let client = Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let chunk = bytes::Bytes::from(vec![0u8; 64 * 1024]);
    let uploads = [
        ("buffered", courier::Body::from(vec![0u8; 32 * 1024 * 1024])),
        // Blocks in a write the server never reads.
        (
            "streamed",
            courier::Body::wrap(Pieces {
                pieces: std::iter::repeat(chunk.clone()),
                stall: false,
            }),
        ),
        // Waits for a body that never comes.
        (
            "stalled",
            courier::Body::wrap(Pieces {
                pieces: std::iter::once(chunk),
                stall: true,
            }),
        ),
    ];
    for (what, body) in uploads {
        let res = client.post(&url).body(body).send().await;
        let res = res.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(res.status(), 413, "{what}");
        assert_eq!(res.bytes().await.unwrap(), "nope", "{what}");
    }
    // Half an upload went out each time: no connection is reused.
    let m = client.metrics();
    assert_eq!(m.connections_idle, 0);
    assert_eq!(m.connections_established, 3);
}

/// An HTTP/2 server (on `h2`) that refuses each connection's first stream
/// with REFUSED_STREAM, unread, and answers later ones with what it got: the
/// method, every header of the request and its body.
async fn refusing_h2_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(stream).await else {
                    return;
                };
                let mut first = true;
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    if std::mem::take(&mut first) {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    tokio::spawn(async move {
                        let (parts, mut body) = req.into_parts();
                        let mut echo = format!("{}\n", parts.method);
                        for (name, value) in &parts.headers {
                            echo.push_str(&format!("{name}: {}\n", value.to_str().unwrap()));
                        }
                        while let Some(Ok(chunk)) = body.data().await {
                            let _ = body.flow_control().release_capacity(chunk.len());
                            echo.push_str(&String::from_utf8_lossy(&chunk));
                        }
                        let head = http::Response::new(());
                        if let Ok(mut send) = respond.send_response(head, false) {
                            let _ = send.send_data(echo.into(), true);
                        }
                    });
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn a_refused_http2_stream_is_sent_again_whole() {
    let url = refusing_h2_server().await;
    // No default `Accept-Encoding`: the echo is the request's own headers.
    let client = Client::builder()
        .http2_prior_knowledge()
        .decompression(
            courier::middleware::DecompressionConfig::default()
                .gzip(false)
                .deflate(false)
                .brotli(false)
                .zstd(false),
        )
        .build()
        .unwrap();
    // A POST: refused streams are safe to resend whatever the method.
    let res = client
        .post(&url)
        .header("x-one", "1")
        .header("x-multi", "a")
        .header("x-multi", "b")
        .body("the payload")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let echo = res.text().await.unwrap();
    assert_eq!(
        echo,
        "POST\nx-one: 1\nx-multi: a\nx-multi: b\ncontent-length: 11\nthe payload"
    );
    let m = client.metrics();
    assert_eq!(m.refused_stream_retries, 1);
    assert_eq!(m.connections_established, 1);
}
