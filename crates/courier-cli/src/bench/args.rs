//! `courier bench` flags, and their resolution into a [`Load`] (who sends how much, how).
//!
//! The struct doubles as the `config` object of the JSON report (it is `Serialize`), so a report
//! always records exactly what was asked for; the resolved values (defaults filled in) are in the
//! report's `load` object. Values are validated while parsing, so a typo in a header or a URL is
//! reported by clap with the flag's name instead of surfacing as a failed request later. Pool
//! knobs left unset keep the library's defaults and appear as `null`.
//!
//! Protocol flags (`--http`, `--tls`, `--insecure`, …) belong next to the pool knobs; they are
//! applied in `client.rs`, which is the one place that turns flags into a `ClientBuilder`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use http::{HeaderName, HeaderValue, Method, Uri};
use serde::{Deserialize, Serialize};

use super::pacer::{self, Pacer};
use super::progress::ProgressMode;
use crate::error::{CliError, Result};
use crate::secs::{Secs, SecsOrNone};

/// How long the test runs when neither `--duration` nor `--requests` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Requests in flight per client in the closed loop when `-c` is not given.
pub const DEFAULT_CONCURRENCY: u64 = 64;
/// In-flight cap per client of the open loop when neither `-c` nor a connection cap is given.
pub const DEFAULT_OPEN_LOOP_CAP: u64 = 1000;
/// How long a long poll waits on the server when `--delay` is not given.
pub const DEFAULT_DELAY: Duration = Duration::from_secs(5);

/// HTTP load generator: closed loop (`-c`), open loop (`--rate`) or long polls, with the latency,
/// connection-pool and process figures of the usual HTTP client benchmark tables.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
pub struct BenchArgs {
    /// Target URL (http:// or https://). Without one, the built-in server is started on
    /// 127.0.0.1 and `--path` is targeted. With `--scenario longpoll` this is a base URL:
    /// `/delay/{ms}` is appended to it.
    #[arg(value_parser = parse_url)]
    pub url: Option<String>,

    /// Send the requests listed in FILE instead of one URL: `METHOD URL [weight=N]` lines, each
    /// followed by `Name: value` headers and an optional `@BODY_FILE`, entries separated by
    /// blank lines; round robin, or weighted by weight=N (see the README).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "path", "method", "body_size"])]
    #[serde(default)]
    pub targets: Option<PathBuf>,

    /// What each request does: `requests` (send, read, repeat), `longpoll` (hold requests
    /// to `/delay/{--delay}` in flight and measure the memory they cost) or `cluster` (N
    /// built-in replicas with per-replica faults, open-loop load through courier's
    /// ClusterClient; see the --scenario cluster flags below).
    #[arg(long, value_enum, default_value_t = Scenario::Requests)]
    pub scenario: Scenario,

    /// Path asked of the built-in server [default: /bytes/{--response-size}], e.g. `/delay/50`.
    #[arg(long, value_name = "PATH", value_parser = parse_path, conflicts_with = "url")]
    pub path: Option<String>,

    /// Independent clients (each with its own connection pool), as with N `HttpClient`s.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub clients: Option<u64>,

    /// Requests in flight per client [default: 64]. With `--rate`: the most requests in flight
    /// per client [default: --max-connections-per-host, else 1000].
    #[arg(short = 'c', long, value_name = "C", value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: Option<u64>,

    /// h2load's model: K clients, each limited to one connection (use with `--streams`).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..),
          conflicts_with_all = ["clients", "concurrency", "max_connections_per_host"])]
    pub connections: Option<u64>,

    /// Requests in flight on each of the `--connections` [default: 1].
    #[arg(long, value_name = "M", requires = "connections",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub streams: Option<u64>,

    /// Open loop: start this many requests per second on schedule, whatever the latency;
    /// latency is reported from the intended start (corrected) and from the actual send.
    #[arg(long, value_name = "R", value_parser = parse_rate)]
    pub rate: Option<f64>,

    /// Open loop whose target rate ramps linearly through stages of DURATION:RATE, e.g.
    /// '10s:1000,30s:5000,10s:0' (from --rate, else 0); the run lasts as long as the stages.
    #[arg(long, value_name = "STAGES", value_parser = parse_stages,
          conflicts_with_all = ["duration", "requests", "warmup"])]
    #[serde(default)]
    pub stages: Option<String>,

    /// Measure for this many seconds [default: 10]; must be more than 0.
    // Hyphen values allowed so `-d -1` reaches our own message instead of "unexpected argument".
    #[arg(short = 'd', long, value_name = "SECS", conflicts_with = "requests",
          allow_hyphen_values = true, value_parser = parse_duration)]
    pub duration: Option<Secs>,

    /// Measure exactly this many requests, then stop (instead of --duration).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// Run this many seconds first and leave them out of every figure (connections opened
    /// during the warmup stay open and are reused).
    #[arg(long, value_name = "SECS")]
    pub warmup: Option<Secs>,

    /// Long polls: how long the server holds each request [default: 5].
    #[arg(long, value_name = "SECS")]
    pub delay: Option<Secs>,

    /// Read only the first N bytes of each body, then drop the response (the library drains
    /// the rest in the background). Default: read every body to its end.
    #[arg(long, value_name = "N")]
    pub read_bytes: Option<u64>,

    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET", value_parser = parse_method)]
    pub method: String,

    /// Extra request header, as "name: value"; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<String>,

    /// Send a request body of this many bytes.
    #[arg(long, value_name = "BYTES")]
    pub body_size: Option<u64>,

    /// Tokio worker threads of the client [default: number of cores].
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,

    /// Worker threads of the in-process built-in server [default: number of cores].
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub server_threads: Option<u64>,

    /// Where the built-in server runs: `auto` (in this process, except for long polls, whose
    /// memory figure must be the client's alone), `in-process` or `process` (child processes).
    #[arg(long, value_enum, default_value_t = ServerMode::Auto)]
    pub server: ServerMode,

    /// Total time limit per request, in seconds [library default: 100].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<Secs>,

    /// Connection limit per origin and client [library default: unbounded].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_host: Option<u64>,

    /// Close connections idle for this long, or `none` [library default: 60].
    #[arg(long, value_name = "SECS|none")]
    pub pool_idle_timeout: Option<SecsOrNone>,

    /// Retire connections this old (checked between requests), or `none` [library default: none].
    #[arg(long, value_name = "SECS|none")]
    pub pooled_connection_lifetime: Option<SecsOrNone>,

    /// Random extra lifetime per connection, so connections do not all expire together.
    #[arg(long, value_name = "SECS")]
    pub pooled_connection_lifetime_jitter: Option<Secs>,

    /// Time limit for establishing a connection [library default: 10].
    #[arg(long, value_name = "SECS")]
    pub connect_timeout: Option<Secs>,

    /// Give up on a request that waited this long for a connection, or `none`.
    #[arg(long, value_name = "SECS|none")]
    pub pool_queue_timeout: Option<SecsOrNone>,

    /// Most bytes read to drain a dropped body before closing its connection
    /// [library default: 1 MiB].
    #[arg(long, value_name = "BYTES")]
    pub max_response_drain_size: Option<u64>,

    /// Time limit for draining a dropped body [library default: 2].
    #[arg(long, value_name = "SECS")]
    pub response_drain_timeout: Option<Secs>,

    /// Largest accepted response header block [library default: 64 KiB].
    #[arg(long, value_name = "BYTES")]
    pub max_response_headers_size: Option<u64>,

    /// HTTP version: `1.1`; `2` (h2c by prior knowledge over plain TCP, ALPN `h2` only over
    /// TLS); `auto` (HTTP/1.1 over plain TCP, ALPN's choice over TLS).
    #[arg(long = "http", value_enum, default_value_t = HttpVersion::Auto)]
    pub http: HttpVersion,

    /// Serve the built-in target over TLS, with a certificate made for the run and trusted by
    /// the client (ignored with a URL: use `https://`).
    #[arg(long)]
    pub tls: bool,

    /// Accept any server certificate: turns off TLS verification (self-signed targets).
    #[arg(long)]
    pub insecure: bool,

    /// Also trust the CA certificate(s) in this PEM file (a private CA, a self-signed server;
    /// `courier serve --tls` writes one).
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    pub cacert: Option<PathBuf>,

    /// At the HTTP/2 stream limit, queue instead of opening another connection.
    #[arg(long)]
    pub no_multiple_http2_connections: bool,

    /// Take clients from a `ClientFactory` that replaces each client's whole pool every SECS
    /// (the seed's HttpClientFactory handler lifetime). Alone it is the seed's "HL only" (pooled
    /// connections live until their pool retires); with `--pooled-connection-lifetime` it is
    /// "HL + PCL".
    #[arg(long, value_name = "SECS")]
    pub handler_lifetime: Option<Secs>,

    /// SETTINGS_MAX_CONCURRENT_STREAMS of the built-in server [default: 100].
    #[arg(long, value_name = "N")]
    pub server_max_concurrent_streams: Option<u32>,

    /// Body size asked of the built-in server (used only when no URL is given).
    #[arg(long, value_name = "BYTES", default_value_t = 128)]
    pub response_size: u64,

    /// Count the client's heap allocations and bytes allocated per request (without `-H`, the
    /// request carries a browser's header set). Building each `http::Request` (the caller's
    /// work, a header map copy) is left out and reported on its own line.
    #[arg(long)]
    pub count_allocations: bool,

    /// Set the request headers (`-H`, or the browser set of `--count-allocations`) once, as the
    /// client's default headers, instead of on every request.
    #[arg(long)]
    pub default_headers: bool,

    /// What to show on stderr while running: `auto` (a panel redrawn every second when stdout
    /// and stderr are terminals, one rewritten line when only stderr is, else nothing), `live`,
    /// `line`, `lines` (one new line per second, for CI logs) or `none`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ProgressMode::Auto)]
    #[serde(default)]
    pub progress: ProgressMode,

    /// Draw the per-second timeline (requests/s, connections, p99) in the terminal.
    #[arg(long)]
    pub chart: bool,

    /// Also write the report as JSON to this file (read it back with `courier compare`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Exit with code 99 if this holds after the run, e.g. 'p99 > 5ms', 'errors > 0.1%',
    /// 'rps < 50000'; repeatable. METRIC: p50 p75 p90 p99 p99.9 max mean (time to the last
    /// byte: 250us, 5ms, 0.5s), errors (N% a rate, N a count), rps (successful), requests.
    /// OP: > >= < <=.
    #[arg(long = "fail-if", value_name = "EXPR")]
    #[serde(default)]
    pub fail_if: Vec<crate::threshold::Threshold>,

    /// Start measuring at this RFC 3339 time (e.g. 2026-11-26T18:00:00Z), after the clients are
    /// ready: agents on several machines then run together (see `courier merge`).
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    #[serde(default)]
    pub start_at: Option<String>,

    /// Also write a self-contained HTML report with charts to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    #[serde(flatten)]
    pub cluster: super::cluster::args::ClusterArgs,
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
}

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

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After exactly this many measured requests (successful or not).
    Requests(u64),
    /// When this much measured time has passed; requests still in flight are abandoned.
    Duration(Duration),
    /// Long polls without `-d`/`-n`: every request slot sends exactly one request.
    OneRound,
}

/// The load model, resolved from the flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Each request slot sends, waits for the response, and sends again.
    Closed,
    /// Requests start on a fixed schedule of `rate` per second.
    Open { rate: f64 },
    /// Request slots hold long polls of `delay`.
    LongPoll { delay: Duration },
}

/// Who sends how much: the flags with every default filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub model: Model,
    /// Independent `Client`s.
    pub clients: u64,
    /// Request slots per client (closed loop, long polls) or in-flight cap per client (open loop).
    pub concurrency: u64,
    /// Connection cap per origin and client (`--connections` sets 1).
    pub max_connections_per_host: Option<u64>,
    pub stop: Stop,
    pub warmup: Duration,
}

impl Load {
    /// Requests that can be in flight at once over all clients.
    pub fn in_flight(&self) -> u64 {
        self.clients.saturating_mul(self.concurrency)
    }

    /// Short name of the model, as the report shows it.
    pub fn model_name(&self) -> &'static str {
        match self.model {
            Model::Closed => "closed",
            Model::Open { .. } => "open",
            Model::LongPoll { .. } => "longpoll",
        }
    }
}

impl BenchArgs {
    /// Checks the flags against each other and fills in the defaults.
    pub fn load(&self) -> Result<Load> {
        let pacer = self.pacer()?;
        let rate = match &pacer {
            Some(pacer) => Some(pacer.peak()),
            None => self.rate,
        };
        let model = match (self.scenario, rate) {
            (Scenario::Longpoll, Some(_)) => {
                return Err(CliError::new(
                    "--rate and --stages do not apply to --scenario longpoll (long polls hold -c requests in flight)",
                ))
            }
            (Scenario::Longpoll, None) => Model::LongPoll {
                delay: self.delay.map_or(DEFAULT_DELAY, Secs::as_duration),
            },
            (Scenario::Requests, _) if self.delay.is_some() => {
                return Err(CliError::new(
                    "--delay applies to --scenario longpoll; for slow responses use --path /delay/{ms}",
                ))
            }
            (Scenario::Requests | Scenario::Cluster, Some(rate)) => Model::Open { rate },
            (Scenario::Requests | Scenario::Cluster, None) => Model::Closed,
        };
        let (clients, max_connections_per_host, explicit) = match self.connections {
            Some(k) => (k, Some(1), Some(self.streams.unwrap_or(1))),
            None => (
                self.clients.unwrap_or(1),
                self.max_connections_per_host,
                self.concurrency,
            ),
        };
        let concurrency = match (explicit, model) {
            (Some(c), _) => c,
            // An open loop's in-flight cap is the pool's connection cap by default, as in wrk2:
            // a request then waits for a free connection in the load generator, where its
            // delay counts as coordinated omission, not unseen in the pool's queue.
            (None, Model::Open { .. }) => max_connections_per_host.unwrap_or(DEFAULT_OPEN_LOOP_CAP),
            (None, _) => DEFAULT_CONCURRENCY,
        };
        let stop = match (self.requests, self.duration, model) {
            _ if pacer.as_ref().and_then(Pacer::total).is_some() => {
                Stop::Duration(pacer.as_ref().and_then(Pacer::total).unwrap_or_default())
            }
            (Some(n), _, _) => Stop::Requests(n),
            (None, Some(secs), _) => Stop::Duration(secs.as_duration()),
            (None, None, Model::LongPoll { .. }) => Stop::OneRound,
            (None, None, _) => Stop::Duration(DEFAULT_DURATION),
        };
        let warmup = self.warmup.map_or(Duration::ZERO, Secs::as_duration);
        if stop == Stop::OneRound && !warmup.is_zero() {
            return Err(CliError::new(
                "--warmup needs -d or -n with --scenario longpoll (by default each slot sends one long poll)",
            ));
        }
        Ok(Load {
            model,
            clients,
            concurrency,
            max_connections_per_host,
            stop,
            warmup,
        })
    }

    /// When open-loop requests are due: `--stages` (from `--rate`, else 0) or `--rate`; `None`
    /// for the closed loop.
    pub fn pacer(&self) -> Result<Option<Pacer>> {
        match (&self.stages, self.rate) {
            (Some(text), rate) => {
                let stages = pacer::parse_stages(text).map_err(CliError::new)?;
                Ok(Some(Pacer::staged(rate.unwrap_or(0.0), stages)))
            }
            (None, Some(rate)) => Ok(Some(Pacer::constant(rate))),
            (None, None) => Ok(None),
        }
    }

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

/// Accepts absolute http(s) URLs only: a relative or scheme-less URL cannot be sent anywhere.
fn parse_url(text: &str) -> Result<String, String> {
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("`{text}` is not a valid URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(format!("unsupported scheme `{other}`: use http or https")),
        None => return Err(format!("`{text}` has no scheme: write http://{text}")),
    }
    if uri.authority().is_none() {
        return Err(format!("`{text}` has no host"));
    }
    Ok(text.to_owned())
}

/// A path (with optional query) for the built-in server.
fn parse_path(text: &str) -> Result<String, String> {
    if !text.starts_with('/') {
        return Err(format!("`{text}` must start with `/`, e.g. /delay/50"));
    }
    http::uri::PathAndQuery::try_from(text).map_err(|e| format!("`{text}` is not a path: {e}"))?;
    Ok(text.to_owned())
}

/// A run length: a duration of more than zero (an empty run would report nothing, rc 0).
fn parse_duration(text: &str) -> Result<Secs, String> {
    let refused =
        || format!("`{text}`: the run must last more than 0 seconds, e.g. 10, 0.5 or 500ms");
    let secs: Secs = text.parse().map_err(|_| refused())?;
    if secs.as_duration().is_zero() {
        return Err(refused());
    }
    Ok(secs)
}

/// An RFC 3339 time, kept as written (the report records what was asked for).
fn parse_start_at(text: &str) -> Result<String, String> {
    super::start_at::parse(text)?;
    Ok(text.trim().to_owned())
}

/// `--stages`, checked and kept as written (the report records what was asked for).
fn parse_stages(text: &str) -> Result<String, String> {
    pacer::parse_stages(text)?;
    Ok(text.trim().to_owned())
}

/// A positive, finite rate.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!(
            "`{text}` is not a rate: expected requests per second, e.g. 500"
        )),
    }
}

/// Upper-cases the method: methods are case-sensitive, and `post` almost always means POST.
fn parse_method(text: &str) -> Result<String, String> {
    let upper = text.trim().to_ascii_uppercase();
    Method::from_bytes(upper.as_bytes()).map_err(|_| format!("`{text}` is not an HTTP method"))?;
    Ok(upper)
}

/// Checks a "name: value" header and returns it normalized.
fn parse_header(text: &str) -> Result<String, String> {
    let (name, value) = split_header(text)?;
    let value = value
        .to_str()
        .map_err(|_| format!("header `{text}`: value must be visible ASCII"))?;
    Ok(format!("{name}: {value}"))
}

/// Splits and validates "name: value".
pub fn split_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("header `{text}` must look like \"name: value\""))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("header `{text}`: `{}` is not a valid name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("header `{text}`: the value has invalid characters"))?;
    Ok((name, value))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;

    /// Wraps the flags the way `main` does, so parsing is tested end to end.
    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: BenchArgs,
    }

    pub(crate) fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
        let mut full = vec!["bench"];
        full.extend_from_slice(argv);
        Wrapper::try_parse_from(full).map(|w| w.args)
    }

    #[test]
    fn defaults() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.url, None);
        assert_eq!(args.concurrency, None);
        assert_eq!(args.read_bytes, None);
        assert_eq!(args.method, "GET");
        assert_eq!(args.response_size, 128);
        assert_eq!(args.pool_idle_timeout, None);
        let load = args.load().unwrap();
        assert_eq!(load.model, Model::Closed);
        assert_eq!((load.clients, load.concurrency), (1, DEFAULT_CONCURRENCY));
        assert_eq!(load.stop, Stop::Duration(DEFAULT_DURATION));
        assert_eq!(load.warmup, Duration::ZERO);
        assert!(!args.server_in_child_process());
    }

    #[test]
    fn all_flags() {
        let args = parse(&[
            "http://127.0.0.1:9/x",
            "-c",
            "16",
            "--clients",
            "3",
            "-n",
            "2000",
            "--warmup",
            "1",
            "--read-bytes",
            "0",
            "-m",
            "post",
            "-H",
            "X-A:  1",
            "-H",
            "accept: */*",
            "--body-size",
            "512",
            "--threads",
            "2",
            "--timeout",
            "1.5",
            "--max-connections-per-host",
            "8",
            "--pool-idle-timeout",
            "none",
            "--pooled-connection-lifetime",
            "30",
            "--pooled-connection-lifetime-jitter",
            "500ms",
            "--connect-timeout",
            "2",
            "--pool-queue-timeout",
            "0.1",
            "--max-response-drain-size",
            "4096",
            "--response-drain-timeout",
            "1",
            "--max-response-headers-size",
            "8192",
            "--count-allocations",
            "--chart",
            "--json",
            "out.json",
            "--html",
            "out.html",
        ])
        .unwrap();
        assert_eq!(args.method, "POST");
        assert_eq!(args.headers, ["x-a: 1", "accept: */*"]);
        assert_eq!(args.http_headers().unwrap().len(), 2);
        assert_eq!(args.pool_idle_timeout, Some(SecsOrNone::None));
        assert_eq!(
            args.pooled_connection_lifetime_jitter
                .map(Secs::as_duration),
            Some(Duration::from_millis(500))
        );
        assert_eq!(args.http_method().unwrap(), Method::POST);
        let load = args.load().unwrap();
        assert_eq!(load.stop, Stop::Requests(2000));
        assert_eq!((load.clients, load.concurrency), (3, 16));
        assert_eq!(load.in_flight(), 48);
        assert_eq!(load.max_connections_per_host, Some(8));
        assert_eq!(load.warmup, Duration::from_secs(1));
    }

    #[test]
    fn connections_and_streams_are_h2loads_model() {
        let load = parse(&["--connections", "4", "--streams", "10"])
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(load.clients, 4);
        assert_eq!(load.concurrency, 10);
        assert_eq!(load.max_connections_per_host, Some(1));
        let load = parse(&["--connections", "4"]).unwrap().load().unwrap();
        assert_eq!(load.concurrency, 1);
    }

    #[test]
    fn open_loop_cap_follows_the_connection_cap() {
        let load = parse(&["--rate", "200", "--max-connections-per-host", "2"])
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(load.model, Model::Open { rate: 200.0 });
        assert_eq!(load.concurrency, 2);
        let load = parse(&["--rate", "200"]).unwrap().load().unwrap();
        assert_eq!(load.concurrency, DEFAULT_OPEN_LOOP_CAP);
        let load = parse(&["--rate", "200", "-c", "7"])
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(load.concurrency, 7);
    }

    #[test]
    fn stages_make_an_open_loop_as_long_as_the_stages() {
        let args = parse(&["--stages", "1s:100,500ms:300,2s:0"]).unwrap();
        let load = args.load().unwrap();
        assert_eq!(load.model, Model::Open { rate: 300.0 });
        assert_eq!(load.stop, Stop::Duration(Duration::from_millis(3500)));
        assert_eq!(load.concurrency, DEFAULT_OPEN_LOOP_CAP);
        let pacer = parse(&["--stages", "1s:100", "--rate", "50"])
            .unwrap()
            .pacer()
            .unwrap()
            .unwrap();
        assert_eq!(pacer.rate_at(0.0), 50.0);
        for argv in [
            &["--stages", "1s:100", "-d", "5"][..],
            &["--stages", "1s:100", "-n", "5"],
            &["--stages", "1s:100", "--warmup", "1"],
            &["--stages", "1s"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} should be refused");
        }
        let err = parse(&["--stages", "1s:5", "--scenario", "longpoll"])
            .unwrap()
            .load()
            .unwrap_err();
        assert!(err.to_string().contains("--stages"), "{err}");
    }

    #[test]
    fn longpoll_defaults_to_one_round_in_a_child_server() {
        let args = parse(&["--scenario", "longpoll", "-c", "200", "--delay", "1"]).unwrap();
        let load = args.load().unwrap();
        assert_eq!(
            load.model,
            Model::LongPoll {
                delay: Duration::from_secs(1)
            }
        );
        assert_eq!(load.stop, Stop::OneRound);
        assert!(args.server_in_child_process());
        let args = parse(&["--scenario", "longpoll", "--server", "in-process"]).unwrap();
        assert!(!args.server_in_child_process());
    }

    #[test]
    fn duration_flag() {
        let load = parse(&["-d", "1"]).unwrap().load().unwrap();
        assert_eq!(load.stop, Stop::Duration(Duration::from_secs(1)));
    }

    #[test]
    fn refuses_bad_input() {
        for argv in [
            &["-c", "0"][..],
            &["-n", "0"],
            &["-d", "1", "-n", "5"],
            &["-d", "-3"],
            &["-H", "no-colon"],
            &["-H", "bad name: v"],
            &["-m", "GE T"],
            &["ftp://host/"],
            &["localhost:8080/x"],
            &["--pool-idle-timeout", "soon"],
            &["--rate", "0"],
            &["--rate", "-5"],
            &["--streams", "2"],
            &["--connections", "2", "-c", "3"],
            &["--connections", "2", "--max-connections-per-host", "3"],
            &["--path", "delay/5"],
            &["http://h/", "--path", "/x"],
            &["--scenario", "poll"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} should be refused");
        }
    }

    #[test]
    fn negative_durations_get_our_message() {
        for bad in ["-1", "0", "0ms", "-0.5"] {
            let err = parse(&["-d", bad]).unwrap_err().to_string();
            assert!(err.contains("more than 0 seconds"), "{bad}: {err}");
        }
    }

    #[test]
    fn refuses_contradicting_flags_with_a_reason() {
        for (argv, needle) in [
            (&["--scenario", "longpoll", "--rate", "5"][..], "--rate"),
            (&["--delay", "1"], "--delay"),
            (&["--scenario", "longpoll", "--warmup", "1"], "--warmup"),
        ] {
            let err = parse(argv).unwrap().load().unwrap_err();
            assert!(err.to_string().contains(needle), "{argv:?}: {err}");
        }
    }
}
