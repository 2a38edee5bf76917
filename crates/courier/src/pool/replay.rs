//! The copy of a request an HTTP/2 stream keeps until its response head, to
//! send the request again if the server refuses the stream unprocessed
//! (REFUSED_STREAM, or a graceful GOAWAY past it).
//!
//! `h2` takes the request itself, so the copy is made for every buffered
//! request although it is almost never used. A cloned `HeaderMap` costs two
//! allocations and, for the 11 headers of a browser-like request, 1.2 KB: more
//! than everything else the client allocates for the request. The copy keeps
//! the headers as a flat list instead, and the list's storage is recycled
//! through a small per-thread stash, so in the steady state keeping the copy
//! allocates nothing. Rebuilding the map happens only on the rare resend.

use std::cell::RefCell;

use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};

use crate::body::Body;

/// Lists kept for reuse per thread. In the steady state a list comes back as
/// soon as its response head arrives and the next request takes it, so a few
/// suffice; the bound only caps what an idle thread holds.
const SPARE_LISTS: usize = 32;
/// A list that grew past this many headers is freed rather than kept, so a
/// rare huge request does not pin its storage.
const MAX_KEPT_HEADERS: usize = 32;

type Fields = Vec<(HeaderName, HeaderValue)>;

thread_local! {
    static SPARE: RefCell<Vec<Fields>> = const { RefCell::new(Vec::new()) };
}

/// A buffered request's method, URI, headers and body, to send it again.
pub(crate) struct Replay {
    method: Method,
    uri: Uri,
    headers: HeaderList,
    body: Body,
}

impl Replay {
    /// Copies `parts` (the request as it goes to `h2`) and takes a copy of its body.
    pub(crate) fn new(parts: &http::request::Parts, body: Body) -> Self {
        let mut fields = SPARE
            .try_with(|spare| spare.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        fields.reserve(parts.headers.len());
        // Header names and values are reference-counted bytes: cloning them
        // copies no header text.
        fields.extend(
            parts
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        Self {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: HeaderList(fields),
            body,
        }
    }

    /// The request to send again.
    pub(crate) fn into_request(mut self) -> Request<Body> {
        let mut headers = HeaderMap::with_capacity(self.headers.0.len());
        for (name, value) in self.headers.0.drain(..) {
            headers.append(name, value);
        }
        let mut req = Request::new(self.body);
        *req.method_mut() = self.method;
        *req.uri_mut() = self.uri;
        *req.headers_mut() = headers;
        req
    }
}

/// Hands its storage back to the thread's stash when dropped.
struct HeaderList(Fields);

impl Drop for HeaderList {
    fn drop(&mut self) {
        let mut fields = std::mem::take(&mut self.0);
        if fields.capacity() > MAX_KEPT_HEADERS {
            return;
        }
        fields.clear();
        // `try_with`: a thread being torn down just frees the list.
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_LISTS {
                spare.push(fields);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn request() -> (http::request::Parts, Body) {
        let req = Request::post("http://example.com/upload?x=1")
            .header("accept", "*/*")
            .header("x-multi", "1")
            .header("x-multi", "2")
            .body(Body::from(Bytes::from_static(b"payload")))
            .unwrap();
        let (parts, body) = req.into_parts();
        (parts, body)
    }

    #[test]
    fn the_request_comes_back_whole() {
        let (parts, body) = request();
        let replay = Replay::new(&parts, body.try_clone().unwrap());
        let again = replay.into_request();
        assert_eq!(again.method(), Method::POST);
        assert_eq!(again.uri(), &parts.uri);
        assert_eq!(again.headers(), &parts.headers);
        let values: Vec<_> = again.headers().get_all("x-multi").iter().collect();
        assert_eq!(values, ["1", "2"]);
        assert_eq!(
            again.into_body().into_bytes().ok(),
            Some(Bytes::from_static(b"payload"))
        );
    }

    #[test]
    fn a_dropped_copy_lends_its_storage_to_the_next() {
        let (parts, body) = request();
        let first = Replay::new(&parts, body.try_clone().unwrap());
        let storage = first.headers.0.as_ptr();
        drop(first);
        let second = Replay::new(&parts, body);
        assert_eq!(second.headers.0.as_ptr(), storage);
        assert_eq!(second.headers.0.len(), 3);
    }

    #[test]
    fn a_large_list_is_not_kept() {
        let mut big = Vec::with_capacity(MAX_KEPT_HEADERS + 1);
        big.push((HeaderName::from_static("a"), HeaderValue::from_static("b")));
        let storage = big.as_ptr();
        drop(HeaderList(big));
        let taken = SPARE.with(|spare| spare.borrow_mut().pop());
        assert!(taken.is_none_or(|list| list.as_ptr() != storage));
    }
}
