//! The bridge between courier's services and the rest of the tower
//! ecosystem. courier's own layers take and return a [`Response`] and an
//! [`Error`]; tower-http's take and return an `http::Response<B>`, and
//! `tower`'s (`timeout`, `load_shed`) fail with a [`BoxError`]. [`AsHttp`]
//! shows a courier service as an `http::Response` service (what tower-http
//! layers wrap); [`FromTower`] shows any tower service whose response and
//! error convert ([`TowerHttpService`]) as a courier one, which
//! [`ServiceClient::with_layer`](crate::ServiceClient::with_layer),
//! [`Stack::service`](super::Stack::service) and the
//! layers here accept.
//!
//! ```
//! use tower::ServiceBuilder;
//! use courier::middleware::{AsHttpLayer, FromTowerLayer, RetryConfig, RetryLayer};
//!
//! // courier's retry around tower's timeout around courier's client.
//! let svc = ServiceBuilder::new()
//!     .layer(RetryLayer::new(RetryConfig::default()))
//!     .layer(FromTowerLayer)
//!     .layer(tower::timeout::TimeoutLayer::new(std::time::Duration::from_secs(1)))
//!     .layer(AsHttpLayer)
//!     .service(courier::Client::new());
//! # let _ = svc;
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;

use super::HttpService;
use crate::body::Body;
use crate::client::response::{Response, ResponseBody};
use crate::error::{BoxError, Error};

/// A response a courier stack takes from a tower service: a courier
/// [`Response`], or an `http::Response` whose body is any
/// [`http_body::Body`] ([`ResponseBody::wrap`]'s bounds), such as the one a
/// tower-http layer returns around courier's body.
pub trait IntoResponse {
    /// The courier response.
    fn into_response(self) -> Response;
}

impl IntoResponse for Response {
    fn into_response(self) -> Response {
        self
    }
}

impl<B> IntoResponse for http::Response<B>
where
    B: http_body::Body + Send + Sync + 'static,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    fn into_response(self) -> Response {
        let (mut head, body) = self.into_parts();
        let limit = head.extensions.remove::<BodyLimit>();
        let mut body = ResponseBody::wrap(body);
        // A tower-http layer wrapped the client's body: `bytes()` keeps the
        // client's `max_response_body_size`.
        if let (Some(BodyLimit(limit)), None) = (limit, body.max_body()) {
            body.set_max_body(Some(limit));
        }
        Response::from_http(http::Response::from_parts(head, body))
    }
}

/// Any tower service over courier requests whose response is an
/// [`IntoResponse`] and whose error converts into an [`Error`] (a courier
/// `Error`, or the [`BoxError`] of `tower::timeout`, `tower::load_shed`
/// and most of tower); implemented for every such service. Every
/// [`HttpService`] is one.
pub trait TowerHttpService:
    tower::Service<
        Request<Body>,
        Response: IntoResponse + 'static,
        Error: Into<Error> + 'static,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> TowerHttpService for S where
    S: tower::Service<
            Request<Body>,
            Response: IntoResponse + 'static,
            Error: Into<Error> + 'static,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// The client's `max_response_body_size`, carried in the extensions of an
/// `http::Response` that [`AsHttp`] made, for [`IntoResponse`] to give back
/// to the body a tower-http layer may have wrapped.
#[derive(Clone, Copy)]
struct BodyLimit(u64);

/// A courier service (a [`Client`](crate::Client), a stack) as a tower
/// service of `http::Response<ResponseBody>`: what tower-http's layers
/// wrap. The URL and server address ride in the response's extensions
/// ([`ResponseUrl`](crate::ResponseUrl), [`RemoteAddr`](crate::RemoteAddr)),
/// so [`FromTower`] gives them back.
#[derive(Clone, Debug)]
pub struct AsHttp<S> {
    inner: S,
}

impl<S> AsHttp<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> AsHttp<S> {
        AsHttp { inner }
    }
}

impl<S: HttpService> tower::Service<Request<Body>> for AsHttp<S> {
    type Response = http::Response<ResponseBody>;
    type Error = Error;
    type Future = AsHttpFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        AsHttpFuture {
            inner: self.inner.call(req),
        }
    }
}

pin_project_lite::pin_project! {
    /// [`AsHttp`]'s future.
    pub struct AsHttpFuture<F> {
        #[pin]
        inner: F,
    }
}

impl<F: Future<Output = Result<Response, Error>>> Future for AsHttpFuture<F> {
    type Output = Result<http::Response<ResponseBody>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx).map(|r| {
            r.map(|res| {
                let limit = res.body_limit();
                let mut res = res.into_http();
                if let Some(limit) = limit {
                    res.extensions_mut().insert(BodyLimit(limit));
                }
                res
            })
        })
    }
}

/// A [`TowerHttpService`] (a tower-http layer's service, a `tower::timeout`,
/// a mock) as a courier service: its response made a [`Response`]
/// ([`IntoResponse`]) and its error an [`Error`] (`From<BoxError>`: a
/// timeout is [`ErrorKind::Timeout`](crate::ErrorKind::Timeout)), so
/// courier's layers and [`BoxHttpService`](super::BoxHttpService) take it.
/// A response that names no URL (one a mock or a layer made, without a
/// [`ResponseUrl`](crate::ResponseUrl)) answers the request's.
#[derive(Clone, Debug)]
pub struct FromTower<S> {
    inner: S,
}

impl<S> FromTower<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> FromTower<S> {
        FromTower { inner }
    }
}

impl<S: TowerHttpService> tower::Service<Request<Body>> for FromTower<S> {
    type Response = Response;
    type Error = Error;
    type Future = FromTowerFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        FromTowerFuture {
            url: Some(req.uri().clone()),
            inner: self.inner.call(req),
        }
    }
}

pin_project_lite::pin_project! {
    /// [`FromTower`]'s future.
    pub struct FromTowerFuture<F> {
        #[pin]
        inner: F,
        // The request's URL, for a response that names none (a mock's).
        url: Option<http::Uri>,
    }
}

impl<F, R, E> Future for FromTowerFuture<F>
where
    F: Future<Output = Result<R, E>>,
    R: IntoResponse,
    E: Into<Error>,
{
    type Output = Result<Response, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let url = this.url;
        this.inner.poll(cx).map(|r| {
            r.map(|res| res.into_response().or_url(url.take()))
                .map_err(Into::into)
        })
    }
}

/// Makes [`AsHttp`] services, for `tower::ServiceBuilder`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AsHttpLayer;

impl<S> tower::Layer<S> for AsHttpLayer {
    type Service = AsHttp<S>;
    fn layer(&self, inner: S) -> AsHttp<S> {
        AsHttp::new(inner)
    }
}

/// Makes [`FromTower`] services, for `tower::ServiceBuilder`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FromTowerLayer;

impl<S> tower::Layer<S> for FromTowerLayer {
    type Service = FromTower<S>;
    fn layer(&self, inner: S) -> FromTower<S> {
        FromTower::new(inner)
    }
}
