//! The flags that say how connections reach the target: a client certificate, a proxy, a Unix
//! socket, `--connect-to` routes. Each maps to one `ClientBuilder` call (`client.rs`).
//!
//! Why their own struct: they are one concept (the route and the credentials of a connection),
//! checked together (a key needs a certificate), and `--help` groups them.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::super::connect_to::ConnectTo;

/// Connection routing and client credentials.
#[derive(Debug, Clone, PartialEq, Default, Args, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkArgs {
    /// Present this client certificate (PEM chain, leaf first) for mutual TLS.
    ///
    /// The file may hold the private key too (as curl's --cert); otherwise give --key.
    #[arg(long, value_name = "FILE", help_heading = "Connections")]
    pub cert: Option<PathBuf>,

    /// The private key (PEM: PKCS#8, PKCS#1 or SEC1) of --cert [default: the --cert file].
    #[arg(
        long,
        value_name = "FILE",
        requires = "cert",
        help_heading = "Connections",
        hide_short_help = true
    )]
    pub key: Option<PathBuf>,

    /// Send every request through this proxy (http://, socks5://, socks5h://).
    ///
    /// With user:password@ in the URL if the proxy needs them. HTTP URLs go as absolute-form requests, HTTPS URLs through a CONNECT tunnel. Proxy
    /// variables of the environment are never read by `courier bench`.
    #[arg(long, value_name = "URL", help_heading = "Connections")]
    pub proxy: Option<String>,

    /// Open every connection over this Unix domain socket instead of TCP.
    ///
    /// The URL still names the Host header (and the TLS server name with https://). Needs a
    /// URL: the built-in server listens on TCP. Takes precedence over --connect-to and --proxy.
    #[arg(long, value_name = "PATH", help_heading = "Connections")]
    pub unix_socket: Option<PathBuf>,

    /// Connect to HOST2:PORT2 for requests to HOST:PORT (curl's syntax); repeatable.
    ///
    /// The URL, Host header and TLS server name stay HOST. An empty HOST or PORT matches any,
    /// an empty HOST2 or PORT2 keeps the URL's; HOST2 is resolved once at start. `HOST2:PORT2`
    /// alone is short for `::HOST2:PORT2` (every request). IPv6 addresses in brackets. Routes
    /// are per host: one host's ports cannot go to different places. Goes past --proxy.
    #[arg(long = "connect-to", value_name = "HOST:PORT:HOST2:PORT2",
          value_parser = parse_connect_to, help_heading = "Connections")]
    pub connect_to: Vec<String>,

    /// HTTP/3: QUIC's receive window per response stream, in bytes [default: the client's, 16 MiB].
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Connections",
        hide_short_help = true
    )]
    pub http3_stream_receive_window: Option<u32>,

    /// HTTP/3: QUIC's receive window per connection, in bytes [default: the client's, 32 MiB].
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Connections",
        hide_short_help = true
    )]
    pub http3_conn_receive_window: Option<u32>,

    /// HTTP/3: BBR congestion control for what the client sends (quinn's Cubic otherwise).
    #[arg(long, help_heading = "Connections", hide_short_help = true)]
    pub http3_congestion_bbr: bool,

    /// HTTP/3: 0-RTT on resumed sessions for GET/HEAD without a body (the client's
    /// `tls_early_data`; replayable, so off by default).
    #[arg(long, help_heading = "Connections", hide_short_help = true)]
    pub tls_early_data: bool,
}

/// Checks a `--connect-to` rule and keeps it as written (the report records what was asked).
fn parse_connect_to(text: &str) -> Result<String, String> {
    text.parse::<ConnectTo>().map(|_| text.to_owned())
}
