//! # courier
//!
//! An HTTP client for service-to-service traffic whose connection pool is the
//! product. Per origin it keeps a cap on connections with a fair (FIFO) wait
//! queue, reuses idle connections most-recent-first, closes idle ones in the
//! background, rotates connections after a maximum lifetime (re-resolving DNS
//! for each new one, never interrupting a request in flight), retries a request
//! once when a reused connection turns out to be dead, and drains unread
//! response bodies in the background so their connections are reused instead
//! of closed. Everything it does is counted in [`Client::metrics`].
//!
//! ```no_run
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), courier::Error> {
//! let client = courier::Client::builder()
//!     .max_connections_per_host(32)
//!     .pooled_connection_lifetime(Some(Duration::from_secs(120)))
//!     .build()?;
//!
//! let res = client.get("http://127.0.0.1:8080/json/100").send().await?;
//! println!("{} {:?}", res.status(), res.headers().get("content-type"));
//! let value: serde_json::Value = res.json().await?;
//!
//! let m = client.metrics();
//! println!("{} open, {} established", m.connections_open, m.connections_established);
//! # Ok(()) }
//! ```
//!
//! The request path: [`RequestBuilder::send`] → `pool` checkout (idle
//! connection, or a place in the queue while the pool connects) → HTTP/1.1:
//! courier's own connection (`proto::h1`), written and read by the request's task;
//! HTTP/2: a stream opened on courier's own connection (`proto::h2`) by the
//! request's task →
//! [`Response`] whose body holds the
//! connection's lease → the lease goes back to the pool at the end of the
//! body, or after a background drain when the response is dropped early.
//!
//! Around that: [`Client`] is a `tower::Service`, [`middleware`] has tower
//! layers (retry with a budget, timeouts, circuit breaker, hedging,
//! redirects, decompression, tracing, concurrency limit) that
//! [`middleware::Stack`] assembles, and [`ClientFactory`] hands out named,
//! configured [`ServiceClient`]s whose connections rotate every handler
//! lifetime.

#![warn(missing_docs)]
// docs.rs (`--cfg docsrs`, nightly): each item gated on a feature shows which
// one. `doc_cfg` does this by itself since `doc_auto_cfg` was merged into it
// (rust-lang/rust#138907); the old name is an error on current nightlies.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod basic_auth;
#[cfg(feature = "internal-hooks")]
#[doc(hidden)]
pub mod bench_support;
mod body;
// The README and the book, as doc-tests (book.rs).
#[cfg(doctest)]
mod book;
mod client;
pub mod cluster;
mod config;
pub mod connect;
mod error;
pub mod factory;
// Hooks for the fuzz targets, the differential tests and the criterion
// benches, never part of a user's build.
#[cfg(feature = "internal-hooks")]
#[doc(hidden)]
pub mod fuzzing;
// The HTTP/3 connection driven directly, for its integration tests and
// bench until it is bound to the pool; never part of a user's build.
#[cfg(all(feature = "internal-hooks", feature = "http3"))]
#[doc(hidden)]
pub mod http3_hooks;
mod metrics;
#[cfg(feature = "metrics")]
mod metrics_export;
pub mod middleware;
#[cfg(feature = "multipart")]
pub mod multipart;
mod pool;
mod proto;
pub mod redirect;
mod served;
mod service;
#[cfg(test)]
mod test_support;
pub mod tls;
mod validate;

pub use body::Body;
pub use client::{Client, ClientBuilder};
pub use client::{IntoUri, RequestBuilder, RequestSender, RequestTimeout};
pub use client::{Protocol, Upgraded};
pub use client::{RemoteAddr, Response, ResponseBody, ResponseUrl};
pub use cluster::ClusterClient;
pub use connect::{Proxy, Resolve, Resolving, SystemResolver};
pub use error::{BoxError, Error, ErrorKind};
pub use factory::{ClientFactory, ClientFactoryBuilder, ClientOptions};
pub use metrics::{HistogramSnapshot, MetricsSnapshot};
#[cfg(feature = "metrics")]
pub use metrics_export::{MetricsExportTask, MetricsExporter};
pub use service::{ServiceClient, ServiceRequestBuilder};
pub use tls::{Certificate, Identity};

// Interoperability: requests and responses are `http` crate types.
pub use http;
/// The WHATWG URL type (the `url` crate's), as reqwest re-exports it:
/// [`Response::url`] returns one, and requests take one.
pub use url::Url;
// reqwest's names for the `http` types, so a port changes no path.
pub use http::{header, Method, StatusCode, Version};
