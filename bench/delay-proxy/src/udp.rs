//! The same long link for datagrams (QUIC, so HTTP/3): each datagram is
//! delivered [`Link::one_way`] after it was read, each way, optionally lost
//! at a fixed rate, and dropped (as by a router's full queue) when a
//! direction already holds [`Link::max_buffer`] bytes.
//!
//! UDP has no connections, so the relay keeps a session per client address:
//! its own socket towards the upstream, so replies find their way back. The
//! sessions are bounded in count ([`UdpLink::max_sessions`]: a new client
//! past it is ignored) and in idle time ([`UdpLink::idle`]: a session with no
//! datagram either way for that long is dropped), so a stream of spoofed or
//! abandoned clients cannot grow the relay. A rate limit is not applied to
//! datagrams (QUIC paces itself; the TCP relay has one for windows tests).

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::Link;

/// Largest datagram relayed (the UDP maximum).
const MAX_DATAGRAM: usize = 65_535;

/// What the UDP relay does to datagrams and how much state it keeps.
#[derive(Clone, Copy, Debug)]
pub struct UdpLink {
    /// The delay each way and the bytes a direction may hold (`rate` unused).
    pub link: Link,
    /// Fraction of datagrams lost, each way, independently (0.0 to 1.0).
    pub loss: f64,
    /// Client addresses relayed at once; datagrams from others are dropped.
    pub max_sessions: usize,
    /// A session with no datagram either way for this long is forgotten.
    pub idle: Duration,
}

impl UdpLink {
    /// `one_way` each way, no loss, 16 MiB per direction, 1024 sessions idle
    /// for at most a minute (longer than QUIC's usual idle timeouts).
    pub fn delay(one_way: Duration) -> UdpLink {
        UdpLink {
            link: Link {
                max_buffer: 16 << 20,
                ..Link::delay(one_way)
            },
            loss: 0.0,
            max_sessions: 1024,
            idle: Duration::from_secs(60),
        }
    }
}

/// Counters of a running relay, for tests and the binary's log.
#[derive(Debug, Default)]
pub struct UdpStats {
    /// Sessions currently held.
    pub sessions: AtomicUsize,
    /// Datagrams delivered, both ways.
    pub relayed: AtomicU64,
    /// Datagrams dropped by the loss rate, a full direction or the session cap.
    pub dropped: AtomicU64,
}

/// Asks for 8 MiB socket buffers each way (the kernel caps them at
/// rmem_max/wmem_max): with the default 208 KiB the relay's own sockets
/// dropped QUIC's bursts, and a long-link download measured the proxy's
/// losses rather than the client.
fn socket_buffers(socket: &UdpSocket) {
    const BUFFER: usize = 8 * 1024 * 1024;
    let sock = socket2::SockRef::from(socket);
    let _ = sock.set_recv_buffer_size(BUFFER);
    let _ = sock.set_send_buffer_size(BUFFER);
}

/// Relays datagrams arriving on `front` to `upstream` and the replies back,
/// over `link`, until `front` fails.
pub async fn serve_udp(
    front: UdpSocket,
    upstream: SocketAddr,
    link: UdpLink,
    stats: Arc<UdpStats>,
) {
    socket_buffers(&front);
    let front = Arc::new(front);
    let started = Instant::now();
    let mut sessions: HashMap<SocketAddr, Session> = HashMap::new();
    let mut loss = Loss::new(link.loss, 0x5eed);
    // Sweeps often enough that a session outlives `idle` by a quarter at most.
    let mut sweep = tokio::time::interval((link.idle / 4).max(Duration::from_millis(10)));
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        tokio::select! {
            received = front.recv_from(&mut buf) => {
                let Ok((n, client)) = received else { break };
                let now = started.elapsed().as_millis() as u64;
                if !sessions.contains_key(&client) {
                    if sessions.len() >= link.max_sessions {
                        stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    match Session::open(&front, client, upstream, link, &stats, started).await {
                        Ok(session) => {
                            sessions.insert(client, session);
                            stats.sessions.store(sessions.len(), Ordering::Relaxed);
                        }
                        Err(e) => {
                            eprintln!("delay-proxy: UDP session for {client}: {e}");
                            continue;
                        }
                    }
                }
                let Some(session) = sessions.get(&client) else { continue };
                session.last.store(now, Ordering::Relaxed);
                if loss.drops() {
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                session.to_upstream.push(Bytes::copy_from_slice(&buf[..n]), &stats);
            }
            _ = sweep.tick() => {
                let now = started.elapsed().as_millis() as u64;
                let idle = link.idle.as_millis() as u64;
                sessions.retain(|_, s| now.saturating_sub(s.last.load(Ordering::Relaxed)) < idle);
                stats.sessions.store(sessions.len(), Ordering::Relaxed);
            }
        }
    }
}

/// One client's relay state; dropping it stops its tasks.
struct Session {
    to_upstream: DelayLine,
    /// Last datagram either way, in milliseconds since the relay started.
    last: Arc<AtomicU64>,
    tasks: Vec<AbortHandle>,
}

impl Drop for Session {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Session {
    async fn open(
        front: &Arc<UdpSocket>,
        client: SocketAddr,
        upstream: SocketAddr,
        link: UdpLink,
        stats: &Arc<UdpStats>,
        started: Instant,
    ) -> io::Result<Session> {
        let local: SocketAddr = if upstream.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = Arc::new(UdpSocket::bind(local).await?);
        socket_buffers(&socket);
        socket.connect(upstream).await?;
        let last = Arc::new(AtomicU64::new(started.elapsed().as_millis() as u64));
        let (to_upstream, up_task) = DelayLine::spawn(link.link, Arc::clone(stats), {
            let socket = Arc::clone(&socket);
            move |datagram: Bytes| {
                let socket = Arc::clone(&socket);
                async move { socket.send(&datagram).await.map(drop) }
            }
        });
        let (to_client, down_task) = DelayLine::spawn(link.link, Arc::clone(stats), {
            let front = Arc::clone(front);
            move |datagram: Bytes| {
                let front = Arc::clone(&front);
                async move { front.send_to(&datagram, client).await.map(drop) }
            }
        });
        // Replies: read from the upstream, delay, send to the client.
        let reader = tokio::spawn({
            let last = Arc::clone(&last);
            let stats = Arc::clone(stats);
            let mut loss = Loss::new(link.loss, u64::from(client.port()) | 1);
            async move {
                let mut buf = vec![0u8; MAX_DATAGRAM];
                while let Ok(n) = socket.recv(&mut buf).await {
                    last.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                    if loss.drops() {
                        stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    to_client.push(Bytes::copy_from_slice(&buf[..n]), &stats);
                }
            }
        });
        Ok(Session {
            to_upstream,
            last,
            tasks: vec![up_task, down_task, reader.abort_handle()],
        })
    }
}

/// One direction: datagrams queued with the time they are due, sent in order
/// by a task; what it holds is bounded in bytes (tail drop past it).
struct DelayLine {
    tx: mpsc::UnboundedSender<(Instant, Bytes)>,
    held: Arc<AtomicUsize>,
    one_way: Duration,
    max: usize,
}

impl DelayLine {
    fn spawn<F, Fut>(link: Link, stats: Arc<UdpStats>, send: F) -> (DelayLine, AbortHandle)
    where
        F: Fn(Bytes) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = io::Result<()>> + Send,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
        let held = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let held = Arc::clone(&held);
            async move {
                while let Some((due, datagram)) = rx.recv().await {
                    tokio::time::sleep_until(due).await;
                    held.fetch_sub(datagram.len(), Ordering::Relaxed);
                    // A send error (no listener yet, ICMP unreachable) loses
                    // this datagram only, as on a real path.
                    if send(datagram).await.is_ok() {
                        stats.relayed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        let line = DelayLine {
            tx,
            held,
            one_way: link.one_way,
            max: link.max_buffer,
        };
        (line, task.abort_handle())
    }

    fn push(&self, datagram: Bytes, stats: &UdpStats) {
        let len = datagram.len();
        if self.held.fetch_add(len, Ordering::Relaxed) + len > self.max {
            self.held.fetch_sub(len, Ordering::Relaxed);
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self
            .tx
            .send((Instant::now() + self.one_way, datagram))
            .is_err()
        {
            self.held.fetch_sub(len, Ordering::Relaxed);
        }
    }
}

/// Independent losses at a fixed rate, from a xorshift generator: a
/// reproducible pattern per seed, no dependency for it.
struct Loss {
    /// Drop when the next 53-bit draw is below this (0: never).
    threshold: u64,
    state: u64,
}

impl Loss {
    fn new(rate: f64, seed: u64) -> Loss {
        let rate = if rate.is_finite() {
            rate.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Loss {
            threshold: (rate * (1u64 << 53) as f64) as u64,
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    fn drops(&mut self) -> bool {
        if self.threshold == 0 {
            return false;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state >> 11) < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::Loss;

    #[test]
    fn loss_rate_is_about_what_was_asked() {
        for rate in [0.0, 0.01, 0.1, 0.5, 1.0] {
            let mut loss = Loss::new(rate, 7);
            let lost = (0..100_000).filter(|_| loss.drops()).count() as f64 / 100_000.0;
            assert!((lost - rate).abs() < 0.01, "{rate}: {lost}");
        }
    }
}
