//! HTTP/2 receive windows over a long link (issue 19): courier's client, a
//! relay that delays each direction by 10 ms, and the `h2` crate's server,
//! which sends a large body as fast as the windows courier grants allow and
//! reports the most it was ever allowed to send at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use courier::Client;
use tokio::net::TcpListener;

const MIB: u64 = 1 << 20;
const ONE_WAY: Duration = Duration::from_millis(10);

/// What the server saw of the one stream it serves.
#[derive(Default)]
struct Books {
    /// Body bytes sent.
    sent: AtomicU64,
    /// The largest room (courier's windows) the server had to send in.
    max_room: AtomicU64,
    /// PING round trips in a row during which the server sent nothing.
    still: tokio::sync::watch::Sender<u64>,
}

/// A relay in front of `upstream` that delays both directions; its address.
async fn relay(upstream: std::net::SocketAddr) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let link = delay_proxy::Link::delay(ONE_WAY);
    tokio::spawn(delay_proxy::serve(listener, upstream, link));
    addr
}

/// An h2 server answering every request with `len` bytes, sent in as large
/// pieces as courier's windows allow. It also runs PING round trips, one
/// after another, and counts those during which it sent nothing in
/// `still`: frames courier sent before a PONG reach the server before it,
/// so a few such round trips mean courier granted nothing more.
async fn server(len: u64, books: Arc<Books>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut conn = h2::server::Builder::new()
            .max_send_buffer_size(256 << 20)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        let mut ping_pong = conn.ping_pong().expect("ping_pong taken once");
        let books2 = Arc::clone(&books);
        tokio::spawn(async move {
            // Once nothing moves: PING round trips, one after another.
            loop {
                let before = books2.sent.load(Ordering::SeqCst);
                if ping_pong.ping(h2::Ping::opaque()).await.is_err() {
                    return;
                }
                let still = books2.sent.load(Ordering::SeqCst) == before && before > 0;
                books2
                    .still
                    .send_modify(|n| *n = if still { *n + 1 } else { 0 });
            }
        });
        let zeros = Bytes::from(vec![0u8; 64 << 20]);
        while let Some(Ok((_req, mut respond))) = conn.accept().await {
            let books = Arc::clone(&books);
            let zeros = zeros.clone();
            tokio::spawn(async move {
                let mut send = respond
                    .send_response(http::Response::new(()), false)
                    .unwrap();
                let mut sent = 0u64;
                while sent < len {
                    send.reserve_capacity((len - sent).min(zeros.len() as u64) as usize);
                    let Some(Ok(room)) = std::future::poll_fn(|cx| send.poll_capacity(cx)).await
                    else {
                        return;
                    };
                    books.max_room.fetch_max(room as u64, Ordering::SeqCst);
                    let n = (room as u64).min(len - sent);
                    sent += n;
                    send.send_data(zeros.slice(..n as usize), sent == len)
                        .unwrap();
                    books.sent.fetch_add(n, Ordering::SeqCst);
                }
            });
        }
    });
    addr
}

async fn setup(client: Client, len: u64) -> (Client, String, Arc<Books>) {
    let books = Arc::new(Books::default());
    let upstream = server(len, Arc::clone(&books)).await;
    let front = relay(upstream).await;
    (client, format!("http://{front}/big"), books)
}

/// With the windows these tests watch grow: 2 MiB and 8 MiB (the defaults
/// until issue 30 made them 32 and 64 MiB, which a 64 MiB body barely
/// needs to grow past).
fn h2c() -> courier::ClientBuilder {
    Client::builder()
        .http2_prior_knowledge()
        .http2_initial_stream_window_size(2 << 20)
        .http2_initial_connection_window_size(8 << 20)
}

#[tokio::test]
async fn windows_grow_under_a_reader_that_keeps_up() {
    let (client, url, books) = setup(h2c().build().unwrap(), 64 * MIB).await;
    let body = client.get(url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(body.len() as u64, 64 * MIB);
    let room = books.max_room.load(Ordering::SeqCst);
    assert!(
        room > 4 * MIB,
        "the server never had more than {room} bytes of room"
    );
}

#[tokio::test]
async fn fixed_windows_stay_fixed() {
    let client = h2c().http2_adaptive_window(false).build().unwrap();
    let (client, url, books) = setup(client, 16 * MIB).await;
    let body = client.get(url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(body.len() as u64, 16 * MIB);
    let room = books.max_room.load(Ordering::SeqCst);
    assert!(
        room <= 2 * MIB,
        "{room} bytes of room with a 2 MiB stream window"
    );
}

#[tokio::test]
async fn a_reader_that_stops_holds_no_more_than_it_was_granted() {
    let (client, url, books) = setup(h2c().build().unwrap(), 1 << 40).await;
    let mut res = client.get(url).send().await.unwrap();
    // Read fast until the windows have grown past their initial 2 MiB.
    let mut read = 0u64;
    while books.max_room.load(Ordering::SeqCst) <= 4 * MIB {
        read += res.chunk().await.unwrap().expect("an endless body").len() as u64;
    }
    // Then stop. The connection window grows only by what was read, so it
    // is at most its initial 8 MiB plus that: the server blocks there, and
    // three PING round trips with nothing sent show it stays blocked
    // (the timeout only bounds a failure). A window grown by bytes merely
    // received would let it send up to the ceilings (128 MiB).
    let mut still = books.still.subscribe();
    tokio::time::timeout(Duration::from_secs(30), still.wait_for(|n| *n >= 3))
        .await
        .expect("the server never blocked: the windows kept growing without a reader")
        .unwrap();
    let buffered = books.sent.load(Ordering::SeqCst) - read;
    assert!(
        buffered <= 8 * MIB + read,
        "{buffered} bytes held unread after reading {read}"
    );
    drop(res);
}
