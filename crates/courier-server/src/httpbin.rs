//! Two endpoints in httpbin's shape, for programs ported from reqwest (their
//! tests call httpbin): `/get` answers the request's query, headers and URL
//! as JSON; `/gzip` answers a gzip-encoded JSON body whatever the request
//! asked for, as httpbin does.

use std::sync::OnceLock;

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, HOST};
use http::{HeaderValue, Request, StatusCode};
use serde_json::{json, Map, Value};

use crate::body::ResponseBody;
use crate::reply::{respond, Outcome, APPLICATION_JSON};

static GZIP: HeaderValue = HeaderValue::from_static("gzip");

/// `/get`: `{"args": {query pairs, decoded}, "headers": {...}, "url": "..."}`;
/// a name given twice keeps its last value (httpbin gives a list).
pub(crate) fn get<B>(req: &Request<B>) -> Outcome {
    let args: Map<String, Value> =
        form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
    let headers: Map<String, Value> = req
        .headers()
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), Value::String(value))
        })
        .collect();
    // HTTP/1.1 sends the origin form: the URL is the Host's.
    let url = match (req.uri().authority(), req.headers().get(HOST)) {
        (Some(_), _) => req.uri().to_string(),
        (None, Some(host)) => format!(
            "http://{}{}",
            String::from_utf8_lossy(host.as_bytes()),
            req.uri()
        ),
        (None, None) => req.uri().to_string(),
    };
    let body = json!({ "args": args, "headers": headers, "url": url });
    respond(
        StatusCode::OK,
        &APPLICATION_JSON,
        ResponseBody::full(body.to_string()),
    )
}

/// `/gzip`: `{"gzipped": true, "method": "GET"}`, gzip-encoded (the body
/// is compressed once per method name, and kept).
pub(crate) fn gzip<B>(req: &Request<B>) -> Outcome {
    static GET: OnceLock<Bytes> = OnceLock::new();
    let encode = |method: &str| {
        use std::io::Write;
        let text = json!({ "gzipped": true, "method": method }).to_string();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(text.as_bytes())
            .expect("writing to a Vec");
        Bytes::from(encoder.finish().expect("writing to a Vec"))
    };
    let body = match req.method().as_str() {
        "GET" => GET.get_or_init(|| encode("GET")).clone(),
        other => encode(other),
    };
    let mut outcome = respond(StatusCode::OK, &APPLICATION_JSON, ResponseBody::full(body));
    if let Outcome::Respond(response) = &mut outcome {
        response
            .headers_mut()
            .insert(CONTENT_ENCODING, GZIP.clone());
    }
    outcome
}
