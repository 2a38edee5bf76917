//! [`RequestBuilder`]: one request, assembled step by step.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Uri};
use tokio_util::either::Either;

use crate::body::Body;
use crate::client::response::Response;
use crate::client::Client;
use crate::error::{Error, ErrorKind};

use super::extensions::{Idempotent, RequestTimeout};

pub(crate) use super::uri::url_to_uri;
pub use super::uri::IntoUri;

/// A request being built, for a [`Client`] (`RequestBuilder`), a
/// [`ServiceClient`](crate::ServiceClient)
/// ([`ServiceRequestBuilder`](crate::ServiceRequestBuilder)) or a
/// [`ClusterClient`](crate::ClusterClient)
/// ([`ClusterRequestBuilder`](crate::cluster::ClusterRequestBuilder)): one
/// type over its [`RequestSender`], so the three offer the same methods,
/// with the same checks and the same meaning, and [`build`](Self::build)
/// and [`send`](Self::send) the same way. Finish it with `send`.
///
/// Errors (bad URL, invalid header) are kept and reported by `send`, so
/// building never panics and chains stay readable.
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// use std::time::Duration;
/// let client = courier::Client::new();
/// let res = client
///     .post("http://127.0.0.1:8080/echo")
///     .header("content-type", "text/plain")
///     .body("hello")
///     .timeout(Duration::from_secs(2))
///     .send()
///     .await?;
/// assert_eq!(res.text().await?, "hello");
/// # Ok(()) }
/// ```
#[must_use = "a request does nothing until it is sent"]
pub struct RequestBuilder<S = Client> {
    sender: S,
    request: Result<Request<Body>, Error>,
    /// The request's own timeout; `None`: the sender's default.
    timeout: Option<Duration>,
}

/// What a [`RequestBuilder`] sends through: [`Client`],
/// [`ServiceClient`](crate::ServiceClient) (through its middleware) or
/// [`ClusterClient`](crate::ClusterClient) (to its replicas). Sealed: the
/// builder's meaning is the same for the three, and no other.
pub trait RequestSender: Clone + Send + Sync + 'static + sealed::Sealed {
    /// Sends `request`, with `timeout` as its own (`None`: the request's
    /// [`RequestTimeout`] extension, else the sender's default): what
    /// [`RequestBuilder::send`] calls.
    #[doc(hidden)]
    fn dispatch(
        self,
        request: Request<Body>,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static;
}

pub(crate) mod sealed {
    /// Keeps [`RequestSender`](super::RequestSender) to courier's clients.
    pub trait Sealed {}
}

impl sealed::Sealed for Client {}

impl RequestSender for Client {
    fn dispatch(
        self,
        request: Request<Body>,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let timeout = timeout
            .or_else(|| RequestTimeout::of(&request))
            .or_else(|| self.default_timeout());
        self.send(request, timeout)
    }
}

impl<S: RequestSender> RequestBuilder<S> {
    /// A builder for `sender`: the client types' `request` methods.
    pub(crate) fn new(sender: S, method: Method, uri: Result<Uri, Error>) -> Self {
        let request = uri.map(|uri| {
            let mut req = Request::new(Body::empty());
            *req.method_mut() = method;
            *req.uri_mut() = uri;
            req
        });
        RequestBuilder {
            sender,
            request,
            timeout: None,
        }
    }

    /// Adds a header. Names and values are validated (a value with CR or LF
    /// is rejected), and an invalid one fails the request with
    /// [`ErrorKind::InvalidRequest`].
    ///
    /// Framing headers are courier's to set, from the body; one set here must
    /// agree with the body, or `send` fails with
    /// [`ErrorKind::InvalidRequest`] before a byte is written:
    ///
    /// - `Content-Length`: one value, digits only, equal to the length of a
    ///   buffered body (or a stream of known size); a stream of unknown size
    ///   is held to it as it is sent (too few or too many bytes fail the
    ///   request, and the connection is not reused);
    /// - `Transfer-Encoding`: only `chunked`, alone, without
    ///   `Content-Length` (over HTTP/2 it is left out: DATA frames frame the body);
    /// - `Host`: at most one; over HTTP/2 it is not sent (`:authority` comes
    ///   from the URL);
    /// - no control character but tab in any value (which `http`'s unchecked
    ///   constructors would let through).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let client = courier::Client::new();
    /// let err = client
    ///     .post("http://127.0.0.1:8080/echo")
    ///     .header("content-length", "2")
    ///     .body(vec![b'u'; 40])
    ///     .send()
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), courier::ErrorKind::InvalidRequest);
    /// # Ok(()) }
    /// ```
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        if let Ok(req) = &mut self.request {
            let name = HeaderName::try_from(name).map_err(Into::into);
            let value = HeaderValue::try_from(value).map_err(Into::into);
            match name.and_then(|n| value.map(|v| (n, v))) {
                Ok((n, v)) => {
                    req.headers_mut().append(n, v);
                }
                Err(e) => self.request = Err(Error::new(ErrorKind::InvalidRequest, e)),
            }
        }
        self
    }

    /// Adds every header in `headers`.
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        if let Ok(req) = &mut self.request {
            req.headers_mut().extend(headers);
        }
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Body>) -> Self {
        if let Ok(req) = &mut self.request {
            *req.body_mut() = body.into();
        }
        self
    }

    /// Serializes `value` as the JSON body and sets `content-type: application/json`.
    #[cfg(feature = "json")]
    pub fn json<T: serde::Serialize + ?Sized>(self, value: &T) -> Self {
        let encoded = serde_json::to_vec(value);
        self.encoded_body(encoded, "application/json")
    }

    /// Appends `query` to the URL's query string, percent-encoded
    /// (`application/x-www-form-urlencoded`, as an HTML form's GET): a slice
    /// of pairs, a map, or any `Serialize` struct of plain fields.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let client = courier::Client::new();
    /// let res = client
    ///     .get("http://127.0.0.1:8080/search?lang=en")
    ///     .query(&[("q", "a&b c"), ("page", "2")])
    ///     .send()
    ///     .await?;
    /// assert_eq!(res.url().query(), Some("lang=en&q=a%26b+c&page=2"));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "query")]
    pub fn query<T: serde::Serialize + ?Sized>(mut self, query: &T) -> Self {
        if let Ok(req) = &mut self.request {
            let appended = serde_urlencoded::to_string(query)
                .map_err(|e| Error::new(ErrorKind::InvalidRequest, e))
                .and_then(|encoded| with_query(req.uri(), &encoded));
            match appended {
                Ok(uri) => *req.uri_mut() = uri,
                Err(e) => self.request = Err(e),
            }
        }
        self
    }

    /// Sends `form` as an `application/x-www-form-urlencoded` body (a slice
    /// of pairs, a map, or a `Serialize` struct of plain fields) and sets the
    /// content type.
    #[cfg(feature = "form")]
    pub fn form<T: serde::Serialize + ?Sized>(self, form: &T) -> Self {
        let encoded = serde_urlencoded::to_string(form);
        self.encoded_body(encoded, "application/x-www-form-urlencoded")
    }

    /// Sets a serialized body and its content type, or fails the request
    /// with the serializer's error.
    #[cfg(any(feature = "json", feature = "form"))]
    fn encoded_body<B, E>(mut self, encoded: Result<B, E>, content_type: &'static str) -> Self
    where
        B: Into<Body>,
        E: std::error::Error + Send + Sync + 'static,
    {
        if let Ok(req) = &mut self.request {
            match encoded {
                Ok(body) => {
                    *req.body_mut() = body.into();
                    req.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        HeaderValue::from_static(content_type),
                    );
                }
                Err(e) => self.request = Err(Error::new(ErrorKind::InvalidRequest, e)),
            }
        }
        self
    }

    /// Sends `form` as a `multipart/form-data` body with its content type
    /// (the `multipart` feature); see [`multipart::Form`](crate::multipart::Form).
    #[cfg(feature = "multipart")]
    pub fn multipart(mut self, form: crate::multipart::Form) -> Self {
        if let Ok(req) = &mut self.request {
            let (content_type, body) = form.encode();
            *req.body_mut() = body.into();
            req.headers_mut()
                .insert(http::header::CONTENT_TYPE, content_type);
        }
        self
    }

    /// Sets `Authorization: Basic` (RFC 7617) from a user name and an
    /// optional password; the header is marked sensitive (kept out of HPACK's
    /// table and of debug output).
    pub fn basic_auth(
        self,
        username: impl fmt::Display,
        password: Option<impl fmt::Display>,
    ) -> Self {
        let password = password.map(|p| p.to_string()).unwrap_or_default();
        let value = crate::basic_auth::value(&username.to_string(), &password);
        self.sensitive_header(http::header::AUTHORIZATION, value)
    }

    /// Sets `Authorization: Bearer <token>` (RFC 6750), marked sensitive.
    pub fn bearer_auth(self, token: impl fmt::Display) -> Self {
        self.sensitive_header(http::header::AUTHORIZATION, format!("Bearer {token}"))
    }

    fn sensitive_header(mut self, name: HeaderName, value: String) -> Self {
        if let Ok(req) = &mut self.request {
            match HeaderValue::try_from(value) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    req.headers_mut().insert(name, v);
                }
                Err(e) => self.request = Err(Error::new(ErrorKind::InvalidRequest, e)),
            }
        }
        self
    }

    /// Total time allowed for this request, response body included, over
    /// every attempt, retry, redirect and replica it takes. It replaces the
    /// default of whatever sends it, longer or shorter (as reqwest's): the
    /// client's [`ClientBuilder::timeout`](crate::ClientBuilder::timeout), a
    /// [`Stack`](crate::middleware::Stack)'s total timeout
    /// ([`TimeoutConfig::total`](crate::middleware::TimeoutConfig::total)),
    /// a cluster's [`ClusterConfig::timeout`](crate::cluster::ClusterConfig::timeout).
    /// A per-attempt timeout still bounds each attempt, and a
    /// [`Deadline`](crate::middleware::Deadline) extension still bounds the whole.
    /// The clock starts when the request is sent.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Attaches a request extension, for the middleware (a
    /// [`TraceContext`](crate::middleware::TraceContext), a
    /// [`Deadline`](crate::middleware::Deadline)) or for a layer of your own.
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        if let Ok(req) = &mut self.request {
            req.extensions_mut().insert(value);
        }
        self
    }

    /// Marks the request as safe to send more than once whatever its method
    /// (the [`Idempotent`] extension): the pool's resend on a new connection
    /// when a reused one died unanswered, retries, hedging and a cluster's
    /// further replicas may then replay a POST (with a buffered body).
    pub fn idempotent(self) -> Self {
        self.extension(Idempotent)
    }

    /// The request as an `http::Request`, for inspection or for the
    /// sender's `execute` ([`Client::execute`],
    /// [`ServiceClient::execute`](crate::ServiceClient::execute),
    /// [`ClusterClient::execute`](crate::ClusterClient::execute)), which
    /// sends it as [`send`](Self::send) would: the timeout travels as a
    /// [`RequestTimeout`] extension; a service client's base URL is
    /// resolved, its default headers are added when it is sent.
    pub fn build(self) -> Result<Request<Body>, Error> {
        let mut request = self.request?;
        if let Some(timeout) = self.timeout {
            request.extensions_mut().insert(RequestTimeout(timeout));
        }
        Ok(request)
    }

    /// A copy of this request, to send again or to another client's
    /// clone: method, URL, headers, extensions, timeout and body. `None`
    /// when the body is a stream, which can be sent only once (reqwest
    /// does the same), or when the builder holds an error (an invalid URL
    /// or header), which [`send`](Self::send) would report.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let client = courier::Client::new();
    /// let request = client.post("http://127.0.0.1:8080/echo").body("hello");
    /// let again = request.try_clone().expect("a buffered body can be copied");
    /// let first = request.send().await?;
    /// let second = again.send().await?;
    /// assert_eq!(first.text().await?, second.text().await?);
    /// # Ok(()) }
    /// ```
    pub fn try_clone(&self) -> Option<Self> {
        let request = self.request.as_ref().ok()?;
        let mut copy = Request::new(request.body().try_clone()?);
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        Some(RequestBuilder {
            sender: self.sender.clone(),
            request: Ok(copy),
            timeout: self.timeout,
        })
    }

    /// Sends the request (through the middleware of a service client, to
    /// the replicas of a cluster) and waits for the response head.
    ///
    /// The returned future owns everything it needs (`'static`), so it can be
    /// spawned; the request inside it is held once.
    pub fn send(self) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let RequestBuilder {
            sender,
            request,
            timeout,
        } = self;
        match request {
            Ok(request) => Either::Left(sender.dispatch(request, timeout)),
            Err(e) => Either::Right(std::future::ready(Err(e))),
        }
    }
}

/// `uri` with `encoded` appended to its query.
#[cfg(feature = "query")]
fn with_query(uri: &Uri, encoded: &str) -> Result<Uri, Error> {
    if encoded.is_empty() {
        return Ok(uri.clone());
    }
    let path = uri.path();
    let path_and_query = match uri.query() {
        Some(q) if !q.is_empty() => format!("{path}?{q}&{encoded}"),
        _ => format!("{path}?{encoded}"),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(
        path_and_query
            .parse()
            .map_err(|e| Error::new(ErrorKind::InvalidRequest, e))?,
    );
    Uri::from_parts(parts).map_err(|e| Error::new(ErrorKind::InvalidUrl, e))
}

impl<S> std::fmt::Debug for RequestBuilder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("RequestBuilder");
        match &self.request {
            Ok(r) => d.field("method", r.method()).field("uri", r.uri()),
            Err(e) => d.field("error", e),
        };
        d.field("timeout", &self.timeout).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_clone_copies_all_but_a_stream() {
        #[derive(Clone, Debug, PartialEq)]
        struct Tag(u8);
        let client = Client::new();
        let mut original = client
            .put("http://h.example/p?q=1")
            .header("x-a", "1")
            .header("x-a", "2")
            .body("payload")
            .timeout(Duration::from_millis(1500));
        if let Ok(req) = &mut original.request {
            req.extensions_mut().insert(Tag(7));
            *req.version_mut() = http::Version::HTTP_2;
        }
        let copy = original.try_clone().expect("a buffered body");
        assert!(copy
            .request
            .as_ref()
            .unwrap()
            .extensions()
            .get::<Tag>()
            .is_some());
        assert_eq!(copy.timeout, Some(Duration::from_millis(1500)));
        let (a, b) = (original.build().unwrap(), copy.build().unwrap());
        assert_eq!(a.method(), b.method());
        assert_eq!(a.uri(), b.uri());
        assert_eq!(a.version(), b.version());
        assert_eq!(a.headers(), b.headers());
        assert_eq!(b.extensions().get::<Tag>(), Some(&Tag(7)));
        assert_eq!(b.body().as_buffered(), Some(&b"payload"[..]));
        assert_eq!(a.body().as_buffered(), Some(&b"payload"[..]));

        let streamed =
            client
                .post("http://h.example/")
                .body(Body::wrap_stream(futures_util::stream::iter([Ok::<
                    _,
                    std::io::Error,
                >(
                    bytes::Bytes::from_static(b"x"),
                )])));
        assert!(streamed.try_clone().is_none(), "a stream is sent once");
        let invalid = client.get("http://h.example/").header("x-bad", "a\nb");
        assert!(invalid.try_clone().is_none(), "an error is not copied");
        let empty = client.get("http://h.example/").try_clone().unwrap();
        assert_eq!(empty.build().unwrap().body().as_buffered(), Some(&b""[..]));
    }

    #[test]
    fn urls_and_text_become_well_formed_targets() {
        let url = url::Url::parse("http://b\u{fc}cher.example:8080/a b?q=\u{e9}#frag").unwrap();
        let expect = "http://xn--bcher-kva.example:8080/a%20b?q=%C3%A9";
        assert_eq!((&url).into_uri().unwrap().to_string(), expect);
        assert_eq!(url.clone().into_uri().unwrap().to_string(), expect);
        // Text: WHATWG when it is no plain URI; a plain URI as written.
        let text = "http://b\u{fc}cher.example:8080/a b?q=\u{e9}";
        assert_eq!(text.into_uri().unwrap().to_string(), expect);
        assert_eq!(text.to_owned().into_uri().unwrap().to_string(), expect);
        assert_eq!(
            "http://h.example/a/../b".into_uri().unwrap().to_string(),
            "http://h.example/a/../b"
        );
        // What still fails is a typed InvalidUrl, with url's error inside.
        for bad in [
            "http://h.example/x\r\nx-injected: 1",
            "http://h.example/\tx",
            "http://exa mple/",
            "not a url",
        ] {
            let err = bad.into_uri().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{bad:?}");
        }
        let err = "http://exa mple/".into_uri().unwrap_err();
        let source = std::error::Error::source(&err).expect("a source");
        assert!(
            source.downcast_ref::<url::ParseError>().is_some(),
            "{source:?}"
        );
        let long = format!("http://{}.example/", "a".repeat(64));
        let url = url::Url::parse(&long).unwrap();
        assert_eq!(url.into_uri().unwrap_err().kind(), ErrorKind::InvalidUrl);
    }

    #[test]
    #[cfg(feature = "query")]
    fn a_query_is_appended_percent_encoded() {
        let uri: Uri = "http://h/p?a=1".parse().unwrap();
        let q = serde_urlencoded::to_string([("q", "a&b c/é"), ("n", "2")]).unwrap();
        let got = with_query(&uri, &q).unwrap();
        assert_eq!(got.to_string(), "http://h/p?a=1&q=a%26b+c%2F%C3%A9&n=2");
        let bare: Uri = "http://h/p".parse().unwrap();
        assert_eq!(
            with_query(&bare, "x=1").unwrap().to_string(),
            "http://h/p?x=1"
        );
        assert_eq!(with_query(&bare, "").unwrap(), bare);
    }
}
