//! Server configuration.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Settings for [`crate::start`].
///
/// Construct with struct-update syntax over the default so that fields added
/// later (protocol selection, TLS) do not break callers:
/// `ServerConfig { keep_alive: false, ..Default::default() }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to listen on. The default, `127.0.0.1:0`, picks a free
    /// loopback port so parallel tests never collide.
    pub addr: SocketAddr,
    /// Whether HTTP/1.1 connections are kept alive between requests
    /// (default `true`). With `false` every response closes its connection,
    /// which is how tests force the client to open new connections.
    pub keep_alive: bool,
    /// Close a kept-alive connection that has been idle (no request in
    /// progress) this long. `None` = never (default).
    ///
    /// Lets tests reproduce the classic "server closed my pooled connection"
    /// race without waiting for a real server's long timeout.
    pub idle_timeout: Option<Duration>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            keep_alive: true,
            idle_timeout: None,
        }
    }
}
