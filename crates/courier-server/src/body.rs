//! The one response body type every endpoint uses.
//!
//! A single enum (rather than boxed trait objects) keeps the hot path free of
//! per-request allocation: bulk data is sliced out of a static buffer, and
//! the body also carries the connection's in-flight guard so a request counts
//! as "in progress" until hyper has finished writing its body.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::fault::RawFault;
use crate::request_body::{BoxError, RequestBody};
use crate::state::InFlight;

/// The alphabet `/bytes/{n}` bodies are made of: byte `i` of any such body is
/// `BYTES_ALPHABET[i % 64]`, so a client test can verify every byte it
/// received, not just the count.
pub const BYTES_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Size of the shared pattern buffer; also the largest frame a patterned
/// body yields. A multiple of 64 so consecutive frames continue the pattern.
const PATTERN_LEN: usize = 64 * 1024;

static PATTERN: [u8; PATTERN_LEN] = build_pattern();

const fn build_pattern() -> [u8; PATTERN_LEN] {
    let mut out = [0u8; PATTERN_LEN];
    let mut i = 0;
    while i < PATTERN_LEN {
        out[i] = BYTES_ALPHABET[i % BYTES_ALPHABET.len()];
        i += 1;
    }
    out
}

/// The shared 64 KiB pattern buffer. Slicing a static `Bytes` neither copies
/// nor touches a reference count, which is what makes `/bytes` cheap.
pub(crate) fn pattern() -> Bytes {
    Bytes::from_static(&PATTERN)
}

/// Response body for all endpoints. Construct with the associated functions;
/// the service attaches the in-flight guard with [`ResponseBody::attach`].
pub(crate) struct ResponseBody {
    kind: Kind,
    /// Dropped together with the body, i.e. when hyper is done with it
    /// (fully written, or the connection died).
    in_flight: Option<InFlight>,
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    /// `prefix`, then `remaining` bytes of the pattern, then `suffix`.
    Patterned {
        prefix: Bytes,
        remaining: u64,
        suffix: Bytes,
        /// `false` hides the length so hyper uses chunked encoding.
        exact: bool,
        /// Set once `poll_frame` has returned `None` (matters when `!exact`).
        done: bool,
    },
    Echo(RequestBody),
    /// Never ends: yields the same chunk forever. hyper only polls for more
    /// when its write buffer has room, so memory stays bounded.
    Endless(Bytes),
    /// Yields these chunks, then raises the fault on its connection instead
    /// of ending (and stays pending). hyper asks for the next frame only
    /// after queueing the previous one, so the connection task, which acts
    /// on the fault, finds the chunks already queued and can write them
    /// out first (see `http2.rs`).
    ThenFault {
        chunks: std::vec::IntoIter<Bytes>,
        fault: Option<RawFault>,
    },
}

impl ResponseBody {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            in_flight: None,
        }
    }

    /// No body at all.
    pub(crate) fn empty() -> Self {
        Self::new(Kind::Empty)
    }

    /// A body that is already in memory.
    pub(crate) fn full(data: impl Into<Bytes>) -> Self {
        let data = data.into();
        if data.is_empty() {
            Self::empty()
        } else {
            Self::new(Kind::Full(Some(data)))
        }
    }

    /// `prefix`, `len` bytes of [`BYTES_ALPHABET`] pattern, `suffix`; with a
    /// content-length when `exact`, chunked otherwise.
    pub(crate) fn patterned(prefix: Bytes, len: u64, suffix: Bytes, exact: bool) -> Self {
        Self::new(Kind::Patterned {
            prefix,
            remaining: len,
            suffix,
            exact,
            done: false,
        })
    }

    /// Streams the request body back as it arrives.
    pub(crate) fn echo(incoming: RequestBody) -> Self {
        Self::new(Kind::Echo(incoming))
    }

    /// An infinite chunked body of `chunk` repeated.
    pub(crate) fn endless(chunk: Bytes) -> Self {
        Self::new(Kind::Endless(chunk))
    }

    /// `chunks`, then `fault` raised on the connection instead of an end.
    pub(crate) fn then_fault(chunks: Vec<Bytes>, fault: RawFault) -> Self {
        Self::new(Kind::ThenFault {
            chunks: chunks.into_iter(),
            fault: Some(fault),
        })
    }

    /// Ties the request's in-flight guard to this body's lifetime.
    pub(crate) fn attach(&mut self, guard: InFlight) {
        self.in_flight = Some(guard);
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // Every field is Unpin, so the body can be handled by plain `&mut`.
        let this = self.get_mut();
        match &mut this.kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Kind::Patterned {
                prefix,
                remaining,
                suffix,
                done,
                ..
            } => {
                let frame = if !prefix.is_empty() {
                    Some(std::mem::take(prefix))
                } else if *remaining > 0 {
                    // `min` with PATTERN_LEN makes the cast lossless.
                    let n = (*remaining).min(PATTERN_LEN as u64) as usize;
                    *remaining -= n as u64;
                    Some(pattern().slice(..n))
                } else if !suffix.is_empty() {
                    Some(std::mem::take(suffix))
                } else {
                    *done = true;
                    None
                };
                Poll::Ready(frame.map(|f| Ok(Frame::data(f))))
            }
            Kind::Echo(incoming) => Pin::new(incoming).poll_frame(cx),
            Kind::Endless(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk.clone())))),
            Kind::ThenFault { chunks, fault } => {
                if let Some(chunk) = chunks.next() {
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                // The guard is attached before hyper ever polls a body.
                if let (Some(fault), Some(guard)) = (fault.take(), &this.in_flight) {
                    guard.conn().raise_fault(fault);
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(data) => data.is_none(),
            Kind::Patterned {
                prefix,
                remaining,
                suffix,
                exact,
                done,
            } => {
                if *exact {
                    prefix.is_empty() && *remaining == 0 && suffix.is_empty()
                } else {
                    // Report the end only after the final poll, so even an
                    // empty chunked body is sent as chunked.
                    *done
                }
            }
            Kind::Echo(incoming) => incoming.is_end_stream(),
            Kind::Endless(_) | Kind::ThenFault { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Kind::Patterned {
                prefix,
                remaining,
                suffix,
                exact,
                ..
            } => {
                if *exact {
                    let total = (prefix.len() as u64)
                        .saturating_add(*remaining)
                        .saturating_add(suffix.len() as u64);
                    SizeHint::with_exact(total)
                } else {
                    SizeHint::new()
                }
            }
            Kind::Echo(incoming) => incoming.size_hint(),
            Kind::Endless(_) | Kind::ThenFault { .. } => SizeHint::new(),
        }
    }
}
