//! Request bodies the first frames did not carry: fed by a task of their own
//! when streamed, and framed by the driver ([`super::sender`]) as the
//! flow-control windows open.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::{Body as _, Frame};

use super::conn::{Shared, State};
use super::error::StreamError;
use super::frame::Reason;
use super::sender::HIGH_WATER;
use super::streams::Key;
use crate::body::replay::Replay;
use crate::body::Body;
use crate::error::BoxError;

/// A streamed request body, shared by the [`Pipe`] that feeds it to its
/// stream and the request, which takes it back if the server refuses the
/// stream unprocessed: the body's rest, and what the pipe took of it (see
/// [`crate::body::replay`]) until the response head shows the server took
/// the request.
pub(crate) struct Feed(Mutex<Fed>);

struct Fed {
    /// The body; `None` once the request took it back.
    body: Option<Body>,
    /// What was taken of it; `None` once there is no resending it.
    replay: Option<Replay>,
}

impl Feed {
    pub(crate) fn new(body: Body) -> Arc<Feed> {
        Arc::new(Feed(Mutex::new(Fed {
            body: Some(body),
            replay: Some(Replay::default()),
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Fed> {
        // Poisoned only by a body that panicked: what it holds is still whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server answered: the request will not be sent again, and what
    /// was kept of the body is let go.
    pub(crate) fn accepted(&self) {
        self.lock().replay = None;
    }

    /// The body again, whole (what the pipe took of it, then the rest), if
    /// all that was taken is kept; the pipe stops feeding it.
    pub(crate) fn take_back(&self) -> Option<Body> {
        let mut fed = self.lock();
        let body = fed.body.take();
        fed.replay.take()?.resume(body)
    }
}

/// Feeds a streamed request body to its stream, on a task of its own.
///
/// It holds no handle on the stream: when the request is given up, the
/// stream is reset and freed, which wakes the pipe, which then stops.
///
/// A body sent under a Content-Length (the caller's, or its own exact size)
/// is held to it: a byte too many, or an end too soon, resets the stream
/// instead of sending a request the server would read differently.
pub(crate) struct Pipe {
    shared: Arc<Shared>,
    key: Key,
    id: u32,
    feed: Arc<Feed>,
    length: Option<u64>,
    sent: u64,
}

impl Pipe {
    pub(crate) fn spawn(
        shared: Arc<Shared>,
        key: Key,
        id: u32,
        feed: Arc<Feed>,
        length: Option<u64>,
    ) {
        tokio::spawn(Pipe {
            shared,
            key,
            id,
            feed,
            length,
            sent: 0,
        });
    }

    /// The body's next frame, kept for a resend while that is possible;
    /// `Ready(None)` once the request took the body back (its stream failed).
    fn poll_body(&self, cx: &mut Context<'_>) -> Poll<Option<BodyFrame>> {
        let mut fed = self.feed.lock();
        let Fed { body, replay } = &mut *fed;
        let Some(body) = body.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = std::task::ready!(Pin::new(body).poll_frame(cx));
        match &frame {
            // A body that failed is not sent again.
            Some(Err(_)) => *replay = None,
            frame => {
                if let Some(replay) = replay {
                    replay.keep(frame.as_ref().and_then(|f| f.as_ref().ok()));
                }
            }
        }
        Poll::Ready(Some(frame))
    }
}

/// What a body's `poll_frame` gives.
type BodyFrame = Option<Result<Frame<Bytes>, BoxError>>;

/// Resets the stream: its body failed (`error`) or broke its framing. The
/// lock is let go before anyone is woken.
fn fail(mut st: MutexGuard<'_, State>, key: Key, id: u32, error: StreamError) -> Poll<()> {
    let mut wakers = Vec::new();
    st.reset(key, id, Reason::CANCEL, error, &mut wakers);
    drop(st);
    wakers.into_iter().for_each(Waker::wake);
    Poll::Ready(())
}

impl Future for Pipe {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        loop {
            {
                let mut st = this.shared.lock();
                let Some(stream) = st.streams.get(this.key, this.id) else {
                    return Poll::Ready(());
                };
                // A failed stream is closed on courier's side too.
                if stream.state().is_send_closed() {
                    return Poll::Ready(());
                }
                let Some(up) = stream.upload.as_deref_mut() else {
                    return Poll::Ready(());
                };
                // Woken when the driver makes room, or the stream fails.
                up.waker = Some(cx.waker().clone());
                if up.queued_len >= HIGH_WATER {
                    return Poll::Pending;
                }
            }
            let Some(frame) = std::task::ready!(this.poll_body(cx)) else {
                return Poll::Ready(());
            };
            let mut st = this.shared.lock();
            let (key, id) = (this.key, this.id);
            let max_fields = st.send.max_header_list();
            let Some(stream) = st.streams.get(key, id) else {
                return Poll::Ready(());
            };
            let Some(up) = stream.upload.as_deref_mut() else {
                return Poll::Ready(());
            };
            match frame {
                None => up.end = true,
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        this.sent += data.len() as u64;
                        if this.length.is_some_and(|n| this.sent > n) {
                            let what = "request body longer than its Content-Length";
                            return fail(st, key, id, StreamError::InvalidRequest(what));
                        }
                        if !data.is_empty() {
                            up.queued_len += data.len();
                            up.queued.push_back(data);
                        }
                    }
                    Err(frame) => {
                        let trailers = frame.into_trailers().ok();
                        if !trailers
                            .as_ref()
                            .is_none_or(crate::validate::is_wire_safe_map)
                        {
                            let what = "a trailer value holds a control character";
                            return fail(st, key, id, StreamError::InvalidRequest(what));
                        }
                        if let (Some(t), Some(max)) = (&trailers, max_fields) {
                            let size = super::header_list::trailers_size(t);
                            if size > u64::from(max) {
                                let over = StreamError::FieldsOverPeerLimit { size, max };
                                return fail(st, key, id, over);
                            }
                        }
                        up.trailers = trailers;
                        up.end = true;
                    }
                },
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "request body failed; resetting the stream");
                    return fail(st, key, id, StreamError::Closed("the request body failed"));
                }
            }
            if up.end && this.length.is_some_and(|n| this.sent != n) {
                let what = "request body shorter than its Content-Length";
                return fail(st, key, id, StreamError::InvalidRequest(what));
            }
            let end = up.end;
            st.mark_ready(key, id);
            st.wake_driver();
            if end {
                return Poll::Ready(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_fed_body_comes_back_whole_until_the_server_answers() {
        let body = || {
            let chunks = ["ab", "cd"].map(Ok::<_, std::io::Error>);
            Body::wrap_stream(futures_util::stream::iter(chunks))
        };
        // Refused after the pipe took "ab": "ab", then the rest.
        let feed = Feed::new(body());
        {
            let mut fed = feed.lock();
            let Fed { body, replay } = &mut *fed;
            // The stream is always ready: one poll takes a frame.
            let mut cx = Context::from_waker(Waker::noop());
            let body = Pin::new(body.as_mut().unwrap());
            let Poll::Ready(frame) = body.poll_frame(&mut cx) else {
                panic!("an always ready body was not");
            };
            replay
                .as_mut()
                .unwrap()
                .keep(frame.as_ref().and_then(|f| f.as_ref().ok()));
        }
        let again = feed.take_back().expect("whole");
        assert_eq!(again.collect().await.unwrap().to_bytes(), "abcd");
        assert!(feed.take_back().is_none(), "taken once");
        // Answered: nothing is kept, and there is no taking it back.
        let feed = Feed::new(body());
        feed.accepted();
        assert!(feed.lock().replay.is_none());
        assert!(feed.take_back().is_none());
    }
}
