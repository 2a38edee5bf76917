//! The server side of one accepted connection, plain or TLS, with the few
//! things a script does to it: write (whole or trickled), close cleanly,
//! or cut the socket from under TLS (no close_notify).

use std::net::Shutdown;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_util::either::Either;

use super::case::Step;

pub type Conn = Either<TcpStream, TlsStream<TcpStream>>;

/// A handle on the socket under the connection, to cut it without a word.
pub struct Cutter(std::net::TcpStream);

impl Cutter {
    pub fn of(tcp: &TcpStream) -> Cutter {
        // A dup of the descriptor: shutting it down shuts the socket down.
        let std = socket_dup(tcp);
        Cutter(std)
    }

    pub fn cut(&self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }

    /// Writes `bytes` to the socket under any TLS. The socket is
    /// non-blocking (the dup shares tokio's file description), so a write
    /// that would block is retried after a yield.
    pub async fn inject(&self, bytes: &[u8]) -> bool {
        use std::io::Write;
        let mut at = 0;
        while at < bytes.len() {
            match (&self.0).write(&bytes[at..]) {
                Ok(n) => at += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    tokio::task::yield_now().await
                }
                Err(_) => return false,
            }
        }
        true
    }
}

fn socket_dup(tcp: &TcpStream) -> std::net::TcpStream {
    use std::os::fd::AsFd;
    let owned = tcp.as_fd().try_clone_to_owned().expect("dup the socket");
    std::net::TcpStream::from(owned)
}

/// What became of the connection after the steps.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Open,
    Closed,
}

/// Runs `steps` on the write side `w`.
pub async fn run<W: AsyncWrite + Unpin>(w: &mut W, cutter: &Cutter, steps: &[Step]) -> After {
    for step in steps {
        let ok = match step {
            Step::Write(bytes) => w.write_all(bytes).await.is_ok() && w.flush().await.is_ok(),
            Step::Trickle { bytes, pieces, gap } => trickle(w, bytes, *pieces, *gap).await,
            Step::Close => {
                let _ = w.shutdown().await;
                return After::Closed;
            }
            Step::Abort => {
                cutter.cut();
                return After::Closed;
            }
            Step::Flood(bytes, times) => {
                for _ in 0..*times {
                    if w.write_all(bytes).await.is_err() || w.flush().await.is_err() {
                        return After::Closed;
                    }
                }
                true
            }
            Step::Pause(d) => {
                tokio::time::sleep(*d).await;
                true
            }
            Step::Inject(bytes) => cutter.inject(bytes).await,
        };
        if !ok {
            return After::Closed;
        }
    }
    After::Open
}

async fn trickle<W: AsyncWrite + Unpin>(
    w: &mut W,
    bytes: &[u8],
    pieces: usize,
    gap: Duration,
) -> bool {
    let size = bytes.len().div_ceil(pieces.max(1)).max(1);
    for (i, piece) in bytes.chunks(size).enumerate() {
        if i > 0 {
            // The pace of the trickle is the behaviour under test, not a wait.
            tokio::time::sleep(gap).await;
        }
        if w.write_all(piece).await.is_err() || w.flush().await.is_err() {
            return false;
        }
    }
    true
}

/// Reads and discards until the peer closes (or the read fails).
pub async fn drain<R: AsyncRead + Unpin>(r: &mut R) {
    let mut buf = vec![0u8; 16 * 1024];
    while matches!(r.read(&mut buf).await, Ok(n) if n > 0) {}
}
