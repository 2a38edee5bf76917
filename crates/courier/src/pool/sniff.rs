//! Watches the HTTP/2 frames a server sends, without touching them.
//!
//! The HTTP/2 connection runs in a task of its own, and h2 does not tell its
//! user the server's SETTINGS_MAX_CONCURRENT_STREAMS as it changes, when the
//! first SETTINGS frame arrived (until then the limit is a guess), or when a
//! GOAWAY came in (after which the connection must take no new streams).
//! Reading frame headers, and the payload of SETTINGS frames, as the bytes flow
//! past answers all three for the cost of a few comparisons per read.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

const FRAME_HEADER: usize = 9;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;
const SETTING_ENTRY: usize = 6;
const MAX_CONCURRENT_STREAMS: u16 = 0x3;

/// What the watcher has seen, shared with the pool.
#[derive(Debug)]
pub(crate) struct Signals {
    settings: AtomicBool,
    goaway: AtomicBool,
    closed: AtomicBool,
    max_streams: AtomicUsize,
    /// The pool's count of streams open on the connection, mirrored for the
    /// keep-alive PINGs in the connection's driver.
    open_streams: AtomicUsize,
    changed: Notify,
}

impl Signals {
    /// `assumed_max_streams` stands until a SETTINGS frame names the limit;
    /// a server whose SETTINGS omit it keeps that value too, as h2 does.
    pub(crate) fn new(assumed_max_streams: usize) -> Signals {
        Signals {
            settings: AtomicBool::new(false),
            goaway: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            max_streams: AtomicUsize::new(assumed_max_streams),
            open_streams: AtomicUsize::new(0),
            changed: Notify::new(),
        }
    }

    /// The server's first SETTINGS frame has been read in full.
    pub(crate) fn settings_received(&self) -> bool {
        self.settings.load(Ordering::Acquire)
    }

    /// The server sent GOAWAY: no new streams on this connection.
    pub(crate) fn goaway_received(&self) -> bool {
        self.goaway.load(Ordering::Acquire)
    }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(crate) fn max_streams(&self) -> usize {
        self.max_streams.load(Ordering::Acquire)
    }

    /// Waits for the server's first SETTINGS; false if the connection ended first.
    pub(crate) async fn wait_for_settings(&self) -> bool {
        loop {
            let changed = self.changed.notified();
            if self.settings_received() {
                return true;
            }
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            changed.await;
        }
    }

    /// The connection has ended (its bytes stopped, or its driver returned).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    pub(crate) fn set_open_streams(&self, n: usize) {
        self.open_streams.store(n, Ordering::Relaxed);
    }

    /// Streams open on the connection now.
    pub(crate) fn open_streams(&self) -> usize {
        self.open_streams.load(Ordering::Relaxed)
    }
}

/// An IO wrapper that tracks frame boundaries in the read direction.
pub(crate) struct FrameWatch<S> {
    inner: S,
    signals: Arc<Signals>,
    header: [u8; FRAME_HEADER],
    have: usize,
    /// Payload bytes of the current frame still to pass.
    skip: usize,
    /// The current frame is a SETTINGS (not ACK) whose payload is passing.
    in_settings: bool,
    entry: [u8; SETTING_ENTRY],
    entry_have: usize,
}

impl<S> FrameWatch<S> {
    pub(crate) fn new(inner: S, signals: Arc<Signals>) -> Self {
        FrameWatch {
            inner,
            signals,
            header: [0; FRAME_HEADER],
            have: 0,
            skip: 0,
            in_settings: false,
            entry: [0; SETTING_ENTRY],
            entry_have: 0,
        }
    }

    pub(crate) fn observe(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                if self.in_settings {
                    self.settings_payload(&bytes[..n]);
                }
                self.skip -= n;
                bytes = &bytes[n..];
                self.end_of_payload();
                continue;
            }
            let n = (FRAME_HEADER - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == FRAME_HEADER {
                self.have = 0;
                let h = &self.header;
                self.skip = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                match h[3] {
                    SETTINGS if h[4] & ACK == 0 => {
                        self.in_settings = true;
                        self.entry_have = 0;
                    }
                    GOAWAY => self.signals.goaway.store(true, Ordering::Release),
                    _ => {}
                }
                self.end_of_payload();
            }
        }
    }

    fn settings_payload(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = (SETTING_ENTRY - self.entry_have).min(bytes.len());
            self.entry[self.entry_have..self.entry_have + n].copy_from_slice(&bytes[..n]);
            self.entry_have += n;
            bytes = &bytes[n..];
            if self.entry_have == SETTING_ENTRY {
                self.entry_have = 0;
                let e = &self.entry;
                let id = u16::from_be_bytes([e[0], e[1]]);
                let value = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
                if id == MAX_CONCURRENT_STREAMS {
                    let value = usize::try_from(value).unwrap_or(usize::MAX);
                    self.signals.max_streams.store(value, Ordering::Release);
                }
            }
        }
    }

    fn end_of_payload(&mut self) {
        if self.skip == 0 && self.in_settings {
            self.in_settings = false;
            self.signals.settings.store(true, Ordering::Release);
            self.signals.changed.notify_waiters();
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FrameWatch<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let res = Pin::new(&mut this.inner).poll_read(cx, buf);
        match &res {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                this.observe(&buf.filled()[before..]);
            }
            Poll::Ready(_) => this.signals.close(),
            Poll::Pending => {}
        }
        res
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FrameWatch<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ty: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            ty,
            flags,
            0,
            0,
            0,
            0,
        ];
        f.extend_from_slice(payload);
        f
    }

    fn watch(chunks: &[&[u8]]) -> Arc<Signals> {
        let signals = Arc::new(Signals::new(100));
        let mut w = FrameWatch::new((), signals.clone());
        for c in chunks {
            w.observe(c);
        }
        signals
    }

    #[test]
    fn settings_seen_only_when_its_payload_is_complete() {
        let settings = frame(SETTINGS, 0, &[0, 3, 0, 0, 0, 100]);
        assert!(!watch(&[&settings[..12]]).settings_received());
        assert!(watch(&[&settings[..12], &settings[12..]]).settings_received());
        // Byte by byte.
        let bytes: Vec<&[u8]> = settings.chunks(1).collect();
        assert!(watch(&bytes).settings_received());
        // Empty SETTINGS frames count too.
        assert!(watch(&[&frame(SETTINGS, 0, &[])]).settings_received());
    }

    #[test]
    fn max_concurrent_streams_is_read_from_settings() {
        // INITIAL_WINDOW_SIZE, then MAX_CONCURRENT_STREAMS = 7, split mid-entry.
        let payload = [0, 4, 0, 1, 0, 0, 0, 3, 0, 0, 0, 7];
        let f = frame(SETTINGS, 0, &payload);
        let s = watch(&[&f[..14], &f[14..]]);
        assert_eq!(s.max_streams(), 7);
        // Omitted: the assumed value stands.
        assert_eq!(
            watch(&[&frame(SETTINGS, 0, &[0, 4, 0, 1, 0, 0])]).max_streams(),
            100
        );
        // A later SETTINGS lowers it.
        let mut two = f.clone();
        two.extend(frame(SETTINGS, 0, &[0, 3, 0, 0, 0, 2]));
        assert_eq!(watch(&[&two]).max_streams(), 2);
    }

    #[test]
    fn settings_ack_is_not_settings() {
        assert!(!watch(&[&frame(SETTINGS, ACK, &[])]).settings_received());
    }

    #[test]
    fn goaway_after_other_frames_is_seen() {
        let mut stream = frame(SETTINGS, 0, &[0, 3, 0, 0, 0, 100]);
        stream.extend(frame(0x0, 0, &[b'x'; 1000])); // DATA
        stream.extend(frame(GOAWAY, 0, &[0, 0, 0, 1, 0, 0, 0, 0]));
        let s = watch(&[&stream]);
        assert!(s.goaway_received());
        let s = watch(&[&stream[..500], &stream[500..1013], &stream[1013..]]);
        assert!(s.goaway_received());
        // A DATA payload that happens to contain a GOAWAY-looking header is not one.
        let tricky = frame(0x0, 0, &frame(GOAWAY, 0, &[0; 8]));
        assert!(!watch(&[&tricky]).goaway_received());
    }

    /// The fuzz target's property on a fixed pseudo-random corpus, so every
    /// test run checks it: no panic, and cuts never change the outcome.
    #[test]
    fn chunking_never_changes_the_outcome() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let len = (next() % 300) as usize;
            // Mostly well-formed frames, sometimes noise.
            let mut data = Vec::new();
            while data.len() < len {
                let ty = [SETTINGS, GOAWAY, 0x0, 0x1, 0x8][(next() % 5) as usize];
                let payload: Vec<u8> = (0..next() % 20).map(|_| next() as u8).collect();
                data.extend(frame(ty, (next() % 2) as u8, &payload));
                if next() % 10 == 0 {
                    data.push(next() as u8);
                }
            }
            let whole = watch(&[&data]);
            let mut pieces = Vec::new();
            let mut rest = &data[..];
            while !rest.is_empty() {
                let n = (next() as usize % 12).min(rest.len());
                pieces.push(&rest[..n]);
                rest = &rest[n..];
            }
            let cut = watch(&pieces);
            assert_eq!(
                (
                    whole.settings_received(),
                    whole.goaway_received(),
                    whole.max_streams()
                ),
                (
                    cut.settings_received(),
                    cut.goaway_received(),
                    cut.max_streams()
                )
            );
        }
    }
}
