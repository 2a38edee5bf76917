//! Connections courier does not dial over TCP itself: a Unix domain socket
//! (a sidecar, a local agent, the Docker API), or whatever a caller's
//! [`Connect`] returns (as .NET's `ConnectCallback`). The pool, HTTP and,
//! for `https`, TLS run on top as over TCP.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;

use super::stream::AsyncIo;

/// The future a [`Connect`] implementation returns.
pub type Connecting = Pin<Box<dyn Future<Output = io::Result<Box<dyn AsyncIo>>> + Send>>;

/// Opens the byte stream for a new connection to `host:port`, in place of
/// DNS and TCP. courier runs TLS over it for `https` URLs, then HTTP.
///
/// ```
/// use courier::connect::{AsyncIo, Connect, Connecting};
///
/// /// Every connection over one Unix socket, whatever the URL says.
/// struct Sidecar;
///
/// impl Connect for Sidecar {
///     fn connect(&self, _host: &str, _port: u16) -> Connecting {
///         Box::pin(async {
///             let stream = tokio::net::UnixStream::connect("/run/sidecar.sock").await?;
///             Ok(Box::new(stream) as Box<dyn AsyncIo>)
///         })
///     }
/// }
/// let client = courier::Client::builder().connector(Sidecar).build().unwrap();
/// ```
pub trait Connect: Send + Sync + 'static {
    /// Connects for `host` (as in the URL, brackets stripped) and `port`.
    fn connect(&self, host: &str, port: u16) -> Connecting;
}

/// Connects to a Unix domain socket.
#[cfg(unix)]
pub(crate) async fn unix(path: PathBuf) -> io::Result<Box<dyn AsyncIo>> {
    let stream = tokio::net::UnixStream::connect(&path)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(Box::new(stream))
}

#[cfg(not(unix))]
pub(crate) async fn unix(path: PathBuf) -> io::Result<Box<dyn AsyncIo>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{}: Unix domain sockets need a Unix", path.display()),
    ))
}
