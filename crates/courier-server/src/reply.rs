//! Building responses: [`Outcome`] (what the service should do with a
//! request), the content types, and the responses several endpoints share.
//!
//! Why a leaf of its own: the regular endpoints (`endpoints.rs`), the fault
//! endpoints (`faults.rs`), the httpbin ones and the service all answer with
//! these; kept below them, routing (which imports the endpoints) never has
//! to be imported back by an endpoint.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};

use crate::body::ResponseBody;
use crate::fault::Fault;

pub(crate) static OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");
pub(crate) static APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
pub(crate) static TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
static CLOSE: HeaderValue = HeaderValue::from_static("close");

/// What the service should do with a request.
pub(crate) enum Outcome {
    /// Send this response (the service adds `x-connection-id`).
    Respond(Response<ResponseBody>),
    /// Wait this long, then send [`delay_done`].
    Delay(Duration),
    /// Misbehave, in the way the connection's protocol allows.
    Fault(Fault),
}

/// 404 for any path no endpoint claims.
pub(crate) fn not_found() -> Outcome {
    respond(
        StatusCode::NOT_FOUND,
        &TEXT_PLAIN,
        ResponseBody::full("not found\n"),
    )
}

/// A response with a status, a content type and a body.
pub(crate) fn response(
    status: StatusCode,
    content_type: &HeaderValue,
    body: ResponseBody,
) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, content_type.clone());
    response
}

/// [`response`], wrapped as an [`Outcome`].
pub(crate) fn respond(
    status: StatusCode,
    content_type: &HeaderValue,
    body: ResponseBody,
) -> Outcome {
    Outcome::Respond(response(status, content_type, body))
}

/// 400 with a short explanation, for unparsable path parameters.
pub(crate) fn bad_request(why: &'static str) -> Outcome {
    respond(
        StatusCode::BAD_REQUEST,
        &TEXT_PLAIN,
        ResponseBody::full(Bytes::from_static(why.as_bytes())),
    )
}

/// The response a `/delay/{ms}` request gets once its timer fires (200), and
/// a replica's answer (200 or 503): "ok" with `status`.
pub(crate) fn delay_done(status: StatusCode) -> Response<ResponseBody> {
    let mut response = ok();
    *response.status_mut() = status;
    response
}

/// 200 with the body "ok": what `/delay`, `/close` and `/fault/goaway`
/// answer. For the latter two the service also ends the connection:
/// HTTP/1.1 through [`with_connection_close`], HTTP/2 with a GOAWAY.
pub(crate) fn ok() -> Response<ResponseBody> {
    response(StatusCode::OK, &TEXT_PLAIN, ResponseBody::full("ok"))
}

/// Adds `connection: close`, which tells the client, and hyper, to close
/// the HTTP/1.1 connection after this response.
pub(crate) fn with_connection_close(
    mut response: Response<ResponseBody>,
) -> Response<ResponseBody> {
    response.headers_mut().insert(CONNECTION, CLOSE.clone());
    response
}
