//! A limit on requests in flight, counted until the end of the response body.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::Request;
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::PollSemaphore;

use super::{call, take_ready, within_deadline, Deadline, HttpService, ResponseFuture};
use crate::body::Body;
use crate::client::response::{Response, ResponseBody};
use crate::error::Error;

/// At most `max` requests in flight through the services made by this layer
/// (clones share the limit); more wait, in FIFO order, for a slot. A request
/// holds its slot until its response body ends or is dropped, not just until
/// the response head, so slow readers count.
///
/// The slot is taken in `poll_ready`, as tower's own `ConcurrencyLimit` does:
/// a full limit makes the service not ready, so layers outside it see the
/// back-pressure (`load_shed` sheds, `buffer` holds, `balance` picks another
/// endpoint). Every courier layer passes `poll_ready` through to the one it
/// wraps. [`ServiceClient`](crate::ServiceClient) waits for readiness within
/// the request's deadline (a total [`TimeoutLayer`](super::TimeoutLayer) or
/// a per-request timeout), failing with
/// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout); a stack driven by hand
/// (`ServiceExt::ready`, `oneshot`) bounds that wait itself, as with any
/// tower service. A caller that skips `poll_ready` still gets a slot: the
/// call waits for one, at most until the request's [`Deadline`].
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
            semaphore: PollSemaphore::new(Arc::clone(&self.semaphore)),
            permit: None,
        }
    }
}

/// The service made by [`ConcurrencyLimitLayer`].
#[derive(Debug)]
pub struct ConcurrencyLimit<S> {
    inner: S,
    semaphore: PollSemaphore,
    /// The slot `poll_ready` took, for the next `call`.
    permit: Option<OwnedSemaphorePermit>,
}

/// A clone shares the limit but not a slot taken by `poll_ready`.
impl<S: Clone> Clone for ConcurrencyLimit<S> {
    fn clone(&self) -> Self {
        ConcurrencyLimit {
            inner: self.inner.clone(),
            semaphore: self.semaphore.clone(),
            permit: None,
        }
    }
}

impl<S: HttpService> tower::Service<Request<Body>> for ConcurrencyLimit<S> {
    type Response = Response;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.permit.is_none() {
            let permit = ready!(self.semaphore.poll_acquire(cx));
            self.permit = Some(permit.expect("the semaphore is never closed"));
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> ResponseFuture {
        let inner = take_ready(&mut self.inner);
        let taken = self.permit.take();
        let semaphore = self.semaphore.clone_inner();
        let deadline = req.extensions().get::<Deadline>().copied();
        Box::pin(async move {
            let permit = match taken {
                Some(permit) => permit,
                None => within_deadline(
                    deadline,
                    "deadline passed waiting for a slot under the concurrency limit",
                    semaphore.acquire_owned(),
                )
                .await?
                .expect("the semaphore is never closed"),
            };
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
