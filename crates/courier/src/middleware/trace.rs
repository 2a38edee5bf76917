//! Tracing: a span per logical request ([`TraceLayer`]) and one per attempt
//! ([`TraceAttemptLayer`]), named and filled in with the OpenTelemetry HTTP
//! client conventions, W3C Trace Context propagation, and request logs whose
//! header values are redacted unless allow-listed.
//!
//! Span fields (`tracing-opentelemetry` maps `otel.*` onto the span itself):
//!
//! | field | request span | attempt span |
//! |---|---|---|
//! | `otel.name` | method (`GET`) | method |
//! | `otel.kind` | `internal` | `client` |
//! | `otel.status_code` | `ERROR` on an error or a status ≥ 400 | same |
//! | `http.request.method`, `url.full`, `server.address`, `server.port` | ✓ | ✓ |
//! | `http.request.resend_count` | | 0 for the first attempt, then 1, 2, … |
//! | `http.response.status_code`, `network.protocol.version` | ✓ | ✓ |
//! | `error.type` | error kind (`timeout`, `connect`, …) or the status code | same |
//! | `trace_id`, `span_id` | W3C ids (hex) | same; `span_id` is the parent id sent in `traceparent` |
//!
//! Propagation: the trace continues the request's own `traceparent` header
//! when it has a valid one, else a [`TraceContext`] request extension, else
//! a new trace is started. Every attempt sends
//! `traceparent: 00-<trace_id>-<attempt span_id>-<flags>` (`tracestate` is
//! passed through untouched).
//!
//! With the `opentelemetry` feature each span is also an OpenTelemetry span
//! on the global tracer provider, with the same attributes, and a request
//! with no `traceparent` of its own continues the caller's current
//! OpenTelemetry span; the ids sent in `traceparent` are then the
//! OpenTelemetry span's (see `otel.rs`).
//!
//! Metrics: the attempt layer also records each attempt's
//! `http.client.request.duration` under the same attributes, into lock-free
//! atomics that [`MetricsExporter`](crate::MetricsExporter) exports (see
//! `request_metrics.rs`).

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, Request, Uri, Version};
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument, Level, Span};

use super::otel::{self, Kind};
use super::request_metrics::{method_name, AttrsRef, RequestMetrics};
use super::{call, HttpService, ResponseFuture};
use crate::body::Body;
use crate::client::response::Response;
use crate::error::Error;

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// A W3C Trace Context (`traceparent`): the trace, and the span that is the
/// parent of the next one.
///
/// Insert one as a request extension to make the request part of an existing
/// trace (a `traceparent` header on the request does the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TraceContext {
    /// The 128-bit trace id (never 0).
    pub trace_id: u128,
    /// The 64-bit id of the parent span (never 0).
    pub parent_id: u64,
    /// Trace flags; bit 0 is "sampled".
    pub flags: u8,
}

impl TraceContext {
    /// A context from known ids (`None` if either id is 0, which W3C
    /// Trace Context forbids).
    pub fn new(trace_id: u128, parent_id: u64, flags: u8) -> Option<TraceContext> {
        (trace_id != 0 && parent_id != 0).then_some(TraceContext {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// A new trace (random ids), sampled.
    pub fn new_root() -> TraceContext {
        TraceContext {
            trace_id: new_trace_id(),
            parent_id: new_span_id(),
            flags: 1,
        }
    }

    /// Parses a `traceparent` value (version 00 layout; later versions are
    /// read the same way, as the spec asks). `None` if it is invalid.
    pub fn parse(value: &str) -> Option<TraceContext> {
        let v = value.trim();
        let mut parts = v.split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let parent = parts.next()?;
        let flags = parts.next()?;
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !hex(version, 2)
            || version == "ff"
            || !hex(trace, 32)
            || !hex(parent, 16)
            || !hex(flags, 2)
        {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        TraceContext::new(
            u128::from_str_radix(trace, 16).ok()?,
            u64::from_str_radix(parent, 16).ok()?,
            u8::from_str_radix(flags, 16).ok()?,
        )
    }

    /// A new span in the same trace, with this one as its parent.
    pub(crate) fn child(&self) -> TraceContext {
        TraceContext {
            parent_id: new_span_id(),
            ..*self
        }
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{:032x}-{:016x}-{:02x}",
            self.trace_id, self.parent_id, self.flags
        )
    }

    fn from_request(req: &Request<Body>) -> Option<TraceContext> {
        req.headers()
            .get(&TRACEPARENT)
            .and_then(|v| v.to_str().ok())
            .and_then(TraceContext::parse)
            .or_else(|| req.extensions().get::<TraceContext>().copied())
    }
}

fn new_trace_id() -> u128 {
    loop {
        let id = fastrand::u128(..);
        if id != 0 {
            return id;
        }
    }
}

fn new_span_id() -> u64 {
    loop {
        let id = fastrand::u64(..);
        if id != 0 {
            return id;
        }
    }
}

/// Tracing settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceConfig {
    /// Send `traceparent` on every attempt. Default: on.
    pub propagate: bool,
    /// Log each request (method, URL, request headers) and its outcome
    /// (status, duration, response headers) as `tracing` events. Default: on.
    pub log_requests: bool,
    /// Level of those events. Default: DEBUG.
    pub log_level: Level,
    /// Headers whose values are logged; every other value is logged as
    /// `[redacted]`. Default: none.
    pub show_headers: Vec<HeaderName>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            propagate: true,
            log_requests: true,
            log_level: Level::DEBUG,
            show_headers: Vec::new(),
        }
    }
}

setters!(TraceConfig {
    propagate: bool,
    log_requests: bool,
    log_level: Level,
    @list { show_headers: HeaderName, }
});

/// Counts attempts of one logical request (shared by its clones).
#[derive(Clone, Debug, Default)]
struct Attempts(Arc<AtomicU32>);

/// The request span and its ids, for the attempt layer.
#[derive(Clone, Copy, Debug)]
struct Parent(TraceContext);

/// A span per logical request (around retries, redirects, hedges); see the
/// module docs. Place it outermost, and a [`TraceAttemptLayer`] innermost.
#[derive(Clone, Debug, Default)]
pub struct TraceLayer {
    config: Arc<TraceConfig>,
}

impl TraceLayer {
    /// A layer with `config`.
    pub fn new(config: TraceConfig) -> Self {
        TraceLayer {
            config: Arc::new(config),
        }
    }
}

layer_service!(
    /// The service made by [`TraceLayer`].
    TraceLayer => Trace
);

/// A span per attempt, the `traceparent` header it sends, and the
/// attempt's `http.client.request.duration` with its attributes; see the
/// module docs.
#[derive(Clone, Debug, Default)]
pub struct TraceAttemptLayer {
    config: Arc<TraceConfig>,
    // Shared by every service this layer makes, so one exporter sees them all.
    metrics: Arc<RequestMetrics>,
}

impl TraceAttemptLayer {
    /// A layer with `config` (only `propagate` matters here).
    pub fn new(config: TraceConfig) -> Self {
        TraceAttemptLayer {
            config: Arc::new(config),
            metrics: Arc::default(),
        }
    }

    /// The request durations this layer recorded, for the exporters.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn request_metrics(&self) -> &Arc<RequestMetrics> {
        &self.metrics
    }
}

layer_service!(
    /// The service made by [`TraceAttemptLayer`].
    TraceAttemptLayer => TraceAttempt
);

pub(crate) fn port(uri: &Uri) -> u16 {
    uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    })
}

pub(crate) fn protocol(v: Version) -> &'static str {
    match v {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_11 => "1.1",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "unknown",
    }
}

/// A request or attempt span: the OpenTelemetry HTTP client fields known
/// before the response (`$extra` adds more), the outcome fields empty for
/// [`record_outcome`], and the W3C ids.
macro_rules! http_span {
    ($name:literal, $kind:literal, $method:expr, $uri:expr, $me:expr, $parent:expr $(, $($extra:tt)+)?) => {{
        let (method, uri): (&http::Method, &Uri) = ($method, $uri);
        tracing::info_span!(
            $name,
            otel.name = %method,
            otel.kind = $kind,
            otel.status_code = Empty,
            http.request.method = %method,
            url.full = %uri,
            server.address = uri.host().unwrap_or(""),
            server.port = port(uri),
            $($($extra)+,)?
            http.response.status_code = Empty,
            network.protocol.version = Empty,
            error.type = Empty,
            trace_id = %format_args!("{:032x}", $me.trace_id),
            span_id = %format_args!("{:016x}", $me.parent_id),
            parent_span_id = %format_args!("{:016x}", $parent.parent_id),
        )
    }};
}

/// Fills in the outcome fields of a span.
fn record_outcome(span: &Span, result: &Result<Response, Error>) {
    match result {
        Ok(res) => {
            let status = res.status().as_u16();
            span.record("http.response.status_code", status);
            span.record("network.protocol.version", protocol(res.version()));
            if status >= 400 {
                span.record("error.type", status.to_string().as_str());
                span.record("otel.status_code", "ERROR");
            }
        }
        Err(e) => {
            span.record("error.type", e.kind().as_str());
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// Header values, redacted unless allow-listed.
struct Redacted<'a> {
    headers: &'a HeaderMap,
    show: &'a [HeaderName],
}

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (name, value)) in self.headers.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if self.show.contains(name) {
                write!(f, "{name}: {:?}", String::from_utf8_lossy(value.as_bytes()))?;
            } else {
                write!(f, "{name}: [redacted]")?;
            }
        }
        f.write_str("}")
    }
}

macro_rules! event_at {
    ($level:expr, $($rest:tt)+) => {
        match $level {
            Level::ERROR => tracing::event!(Level::ERROR, $($rest)+),
            Level::WARN => tracing::event!(Level::WARN, $($rest)+),
            Level::INFO => tracing::event!(Level::INFO, $($rest)+),
            Level::DEBUG => tracing::event!(Level::DEBUG, $($rest)+),
            _ => tracing::event!(Level::TRACE, $($rest)+),
        }
    };
}

impl TraceLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        let config = self.config.clone();
        let explicit = TraceContext::from_request(&req);
        let (otel_span, parent, me) = otel::start(&mut req, Kind::Request, explicit);
        let method = req.method().clone();
        let uri = req.uri().clone();
        let span = http_span!("HTTP request", "internal", &method, &uri, me, parent);
        req.extensions_mut().insert(Parent(me));
        req.extensions_mut().insert(Attempts::default());
        if config.log_requests {
            let _enter = span.enter();
            let headers = Redacted {
                headers: req.headers(),
                show: &config.show_headers,
            };
            event_at!(config.log_level, method = %method, url = %uri, headers = %headers, "sending request");
        }
        let started = Instant::now();
        let record = span.clone();
        let scope = otel_span.clone();
        Box::pin(
            scope.scope(async move {
                let result = call(inner, req).await;
                record_outcome(&record, &result);
                otel_span.finish(&result);
                if config.log_requests {
                    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
                    match &result {
                        Ok(res) => {
                            let headers = Redacted {
                                headers: res.headers(),
                                show: &config.show_headers,
                            };
                            event_at!(
                                config.log_level,
                                status = res.status().as_u16(),
                                elapsed_ms,
                                headers = %headers,
                                "response"
                            );
                        }
                        Err(e) => {
                            event_at!(config.log_level, error = %format_args!("{e:#}"), kind = e.kind().as_str(), elapsed_ms, "request failed");
                        }
                    }
                }
                result
            })
            .instrument(span),
        )
    }
}

impl TraceAttemptLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        let explicit = match req.extensions().get::<Parent>() {
            Some(Parent(ctx)) => Some(*ctx),
            None => TraceContext::from_request(&req),
        };
        let resend_count = req
            .extensions()
            .get::<Attempts>()
            .map_or(0, |a| a.0.fetch_add(1, Relaxed));
        let (otel_span, parent, me) =
            otel::start(&mut req, Kind::Attempt { resend_count }, explicit);
        let method = req.method().clone();
        let span = http_span!(
            "HTTP attempt",
            "client",
            &method,
            req.uri(),
            me,
            parent,
            http.request.resend_count = resend_count
        );
        if self.config.propagate {
            let value = HeaderValue::from_str(&me.traceparent()).expect("hex is a valid header");
            req.headers_mut().insert(TRACEPARENT.clone(), value);
        }
        let record = span.clone();
        let metrics = self.metrics.clone();
        let method = method_name(&method);
        // A clone of the URI is a reference count, not a copy of the host.
        let target = req.uri().clone();
        let started = Instant::now();
        let scope = otel_span.clone();
        Box::pin(
            scope
                .scope(async move {
                    let result = call(inner, req).await;
                    record_outcome(&record, &result);
                    otel_span.finish(&result);
                    let (status, protocol, error) = match &result {
                        Ok(res) => (
                            Some(res.status().as_u16()),
                            Some(protocol(res.version())),
                            None,
                        ),
                        Err(e) => (None, None, Some(e.kind().as_str())),
                    };
                    let key = AttrsRef {
                        method,
                        status,
                        address: target.host().unwrap_or(""),
                        port: port(&target),
                        protocol,
                        error,
                    };
                    metrics.record(key, started.elapsed());
                    result
                })
                .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trip() {
        let s = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let ctx = TraceContext::parse(s).unwrap();
        assert_eq!(ctx.trace_id, 0x4bf92f3577b34da6a3ce929d0e0e4736);
        assert_eq!(ctx.parent_id, 0x00f067aa0ba902b7);
        assert_eq!(ctx.flags, 1);
        assert_eq!(ctx.traceparent(), s);
    }

    #[test]
    fn invalid_traceparents() {
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(TraceContext::parse(bad).is_none(), "{bad}");
        }
        // A later version may carry more fields.
        assert!(
            TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_some()
        );
    }

    #[test]
    fn redaction() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer secret"));
        h.insert("content-type", HeaderValue::from_static("text/plain"));
        let show = [http::header::CONTENT_TYPE];
        let s = Redacted {
            headers: &h,
            show: &show,
        }
        .to_string();
        assert!(s.contains("authorization: [redacted]"), "{s}");
        assert!(s.contains("content-type: \"text/plain\""), "{s}");
        assert!(!s.contains("secret"));
    }
}
