//! A long link on one machine: each direction of a byte stream delayed by a
//! fixed time, optionally at a bounded rate, with a bounded buffer. This
//! kernel has no netem, so `bench/longlink.sh` (through the `delay-proxy`
//! binary) and courier's HTTP/2 window tests (on tokio's paused time, or on
//! loopback) all relay through [`delay`]: one implementation, so what the
//! tests assert and what the bench measures go over the same link.
//!
//! Each chunk read from one side is stamped with the time it was read and
//! written to the other side [`Link::one_way`] later (plus its transmission
//! time at [`Link::rate`]), in order: the read half reads as fast as the
//! source gives, a writer task sleeps until each chunk is due. What a
//! direction holds is bounded ([`Link::max_buffer`]); past it the reader
//! waits, and the sender is held back, as by a link's buffer. Each chunk is
//! its own allocation, handed from reader to writer without a copy: at
//! 64 KiB to 1 MiB per read this carries well over 1 GB/s.
//!
//! Datagrams (QUIC, for HTTP/3 over a long link) go through [`serve_udp`]
//! instead, with the same delay (see `udp.rs`).

mod udp;

pub use udp::{serve_udp, UdpLink, UdpStats};

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;

/// Bytes one read may take.
const READ: usize = 1 << 20;
/// With a rate limit, a read is delivered in pieces of this many bytes.
const PIECE: usize = 16 << 10;

/// What a link does to the bytes that cross it, in each direction.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// Every byte arrives this long after it was sent (half the round trip).
    pub one_way: Duration,
    /// Bytes per second a direction carries; `None`: as fast as the relay
    /// copies.
    pub rate: Option<u64>,
    /// Bytes a direction holds at most (in flight and queued). At least one
    /// chunk is always let through, so a small bound cannot stall a link.
    pub max_buffer: usize,
}

impl Link {
    /// A link that delays each direction by `one_way`, with no rate limit
    /// and a 256 MiB buffer (650 MB/s for 25 ms is 16 MB).
    pub fn delay(one_way: Duration) -> Link {
        Link {
            one_way,
            rate: None,
            max_buffer: 256 << 20,
        }
    }
}

/// One direction: copies `from` to `to` over `link` until `from` ends (then
/// shuts `to` down) or `to` fails.
pub async fn delay<R, W>(mut from: R, mut to: W, link: Link)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Permits are KiB held; a chunk takes ceil(len / 1 KiB), at most all.
    let kib = u32::try_from(link.max_buffer.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .clamp(1, Semaphore::MAX_PERMITS as u32);
    let room = Arc::new(Semaphore::new(kib as usize));
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes, u32)>();
    let writer_room = Arc::clone(&room);
    let writer = tokio::spawn(async move {
        while let Some((due, chunk, permits)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            let ok = to.write_all(&chunk).await.is_ok();
            writer_room.add_permits(permits as usize);
            if !ok {
                // Wakes a reader waiting for room, which then ends too.
                writer_room.close();
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    // When the last chunk queued is fully sent (with a rate limit).
    let mut sent_until = Instant::now();
    let mut buf = BytesMut::new();
    'read: loop {
        if buf.capacity() < READ / 4 {
            buf = BytesMut::with_capacity(READ);
        }
        match from.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let read_at = Instant::now();
        let chunk = buf.split().freeze();
        let permits = u32::try_from(chunk.len().div_ceil(1024))
            .unwrap_or(u32::MAX)
            .min(kib);
        let Ok(p) = room.acquire_many(permits).await else {
            break;
        };
        p.forget();
        let Some(rate) = link.rate else {
            if tx.send((read_at + link.one_way, chunk, permits)).is_err() {
                break;
            }
            continue;
        };
        // At a rate, what one read took arrives piece by piece, as a link
        // delivers it, not in one burst at the end.
        let pieces = chunk.len().div_ceil(PIECE);
        for i in 0..pieces {
            let piece = chunk.slice(i * PIECE..chunk.len().min((i + 1) * PIECE));
            let transmit = Duration::from_secs_f64(piece.len() as f64 / rate.max(1) as f64);
            sent_until = sent_until.max(read_at) + transmit;
            // The permits go back with the last piece.
            let held = if i + 1 == pieces { permits } else { 0 };
            if tx.send((sent_until + link.one_way, piece, held)).is_err() {
                break 'read;
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// Accepts connections on `listener` and relays each to `upstream` over
/// `link`, both directions, until the listener fails.
pub async fn serve(
    listener: TcpListener,
    upstream: impl ToSocketAddrs + Clone + Send + 'static,
    link: Link,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let upstream = upstream.clone();
        tokio::spawn(async move {
            let server = match TcpStream::connect(upstream).await {
                Ok(s) => s,
                Err(e) => return eprintln!("delay-proxy: connect: {e}"),
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(delay(cr, sw, link));
            tokio::spawn(delay(sr, cw, link));
        });
    }
}
