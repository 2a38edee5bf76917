//! TCP connect over a list of addresses.

use std::io;
use std::net::SocketAddr;

use tokio::net::TcpStream;

/// Connects to the first address that accepts, trying them in order from
/// `start` and wrapping around. Returns the last error when none accepts.
pub(crate) async fn connect_any(
    addrs: &[SocketAddr],
    start: usize,
    nodelay: bool,
) -> io::Result<TcpStream> {
    let mut last_err = None;
    for i in 0..addrs.len() {
        let addr = addrs[(start + i) % addrs.len()];
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                stream.set_nodelay(nodelay)?;
                return Ok(stream);
            }
            Err(e) => {
                tracing::debug!(%addr, error = %e, "connect failed");
                last_err = Some(io::Error::new(e.kind(), format!("{addr}: {e}")));
            }
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses")))
}
