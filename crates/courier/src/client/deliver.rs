//! What a client does with a response before returning it: follow a
//! redirect (`follow.rs`) and decode a compressed body (`decode.rs`), as
//! reqwest does by default.
//!
//! Written by hand, like the request future under it, so that a response
//! that needs neither costs what it cost before: two status and header
//! checks, no allocation. What a redirect needs of its request (method,
//! headers, body) comes back from the protocol with the answer
//! ([`Sent`](crate::proto::exchange::Sent)), moved rather than copied
//! before sending; only a redirect boxes the rest of the chain.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{HeaderName, ACCEPT_ENCODING, RANGE};
use http::Request;
use tokio::time::Instant;

use crate::body::Body;
use crate::client::attempt::Answered;
use crate::client::decode;
use crate::client::follow::{self, FollowedAbove};
use crate::client::response::Response;
use crate::client::send::DeadlineKept;
use crate::client::{Client, ClientInner};
use crate::config::WithheldDefaults;
use crate::error::Error;

/// The rest of a redirect chain.
type Rest = Pin<Box<dyn Future<Output = Result<Response, Error>> + Send>>;

pin_project_lite::pin_project! {
    /// A request in flight, and what its response may call for.
    pub(crate) struct Deliver<F> {
        #[pin]
        hop: Hop<F>,
        inner: Arc<ClientInner>,
        // This request's redirects are the client's to follow.
        follow: bool,
        // Its response is the client's to decode.
        decode: bool,
        // (The deadline is the first hop's: `DeadlineKept::deadline`.)
    }
}

pin_project_lite::pin_project! {
    /// The first hop, or (after a redirect) the rest of the chain in its
    /// place: one or the other, so a request in flight does not carry room
    /// for both (16 B each).
    #[project = HopProj]
    enum Hop<F> {
        First { #[pin] first: F },
        Rest { rest: Rest },
    }
}

impl Deliver<()> {
    /// Sends `request` (its first hop) and returns the future of its response.
    pub(crate) fn new(
        inner: Arc<ClientInner>,
        mut request: Request<Body>,
        started: Instant,
        deadline: Option<Instant>,
    ) -> Deliver<impl Future<Output = Result<Answered, Error>> + DeadlineKept + Send + 'static>
    {
        let follow =
            inner.follow.is_some() && request.extensions().get::<FollowedAbove>().is_none();
        let decode = match &inner.decoder {
            Some(decoder) => {
                let applies = decoder.applies(&request);
                if !applies
                    && request.headers().contains_key(RANGE)
                    && !request.headers().contains_key(ACCEPT_ENCODING)
                {
                    // A range of an encoded representation is not what a
                    // caller asking for a range of bytes means: the
                    // client's `Accept-Encoding` stays off this request.
                    withhold(&mut request, ACCEPT_ENCODING);
                }
                applies
            }
            None => false,
        };
        let first = Client::hop(Arc::clone(&inner), request, started, deadline);
        Deliver {
            hop: Hop::First { first },
            inner,
            follow,
            decode,
        }
    }
}

fn withhold(request: &mut Request<Body>, name: HeaderName) {
    let mut names = WithheldDefaults::of(request.extensions()).to_vec();
    names.push(name);
    request
        .extensions_mut()
        .insert(WithheldDefaults(names.into()));
}

impl<F> Future for Deliver<F>
where
    F: Future<Output = Result<Answered, Error>> + DeadlineKept,
{
    type Output = Result<Response, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let mut first = match this.hop.as_mut().project() {
            HopProj::First { first } => first,
            HopProj::Rest { rest } => return rest.as_mut().poll(cx),
        };
        // Looked at by reference where the hop put it, then moved once: a
        // response that is neither a redirect to follow nor one to decode
        // (most) goes from the hop's result into this poll's. (A binding
        // by value, or `Result::map`, each copied its ~400 B once more.)
        let mut poll = first.as_mut().poll(cx);
        let (redirect, decodes) = match &poll {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(_)) => (false, false),
            Poll::Ready(Ok((res, _))) => (
                *this.follow && follow::is_redirect(res),
                *this.decode && this.inner.decoder.is_some() && decode::may_decode(res),
            ),
        };
        if !redirect && !decodes {
            return match poll {
                Poll::Ready(Ok((res, _sent))) => Poll::Ready(Ok(res)),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
        let Poll::Ready(Ok((res, sent))) = std::mem::replace(&mut poll, Poll::Pending) else {
            unreachable!("a response to follow or decode")
        };
        if redirect {
            let inner = Arc::clone(this.inner);
            let (deadline, decode) = (first.as_ref().get_ref().deadline(), *this.decode);
            let mut rest: Rest = Box::pin(async move {
                let rules = inner.follow.as_ref().expect("a client that follows");
                let res = follow::follow(rules, res, sent, |next| {
                    Client::hop(Arc::clone(&inner), next, Instant::now(), deadline)
                })
                .await?;
                Ok(match (&inner.decoder, decode) {
                    (Some(decoder), true) => decoder.decode(res),
                    _ => res,
                })
            });
            let poll = rest.as_mut().poll(cx);
            // The first hop is done: the chain takes its place.
            this.hop.set(Hop::Rest { rest });
            return poll;
        }
        drop(sent);
        Poll::Ready(Ok(match (&this.inner.decoder, *this.decode) {
            (Some(decoder), true) => decoder.decode(res),
            _ => res,
        }))
    }
}
