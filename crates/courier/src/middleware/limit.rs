//! A limit on requests in flight, counted until the end of the response body.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{call, within_deadline, Deadline, HttpService, ResponseFuture};
use crate::body::Body;
use crate::error::Error;
use crate::response::{Response, ResponseBody};

/// At most `max` requests in flight through the services made by this layer
/// (clones share the limit); more wait, in FIFO order, for a slot. A request
/// holds its slot until its response body ends or is dropped, not just until
/// the response head, so slow readers count. A request with a
/// [`Deadline`](super::Deadline) (a total [`TimeoutLayer`](super::TimeoutLayer)
/// outside this one sets it) waits at most until then, and fails with
/// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout).
#[derive(Clone, Debug)]
pub struct ConcurrencyLimitLayer {
    semaphore: Arc<Semaphore>,
}

impl ConcurrencyLimitLayer {
    /// At most `max` requests at once (`max` 0 is taken as 1).
    pub fn new(max: usize) -> Self {
        ConcurrencyLimitLayer {
            semaphore: Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS))),
        }
    }

    /// Slots free now.
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }
}

impl<S> tower::Layer<S> for ConcurrencyLimitLayer {
    type Service = ConcurrencyLimit<S>;
    fn layer(&self, inner: S) -> ConcurrencyLimit<S> {
        ConcurrencyLimit {
            inner,
            semaphore: Arc::clone(&self.semaphore),
        }
    }
}

/// The service made by [`ConcurrencyLimitLayer`].
#[derive(Clone, Debug)]
pub struct ConcurrencyLimit<S> {
    inner: S,
    semaphore: Arc<Semaphore>,
}

impl<S: HttpService> tower::Service<Request<Body>> for ConcurrencyLimit<S> {
    type Response = Response;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> ResponseFuture {
        let inner = self.inner.clone();
        let semaphore = Arc::clone(&self.semaphore);
        let deadline = req.extensions().get::<Deadline>().copied();
        Box::pin(async move {
            let permit = within_deadline(
                deadline,
                "deadline passed waiting for a slot under the concurrency limit",
                semaphore.acquire_owned(),
            )
            .await?
            .expect("the semaphore is never closed");
            let res = call(inner, req).await?;
            if res.body_ended() {
                return Ok(res);
            }
            Ok(res.map_body(|body| PermitBody {
                body,
                permit: Some(permit),
            }))
        })
    }
}

/// Holds the slot until the body ends, fails, or is dropped.
struct PermitBody {
    body: ResponseBody,
    permit: Option<OwnedSemaphorePermit>,
}

impl http_body::Body for PermitBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => this.permit = None,
            Poll::Ready(Some(Ok(_))) if this.body.is_end_stream() => this.permit = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
