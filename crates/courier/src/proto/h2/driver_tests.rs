//! The driver's tests: writing, reading ahead, errors and their GOAWAY, the
//! server's SETTINGS deadline.

use super::*;
use std::time::Duration;
use tokio::io::ReadBuf;
use tokio::sync::Notify;

/// courier's settings at the RFC's default windows.
const DEFAULT_LOCAL: Local = Local {
    stream_window: frame::DEFAULT_WINDOW,
    conn_window: frame::DEFAULT_WINDOW,
    max_header_list: 16 * 1024,
};

/// A connection over `io` advertising `local`, without keep-alive, that
/// assumes 100 streams until the server's SETTINGS.
fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    io: S,
    local: Local,
) -> (Handle, Driver<S>, Arc<Signals>) {
    let signals = Arc::new(Signals::new(100));
    let (handle, driver) = handshake(io, local, KeepAliveConfig::OFF, 100, Arc::clone(&signals));
    (handle, driver, signals)
}

/// A connection whose first flush cannot complete (a TLS stream's, with
/// the socket full): what was written stays buffered until a later flush.
struct SlowFlush {
    flushes: usize,
    unflushed: bool,
    flushed: Arc<Notify>,
}

impl AsyncRead for SlowFlush {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Pending
    }
}

impl AsyncWrite for SlowFlush {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.unflushed = true;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.flushes += 1;
        if self.flushes == 1 {
            // The socket has room again at once.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if std::mem::take(&mut self.unflushed) {
            self.flushed.notify_one();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_flush_left_pending_is_finished_with_nothing_more_to_write() {
    let flushed = Arc::new(Notify::new());
    let io = SlowFlush {
        flushes: 0,
        unflushed: false,
        flushed: Arc::clone(&flushed),
    };
    let (handle, driver, _) = connect(io, DEFAULT_LOCAL);
    let task = tokio::spawn(driver);
    // The preface and SETTINGS: written, then flushed on a later run.
    tokio::time::timeout(Duration::from_secs(5), flushed.notified())
        .await
        .expect("the preface was written but never flushed");
    drop(handle);
    task.abort();
}

/// A fast download is read a few reads ahead of its reader, not the
/// whole socket at once: read until the socket was empty, the driver
/// copied megabytes into buffers of its own before the reader ran, and
/// the allocator faulted them in again for every download.
#[tokio::test]
async fn a_fast_download_is_read_a_few_reads_ahead_of_its_reader() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const MIB: u32 = 1 << 20;
    let (near, far) = tokio::io::duplex(16 << 20);
    let local = Local {
        stream_window: 8 * MIB,
        conn_window: 16 * MIB,
        max_header_list: 16 * 1024,
    };
    let (handle, driver, _) = connect(near, local);
    let (key, id) = handle.shared.open_get().await.expect("opened");
    tokio::spawn(driver);
    // The server reads the request's HEADERS, then sends its answer
    // and 4 MiB of body in one write: all of it is in the socket before
    // the driver reads any.
    let (mut rd, mut wr) = tokio::io::split(far);
    let mut seen = BytesMut::new();
    let has_headers = |seen: &[u8]| {
        let mut at = frame::PREFACE.len();
        while let Some(head) = seen.get(at..at + frame::HEADER_LEN) {
            let head = frame::Head::parse(head.try_into().expect("9 bytes"));
            if head.kind == frame::kind::HEADERS {
                return true;
            }
            at += frame::HEADER_LEN + head.len as usize;
        }
        false
    };
    while !has_headers(&seen) {
        rd.read_buf(&mut seen).await.unwrap();
    }
    let mut out = BytesMut::new();
    frame::encode_settings(&mut out, &[]);
    frame::encode_headers(&mut out, id, &[0x88], false, 16_384);
    let chunk = vec![0u8; 16 * 1024];
    for _ in 0..256 {
        frame::encode_data(&mut out, id, &chunk, false);
    }
    // The reader is a task of its own, as a request's is (the test's
    // own future is polled only between batches of tasks).
    let (shared, shared2) = (Arc::clone(&handle.shared), Arc::clone(&handle.shared));
    let reader = tokio::spawn(async move {
        let mut stream = crate::proto::h2::stream::StreamRef::new(shared, key, id);
        std::future::poll_fn(|cx| stream.poll_head(cx))
            .await
            .expect("the head");
        let available = shared2.lock().recv.available();
        16 * MIB - available
    });
    wr.write_all(&out).await.unwrap();
    let taken = reader.await.unwrap();
    assert!(
        taken <= MIB,
        "{taken} bytes of body read off the socket before its reader ran"
    );
}

/// A server whose SETTINGS ACK carries a payload (a connection error,
/// FRAME_SIZE_ERROR): starts the driver over `near` and sends that from
/// `far`; returns the driver's task and `far`'s halves.
async fn connection_error(
    near: tokio::io::DuplexStream,
    far: tokio::io::DuplexStream,
) -> (
    tokio::task::JoinHandle<()>,
    Handle,
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
) {
    use tokio::io::AsyncWriteExt;

    let (handle, driver, _) = connect(near, DEFAULT_LOCAL);
    let task = tokio::spawn(driver);
    let (rd, mut wr) = tokio::io::split(far);
    let mut out = BytesMut::new();
    frame::encode_settings(&mut out, &[]);
    // SETTINGS with ACK and a 6-byte payload.
    out.extend_from_slice(&[0, 0, 6, frame::kind::SETTINGS, frame::ACK, 0, 0, 0, 0]);
    out.extend_from_slice(&[0; 6]);
    wr.write_all(&out).await.unwrap();
    (task, handle, rd, wr)
}

/// The error code of the GOAWAY among the frames the client wrote.
fn goaway_code(written: &[u8]) -> Option<u32> {
    let mut at = frame::PREFACE.len();
    while let Some(head) = written.get(at..at + frame::HEADER_LEN) {
        let head = frame::Head::parse(head.try_into().expect("9 bytes"));
        let payload = at + frame::HEADER_LEN;
        if head.kind == frame::kind::GOAWAY {
            let code = written.get(payload + 4..payload + 8)?;
            return Some(u32::from_be_bytes(code.try_into().expect("4 bytes")));
        }
        at = payload + head.len as usize;
    }
    None
}

/// Writes a byte to the client every 10 ms until the client's side is
/// gone; how long that took.
async fn until_closed(mut wr: tokio::io::WriteHalf<tokio::io::DuplexStream>) -> Duration {
    use tokio::io::AsyncWriteExt;

    let started = tokio::time::Instant::now();
    while wr.write_all(b"x").await.is_ok() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

/// After its GOAWAY for an error the connection shuts its side down and
/// reads on until the peer closes: closed at once, with the peer's bytes
/// unread, a socket is reset, and the reset may erase the GOAWAY before
/// the peer reads it (h2spec read "connection reset by peer" about one
/// run in ten). The driver ends meanwhile: the pool's books do not wait
/// for the peer.
#[tokio::test(start_paused = true)]
async fn after_an_error_goaway_the_connection_reads_on_until_the_peer_closes() {
    use tokio::io::AsyncReadExt;

    let (near, far) = tokio::io::duplex(64 * 1024);
    let (task, _handle, mut rd, wr) = connection_error(near, far).await;
    let mut written = Vec::new();
    rd.read_to_end(&mut written).await.unwrap();
    assert_eq!(goaway_code(&written), Some(Reason::FRAME_SIZE_ERROR.0));
    task.await.unwrap();
    // The peer's bytes are still read, 20 ms after the driver ended.
    let writing = tokio::spawn(until_closed(wr));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!writing.is_finished(), "closed before the peer did");
    drop(rd);
    writing.abort();
}

/// A peer that never closes holds the socket for the linger time, no longer.
#[tokio::test(start_paused = true)]
async fn a_peer_that_never_closes_is_left_after_the_linger_time() {
    use tokio::io::AsyncReadExt;

    let (near, far) = tokio::io::duplex(64 * 1024);
    let (task, _handle, mut rd, wr) = connection_error(near, far).await;
    let mut written = Vec::new();
    rd.read_to_end(&mut written).await.unwrap();
    task.await.unwrap();
    let lingered = until_closed(wr).await;
    let linger = super::super::linger::LINGER;
    assert!(
        lingered + Duration::from_millis(20) >= linger
            && lingered < linger + Duration::from_millis(20),
        "{lingered:?}"
    );
}

/// A peer that floods after the GOAWAY is read for a bounded number of
/// bytes, not for the linger time: lingering on a flood cost the client
/// 500 ms of reading at full speed.
#[tokio::test(start_paused = true)]
async fn a_peer_that_floods_after_the_goaway_is_left_after_the_linger_bytes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (near, far) = tokio::io::duplex(64 * 1024);
    let (task, _handle, mut rd, mut wr) = connection_error(near, far).await;
    let mut written = Vec::new();
    rd.read_to_end(&mut written).await.unwrap();
    task.await.unwrap();
    let started = tokio::time::Instant::now();
    let chunk = [0u8; 16 * 1024];
    let mut sent = 0;
    // Writes as fast as the client reads, with no time passing.
    while wr.write_all(&chunk).await.is_ok() {
        sent += chunk.len();
        assert!(sent <= 4 * 1024 * 1024, "still read after {sent} bytes");
    }
    let linger = super::super::linger::LINGER_BYTES;
    assert!(sent >= linger - 64 * 1024, "left after {sent} bytes");
    assert!(
        started.elapsed() < Duration::from_millis(10),
        "{:?}",
        started.elapsed()
    );
}

fn silent_server_connection(
    near: tokio::io::DuplexStream,
    deadline: tokio::time::Instant,
) -> Handle {
    let signals = Arc::new(Signals::new(100));
    let (handle, driver) = handshake_with(
        near,
        DEFAULT_LOCAL,
        None,
        KeepAliveConfig::OFF,
        100,
        signals,
        Some(deadline),
    );
    tokio::spawn(driver);
    handle
}

/// A request goes out before the server's SETTINGS; a server that never
/// sends them fails it at the deadline (the pool's connect timeout), as
/// a connection never established, not at the request's own deadline.
#[tokio::test(start_paused = true)]
async fn streams_fail_at_the_deadline_when_the_servers_settings_never_come() {
    let (near, _far) = tokio::io::duplex(64 * 1024);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let handle = silent_server_connection(near, deadline);
    let (key, id) = handle.shared.open_get().await.expect("opened at once");
    let mut stream = crate::proto::h2::stream::StreamRef::new(Arc::clone(&handle.shared), key, id);
    let failed = tokio::time::timeout(
        Duration::from_secs(60),
        std::future::poll_fn(|cx| stream.poll_head(cx)),
    )
    .await
    .expect("failed by the deadline")
    .expect_err("no answer without SETTINGS");
    assert!(matches!(failed, StreamError::NoSettings), "{failed}");
    assert!(tokio::time::Instant::now() >= deadline, "failed early");
}

#[tokio::test(start_paused = true)]
async fn settings_in_time_disarm_the_deadline() {
    use tokio::io::AsyncWriteExt;

    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let handle = silent_server_connection(near, deadline);
    let (key, id) = handle.shared.open_get().await.expect("opened at once");
    tokio::time::sleep(Duration::from_secs(9)).await;
    let mut settings = BytesMut::new();
    frame::encode_settings(&mut settings, &[]);
    far.write_all(&settings).await.unwrap();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let st = handle.shared.lock();
    assert!(!st.is_failed(), "{:?}", st.failure());
    assert!(st.signals.settings_received());
    drop(st);
    let mut stream = crate::proto::h2::stream::StreamRef::new(Arc::clone(&handle.shared), key, id);
    let pending = stream.poll_head(&mut Context::from_waker(Waker::noop()));
    assert!(pending.is_pending(), "the stream waits for its answer");
}

#[tokio::test]
async fn a_request_not_yet_written_when_the_connection_fails_may_be_sent_again() {
    use tokio::io::AsyncWriteExt;

    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let (handle, driver, signals) = connect(near, DEFAULT_LOCAL);
    tokio::spawn(driver);
    let mut settings = BytesMut::new();
    frame::encode_settings(&mut settings, &[]);
    far.write_all(&settings).await.unwrap();
    // The driver reads them when this one-thread runtime is yielded to.
    for _ in 0..100 {
        if signals.settings_received() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(signals.settings_received());
    // The server closes while a request is queued: on this one-thread
    // runtime the driver runs only once the test waits, and it reads
    // the end of the connection before it writes the request.
    far.shutdown().await.unwrap();
    drop(far);
    let (key, id) = handle.shared.open_get().await.expect("opened");
    let mut stream = crate::proto::h2::stream::StreamRef::new(Arc::clone(&handle.shared), key, id);
    let failed = tokio::time::timeout(
        Duration::from_secs(5),
        std::future::poll_fn(|cx| stream.poll_head(cx)),
    )
    .await
    .expect("the stream fails")
    .expect_err("no response on a closed connection");
    assert!(failed.is_unprocessed(), "{failed}");
}

/// A connection whose streams wait for their answers, with nothing to
/// read, holds no read buffer: the driver's read at its run after their
/// HEADERS found the socket empty, and allocating before reading, it kept
/// 16 KiB while answers were due (164 B per long poll at 100 streams a
/// connection). What does come is read, into a buffer made for it.
#[tokio::test]
async fn a_quiet_connection_with_streams_waiting_holds_no_read_buffer() {
    use tokio::io::AsyncWriteExt;

    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let (handle, mut driver, signals) = connect(near, DEFAULT_LOCAL);
    handle.shared.open_get().await.expect("opened");
    let mut cx = Context::from_waker(Waker::noop());
    // Twice: the first poll only defers the run (see `Driver::poll`).
    for _ in 0..2 {
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
    }
    assert_eq!(
        driver.rbuf.held(),
        0,
        "a read that found nothing took a buffer"
    );
    let mut settings = BytesMut::new();
    frame::encode_settings(&mut settings, &[]);
    far.write_all(&settings).await.unwrap();
    for _ in 0..2 {
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
    }
    assert!(
        signals.settings_received(),
        "the server's SETTINGS were read"
    );
}

/// A connection whose streams wait while only connection-level frames come
/// (the server's SETTINGS, and the ACKs of keep-alive PINGs) holds no read
/// buffer once the socket is empty again: allocated for the PING's ACK and
/// kept because responses were due, it cost a long poll its share of
/// 16 KiB for as long as it waited. A read that brings a stream's frame
/// keeps the buffer (a busy connection reads again soon).
#[tokio::test]
async fn a_connection_that_only_sees_ping_acks_holds_no_read_buffer() {
    use tokio::io::AsyncWriteExt;

    let (near, mut far) = tokio::io::duplex(64 * 1024);
    let (handle, mut driver, signals) = connect(near, DEFAULT_LOCAL);
    handle.shared.open_get().await.expect("opened");
    let mut cx = Context::from_waker(Waker::noop());
    let mut run = |driver: &mut Driver<_>| {
        // Twice: the first poll only defers the run (see `Driver::poll`).
        for _ in 0..2 {
            assert!(Pin::new(&mut *driver).poll(&mut cx).is_pending());
        }
    };
    run(&mut driver);
    let mut frames = BytesMut::new();
    frame::encode_settings(&mut frames, &[]);
    far.write_all(&frames).await.unwrap();
    run(&mut driver);
    assert!(signals.settings_received());
    assert_eq!(driver.rbuf.held(), 0, "kept a buffer after the SETTINGS");
    for ack in 0..3 {
        let mut ping = BytesMut::new();
        frame::encode_ping(&mut ping, true, [ack; 8]);
        far.write_all(&ping).await.unwrap();
        run(&mut driver);
        assert_eq!(
            driver.rbuf.held(),
            0,
            "kept a buffer after PING ACK {ack} with a stream waiting"
        );
    }
    // A stream's frame (a WINDOW_UPDATE for the waiting stream) keeps it.
    let mut update = BytesMut::new();
    frame::encode_window_update(&mut update, 1, 100);
    far.write_all(&update).await.unwrap();
    run(&mut driver);
    assert_ne!(driver.rbuf.held(), 0, "a stream's frame let the buffer go");
    // A run that reads nothing (woken to write another request's HEADERS)
    // keeps it: a busy connection let its buffer go between its reads, and
    // made one per burst (2.12 -> 2.16 allocations per request over h2c).
    handle.shared.open_get().await.expect("opened");
    for _ in 0..2 {
        assert!(Pin::new(&mut driver).poll(&mut cx).is_pending());
    }
    assert_ne!(
        driver.rbuf.held(),
        0,
        "a run that read nothing let the buffer go"
    );
}
