//! Closing a connection after a GOAWAY for an error so that the peer reads
//! the GOAWAY: the write side is shut down (TLS close_notify, TCP FIN), and
//! what the peer still sends is read and thrown away until it closes too,
//! for [`LINGER`] and [`LINGER_BYTES`] at most.
//!
//! Why: a socket closed with unread bytes in its receive buffer is reset
//! (RST), not closed, and a reset may erase what the peer received and had
//! not read yet (RFC 9112 §9.6 describes the same for HTTP/1.1 servers): the
//! GOAWAY that says why the connection ended is lost, and the peer sees
//! "connection reset by peer". h2spec's client tests caught it: a server
//! that sends a SETTINGS ACK with a payload must read GOAWAY
//! (FRAME_SIZE_ERROR), and about one run in ten read a reset instead, its
//! frames sent after the bad one still unread on courier's side. Go's
//! net/http lingers 500 ms the same way (`closeWriteAndWait`), nginx
//! longer (`lingering_close`).
//!
//! The byte bound: the frames a well-behaved peer had in flight when it
//! read the GOAWAY are a window's worth at most, while a peer flooding the
//! connection (the flood budget's GOAWAY) writes for as long as it is read:
//! 500 ms of reading at loopback speed cost the client 380-480 ms of CPU
//! (`floods::a_flooded_pooled_connection_costs_the_client_no_cpu`). Past
//! the bound the socket is dropped, and a peer that floods loses its GOAWAY
//! to the reset.
//!
//! It runs as a task of its own, after the connection's driver ended: the
//! connection is over for its streams and the pool, whose books (and
//! per-origin cap) do not wait for a peer that takes its time to close.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The longest a connection lingers after its GOAWAY.
pub(super) const LINGER: Duration = Duration::from_millis(500);

/// The most a lingering connection reads: the default connection window
/// and a few frames, far more than a peer that stopped at the GOAWAY has in
/// flight.
pub(super) const LINGER_BYTES: usize = 256 * 1024;

/// Shuts `io` down and reads until the peer closes, it fails, [`LINGER`]
/// has passed or [`LINGER_BYTES`] were read; then drops it.
pub(super) async fn close<S: AsyncRead + AsyncWrite + Unpin>(mut io: S) {
    let drain = async {
        io.shutdown().await?;
        let mut scratch = [0u8; 4096];
        let mut read = 0;
        while read < LINGER_BYTES {
            match io.read(&mut scratch).await? {
                0 => break,
                n => read += n,
            }
        }
        Ok::<(), std::io::Error>(())
    };
    // Whichever way it ends, the socket is dropped: nothing to report.
    let _ = tokio::time::timeout(LINGER, drain).await;
}
