//! A connection's last request head, kept encoded with what it was encoded
//! from, so a request with the same head is sent as the same bytes without
//! encoding it again (as HTTP/2 replays its HPACK blocks and HTTP/1.1 keeps
//! a head template).

use std::sync::Mutex;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName};
use http::{Method, Request};

use super::head::{self, EncodedHead};
use crate::config::WithheldDefaults;

/// The last request head a connection encoded, with what it was encoded
/// from: a request whose method, URI parts, fields (in order, with their
/// sensitivity) and added content-length are the same takes the same
/// bytes. Encoding one (QPACK's static table search and Huffman for each
/// string, two buffers) cost about 3,300 instructions; comparing is a few
/// hundred, as HTTP/2 replays its HPACK blocks. Bounded: one head, ours.
#[derive(Default)]
pub(crate) struct Template(Mutex<Option<LastRequest>>);

struct LastRequest {
    method: Method,
    /// The URI's scheme, authority and path-and-query end to end, as
    /// given (the authority's case too: it is encoded as given).
    pseudo: String,
    /// Where the scheme and the authority end in `pseudo`.
    ends: [usize; 2],
    headers: HeaderMap,
    /// The client's defaults this request went without (usually none).
    withheld: Vec<HeaderName>,
    content_length: Option<u64>,
    frame: Bytes,
    size: u64,
}

impl LastRequest {
    fn matches<B>(&self, request: &Request<B>, content_length: Option<u64>) -> bool {
        let uri = request.uri();
        let path = uri.path_and_query().map_or("", |p| p.as_str());
        let [scheme, authority] = self.ends;
        self.content_length == content_length
            && self.method == request.method()
            && uri.scheme_str() == Some(&self.pseudo[..scheme])
            && uri.authority().map(|a| a.as_str()) == Some(&self.pseudo[scheme..authority])
            && path == &self.pseudo[authority..]
            && same_fields(&self.headers, request.headers())
            && self.withheld[..] == *WithheldDefaults::of(request.extensions())
    }
}

/// The same fields in the same order, each as sensitive: what decides the
/// encoded bytes (`HeaderValue`'s own `==` leaves sensitivity out).
fn same_fields(a: &HeaderMap, b: &HeaderMap) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((an, av), (bn, bv))| {
            an == bn && av == bv && av.is_sensitive() == bv.is_sensitive()
        })
}

impl Template {
    /// `request`'s head as [`head::request`] encodes it: the last one's bytes
    /// when it is the same head, else encoded and kept.
    ///
    /// # Errors
    /// As [`head::request`].
    /// The connection's `defaults` are the same for every request (the
    /// client's), so the kept head stands for them.
    pub(crate) fn request<B>(
        &self,
        request: &Request<B>,
        content_length: Option<u64>,
        defaults: &HeaderMap,
    ) -> Result<EncodedHead, &'static str> {
        let last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(last) = last
            .as_ref()
            .filter(|last| last.matches(request, content_length))
        {
            return Ok(EncodedHead {
                frame: last.frame.clone(),
                size: last.size,
            });
        }
        drop(last);
        let withheld = WithheldDefaults::of(request.extensions());
        let encoded = head::request(request, content_length, defaults, withheld)?;
        let uri = request.uri();
        let (scheme, authority) = (uri.scheme_str(), uri.authority());
        if let (Some(scheme), Some(authority)) = (scheme, authority) {
            let path = uri.path_and_query().map_or("", |p| p.as_str());
            let pseudo = [scheme, authority.as_str(), path].concat();
            let ends = [scheme.len(), scheme.len() + authority.as_str().len()];
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastRequest {
                method: request.method().clone(),
                pseudo,
                ends,
                headers: request.headers().clone(),
                withheld: withheld.to_vec(),
                content_length,
                frame: encoded.frame.clone(),
                size: encoded.size,
            });
        }
        Ok(encoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use head::request;
    use http::HeaderValue;

    #[test]
    fn a_request_head_is_encoded_once_and_any_change_encodes_it_fresh() {
        let base = || {
            Request::get("https://example.com/a?b")
                .header("x-one", "1")
                .header("x-two", "2")
        };
        // The default user-agent withheld (after a redirect to another
        // origin): the same fields otherwise, other bytes.
        let withholding = || {
            let names: std::sync::Arc<[HeaderName]> =
                vec![HeaderName::from_static("user-agent")].into();
            base().extension(WithheldDefaults(names)).body(()).unwrap()
        };
        let secret = {
            let mut v = HeaderValue::from_static("2");
            v.set_sensitive(true);
            v
        };
        // Each step against the one before it: the same head is the kept
        // bytes; anything that changes the encoding is encoded again.
        let steps: Vec<(&str, Request<()>, Option<u64>, bool)> = vec![
            ("first", base().body(()).unwrap(), None, false),
            ("the same", base().body(()).unwrap(), None, true),
            (
                "a value",
                base().header("x-two", "3").body(()).unwrap(),
                None,
                false,
            ),
            ("back", base().body(()).unwrap(), None, false),
            ("the same again", base().body(()).unwrap(), None, true),
            (
                "the order",
                Request::get("https://example.com/a?b")
                    .header("x-two", "2")
                    .header("x-one", "1")
                    .body(())
                    .unwrap(),
                None,
                false,
            ),
            ("back", base().body(()).unwrap(), None, false),
            (
                "a field added",
                base().header("x-three", "3").body(()).unwrap(),
                None,
                false,
            ),
            ("a field removed", base().body(()).unwrap(), None, false),
            (
                "sensitivity",
                Request::get("https://example.com/a?b")
                    .header("x-one", "1")
                    .header("x-two", secret)
                    .body(())
                    .unwrap(),
                None,
                false,
            ),
            ("back", base().body(()).unwrap(), None, false),
            (
                "the method",
                base().method("HEAD").body(()).unwrap(),
                None,
                false,
            ),
            (
                "the path",
                base().uri("https://example.com/a?c").body(()).unwrap(),
                None,
                false,
            ),
            (
                "the authority",
                base().uri("https://Example.com/a?b").body(()).unwrap(),
                None,
                false,
            ),
            (
                "the scheme",
                base().uri("http://example.com/a?b").body(()).unwrap(),
                None,
                false,
            ),
            ("back", base().body(()).unwrap(), None, false),
            ("a content-length", base().body(()).unwrap(), Some(5), false),
            ("another", base().body(()).unwrap(), Some(6), false),
            ("the same length", base().body(()).unwrap(), Some(6), true),
            ("back", base().body(()).unwrap(), None, false),
            ("a default withheld", withholding(), None, false),
            ("the same withheld", withholding(), None, true),
            ("back", base().body(()).unwrap(), None, false),
        ];
        let mut defaults = HeaderMap::new();
        defaults.insert("user-agent", HeaderValue::from_static("courier"));
        let template = Template::default();
        let mut last: Option<Bytes> = None;
        for (what, req, length, kept) in &steps {
            let withheld = WithheldDefaults::of(req.extensions());
            let fresh = request(req, *length, &defaults, withheld).expect("encodes");
            let got = template.request(req, *length, &defaults).expect("encodes");
            assert_eq!(got.frame, fresh.frame, "{what}");
            assert_eq!(got.size, fresh.size, "{what}");
            let same_bytes = last
                .as_ref()
                .is_some_and(|l| l.as_ptr() == got.frame.as_ptr());
            assert_eq!(same_bytes, *kept, "{what}");
            last = Some(got.frame);
        }
        assert!(template
            .request(
                &Request::get("/relative").body(()).unwrap(),
                None,
                &defaults
            )
            .is_err());
    }
}
