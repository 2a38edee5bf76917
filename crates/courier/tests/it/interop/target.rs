//! One cell of the matrix: a server's port spoken to with one protocol,
//! the client for it, and the run mode's sizes.

use std::time::Duration;

use courier::middleware::Stack;
use courier::{Client, ClientBuilder, ServiceClient};
use http::Version;

use super::servers::Caps;

/// Uploads longer than this (or streamed) go with `Expect: 100-continue`
/// over HTTP/1.1 (courier's default, set explicitly by [`Target::builder`]).
pub const EXPECT_FROM: u64 = 16 * 1024;

/// How courier speaks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Plain HTTP/1.1.
    H1,
    /// Plain HTTP/2 by prior knowledge.
    H2c,
    /// TLS, ALPN picks h2.
    TlsH2,
    /// TLS, ALPN offers only http/1.1.
    TlsH1,
    /// HTTP/3 over QUIC (UDP), feature `http3`: a column only for the
    /// servers that speak it (`Running::h3`).
    #[cfg_attr(not(feature = "http3"), allow(dead_code))]
    H3,
}

impl Proto {
    pub const ALL: &'static [Proto] = &[
        Proto::H1,
        Proto::H2c,
        Proto::TlsH2,
        Proto::TlsH1,
        #[cfg(feature = "http3")]
        Proto::H3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Proto::H1 => "h1",
            Proto::H2c => "h2c",
            Proto::TlsH2 => "tls-h2",
            Proto::TlsH1 => "tls-h1",
            Proto::H3 => "h3",
        }
    }

    pub fn version(self) -> Version {
        match self {
            Proto::H1 | Proto::TlsH1 => Version::HTTP_11,
            Proto::H2c | Proto::TlsH2 => Version::HTTP_2,
            Proto::H3 => Version::HTTP_3,
        }
    }

    pub fn is_h2(self) -> bool {
        self.version() == Version::HTTP_2
    }

    /// Requests share a connection as streams (HTTP/2, HTTP/3): no chunked
    /// coding, no `Expect` handshake of courier's own, the larger load.
    pub fn is_multiplexed(self) -> bool {
        self.version() != Version::HTTP_11
    }
}

/// Sizes and durations of a run: short (`cargo test`) or full.
#[derive(Clone, Debug)]
pub struct Mode {
    pub full: bool,
    /// Per-request timeout (a hang shows as `timeout`, bounded).
    pub timeout: Duration,
    /// Requests in flight at once in the concurrency check.
    pub concurrent: usize,
    /// Requests in a row on one client (past the tight limit of 100).
    pub sequential: usize,
    /// The load run: requests in flight, and for how long.
    pub load_concurrency_h1: usize,
    pub load_concurrency_h2: usize,
    pub load_for: Duration,
    /// The longest idle gap the mode waits (longer timeouts: n/a).
    pub idle_max: Duration,
    /// Servers run at the same time.
    pub parallel_servers: usize,
}

impl Mode {
    pub fn from_env() -> Mode {
        let full = std::env::var("COURIER_INTEROP").is_ok_and(|v| v == "full");
        if full {
            Mode {
                full,
                timeout: Duration::from_secs(30),
                concurrent: 200,
                sequential: 300,
                load_concurrency_h1: 64,
                load_concurrency_h2: 512,
                load_for: Duration::from_secs(4),
                idle_max: Duration::from_secs(12),
                parallel_servers: 2,
            }
        } else {
            Mode {
                full,
                timeout: Duration::from_secs(5),
                concurrent: 200,
                sequential: 150,
                load_concurrency_h1: 16,
                load_concurrency_h2: 64,
                load_for: Duration::from_millis(700),
                idle_max: Duration::from_secs(4),
                parallel_servers: 3,
            }
        }
    }
}

/// A server's port, the protocol to speak and what to expect.
#[derive(Clone)]
pub struct Target {
    pub base: String,
    pub proto: Proto,
    pub ca_pem: String,
    pub caps: Caps,
    pub mode: Mode,
}

impl Target {
    /// A fresh client for this protocol (each check gets its own, so one
    /// check's connections do not decide another's outcome).
    pub fn client(&self) -> ServiceClient {
        self.stacked(&Stack::new())
    }

    /// [`Target::client`] behind `stack` (the redirect and decompression
    /// middleware of the gzip and redirect checks).
    pub fn stacked(&self, stack: &Stack) -> ServiceClient {
        stack.client(self.builder().build().expect("client"))
    }

    pub fn builder(&self) -> ClientBuilder {
        // courier's default, said here because the upload checks' scope
        // of `Tolerance::UploadStall` depends on it.
        let mut b = Client::builder()
            .timeout(self.mode.timeout)
            .expect_continue(Some(EXPECT_FROM));
        if self.caps.expect_broken.is_some() {
            // courier asks `Expect: 100-continue` for uploads past 16 KiB;
            // through a server that loses bodies behind its 100 (HAProxy
            // 2.6, see `Caps::expect_broken`) uploads go without, as the
            // README tells users behind one to configure.
            b = b.expect_continue(None);
        }
        match self.proto {
            Proto::H1 => b,
            Proto::H2c => b.http2_prior_knowledge(),
            Proto::TlsH2 => b.add_root_certificate(&self.ca_pem),
            Proto::TlsH1 => b.add_root_certificate(&self.ca_pem).http1_only(),
            #[cfg(feature = "http3")]
            Proto::H3 => b.add_root_certificate(&self.ca_pem).http3_prior_knowledge(),
            #[cfg(not(feature = "http3"))]
            Proto::H3 => unreachable!("the h3 column runs only with feature http3"),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}
