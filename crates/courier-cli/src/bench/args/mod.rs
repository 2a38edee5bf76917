//! `courier bench` flags: the clap struct and its value enums.
//!
//! The struct doubles as the `config` object of the JSON report (it is `Serialize`), so a report
//! always records exactly what was asked for; the resolved values (defaults filled in) are in the
//! report's `load` object. Pool knobs left unset keep the library's defaults and appear as
//! `null`.
//!
//! Protocol flags (`--http`, `--tls`, `--insecure`, …) belong next to the pool knobs; they are
//! applied in `client.rs`, which is the one place that turns flags into a `ClientBuilder`.
//!
//! The parts: `parse` (the value parsers that check each flag as clap reads it), `load` (what
//! runs: a [`Load`], who sends how much, how), `resolve` (the flags checked against each other
//! and resolved into that load), `network` (address and DNS flags) and `cluster` (the flags of
//! `--scenario cluster`).

pub mod cluster;
mod load;
mod network;
mod parse;
mod resolve;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use http::{HeaderName, HeaderValue, Method};
use serde::{Deserialize, Serialize};

pub use self::load::{Load, Model, Stop, DEFAULT_DURATION};
pub use self::network::NetworkArgs;
pub use self::parse::split_header;
use self::parse::{
    parse_duration, parse_header, parse_method, parse_path, parse_rate, parse_stages,
    parse_start_at, parse_tick, parse_url,
};
use super::progress::ProgressMode;
use crate::error::{CliError, Result};
use crate::secs::{Secs, SecsOrNone};

/// HTTP load generator: closed loop (`-c`), open loop (`--rate`) or long polls, with the latency,
/// connection-pool and process figures of the usual HTTP client benchmark tables.
///
/// Every time flag takes one duration syntax: `250ms`, `5s`, `1m`, or a bare number of seconds.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
pub struct BenchArgs {
    /// Target URL (http:// or https://) [default: the built-in server on 127.0.0.1].
    ///
    /// Without one, the built-in server is started on 127.0.0.1 and `--path` is targeted. With
    /// `--scenario longpoll` this is a base URL: `/delay/{ms}` is appended to it.
    #[arg(value_parser = parse_url)]
    pub url: Option<String>,

    /// What each request does: requests, longpoll or cluster.
    ///
    /// `requests` (send, read, repeat), `longpoll` (hold requests to `/delay/{--delay}` in
    /// flight and measure the memory they cost) or `cluster` (N built-in replicas with
    /// per-replica faults, open-loop load through courier's ClusterClient; see the
    /// "--scenario cluster" flags).
    #[arg(long, value_enum, default_value_t = Scenario::Requests, help_heading = "Load")]
    pub scenario: Scenario,

    /// Independent clients (each with its own connection pool), as with N `HttpClient`s.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Load", hide_short_help = true)]
    pub clients: Option<u64>,

    /// Requests in flight per client [default: 64].
    ///
    /// With `--rate`: the most requests in flight per client [default:
    /// --max-connections-per-host, else 1000].
    #[arg(short = 'c', long, value_name = "C", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Load")]
    pub concurrency: Option<u64>,

    /// h2load's model: K clients, each limited to one connection (use with `--streams`).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..),
          conflicts_with_all = ["clients", "concurrency", "max_connections_per_host"],
          help_heading = "Load", hide_short_help = true)]
    pub connections: Option<u64>,

    /// Requests in flight on each of the `--connections` [default: 1].
    #[arg(long, value_name = "M", requires = "connections",
          value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Load", hide_short_help = true)]
    pub streams: Option<u64>,

    /// Open loop: start R requests per second on schedule, whatever the latency.
    ///
    /// Latency is reported from the intended start (corrected) and from the actual send.
    #[arg(long, value_name = "R", value_parser = parse_rate, help_heading = "Load")]
    pub rate: Option<f64>,

    /// Open loop whose target rate ramps linearly through stages of DURATION:RATE.
    ///
    /// E.g. '10s:1000,30s:5000,10s:0' (from --rate, else 0); the run lasts as long as the
    /// stages.
    #[arg(long, value_name = "STAGES", value_parser = parse_stages,
          conflicts_with_all = ["duration", "requests", "warmup"],
          help_heading = "Load", hide_short_help = true)]
    #[serde(default)]
    pub stages: Option<String>,

    /// Open loop: send what has come due only on ticks of this period, e.g. 10ms [default: off,
    /// each request when due].
    ///
    /// Fewer, bigger bursts, each request held up to one tick (its latency from the due time
    /// counts the wait; late means later than the tick plus 5 ms). h2load's --rps sends every
    /// 10 ms: --tick 10ms gives the same load shape. Needs a unit.
    #[arg(long, value_name = "PERIOD", value_parser = parse_tick, help_heading = "Load",
          hide_short_help = true)]
    #[serde(default)]
    pub tick: Option<Secs>,

    /// Measure for this long, e.g. 30s or 2m [default: 10s].
    // Hyphen values allowed so `-d -1` reaches our own message instead of "unexpected argument".
    #[arg(short = 'd', long, value_name = "DURATION", conflicts_with = "requests",
          allow_hyphen_values = true, value_parser = parse_duration, help_heading = "Load")]
    pub duration: Option<Secs>,

    /// Measure exactly N requests, then stop (instead of --duration).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Load")]
    pub requests: Option<u64>,

    /// Run this long first, left out of every figure but the connection counts.
    ///
    /// Connections opened during the warmup stay open and are reused; they count in
    /// `connections_established` (the run's connections), its requests in none of the figures.
    #[arg(long, value_name = "DURATION", help_heading = "Load")]
    pub warmup: Option<Secs>,

    /// Long polls: how long the server holds each request, e.g. 30s or 500ms [default: 5s].
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Load",
        hide_short_help = true
    )]
    pub delay: Option<Secs>,

    /// Path asked of the built-in server, e.g. /delay/50 [default: /bytes/{--response-size}].
    ///
    /// With `--scenario cluster`, of the replicas [default: /]. The built-in server's
    /// `/delay/{ms}` counts milliseconds (or takes a unit: `/delay/2s`).
    #[arg(long, value_name = "PATH", value_parser = parse_path, conflicts_with = "url",
          help_heading = "Requests")]
    pub path: Option<String>,

    /// Send the requests listed in FILE instead of one URL.
    ///
    /// `METHOD URL [weight=N]` lines, each followed by `Name: value` headers and an optional
    /// `@BODY_FILE`, entries separated by blank lines; round robin, or weighted by weight=N.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "path", "method", "body_size"],
          help_heading = "Requests", hide_short_help = true)]
    #[serde(default)]
    pub targets: Option<PathBuf>,

    /// Read only the first N bytes of each body, then drop the response.
    ///
    /// The library drains the rest in the background. Default: read every body to its end.
    #[arg(
        long,
        value_name = "N",
        help_heading = "Requests",
        hide_short_help = true
    )]
    pub read_bytes: Option<u64>,

    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET", value_parser = parse_method,
          help_heading = "Requests")]
    pub method: String,

    /// Extra request header, as "name: value"; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = parse_header,
          help_heading = "Requests")]
    pub headers: Vec<String>,

    /// Send a request body of this many bytes.
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Requests",
        hide_short_help = true
    )]
    pub body_size: Option<u64>,

    /// Send the contents of FILE as each request's body (with -m POST, PUT, ...).
    ///
    /// Read once, before the run. The method stays -m's (GET by default).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["body_size", "targets"],
          help_heading = "Requests")]
    #[serde(default)]
    pub body_file: Option<PathBuf>,

    /// Tokio worker threads of the client [default: number of cores].
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Load")]
    pub threads: Option<u64>,

    /// Worker threads of the in-process built-in server [default: number of cores].
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Built-in server", hide_short_help = true)]
    pub server_threads: Option<u64>,

    /// Where the built-in server runs: auto, in-process or process.
    ///
    /// `auto` (in this process, except for long polls, whose memory figure must be the
    /// client's alone), `in-process` or `process` (child processes).
    #[arg(long, value_enum, default_value_t = ServerMode::Auto,
          help_heading = "Built-in server", hide_short_help = true)]
    pub server: ServerMode,

    /// Total time limit per request [library default: 100s].
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub timeout: Option<Secs>,

    /// Connection limit per origin and client [library default: unbounded].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Pool", hide_short_help = true)]
    pub max_connections_per_host: Option<u64>,

    /// Close connections idle this long, or `none` [library default: 60s].
    #[arg(
        long,
        value_name = "DURATION|none",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub pool_idle_timeout: Option<SecsOrNone>,

    /// Retire connections this old (checked between requests), or `none` [library default:
    /// none].
    #[arg(
        long,
        value_name = "DURATION|none",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub pooled_connection_lifetime: Option<SecsOrNone>,

    /// Random extra lifetime per connection, so connections do not all expire together.
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub pooled_connection_lifetime_jitter: Option<Secs>,

    /// Time limit for establishing a connection [library default: 10s].
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub connect_timeout: Option<Secs>,

    /// Give up on a request that waited this long for a connection, or `none`.
    #[arg(
        long,
        value_name = "DURATION|none",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub pool_queue_timeout: Option<SecsOrNone>,

    /// Most bytes read to drain a dropped body before closing its connection
    /// [library default: 1 MiB].
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub max_response_drain_size: Option<u64>,

    /// Time limit for draining a dropped body [library default: 2s].
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub response_drain_timeout: Option<Secs>,

    /// Largest accepted response header block [library default: 64 KiB].
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub max_response_headers_size: Option<u64>,

    /// HTTP version: 1.1, 2, 3 or auto.
    ///
    /// `1.1`; `2` (h2c by prior knowledge over plain TCP, ALPN `h2` only over TLS); `3` (QUIC by
    /// prior knowledge to https URLs; the built-in server serves TLS and HTTP/3); `auto`
    /// (HTTP/1.1 over plain TCP, ALPN's choice over TLS).
    #[arg(long = "http", value_enum, default_value_t = HttpVersion::Auto, help_heading = "Load")]
    pub http: HttpVersion,

    /// Serve the built-in target over TLS, with a certificate made for the run.
    ///
    /// The client trusts that certificate. Ignored with a URL: use `https://`.
    #[arg(long, help_heading = "TLS")]
    pub tls: bool,

    /// Accept any server certificate: turns off TLS verification (self-signed targets).
    #[arg(long, help_heading = "TLS")]
    pub insecure: bool,

    /// Also trust the CA certificate(s) in this PEM file.
    ///
    /// A private CA, a self-signed server; `courier serve --tls` writes one.
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    #[serde(default)]
    pub cacert: Option<PathBuf>,

    /// At the HTTP/2 stream limit, queue instead of opening another connection.
    #[arg(long, help_heading = "Pool", hide_short_help = true)]
    pub no_multiple_http2_connections: bool,

    /// Move to HTTP/3 where an https server offers it (`Alt-Svc`), racing QUIC against TCP.
    ///
    /// The client's `http3_alt_svc`: the first requests go over TCP, the later ones over HTTP/3
    /// once a response names it; a QUIC attempt that fails keeps the origin on TCP for 5 minutes
    /// and more. The built-in target then serves TLS and HTTP/3 (offered by `alt-svc`).
    #[arg(long, help_heading = "Load", hide_short_help = true)]
    #[serde(default)]
    pub alt_svc: bool,

    /// Take clients from a `ClientFactory` that replaces each client's whole pool this often.
    ///
    /// The seed's HttpClientFactory handler lifetime. Alone it is the seed's "HL only" (pooled
    /// connections live until their pool retires); with `--pooled-connection-lifetime` it is
    /// "HL + PCL".
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Pool",
        hide_short_help = true
    )]
    pub handler_lifetime: Option<Secs>,

    /// SETTINGS_MAX_CONCURRENT_STREAMS of the built-in server [default: 100].
    #[arg(
        long,
        value_name = "N",
        help_heading = "Built-in server",
        hide_short_help = true
    )]
    pub server_max_concurrent_streams: Option<u32>,

    /// Body size asked of the built-in server (used only when no URL is given).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_RESPONSE_SIZE,
          help_heading = "Built-in server", hide_short_help = true)]
    pub response_size: u64,

    /// Count the client's heap allocations and bytes allocated per request.
    ///
    /// Without `-H`, the request carries a browser's header set. Building each
    /// `http::Request` (the caller's work, a header map copy) is left out and reported on its
    /// own line.
    #[arg(long, help_heading = "Output", hide_short_help = true)]
    pub count_allocations: bool,

    /// Set the request headers once, as the client's default headers, not on every request.
    ///
    /// The headers are `-H`'s, or the browser set of `--count-allocations`.
    #[arg(long, help_heading = "Requests", hide_short_help = true)]
    pub default_headers: bool,

    /// What to show on stderr while running: auto, live, line, lines or none.
    ///
    /// `auto` (a panel redrawn every second when stdout and stderr are terminals, one rewritten
    /// line when only stderr is, else nothing), `live`, `line`, `lines` (one new line per
    /// second, for CI logs) or `none`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ProgressMode::Auto,
          help_heading = "Output", hide_short_help = true)]
    #[serde(default)]
    pub progress: ProgressMode,

    /// Draw the per-second timeline (requests/s, connections, p99) in the terminal.
    #[arg(long, help_heading = "Output", hide_short_help = true)]
    pub chart: bool,

    /// Also write the report as JSON to this file (read it back with `courier compare`).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,

    /// Exit with code 99 if this holds after the run, e.g. 'p99 > 5ms'; repeatable.
    ///
    /// E.g. 'p99 > 5ms', 'errors > 0.1%', 'rps < 50000'. METRIC: p50 p75 p90 p99 p99.9 max
    /// mean (time to the last byte, a duration with its unit: 250us, 5ms, 0.5s), errors (N% a
    /// rate, N a count), rps (successful), requests. OP: > >= < <=.
    #[arg(long = "fail-if", value_name = "EXPR", help_heading = "Output")]
    #[serde(default)]
    pub fail_if: Vec<crate::threshold::Threshold>,

    /// Start measuring at this RFC 3339 time, after the clients are ready.
    ///
    /// E.g. 2026-11-26T18:00:00Z: agents on several machines then run together (see
    /// `courier merge`).
    #[arg(long, value_name = "TIME", value_parser = parse_start_at,
          help_heading = "Load", hide_short_help = true)]
    #[serde(default)]
    pub start_at: Option<String>,

    /// Also write a self-contained HTML report with charts to this file.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub html: Option<PathBuf>,

    /// Also write the summary as CSV to this file (one row per run).
    ///
    /// A header line and one row. A file that already starts with the same header gets one
    /// more row (so a sweep of runs collects into one table); any other file is replaced.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    #[serde(default)]
    pub csv: Option<PathBuf>,

    /// Also write the summary in the OpenMetrics text format to this file.
    ///
    /// For Prometheus: the node exporter's textfile collector, a Pushgateway.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    #[serde(default)]
    pub openmetrics: Option<PathBuf>,

    #[command(flatten)]
    #[serde(flatten)]
    pub network: NetworkArgs,

    #[command(flatten)]
    #[serde(flatten)]
    pub cluster: self::cluster::ClusterArgs,
}

/// What each request slot does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Send, read the response, repeat.
    Requests,
    /// Hold requests to `/delay/{ms}` in flight: peak in flight, wake-up latency, memory.
    Longpoll,
    /// N replicas with per-replica faults in this process, open loop through ClusterClient.
    Cluster,
}

/// The HTTP version flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1 over plain TCP; over TLS whatever ALPN picks (HTTP/2 preferred).
    #[value(name = "auto")]
    #[serde(rename = "auto")]
    Auto,
    /// HTTP/1.1 only.
    #[value(name = "1.1")]
    #[serde(rename = "1.1")]
    Http1,
    /// HTTP/2 only.
    #[value(name = "2")]
    #[serde(rename = "2")]
    Http2,
    /// HTTP/3 (QUIC) by prior knowledge to https URLs; the built-in server
    /// then serves TLS and HTTP/3.
    #[value(name = "3")]
    #[serde(rename = "3")]
    Http3,
}

impl BenchArgs {
    /// The built-in server serves TLS: `--tls`, or HTTP/3 (QUIC is TLS).
    pub fn server_tls(&self) -> bool {
        self.tls || self.server_http3()
    }

    /// The built-in server serves HTTP/3: `--http 3`, or `--alt-svc`.
    pub fn server_http3(&self) -> bool {
        self.http == HttpVersion::Http3 || self.alt_svc
    }
}

/// `--response-size` when not given.
pub const DEFAULT_RESPONSE_SIZE: u64 = 128;

/// Where the built-in server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerMode {
    /// In this process, except for long polls (child processes).
    Auto,
    /// On its own runtime in this process (its threads are left out of allocation counts).
    InProcess,
    /// In child processes (`courier serve`), so CPU, memory and file descriptors of this
    /// process are the client's alone.
    Process,
}

impl BenchArgs {
    /// The method as `http` knows it (already validated by the parser).
    pub fn http_method(&self) -> Result<Method> {
        Method::from_bytes(self.method.as_bytes())
            .map_err(|_| CliError::new(format!("invalid HTTP method `{}`", self.method)))
    }

    /// The `-H` headers as typed pairs (already validated by the parser).
    pub fn http_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>> {
        self.headers
            .iter()
            .map(|h| split_header(h).map_err(CliError::new))
            .collect()
    }

    /// Whether the built-in server runs in child processes rather than in this one.
    pub fn server_in_child_process(&self) -> bool {
        match self.server {
            ServerMode::Auto => self.scenario == Scenario::Longpoll,
            ServerMode::InProcess => false,
            ServerMode::Process => true,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
