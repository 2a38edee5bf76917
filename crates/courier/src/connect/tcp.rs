//! TCP connect over a list of addresses, the Happy Eyeballs way (RFC 8305).
//!
//! Trying addresses one after another makes a black-holed first address
//! (a dead replica still in DNS, an IPv6 route that drops packets) cost a
//! whole connect timeout before the next is tried. Here the address
//! families are interleaved (§4), the next attempt starts when the previous
//! one fails or after [`TcpOptions::attempt_delay`] without an answer
//! (§5: 250 ms), the first to connect wins, and the others are dropped (and
//! so closed) with the future.

use std::future::{poll_fn, Future};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{Instant, Sleep};

/// How TCP connections are made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpOptions {
    pub(crate) nodelay: bool,
    /// TCP keep-alive: idle time before the first probe, and between probes.
    pub(crate) keepalive: Option<Duration>,
    /// The local address to bind (its family must match the remote's).
    pub(crate) local_address: Option<IpAddr>,
    /// How long an attempt goes unanswered before the next one starts.
    pub(crate) attempt_delay: Duration,
    /// How long one address may take; the pool's `connect_timeout` bounds
    /// them all together.
    pub(crate) attempt_timeout: Option<Duration>,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            nodelay: true,
            keepalive: None,
            local_address: None,
            attempt_delay: Duration::from_millis(250),
            attempt_timeout: None,
        }
    }
}

type Attempt = Pin<Box<dyn Future<Output = io::Result<TcpStream>> + Send>>;

/// Connects to one of `addrs`, taken in order from `start` (wrapping around,
/// so that new connections spread over them) with the families
/// interleaved. Returns the last error when none connects.
pub(crate) async fn connect_any(
    addrs: &[SocketAddr],
    start: usize,
    opts: &TcpOptions,
) -> io::Result<TcpStream> {
    let order = interleave(addrs, start);
    let mut next = 0;
    let mut attempts: Vec<(SocketAddr, Attempt)> = Vec::new();
    let mut last_err = None;
    let mut delay: Pin<Box<Sleep>> = Box::pin(tokio::time::sleep(Duration::ZERO));
    let mut start_now = true;
    poll_fn(|cx| loop {
        if next < order.len() && (start_now || delay.as_mut().poll(cx).is_ready()) {
            let addr = order[next];
            next += 1;
            attempts.push((addr, Box::pin(attempt(addr, *opts))));
            delay.as_mut().reset(Instant::now() + opts.attempt_delay);
            start_now = false;
            continue; // poll the new attempt, and the timer anew
        }
        let mut i = 0;
        while i < attempts.len() {
            match attempts[i].1.as_mut().poll(cx) {
                Poll::Ready(Ok(stream)) => return Poll::Ready(Ok(stream)),
                Poll::Ready(Err(e)) => {
                    let (addr, _) = attempts.swap_remove(i);
                    tracing::debug!(%addr, error = %e, "connect failed");
                    last_err = Some(io::Error::new(e.kind(), format!("{addr}: {e}")));
                    // A failure starts the next attempt at once (§5).
                    start_now = true;
                }
                Poll::Pending => i += 1,
            }
        }
        if start_now && next < order.len() {
            continue;
        }
        if attempts.is_empty() {
            return Poll::Ready(Err(last_err.take().unwrap_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "no addresses")
            })));
        }
        return Poll::Pending;
    })
    .await
}

/// One connection attempt, with the socket options applied.
async fn attempt(addr: SocketAddr, opts: TcpOptions) -> io::Result<TcpStream> {
    let connecting = async {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(local) = opts.local_address {
            if local.is_ipv4() != addr.is_ipv4() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrNotAvailable,
                    format!("local address {local} cannot reach {addr}"),
                ));
            }
            socket.bind(SocketAddr::new(local, 0))?;
        }
        socket.connect(addr).await
    };
    let stream = match opts.attempt_timeout {
        Some(limit) => tokio::time::timeout(limit, connecting)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??,
        None => connecting.await?,
    };
    stream.set_nodelay(opts.nodelay)?;
    if let Some(idle) = opts.keepalive {
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(idle)
            .with_interval(idle);
        socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive)?;
    }
    Ok(stream)
}

/// `addrs` from `start` around, with address families alternating from the
/// first one's (RFC 8305 §4, First Address Family Count 1).
fn interleave(addrs: &[SocketAddr], start: usize) -> Vec<SocketAddr> {
    let n = addrs.len();
    let rotated = (0..n).map(|i| addrs[(start + i) % n]);
    let Some(first) = addrs.get(start % n.max(1)) else {
        return Vec::new();
    };
    let (mut same, mut other): (Vec<_>, Vec<_>) =
        rotated.partition(|a| a.is_ipv4() == first.is_ipv4());
    same.reverse();
    other.reverse();
    let mut out = Vec::with_capacity(n);
    while !same.is_empty() || !other.is_empty() {
        out.extend(same.pop());
        out.extend(other.pop());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn families_alternate_from_the_first_address() {
        let addrs = [
            a("[::1]:1"),
            a("[::2]:1"),
            a("[::3]:1"),
            a("10.0.0.1:1"),
            a("10.0.0.2:1"),
        ];
        assert_eq!(
            interleave(&addrs, 0),
            [
                a("[::1]:1"),
                a("10.0.0.1:1"),
                a("[::2]:1"),
                a("10.0.0.2:1"),
                a("[::3]:1")
            ]
        );
        // Rotated for load spreading first, then interleaved.
        assert_eq!(
            interleave(&addrs, 3),
            [
                a("10.0.0.1:1"),
                a("[::1]:1"),
                a("10.0.0.2:1"),
                a("[::2]:1"),
                a("[::3]:1")
            ]
        );
        assert!(interleave(&[], 0).is_empty());
    }
}
