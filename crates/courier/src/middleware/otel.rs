//! The OpenTelemetry side of the trace middleware (the `opentelemetry`
//! feature): each courier span is also an OpenTelemetry span, started on
//! the global tracer provider, so the application's exporter receives it.
//!
//! Why the API directly and not only `tracing` fields: a `tracing` span
//! reaches OpenTelemetry only through a bridge (`tracing-opentelemetry`), and
//! it cannot continue the caller's *OpenTelemetry* context
//! (`opentelemetry::Context::current()`), which is where an application
//! instrumented with the OpenTelemetry API keeps its active span. With this
//! feature, leave courier's `tracing` spans out of such a bridge (filter the
//! `courier` target) or each request is exported twice.
//!
//! The parent, first found: the request's `traceparent` header or
//! [`TraceContext`] extension (a remote parent), then the caller's current
//! OpenTelemetry span. The SDK chooses the span id and sampling, so the ids
//! courier propagates in `traceparent` are taken from the OpenTelemetry span
//! when it is a real one (a no-op provider leaves courier's own ids).
//!
//! Without the feature, [`OtelSpan`] is an empty type and every call is a no-op.

use std::future::Future;

use http::Request;

use super::trace::TraceContext;
use crate::body::Body;
use crate::client::response::Response;
use crate::error::Error;

/// Which courier span this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The logical request (around retries and redirects): `INTERNAL`.
    Request,
    /// One attempt on the wire: `CLIENT`, with `http.request.resend_count`.
    Attempt { resend_count: u32 },
}

/// The OpenTelemetry span of one courier span (nothing without the feature).
#[derive(Debug, Clone)]
pub(crate) struct OtelSpan {
    #[cfg(feature = "opentelemetry")]
    cx: opentelemetry::Context,
}

/// Starts the span; returns it with the parent's ids and this span's ids
/// (what `traceparent` carries). `explicit` is the parent the request names.
#[cfg(not(feature = "opentelemetry"))]
pub(crate) fn start(
    _req: &mut Request<Body>,
    _kind: Kind,
    explicit: Option<TraceContext>,
) -> (OtelSpan, TraceContext, TraceContext) {
    let parent = explicit.unwrap_or_else(TraceContext::new_root);
    (OtelSpan {}, parent, parent.child())
}

#[cfg(not(feature = "opentelemetry"))]
impl OtelSpan {
    /// Records the outcome and ends the span.
    pub(crate) fn finish(&self, _result: &Result<Response, Error>) {}

    /// Runs `fut` with this span as the current OpenTelemetry context.
    pub(crate) fn scope<F: Future>(&self, fut: F) -> F {
        fut
    }
}

#[cfg(feature = "opentelemetry")]
pub(crate) use enabled::start;

#[cfg(feature = "opentelemetry")]
mod enabled {
    use std::borrow::Cow;
    use std::sync::OnceLock;

    use opentelemetry::trace::{
        SpanContext, SpanKind, Status, TraceContextExt, TraceFlags, TraceState, Tracer,
    };
    use opentelemetry::{global, Context, InstrumentationScope, KeyValue, SpanId, TraceId};

    use super::*;
    use crate::middleware::request_metrics::method_name;

    /// The request span's context, for the attempt spans under it.
    #[derive(Clone)]
    struct OtelParent(Context);

    fn scope() -> InstrumentationScope {
        static SCOPE: OnceLock<InstrumentationScope> = OnceLock::new();
        SCOPE
            .get_or_init(|| {
                InstrumentationScope::builder("courier")
                    .with_version(env!("CARGO_PKG_VERSION"))
                    .with_schema_url("https://opentelemetry.io/schemas/1.29.0")
                    .build()
            })
            .clone()
    }

    fn to_span_context(tc: TraceContext) -> SpanContext {
        SpanContext::new(
            TraceId::from_bytes(tc.trace_id.to_be_bytes()),
            SpanId::from_bytes(tc.parent_id.to_be_bytes()),
            TraceFlags::new(tc.flags),
            true,
            TraceState::default(),
        )
    }

    fn from_span_context(sc: &SpanContext) -> TraceContext {
        TraceContext {
            trace_id: u128::from_be_bytes(sc.trace_id().to_bytes()),
            parent_id: u64::from_be_bytes(sc.span_id().to_bytes()),
            flags: sc.trace_flags().to_u8(),
        }
    }

    /// `url.full` without credentials, as the conventions require.
    fn url_full(uri: &http::Uri) -> Cow<'_, str> {
        match uri.authority().map(|a| a.as_str()) {
            Some(auth) if auth.contains('@') => {
                let host = &auth[auth.rfind('@').map_or(0, |i| i + 1)..];
                let s = uri.to_string();
                Cow::Owned(s.replacen(auth, &format!("REDACTED:REDACTED@{host}"), 1))
            }
            _ => Cow::Owned(uri.to_string()),
        }
    }

    pub(crate) fn start(
        req: &mut Request<Body>,
        kind: Kind,
        explicit: Option<TraceContext>,
    ) -> (OtelSpan, TraceContext, TraceContext) {
        let current = Context::current();
        let from_layer = match kind {
            Kind::Attempt { .. } => req.extensions().get::<OtelParent>().map(|p| p.0.clone()),
            Kind::Request => None,
        };
        let (parent_cx, parent) = match (from_layer, explicit) {
            (Some(cx), Some(tc)) => (cx, Some(tc)),
            (_, Some(tc)) => (
                current.with_remote_span_context(to_span_context(tc)),
                Some(tc),
            ),
            (_, None) => {
                let sc = current.span().span_context().clone();
                let parent = sc.is_valid().then(|| from_span_context(&sc));
                (current, parent)
            }
        };
        let parent = parent.unwrap_or_else(TraceContext::new_root);

        let uri = req.uri();
        let method = method_name(req.method());
        let mut attributes = vec![
            KeyValue::new("http.request.method", method),
            KeyValue::new("url.full", url_full(uri).into_owned()),
            KeyValue::new("server.address", uri.host().unwrap_or("").to_owned()),
            KeyValue::new("server.port", i64::from(super::super::trace::port(uri))),
        ];
        let span_kind = match kind {
            Kind::Request => SpanKind::Internal,
            Kind::Attempt { resend_count } => {
                if resend_count > 0 {
                    attributes.push(KeyValue::new(
                        "http.request.resend_count",
                        i64::from(resend_count),
                    ));
                }
                SpanKind::Client
            }
        };
        // The conventions name an HTTP client span after its method
        // (`_OTHER` becomes `HTTP`).
        let name = if method == "_OTHER" { "HTTP" } else { method };
        // What a no-op span would repeat: the context it was started in (for
        // an attempt, the request span's, which may be the incoming one).
        let inherited = parent_cx.span().span_context().span_id();
        let tracer = global::tracer_with_scope(scope());
        let span = tracer
            .span_builder(name)
            .with_kind(span_kind)
            .with_attributes(attributes)
            .start_with_context(&tracer, &parent_cx);
        let cx = parent_cx.with_span(span);

        // A real span (an SDK's) has its own id: propagate that one. A no-op
        // provider's span repeats the context it was started in, or has none.
        let sc = cx.span().span_context().clone();
        let own_id = sc.span_id() != to_span_context(parent).span_id() && sc.span_id() != inherited;
        let me = if sc.is_valid() && own_id {
            from_span_context(&sc)
        } else {
            parent.child()
        };
        if kind == Kind::Request {
            req.extensions_mut().insert(OtelParent(cx.clone()));
        }
        (OtelSpan { cx }, parent, me)
    }

    impl OtelSpan {
        /// Records the outcome and ends the span.
        pub(crate) fn finish(&self, result: &Result<Response, Error>) {
            let span = self.cx.span();
            match result {
                Ok(res) => {
                    let status = res.status().as_u16();
                    span.set_attribute(KeyValue::new(
                        "http.response.status_code",
                        i64::from(status),
                    ));
                    span.set_attribute(KeyValue::new(
                        "network.protocol.version",
                        super::super::trace::protocol(res.version()),
                    ));
                    if status >= 400 {
                        span.set_attribute(KeyValue::new("error.type", status.to_string()));
                        span.set_status(Status::error(""));
                    }
                }
                Err(e) => {
                    span.set_attribute(KeyValue::new("error.type", e.kind().as_str()));
                    span.set_status(Status::error(format!("{e:#}")));
                }
            }
            span.end();
        }

        /// Runs `fut` with this span as the current OpenTelemetry context,
        /// so what it calls (a resolver, a layer below) sees it.
        pub(crate) fn scope<F: Future>(&self, fut: F) -> opentelemetry::context::WithContext<F> {
            use opentelemetry::context::FutureExt;
            fut.with_context(self.cx.clone())
        }
    }
}
