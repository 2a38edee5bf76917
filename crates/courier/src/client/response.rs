//! The response: head, streaming body, and drain-on-drop.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode, Uri, Version};
use http_body::{Body as _, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::client::drain::DrainPolicy;
use crate::client::transport::{Lease, Source};
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::{Answer, Sent};

mod construct;

/// An HTTP response whose head has arrived; the body streams on demand.
///
/// Read the body with [`chunk`](Response::chunk), [`bytes`](Response::bytes),
/// [`text`](Response::text) or [`json`](Response::json). If you drop the
/// response before the end, the rest is drained in the background (within the
/// client's drain limits) so the connection is reused rather than closed.
///
/// ```no_run
/// # #[tokio::main]
/// # async fn main() -> Result<(), courier::Error> {
/// let client = courier::Client::new();
/// let res = client.get("http://127.0.0.1:8080/json/64").send().await?;
/// println!("{} {:?} from {}", res.status(), res.version(), res.url());
/// let res = res.error_for_status()?; // a 4xx/5xx becomes an error: `err.is_status()`
/// let value: serde_json::Value = res.json().await?;
///
/// // Or chunk by chunk, as the body arrives.
/// let mut res = client.get("http://127.0.0.1:8080/bytes/65536").send().await?;
/// let mut total = 0;
/// while let Some(chunk) = res.chunk().await? {
///     total += chunk.len();
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Response {
    head: http::response::Parts,
    /// The headers when they are shared with the connection's last head
    /// (HTTP/1.1, HTTP/2): `head.headers` is empty then, and the first `&mut`
    /// use copies them in ([`own_headers`](Response::own_headers)). A
    /// response that is only read costs a reference count, not a copy of
    /// the map (two allocations and a count per value) and its drop.
    shared: Option<std::sync::Arc<HeaderMap>>,
    body: ResponseBody,
    /// The URL that was requested (after redirects, the last one).
    url: Uri,
    /// `url` as a WHATWG URL, made the first time [`Response::url`] asks.
    parsed_url: std::sync::OnceLock<Box<url::Url>>,
    remote_addr: Option<SocketAddr>,
}

/// The URL a response answers, kept in an `http::Response`'s extensions by
/// [`Response::into_http`] and taken back by [`Response::from_http`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseUrl(pub Uri);

/// The address of the server a response came from, kept in an
/// `http::Response`'s extensions by [`Response::into_http`] and taken back
/// by [`Response::from_http`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr(pub SocketAddr);

impl Response {
    // Inlined into its one caller, so the response is built where it is
    // returned rather than built here and copied there (it is 512 B).
    #[inline]
    pub(crate) fn new(
        mut answer: Answer<Source>,
        lease: Lease,
        deadline: Option<Instant>,
        drain: DrainPolicy,
        max_body: Option<u64>,
    ) -> (Response, Sent) {
        // The answer's fields are used where they lie (no `let Answer { .. }`
        // binding, which copied the head, URI and request parts once more).
        let remote_addr = lease.remote_addr();
        // A switch of protocols parks the connection for `upgrade()`.
        let (lease, source) = crate::client::upgrade::park(&mut answer.head, lease, answer.body);
        // HTTP/1.1 read it with the head already.
        let content_length = answer.length.unwrap_or_else(|| {
            declared_length(answer.shared.as_deref().unwrap_or(&answer.head.headers))
        });
        let mut body = ResponseBody {
            source: Some(source),
            lease,
            deadline,
            timer: None,
            remaining: content_length,
            drain: Some(drain),
            max_body,
            wrapped: None,
        };
        // No body at all (HEAD, 204, 304, Content-Length: 0): the connection
        // is free right now.
        if body.at_end() {
            body.finish();
        }
        let res = Response {
            head: answer.head,
            shared: answer.shared,
            body,
            url: answer.uri,
            parsed_url: std::sync::OnceLock::new(),
            remote_addr,
        };
        (res, answer.sent)
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.head.status
    }

    /// The HTTP version the server answered with.
    pub fn version(&self) -> Version {
        self.head.version
    }

    /// The response headers.
    pub fn headers(&self) -> &HeaderMap {
        self.shared.as_deref().unwrap_or(&self.head.headers)
    }

    /// Makes the headers this response's own (a copy of the shared map, if
    /// another holds it too), for a `&mut` use or to be moved out.
    fn own_headers(&mut self) {
        if let Some(shared) = self.shared.take() {
            self.head.headers = std::sync::Arc::unwrap_or_clone(shared);
        }
    }

    /// The URL this response answers: the request's, or after redirects
    /// were followed, the last one's, as reqwest's `Response::url`. Made
    /// from [`uri`](Self::uri) the first time it is asked for (a response
    /// that is never asked costs nothing).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let client = courier::Client::new();
    /// let res = client.get("http://127.0.0.1:8080/redirect/1").send().await?;
    /// assert_eq!(res.url().path(), "/redirect/0");
    /// # Ok(()) }
    /// ```
    pub fn url(&self) -> &url::Url {
        self.parsed_url.get_or_init(|| {
            // Every request target courier sends is one the WHATWG rules
            // read; the fallback is for a response built by hand.
            let url = url::Url::parse(&self.url.to_string())
                .unwrap_or_else(|_| url::Url::parse("about:blank").expect("a valid URL"));
            Box::new(url)
        })
    }

    /// The URL this response answers as an [`http::Uri`], exactly as it
    /// was sent.
    pub fn uri(&self) -> &Uri {
        &self.url
    }

    /// The address of the server that sent the response (the proxy's, through
    /// a proxy), when the connection was over TCP.
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.remote_addr
    }

    /// An error of kind [`ErrorKind::Status`] if the status is a client or
    /// server error (4xx or 5xx), else the response itself.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let client = courier::Client::new();
    /// let body = client
    ///     .get("http://127.0.0.1:8080/status/503")
    ///     .send()
    ///     .await?
    ///     .error_for_status()? // fails here: "HTTP status 503 Service Unavailable (http://…/status/503)"
    ///     .text()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn error_for_status(self) -> Result<Response, Error> {
        match self.status_error() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    /// As [`error_for_status`](Self::error_for_status), without taking the
    /// response (its body can still be read after an error).
    pub fn error_for_status_ref(&self) -> Result<&Response, Error> {
        match self.status_error() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    fn status_error(&self) -> Option<Error> {
        let status = self.status();
        (status.is_client_error() || status.is_server_error())
            .then(|| Error::from_status(status, &self.url))
    }

    /// True when the body is known to be over already (no body, or read to
    /// its end).
    pub(crate) fn body_ended(&self) -> bool {
        http_body::Body::is_end_stream(&self.body)
    }

    /// The Content-Length the server declared, if any.
    pub fn content_length(&self) -> Option<u64> {
        declared_length(self.headers())
    }

    /// The next piece of the body, or `None` at its end.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let client = courier::Client::new();
    /// let mut res = client.get("http://127.0.0.1:8080/bytes/100000").send().await?;
    /// let mut total = 0;
    /// while let Some(chunk) = res.chunk().await? {
    ///     total += chunk.len();
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        self.body.chunk().await
    }

    /// The whole body (bounded by `max_response_body_size`).
    pub async fn bytes(self) -> Result<Bytes, Error> {
        self.body.collect().await
    }

    /// The whole body as UTF-8 text.
    pub async fn text(self) -> Result<String, Error> {
        let bytes = self.bytes().await?;
        String::from_utf8(Vec::from(bytes)).map_err(|e| Error::new(ErrorKind::Decode, e))
    }

    /// The whole body parsed as JSON.
    #[cfg(feature = "json")]
    pub async fn json<T: serde::de::DeserializeOwned>(self) -> Result<T, Error> {
        let bytes = self.bytes().await?;
        serde_json::from_slice(&bytes).map_err(|e| Error::new(ErrorKind::Decode, e))
    }

    /// Converts into an `http::Response` whose body implements
    /// [`http_body::Body`]; the URL and the server's address go into its
    /// extensions as [`ResponseUrl`] and [`RemoteAddr`].
    pub fn into_http(mut self) -> http::Response<ResponseBody> {
        self.own_headers();
        let Response {
            mut head,
            body,
            url,
            remote_addr,
            ..
        } = self;
        head.extensions.insert(ResponseUrl(url));
        if let Some(addr) = remote_addr {
            head.extensions.insert(RemoteAddr(addr));
        }
        http::Response::from_parts(head, body)
    }

    /// The body alone.
    pub fn into_body(self) -> ResponseBody {
        self.body
    }

    /// Reassembles a response taken apart with [`into_http`](Response::into_http)
    /// (middleware that rewrites the head or the body uses this).
    pub fn from_http(res: http::Response<ResponseBody>) -> Response {
        let (mut head, body) = res.into_parts();
        let url = head
            .extensions
            .remove::<ResponseUrl>()
            .map(|u| u.0)
            .unwrap_or_default();
        let remote_addr = head.extensions.remove::<RemoteAddr>().map(|a| a.0);
        Response {
            head,
            shared: None,
            body,
            url,
            parsed_url: std::sync::OnceLock::new(),
            remote_addr,
        }
    }

    /// The response headers, to modify (middleware).
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        self.own_headers();
        &mut self.head.headers
    }

    /// Extensions attached to the response by middleware (for example the
    /// redirect middleware's `Redirects`).
    pub fn extensions(&self) -> &http::Extensions {
        &self.head.extensions
    }

    /// Extensions attached to the response, to modify.
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.head.extensions
    }

    /// Replaces the body with one computed from it; see [`ResponseBody::map`].
    pub fn map_body<B, F>(self, f: F) -> Response
    where
        F: FnOnce(ResponseBody) -> B,
        B: http_body::Body<Data = Bytes, Error = Error> + Send + Sync + 'static,
    {
        Response {
            head: self.head,
            shared: self.shared,
            body: self.body.map(f),
            url: self.url,
            parsed_url: self.parsed_url,
            remote_addr: self.remote_addr,
        }
    }
}

/// The Content-Length a head declares, if it is `1*DIGIT` (as every
/// protocol's framing reads it; `str::parse` would take `+5`).
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| crate::validate::parse_length(v.as_bytes()))
}

/// A response body: streams from the connection, returns the connection to the
/// pool at its end, and drains itself in the background if dropped early.
///
/// Its [`size_hint`](http_body::Body::size_hint) is the server's
/// Content-Length (what is left of it), as hyper reports it: a claim the
/// body fails if it does not keep, not a size to allocate up front.
pub struct ResponseBody {
    source: Option<Source>,
    lease: Option<Lease>,
    deadline: Option<Instant>,
    // Created on the first read that has to wait, so fast bodies never touch the timer wheel.
    timer: Option<Pin<Box<Sleep>>>,
    remaining: Option<u64>,
    /// The client's drain limits; `None` for a body that holds no
    /// connection (one a caller built, or [`ResponseBody::map`]'s).
    drain: Option<DrainPolicy>,
    max_body: Option<u64>,
    /// Set by [`ResponseBody::map`]: this body only forwards to `wrapped`,
    /// which owns the original body (and with it the lease).
    wrapped: Option<Pin<Box<dyn http_body::Body<Data = Bytes, Error = Error> + Send + Sync>>>,
}

impl ResponseBody {
    /// Replaces this body with one computed from it, for middleware that
    /// transforms a body (decompression) or holds something until its end (a
    /// concurrency permit). The new body owns this one, so reading it to the
    /// end returns the connection, and dropping it early drains as usual;
    /// `bytes()`/`text()`/`json()` apply `max_response_body_size` to what the
    /// new body yields.
    pub fn map<B, F>(self, f: F) -> ResponseBody
    where
        F: FnOnce(ResponseBody) -> B,
        B: http_body::Body<Data = Bytes, Error = Error> + Send + Sync + 'static,
    {
        let max_body = self.max_body;
        ResponseBody {
            source: None,
            lease: None,
            deadline: None,
            timer: None,
            remaining: None,
            // The new body holds no connection: the one it owns drains.
            drain: None,
            max_body,
            wrapped: Some(Box::pin(f(self))),
        }
    }

    /// Nothing more to read (or nothing to read at all).
    fn at_end(&self) -> bool {
        self.source
            .as_ref()
            .is_none_or(|s| s.is_end(self.lease.as_ref()))
    }

    /// The end was reached: give the connection back.
    fn finish(&mut self) {
        self.source = None;
        if let Some(lease) = self.lease.take() {
            lease.release();
        }
    }

    /// The body failed: close the connection.
    fn abort(&mut self) {
        self.source = None;
        self.lease = None;
    }

    async fn chunk(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut *self).poll_frame(cx)).await;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(e),
                Some(Ok(frame)) => {
                    // Trailers are not data; keep reading until data or the end.
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Ok(Some(data));
                        }
                    }
                }
            }
        }
    }

    async fn collect(mut self) -> Result<Bytes, Error> {
        let limit = self.max_body.unwrap_or(u64::MAX);
        if self.remaining.is_some_and(|len| len > limit) {
            return Err(too_large());
        }
        // One chunk is returned as is; more are copied into one buffer. Its
        // first size trusts Content-Length only up to PREALLOC_MAX: the
        // length is the server's claim, and a buffer must not be sized by a
        // claim (10^12 aborted the process), only by bytes that arrived.
        let Some(first) = self.chunk().await? else {
            return Ok(Bytes::new());
        };
        if first.len() as u64 > limit {
            return Err(too_large());
        }
        let Some(second) = self.chunk().await? else {
            return Ok(first);
        };
        let hint = self.remaining.unwrap_or(0).min(limit).min(PREALLOC_MAX) as usize;
        let mut buf = BytesMut::with_capacity(first.len() + second.len() + hint);
        buf.extend_from_slice(&first);
        if (buf.len() + second.len()) as u64 > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&second);
        while let Some(chunk) = self.chunk().await? {
            if (buf.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    }
}

/// The most `bytes()` reserves ahead of the bytes that arrived, on the
/// strength of a declared Content-Length; past it the buffer grows by
/// doubling as the body comes.
const PREALLOC_MAX: u64 = 256 * 1024;

fn body_timeout() -> Error {
    Error::msg(
        ErrorKind::Timeout,
        "response body not received within the request timeout",
    )
}

fn too_large() -> Error {
    Error::msg(
        ErrorKind::BodyTooLarge,
        "response body exceeds max_response_body_size",
    )
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if let Some(wrapped) = this.wrapped.as_mut() {
            return wrapped.as_mut().poll_frame(cx);
        }
        let Some(source) = this.source.as_mut() else {
            return Poll::Ready(None);
        };
        match source.poll_frame(this.lease.as_mut(), cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(rem)) = (frame.data_ref(), this.remaining.as_mut()) {
                    *rem = rem.saturating_sub(data.len() as u64);
                }
                // Reading exactly Content-Length bytes is the end, even if the
                // caller never polls again (a JSON decoder stops at the `}`).
                if this.at_end() {
                    this.finish();
                } else if this.deadline.is_some_and(|d| Instant::now() >= d) {
                    // A body that always has bytes ready never returns
                    // Pending, where the timer below is polled: its deadline
                    // is checked here too. Not on the frame that completes
                    // it: the whole body arrived, and most bodies are one
                    // frame (a clock read a request saved).
                    this.abort();
                    return Poll::Ready(Some(Err(body_timeout())));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.abort();
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.finish();
                Poll::Ready(None)
            }
            Poll::Pending => {
                if let Some(deadline) = this.deadline {
                    let timer = this
                        .timer
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                    if timer.as_mut().poll(cx).is_ready() {
                        this.abort();
                        return Poll::Ready(Some(Err(body_timeout())));
                    }
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        if let Some(wrapped) = &self.wrapped {
            return wrapped.is_end_stream();
        }
        self.at_end()
    }

    fn size_hint(&self) -> SizeHint {
        if let Some(wrapped) = &self.wrapped {
            return wrapped.size_hint();
        }
        match &self.source {
            None => SizeHint::with_exact(0),
            Some(_) => self
                .remaining
                .map_or_else(SizeHint::new, SizeHint::with_exact),
        }
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        match (self.source.take(), &self.drain) {
            // HTTP/2: dropping the body resets just this stream; nothing to drain.
            (Some(source), Some(drain)) if !source.is_end(Some(&lease)) && !lease.is_shared() => {
                drain.start(source, lease, self.remaining)
            }
            _ => lease.release(),
        }
    }
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseBody")
            .field(
                "finished",
                &(self.source.is_none() && self.wrapped.is_none()),
            )
            .field("wrapped", &self.wrapped.is_some())
            .field("remaining", &self.remaining)
            .finish()
    }
}
