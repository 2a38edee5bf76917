//! Window growth ([`super::grow`]) end to end on virtual time: courier's
//! connection driver, a link that delays each direction by 25 ms, and a
//! scripted server that sends a body as fast as the windows courier grants
//! allow, and keeps the books of what it was granted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::time::Instant;

use super::conn::{Head, Local, Outgoing, Shared};
use super::driver::{self, Handle, KeepAliveConfig};
use super::frame::{self, setting, Frame};
use super::grow::Adaptive;
use super::signals::Signals;
use super::stream::{RecvBody, StreamRef};

const MIB: u32 = 1 << 20;
const ONE_WAY: Duration = Duration::from_millis(25);
const ADAPTIVE: Option<Adaptive> = Some(Adaptive {
    max_stream_window: 32 * MIB,
    max_connection_window: 64 * MIB,
});

/// What the server saw.
#[derive(Debug, Default)]
struct Books {
    /// Body bytes sent.
    sent: u64,
    /// The stream window of courier's latest SETTINGS.
    stream_window: u32,
    /// The largest room (both windows) the server ever had to send in.
    max_room: i64,
    /// PINGs courier sent.
    pings: u32,
}

/// A server that answers stream 1 with `body` bytes (none, and no head, if
/// `body` is `None`), as fast as courier's windows allow.
async fn serve(io: DuplexStream, body: Option<u64>, books: Arc<Mutex<Books>>) {
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut preface = [0; 24];
    rd.read_exact(&mut preface).await.unwrap();
    let mut out = BytesMut::new();
    frame::encode_settings(&mut out, &[]);
    let (mut conn, mut stream, mut initial) = (65_535i64, 65_535i64, 65_535i64);
    let mut open = None;
    let mut rbuf = BytesMut::new();
    let zeros = vec![0u8; 16 * 1024];
    loop {
        if let (Some(id), Some(len)) = (open, body) {
            let mut b = books.lock().unwrap();
            b.max_room = b.max_room.max(conn.min(stream));
            while b.sent < len && conn > 0 && stream > 0 {
                let n = (len - b.sent).min(zeros.len() as u64) as i64;
                let n = n.min(conn).min(stream) as usize;
                b.sent += n as u64;
                frame::encode_data(&mut out, id, &zeros[..n], b.sent == len);
                conn -= n as i64;
                stream -= n as i64;
            }
        }
        if !out.is_empty() && wr.write_all(&out.split()).await.is_err() {
            return;
        }
        match rd.read_buf(&mut rbuf).await {
            Ok(1..) => {}
            _ => return,
        }
        while rbuf.len() >= frame::HEADER_LEN {
            let head = frame::Head::parse(&rbuf[..frame::HEADER_LEN].try_into().unwrap());
            if rbuf.len() < frame::HEADER_LEN + head.len as usize {
                break;
            }
            rbuf.advance(frame::HEADER_LEN);
            let payload = rbuf.split_to(head.len as usize).freeze();
            match frame::decode(head, payload).unwrap() {
                Frame::Settings {
                    ack: false,
                    settings,
                } => {
                    for (id, value) in settings.iter() {
                        if id == setting::INITIAL_WINDOW_SIZE {
                            stream += i64::from(value) - initial;
                            initial = i64::from(value);
                            books.lock().unwrap().stream_window = value;
                        }
                    }
                    frame::encode_settings_ack(&mut out);
                }
                Frame::Headers { stream: id, .. } if body.is_some() => {
                    open = Some(id);
                    // :status 200 (static table entry 8).
                    frame::encode_headers(&mut out, id, &[0x88], false, 16_384);
                }
                Frame::WindowUpdate {
                    stream: 0,
                    increment,
                } => conn += i64::from(increment),
                Frame::WindowUpdate { increment, .. } => stream += i64::from(increment),
                Frame::Ping {
                    ack: false,
                    payload,
                } => {
                    books.lock().unwrap().pings += 1;
                    frame::encode_ping(&mut out, true, payload);
                }
                _ => {}
            }
        }
    }
}

/// A GET on a fresh connection through the delayed link; its body once
/// the head arrived (or `None` if the server never answers).
struct Exchange {
    shared: Arc<Shared>,
    books: Arc<Mutex<Books>>,
    body: Option<RecvBody>,
    /// The request still waiting for its head.
    _waiting: Option<StreamRef>,
    _handle: Handle,
}

async fn get(adaptive: Option<Adaptive>, body: Option<u64>) -> Exchange {
    let (client, near) = tokio::io::duplex(1 << 20);
    let (far, server) = tokio::io::duplex(1 << 20);
    let (near_rd, near_wr) = tokio::io::split(near);
    let (far_rd, far_wr) = tokio::io::split(far);
    let link = delay_proxy::Link::delay(ONE_WAY);
    tokio::spawn(delay_proxy::delay(near_rd, far_wr, link));
    tokio::spawn(delay_proxy::delay(far_rd, near_wr, link));
    let books = Arc::new(Mutex::new(Books::default()));
    tokio::spawn(serve(server, body, Arc::clone(&books)));
    let local = Local {
        stream_window: 2 * MIB,
        conn_window: 8 * MIB,
        max_header_list: 16 * 1024,
    };
    let signals = Arc::new(Signals::new(100));
    let (handle, driver) =
        driver::handshake_with(client, local, adaptive, KeepAliveConfig::OFF, 100, signals);
    tokio::spawn(driver);
    let headers = http::HeaderMap::new();
    let head = Head {
        method: &http::Method::GET,
        scheme: &http::uri::Scheme::HTTP,
        authority: &http::uri::Authority::from_static("test.invalid"),
        path: "/big",
        headers: &headers,
        defaults: &headers,
        content_length: None,
    };
    let shared = Arc::clone(&handle.shared);
    let (key, id) =
        std::future::poll_fn(|cx| shared.lock().poll_open(cx, &head, &mut Outgoing::Empty))
            .await
            .unwrap();
    let mut stream = StreamRef::new(Arc::clone(&shared), key, id);
    let (body, waiting) = match body {
        Some(_) => {
            let (_, end) = std::future::poll_fn(|cx| stream.poll_head(cx))
                .await
                .unwrap();
            (Some(RecvBody::new(stream, end)), None)
        }
        None => (None, Some(stream)),
    };
    Exchange {
        shared,
        books,
        body,
        _waiting: waiting,
        _handle: handle,
    }
}

/// Reads from `body` until `stop` says so or the body ends; bytes read.
async fn read_until(body: &mut RecvBody, mut stop: impl FnMut(u64) -> bool) -> u64 {
    let mut read = 0;
    while !stop(read) {
        match std::future::poll_fn(|cx| body.poll_frame(cx)).await {
            Some(frame) => read += frame.unwrap().into_data().map_or(0, |d| d.len() as u64),
            None => break,
        }
    }
    read
}

/// Downloads `len` bytes; how long it took (virtual time) and the books.
async fn download(adaptive: Option<Adaptive>, len: u64) -> (Duration, Books) {
    let started = Instant::now();
    let mut x = get(adaptive, Some(len)).await;
    let read = read_until(x.body.as_mut().unwrap(), |_| false).await;
    assert_eq!(read, len);
    let books = std::mem::take(&mut *x.books.lock().unwrap());
    (started.elapsed(), books)
}

#[tokio::test(start_paused = true)]
async fn windows_grow_under_a_reader_that_keeps_up() {
    let (fixed, fixed_books) = download(None, 64 * u64::from(MIB)).await;
    let (adaptive, books) = download(ADAPTIVE, 64 * u64::from(MIB)).await;
    // Fixed: 2 MiB per 50 ms round trip, some 32 round trips.
    assert!(
        fixed >= Duration::from_millis(1600),
        "fixed windows took {fixed:?}"
    );
    assert_eq!(fixed_books.pings, 0, "no BDP PINGs with fixed windows");
    assert_eq!(fixed_books.max_room, i64::from(2 * MIB));
    // Adaptive: 2, 4, 8, 16 MiB a round trip, and more.
    assert!(books.stream_window >= 16 * MIB, "{books:?}");
    assert!(books.max_room > i64::from(8 * MIB), "{books:?}");
    assert!(
        adaptive * 3 < fixed,
        "adaptive {adaptive:?}, fixed {fixed:?}"
    );
    assert!(books.pings <= 12, "{books:?}");
}

#[tokio::test(start_paused = true)]
async fn a_reader_that_stops_buffers_no_more_than_it_was_granted_while_reading() {
    let mut x = get(ADAPTIVE, Some(1 << 40)).await;
    let shared = Arc::clone(&x.shared);
    let grown = |_| shared.lock().growth.conn_advertised() > 8 * MIB;
    let read = read_until(x.body.as_mut().unwrap(), grown).await;
    let advertised = x.shared.lock().growth.conn_advertised();
    assert!(
        advertised > 8 * MIB,
        "the connection window grew: {advertised}"
    );
    // It grew by no more than was read (the server's books alone keep
    // `buffered <= advertised` below).
    assert!(
        u64::from(advertised) <= u64::from(8 * MIB) + read,
        "{advertised} advertised after reading {read}"
    );
    // The reader stops: 200 round trips go by (virtual time).
    tokio::time::sleep(Duration::from_secs(10)).await;
    let sent = x.books.lock().unwrap().sent;
    let buffered = sent - read;
    assert!(
        buffered <= u64::from(advertised),
        "{buffered} bytes buffered, {advertised} advertised when reading stopped"
    );
    assert_eq!(x.shared.lock().growth.conn_advertised(), advertised);
    // And the server is held there: nothing more arrives.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(x.books.lock().unwrap().sent, sent);
}

#[tokio::test(start_paused = true)]
async fn a_stream_nobody_reads_keeps_its_initial_window() {
    let x = get(ADAPTIVE, Some(1 << 40)).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let books = x.books.lock().unwrap();
    assert_eq!(books.sent, u64::from(2 * MIB), "{books:?}");
    assert_eq!(
        books.stream_window,
        2 * MIB,
        "no SETTINGS grew it: {books:?}"
    );
    assert_eq!(x.shared.lock().growth.conn_advertised(), 8 * MIB);
}

#[tokio::test(start_paused = true)]
async fn a_connection_whose_streams_wait_sends_no_bdp_pings() {
    let x = get(ADAPTIVE, None).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(x.books.lock().unwrap().pings, 0);
}

/// A stream window grows to at most half the connection's ceiling: the
/// raised window applies to every stream, and one nobody reads must not
/// hold the whole connection window (with equal ceilings, it could).
#[test]
fn a_stream_window_grows_to_half_the_connection_ceiling_at_most() {
    let local = Local {
        stream_window: 2 << 20,
        conn_window: 8 << 20,
        max_header_list: 16 << 10,
    };
    let equal = Adaptive {
        max_stream_window: 128 << 20,
        max_connection_window: 128 << 20,
    };
    let g = super::grow::Growth::new(&local, Some(equal), Instant::now());
    assert_eq!(g.stream_ceiling(), 64 << 20);
    let defaults = crate::config::Config::default().http2;
    let adaptive = Adaptive {
        max_stream_window: defaults.max_stream_window_size,
        max_connection_window: defaults.max_connection_window_size,
    };
    let g = super::grow::Growth::new(&local, Some(adaptive), Instant::now());
    assert_eq!(g.stream_ceiling(), defaults.max_stream_window_size);
}
