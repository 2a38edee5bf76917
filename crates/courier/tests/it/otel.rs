//! The `opentelemetry` feature: the trace middleware's spans reach the
//! application's OpenTelemetry exporter (the SDK's in-memory one here), with
//! the HTTP client semantic-convention attributes, under the caller's
//! current OpenTelemetry span, and `traceparent` names the attempt span.
//!
//! Run with `cargo test -p courier-http --features opentelemetry --test it otel::`.
//! The tests set the global tracer provider, which every trace middleware
//! in the process would export to: each runs in a process of its own
//! ([`alone`]), where nothing else runs.

use std::sync::OnceLock;

use crate::support::alone;
use crate::support::middleware::{reply, scripted};
use courier::middleware::{RetryConfig, Stack};
use courier::Client;
use opentelemetry::context::FutureExt;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{global, Context, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// One provider for the whole binary (the global provider is process-wide);
/// each test finds its own spans by trace id.
fn exporter() -> &'static (InMemorySpanExporter, SdkTracerProvider) {
    static SETUP: OnceLock<(InMemorySpanExporter, SdkTracerProvider)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        // The simple processor exports each span as it ends: no flush needed.
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        global::set_tracer_provider(provider.clone());
        (exporter, provider)
    })
}

fn spans_of(trace_id: opentelemetry::TraceId) -> Vec<SpanData> {
    exporter()
        .0
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace_id)
        .collect()
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn has(span: &SpanData, key: &str, value: impl Into<Value>) {
    let want = value.into();
    assert_eq!(attr(span, key), Some(&want), "{key} of {span:#?}");
}

#[tokio::test]
async fn spans_continue_the_callers_context_and_reach_the_exporter() {
    if !alone(
        module_path!(),
        "spans_continue_the_callers_context_and_reach_the_exporter",
    ) {
        return;
    }
    let (_, provider) = exporter();
    let server = scripted(|req| async move { reply(if req.n == 1 { 503 } else { 200 }, "") }).await;
    let port = i64::from(server.addr.port());
    let client = Stack::new()
        .trace(Default::default())
        .retry(RetryConfig::default().base_delay(std::time::Duration::from_millis(1)))
        .client(Client::new());

    // The application's own span, current while it calls courier.
    let app = provider.tracer("app").start("handle order");
    let app_cx = Context::current_with_span(app);
    let app_ids = app_cx.span().span_context().clone();
    let res = client
        .get(server.url("/orders?id=7"))
        .send()
        .with_context(app_cx.clone())
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(app_cx);

    let spans = spans_of(app_ids.trace_id());
    let request = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Internal && s.name == "GET")
        .expect("the request span");
    assert_eq!(request.parent_span_id, app_ids.span_id());
    assert_eq!(request.instrumentation_scope.name(), "courier");
    has(request, "http.request.method", "GET");
    has(request, "http.response.status_code", 200);

    let mut attempts: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Client)
        .collect();
    attempts.sort_by_key(|s| s.start_time);
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    for a in &attempts {
        assert_eq!(a.name, "GET");
        assert_eq!(a.parent_span_id, request.span_context.span_id());
        has(a, "http.request.method", "GET");
        has(a, "server.address", "127.0.0.1");
        has(a, "server.port", port);
        has(a, "network.protocol.version", "1.1");
        has(a, "url.full", server.url("/orders?id=7"));
    }
    has(attempts[0], "http.response.status_code", 503);
    has(attempts[0], "error.type", "503");
    assert!(matches!(attempts[0].status, Status::Error { .. }));
    assert!(attr(attempts[0], "http.request.resend_count").is_none());
    has(attempts[1], "http.response.status_code", 200);
    has(attempts[1], "http.request.resend_count", 1);
    assert!(attr(attempts[1], "error.type").is_none());
    assert!(!matches!(attempts[1].status, Status::Error { .. }));

    // What the server got names each attempt span, so its spans nest under them.
    let seen = server.seen();
    for (got, span) in seen.iter().zip(&attempts) {
        let want = format!(
            "00-{}-{}-01",
            span.span_context.trace_id(),
            span.span_context.span_id()
        );
        assert_eq!(got.header("traceparent"), Some(want.as_str()));
    }
}

#[tokio::test]
async fn a_traceparent_header_is_a_remote_parent_and_errors_carry_error_type() {
    if !alone(
        module_path!(),
        "a_traceparent_header_is_a_remote_parent_and_errors_carry_error_type",
    ) {
        return;
    }
    exporter();
    let (dead, _held) = crate::support::refused_port();
    let client = Stack::new().trace(Default::default()).client(Client::new());
    let err = client
        .post(format!("http://127.0.0.1:{dead}/"))
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), courier::ErrorKind::Connect);

    let trace_id = opentelemetry::TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
    let spans = spans_of(trace_id);
    let request = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Internal)
        .expect("the request span");
    assert_eq!(
        request.parent_span_id,
        opentelemetry::SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
    assert!(request.parent_span_is_remote);
    let attempt = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Client)
        .expect("the attempt span");
    assert_eq!(attempt.name, "POST");
    has(attempt, "error.type", "connect");
    has(attempt, "server.port", i64::from(dead));
    assert!(attr(attempt, "http.response.status_code").is_none());
    assert!(matches!(attempt.status, Status::Error { .. }));
}
