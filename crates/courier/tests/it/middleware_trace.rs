//! Tracing: the request span, one span per attempt, the traceparent the
//! server got, and redacted request logs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::support::middleware::{reply, scripted};
use courier::middleware::{RetryConfig, Stack, TraceConfig};
use courier::Client;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

#[derive(Debug, Clone)]
struct SpanRec {
    id: u64,
    name: &'static str,
    parent: Option<u64>,
    fields: HashMap<String, String>,
}

#[derive(Clone, Default)]
struct Recorder {
    spans: Arc<Mutex<Vec<SpanRec>>>,
    events: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.spans.lock().unwrap().push(SpanRec {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            parent,
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some(s) = spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut s.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(fields);
    }
}

impl Recorder {
    /// A recorder set as this thread's default subscriber until the guard is
    /// dropped (the tests run on a current-thread runtime, so it sees them all).
    ///
    /// tracing caches each callsite's interest for the whole process, the
    /// first time a thread hits it; while only one dispatcher exists, it asks
    /// that thread's default, so another test of this binary (no subscriber)
    /// hitting the trace middleware first would switch its spans off for
    /// everyone. With a second dispatcher alive for good, every dispatcher
    /// is asked, this recorder included.
    fn install() -> (Recorder, tracing::subscriber::DefaultGuard) {
        static ANCHOR: OnceLock<tracing::Dispatch> = OnceLock::new();
        ANCHOR.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
        let recorder = Recorder::default();
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
        (recorder, guard)
    }

    fn named(&self, name: &str) -> Vec<SpanRec> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.name == name)
            .cloned()
            .collect()
    }
}

fn f<'a>(span: &'a SpanRec, field: &str) -> &'a str {
    span.fields
        .get(field)
        .unwrap_or_else(|| panic!("span {} has no field {field}: {:?}", span.name, span.fields))
}

#[tokio::test]
async fn one_request_two_attempts_and_the_traceparent_the_server_got() {
    let (recorder, _guard) = Recorder::install();

    let srv = scripted(|req| async move {
        if req.n == 1 {
            reply(503, "try again")
        } else {
            reply(200, req.header("traceparent").unwrap_or("none").to_owned())
        }
    })
    .await;
    let client = Stack::new()
        .trace(TraceConfig::default().show_headers([http::header::CONTENT_TYPE]))
        .retry(RetryConfig::default().base_delay(Duration::from_millis(1)))
        .client(Client::new());
    let url = srv.url("/orders/7?expand=1");
    let res = client
        .get(&url)
        .header("authorization", "Bearer secret-token")
        .header("content-type", "text/plain")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let final_traceparent = res.text().await.unwrap();

    let requests = recorder.named("HTTP request");
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert_eq!(f(request, "otel.name"), "GET");
    assert_eq!(f(request, "otel.kind"), "internal");
    assert_eq!(f(request, "http.request.method"), "GET");
    assert_eq!(f(request, "url.full"), url);
    assert_eq!(f(request, "server.address"), "127.0.0.1");
    assert_eq!(f(request, "server.port"), srv.addr.port().to_string());
    assert_eq!(f(request, "http.response.status_code"), "200");
    assert_eq!(f(request, "network.protocol.version"), "1.1");
    let trace_id = f(request, "trace_id").to_owned();
    assert_eq!(trace_id.len(), 32);

    let mut attempts = recorder.named("HTTP attempt");
    attempts.sort_by_key(|a| f(a, "http.request.resend_count").parse::<u32>().unwrap());
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    for (i, a) in attempts.iter().enumerate() {
        assert_eq!(
            a.parent,
            Some(request.id),
            "attempt {i} is a child of the request span"
        );
        assert_eq!(f(a, "otel.kind"), "client");
        assert_eq!(f(a, "http.request.resend_count"), i.to_string());
        assert_eq!(f(a, "trace_id"), trace_id);
        assert_eq!(f(a, "parent_span_id"), f(request, "span_id"));
        assert_eq!(f(a, "url.full"), url);
    }
    assert_eq!(f(&attempts[0], "http.response.status_code"), "503");
    assert_eq!(f(&attempts[0], "error.type"), "503");
    assert_eq!(f(&attempts[0], "otel.status_code"), "ERROR");
    assert_eq!(f(&attempts[1], "http.response.status_code"), "200");

    // What the server got: each attempt's own span id as the parent.
    let seen: Vec<String> = srv
        .seen()
        .iter()
        .map(|s| s.header("traceparent").unwrap().to_owned())
        .collect();
    for (a, tp) in attempts.iter().zip(&seen) {
        assert_eq!(*tp, format!("00-{trace_id}-{}-01", f(a, "span_id")));
    }
    assert_eq!(final_traceparent, seen[1]);

    // The request log: header values redacted unless allow-listed.
    let events = recorder.events.lock().unwrap().clone();
    let sent = events
        .iter()
        .find(|e| e.get("message").map(String::as_str) == Some("sending request"))
        .expect("a 'sending request' event");
    let headers = &sent["headers"];
    assert!(headers.contains("authorization: [redacted]"), "{headers}");
    assert!(
        headers.contains("content-type: \"text/plain\""),
        "{headers}"
    );
    assert!(
        events
            .iter()
            .all(|e| e.values().all(|v| !v.contains("secret-token"))),
        "a secret reached the logs: {events:?}"
    );
    assert!(events
        .iter()
        .any(|e| e.get("message").map(String::as_str) == Some("response")
            && e.get("status").map(String::as_str) == Some("200")));
}

#[tokio::test]
async fn an_incoming_traceparent_is_continued() {
    let (recorder, _guard) = Recorder::install();
    let srv = scripted(|req| async move {
        reply(200, req.header("traceparent").unwrap_or("none").to_owned())
    })
    .await;
    let client = Stack::new()
        .trace(TraceConfig::default())
        .client(Client::new());
    let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let res = client
        .get(srv.url("/"))
        .header("traceparent", incoming)
        .send()
        .await
        .unwrap();
    let sent = res.text().await.unwrap();
    assert!(
        sent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
        "{sent}"
    );
    assert!(
        !sent.contains("00f067aa0ba902b7"),
        "a new parent id: {sent}"
    );
    let request = &recorder.named("HTTP request")[0];
    assert_eq!(f(request, "trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(f(request, "parent_span_id"), "00f067aa0ba902b7");

    // Errors are recorded on the spans too.
    let (port, _held) = crate::support::refused_port();
    client
        .get(format!("http://127.0.0.1:{port}/"))
        .send()
        .await
        .unwrap_err();
    let failed = recorder.named("HTTP request").pop().unwrap();
    assert_eq!(f(&failed, "error.type"), "connect");
    assert_eq!(f(&failed, "otel.status_code"), "ERROR");
}
