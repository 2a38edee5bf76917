//! Writes that share a system call: what hyper's HTTP/2 (the `h2` crate)
//! writes in one go reaches the socket as one write.
//!
//! Why: h2's encoder holds one DATA frame at a time and flushes it before it
//! takes the next (hyperium/h2#902), so a body goes out one frame per
//! `writev`, 16 KiB each at the client's default SETTINGS_MAX_FRAME_SIZE,
//! where hyper's HTTP/1.1 hands the kernel hundreds of KiB at once. Those
//! system calls were most of the server's CPU, and on a machine the server
//! shares with its client they held every HTTP/2 client to about 0.9 × the
//! server's HTTP/1.1 (the README's "Long links" has the figures).
//!
//! So bytes written are copied into a buffer, and a flush right after new
//! bytes is deferred: the connection's task is woken and polled again at
//! once, and h2 either writes its next frame (which joins the buffer) or,
//! with nothing more to send, flushes again, and that flush writes the
//! buffer out. A buffer that would pass [`BATCH`] is written out first.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};

/// Bytes past which the buffer is written out before it takes more.
const BATCH: usize = 256 * 1024;

/// A buffer larger than this is freed once written out with nothing new
/// behind it, so an idle connection holds none of it.
const KEEP: usize = 64 * 1024;

/// `io` with its writes coalesced, or passed through as they come.
pub(crate) struct Coalesced<W> {
    io: W,
    on: bool,
    buf: Vec<u8>,
    /// Bytes of `buf` already written to `io`.
    written: usize,
    /// Bytes came in since the last flush.
    fresh: bool,
}

impl<W> Coalesced<W> {
    /// Writes to `io` coalesced when `on`, else passed through.
    pub(crate) fn new(io: W, on: bool) -> Self {
        Self {
            io,
            on,
            buf: Vec::new(),
            written: 0,
            fresh: false,
        }
    }

    pub(crate) fn get_ref(&self) -> &W {
        &self.io
    }

    pub(crate) fn get_mut(&mut self) -> &mut W {
        &mut self.io
    }

    /// Bytes were taken that have not reached `io` yet.
    pub(crate) fn holds(&self) -> bool {
        self.written < self.buf.len()
    }
}

impl<W: Write + Unpin> Coalesced<W> {
    /// Writes what is held to `io`.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.holds() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.buf.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: Read + Unpin> Read for Coalesced<W> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<W: Write + Unpin> Write for Coalesced<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    /// Takes every slice (all of them, or what `io` took when they are a
    /// batch on their own with nothing held).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.on {
            return Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        }
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if this.buf.len() - this.written + len > BATCH {
            ready!(this.poll_drain(cx))?;
        }
        if !this.holds() && len >= BATCH {
            return Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            this.buf.extend_from_slice(b);
        }
        this.fresh = true;
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        self.on || self.io.is_write_vectored()
    }

    /// Deferred right after new bytes (see the module documentation);
    /// otherwise what is held is written out and `io` flushed.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if std::mem::take(&mut this.fresh) && this.holds() {
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_drain(cx))?;
        if this.buf.capacity() > KEEP {
            this.buf = Vec::new();
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::{Wake, Waker};

    /// A socket that records each write it takes; it takes `room` bytes in
    /// all, then is full.
    #[derive(Clone, Default)]
    struct Socket {
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
        room: Option<usize>,
    }

    impl Socket {
        fn writes(&self) -> Vec<usize> {
            self.writes.lock().unwrap().iter().map(Vec::len).collect()
        }
    }

    impl Write for Socket {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = self.room.map_or(buf.len(), |r| r.min(buf.len()));
            if n == 0 {
                return Poll::Pending;
            }
            if let Some(r) = self.room.as_mut() {
                *r -= n;
            }
            self.writes.lock().unwrap().push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One DATA frame as h2 writes it: its 9-byte head and payload in one
    /// vectored write, then a flush.
    fn frame(
        io: &mut Coalesced<Socket>,
        cx: &mut Context<'_>,
        payload: &[u8],
    ) -> Poll<io::Result<()>> {
        let head = [0u8; 9];
        let bufs = [IoSlice::new(&head), IoSlice::new(payload)];
        let n = ready!(Pin::new(&mut *io).poll_write_vectored(cx, &bufs))?;
        assert_eq!(n, head.len() + payload.len(), "a frame taken whole");
        Pin::new(io).poll_flush(cx)
    }

    #[test]
    fn frames_written_in_one_go_reach_the_socket_in_one_write() {
        let socket = Socket::default();
        let mut io = Coalesced::new(socket.clone(), true);
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let payload = vec![7u8; 16 * 1024];
        for _ in 0..10 {
            assert!(frame(&mut io, &mut cx, &payload).is_ready());
        }
        assert!(socket.writes().is_empty(), "{:?}", socket.writes());
        // Each deferred flush asked for the task to run again, when a flush
        // with nothing new writes them.
        assert_eq!(wakes.0.load(Ordering::Relaxed), 10);
        assert!(io.holds());
        assert!(Pin::new(&mut io).poll_flush(&mut cx).is_ready());
        assert_eq!(socket.writes(), [10 * (9 + payload.len())]);
        assert!(!io.holds());
    }

    #[test]
    fn a_batch_is_written_out_before_the_buffer_takes_more() {
        let socket = Socket::default();
        let mut io = Coalesced::new(socket.clone(), true);
        let mut cx = Context::from_waker(Waker::noop());
        let payload = vec![7u8; 16 * 1024];
        for _ in 0..100 {
            assert!(frame(&mut io, &mut cx, &payload).is_ready());
        }
        assert!(Pin::new(&mut io).poll_flush(&mut cx).is_ready());
        let writes = socket.writes();
        let frame_len = 9 + payload.len();
        assert_eq!(writes.iter().sum::<usize>(), 100 * frame_len);
        assert!(writes.iter().all(|&n| n <= BATCH), "{writes:?}");
        // As many whole frames as a batch holds, each write.
        assert_eq!(writes.len(), 100usize.div_ceil(BATCH / frame_len));
    }

    #[test]
    fn a_full_socket_holds_the_writer_back_with_at_most_a_batch_held() {
        let socket = Socket {
            room: Some(0),
            ..Socket::default()
        };
        let mut io = Coalesced::new(socket.clone(), true);
        let mut cx = Context::from_waker(Waker::noop());
        let payload = vec![7u8; 16 * 1024];
        let mut taken = 0;
        while frame(&mut io, &mut cx, &payload).is_ready() {
            taken += 1;
            assert!(taken < 100, "the writer was never held back");
        }
        assert!(io.buf.len() <= BATCH, "{} bytes held", io.buf.len());
        assert!(Pin::new(&mut io).poll_flush(&mut cx).is_pending());
        assert!(Pin::new(&mut io).poll_flush(&mut cx).is_pending());
    }

    #[test]
    fn writes_pass_through_when_off() {
        let socket = Socket::default();
        let mut io = Coalesced::new(socket.clone(), false);
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..3 {
            assert!(Pin::new(&mut io).poll_write(&mut cx, b"abc").is_ready());
            assert!(Pin::new(&mut io).poll_flush(&mut cx).is_ready());
        }
        assert_eq!(socket.writes(), [3, 3, 3]);
    }

    /// A socket end over an in-memory pipe that counts the writes reaching it.
    struct Counted {
        io: hyper_util::rt::TokioIo<tokio::io::DuplexStream>,
        writes: Arc<AtomicUsize>,
    }

    impl Read for Counted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_read(cx, buf)
        }
    }

    impl Write for Counted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.writes.fetch_add(1, Ordering::Relaxed);
            Pin::new(&mut self.io).poll_write(cx, buf)
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            self.writes.fetch_add(1, Ordering::Relaxed);
            Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_shutdown(cx)
        }
    }

    /// hyper's HTTP/2 server sends a 4 MiB body in 16 KiB DATA frames, one
    /// write each (256 writes); coalesced, a few dozen at most.
    #[tokio::test]
    async fn hypers_http2_body_goes_out_in_batches_not_frame_by_frame() {
        const LEN: usize = 4 << 20;
        let (near, far) = tokio::io::duplex(16 << 20);
        let writes = Arc::new(AtomicUsize::new(0));
        let io = Coalesced::new(
            Counted {
                io: hyper_util::rt::TokioIo::new(near),
                writes: Arc::clone(&writes),
            },
            true,
        );
        let service = hyper::service::service_fn(|_req| async {
            let body = crate::body::ResponseBody::patterned(
                bytes::Bytes::new(),
                LEN as u64,
                bytes::Bytes::new(),
                true,
            );
            Ok::<_, std::convert::Infallible>(http::Response::new(body))
        });
        let server = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(io, service);
        tokio::spawn(server);
        let (mut client, conn) = h2::client::Builder::new()
            .initial_window_size(8 << 20)
            .initial_connection_window_size(8 << 20)
            .handshake::<_, bytes::Bytes>(far)
            .await
            .unwrap();
        tokio::spawn(conn);
        let request = http::Request::get("http://test.invalid/").body(()).unwrap();
        let (response, _) = client.send_request(request, true).unwrap();
        let fetched = async {
            let mut body = response.await.unwrap().into_body();
            let mut got = Vec::with_capacity(LEN);
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                let _ = body.flow_control().release_capacity(chunk.len());
                got.extend_from_slice(&chunk);
            }
            got
        };
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), fetched)
            .await
            .expect("the body within 10 s");
        assert_eq!(got.len(), LEN);
        let pattern = crate::body::BYTES_ALPHABET;
        assert!(got.iter().enumerate().all(|(i, &b)| b == pattern[i % 64]));
        let writes = writes.load(Ordering::Relaxed);
        assert!(writes <= 40, "{writes} writes for {LEN} bytes");
    }
}
