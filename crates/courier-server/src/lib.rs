//! `courier-server`: the built-in HTTP test and benchmark server for courier.
//!
//! It exists so that courier's integration tests, `courier bench` and
//! `courier serve` all talk to one server whose behaviour is known exactly:
//! fast, allocation-light endpoints for throughput measurements, plus fault
//! endpoints (`/fault/...`) that misbehave in precise, repeatable ways so the
//! client's error handling can be tested against real sockets.
//!
//! The server runs in-process on the caller's tokio runtime:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = courier_server::start(courier_server::ServerConfig::default()).await?;
//! let url = server.url("/bytes/1024");
//! // ... drive requests at `url` ...
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! Every response produced by the server's own handlers carries an
//! `x-connection-id` header (sequential per accepted connection, starting at
//! 1) so tests can observe whether the client reused a connection.
//!
//! Protocols: HTTP/1.1 and HTTP/2, over plain TCP or TLS. With TLS, ALPN
//! picks the protocol (`h2` preferred); on plain TCP an HTTP/2 client must
//! use prior knowledge (h2c: it opens with the connection preface, which
//! the server recognises on the same port as HTTP/1.1). [`TestPki`] makes
//! certificates for tests, including broken ones. Each accepted socket goes
//! through `negotiate.rs`, which settles TLS and the protocol and then runs
//! the HTTP/1.1 (`http1.rs`) or HTTP/2 (`http2.rs`) driver.
//!
//! HTTP/3 ([`ServerConfig::http3`], with TLS) runs on QUIC (quinn) with h3
//! on a UDP socket of the TCP port's number (`http3.rs`), advertised by
//! `alt-svc` on the TCP responses.
//!
//! Every endpoint answers on every protocol; how each `/fault/...` endpoint
//! behaves over HTTP/2 is tabulated in `faults.rs` (`/fault/goaway` and
//! `/fault/rst-stream` are the HTTP/2-specific ones).

mod accept;
mod body;
mod coalesce;
mod config;
mod conn;
mod control;
mod detect;
mod endpoints;
mod fault;
mod faults;
mod handle;
mod http1;
mod http2;
mod http3;
mod httpbin;
mod io;
mod negotiate;
mod pki;
mod protocol;
mod quic;
mod quic_start;
mod replica;
mod replica_fault;
mod replica_set;
mod reply;
mod request_body;
mod server;
mod service;
mod state;
mod tls;
mod transport;

pub use body::BYTES_ALPHABET;
pub use config::ServerConfig;
pub use handle::ServerHandle;
pub use pki::TestPki;
pub use replica_fault::{parse_duration, FaultKind, ReplicaFault, ReplicaSelector};
pub use replica_set::{ReplicaSecond, ReplicaSet, ReplicasConfig};
pub use server::{start, Server};
pub use tls::{TlsConfig, ZeroRtt};
