//! Response decompression, the one implementation: a plain
//! [`Client`](crate::Client) decodes with it (asking with its default
//! `Accept-Encoding`), and so does
//! [`DecompressionLayer`](crate::middleware::DecompressionLayer) (asking
//! with the request's). It asks for compressed responses with
//! `Accept-Encoding` and decodes gzip, deflate, brotli and zstd bodies as they
//! stream, with a limit on the decoded size (a decompression bomb fails with
//! [`ErrorKind::BodyTooLarge`] instead of exhausting memory).
//!
//! Each codec is a cargo feature (`gzip`, `deflate`, `brotli`, `zstd`, all
//! on by default); a codec that is compiled out is neither asked for nor decoded.
//!
//! `Content-Encoding` is one list over all its field lines (RFC 9110 §5.3,
//! §8.4): two `gzip` lines are `gzip, gzip`, exactly as one line with both.
//! At most one coding (`MAX_LAYERS`) is decoded; a longer list, or any coding
//! not enabled here, leaves the body and every header as the server sent
//! them (a `debug` event says why), so what the caller reads is always
//! what the remaining headers describe.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, RANGE};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body::{Frame, SizeHint};

use crate::body::Body;
use crate::client::response::{Response, ResponseBody};
use crate::error::{Error, ErrorKind};

/// Decompression settings. A codec is used when it is both enabled here and
/// compiled in (its cargo feature).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecompressionConfig {
    /// `gzip` (and `x-gzip`). Default: on.
    pub gzip: bool,
    /// `deflate` (zlib-wrapped, or raw deflate as some servers send). Default: on.
    pub deflate: bool,
    /// `br`. Default: on.
    pub brotli: bool,
    /// `zstd`. Default: on.
    pub zstd: bool,
    /// Most bytes a decoded body may have; past it the body fails with
    /// [`ErrorKind::BodyTooLarge`]. `None`: no limit. Default: 64 MiB.
    pub max_size: Option<u64>,
}

impl Default for DecompressionConfig {
    fn default() -> Self {
        DecompressionConfig {
            gzip: true,
            deflate: true,
            brotli: true,
            zstd: true,
            max_size: Some(64 * 1024 * 1024),
        }
    }
}

// `middleware`'s `setters!`, written out: the macro is the middleware's.
impl DecompressionConfig {
    /// Sets the [`gzip`](#structfield.gzip) field.
    #[must_use]
    pub fn gzip(mut self, gzip: bool) -> Self {
        self.gzip = gzip;
        self
    }

    /// Sets the [`deflate`](#structfield.deflate) field.
    #[must_use]
    pub fn deflate(mut self, deflate: bool) -> Self {
        self.deflate = deflate;
        self
    }

    /// Sets the [`brotli`](#structfield.brotli) field.
    #[must_use]
    pub fn brotli(mut self, brotli: bool) -> Self {
        self.brotli = brotli;
        self
    }

    /// Sets the [`zstd`](#structfield.zstd) field.
    #[must_use]
    pub fn zstd(mut self, zstd: bool) -> Self {
        self.zstd = zstd;
        self
    }

    /// Sets the [`max_size`](#structfield.max_size) field: a value, or `None`.
    #[must_use]
    pub fn max_size(mut self, max_size: impl Into<Option<u64>>) -> Self {
        self.max_size = max_size.into();
        self
    }

    /// Whether any codec is both enabled here and compiled in.
    pub(crate) fn any(&self) -> bool {
        (cfg!(feature = "gzip") && self.gzip)
            || (cfg!(feature = "deflate") && self.deflate)
            || (cfg!(feature = "brotli") && self.brotli)
            || (cfg!(feature = "zstd") && self.zstd)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    #[cfg(feature = "gzip")]
    Gzip,
    #[cfg(feature = "deflate")]
    Deflate,
    #[cfg(feature = "brotli")]
    Brotli,
    #[cfg(feature = "zstd")]
    Zstd,
}

/// The most content codings decoded from one response. Stacked codings
/// (`gzip, br`) are rare, never asked for by the `Accept-Encoding` sent,
/// and each layer multiplies what a bomb can make, so a longer list is
/// passed through undecoded.
const MAX_LAYERS: usize = 1;

struct Shared {
    accept: Option<HeaderValue>,
    config: DecompressionConfig,
}

/// What to do with a response's body, from its `Content-Encoding`.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// No coding (none, or only `identity` and empty elements).
    Plain,
    /// One enabled coding: decode it.
    Decode(Codec),
    /// Codings this layer does not decode (unknown, disabled, or more than
    /// `MAX_LAYERS`): left as sent.
    Leave(&'static str),
}

impl Shared {
    /// Reads every `Content-Encoding` field line as one list (RFC 9110
    /// §5.3), skipping empty elements and `identity`.
    fn plan(&self, headers: &HeaderMap) -> Plan {
        let mut codings = headers
            .get_all(CONTENT_ENCODING)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
            .map(<[u8]>::trim_ascii)
            .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case(b"identity"));
        let Some(first) = codings.next() else {
            return Plan::Plain;
        };
        if 1 + codings.count() > MAX_LAYERS {
            return Plan::Leave("more codings than are decoded (one)");
        }
        match self.codec(first) {
            Some(codec) => Plan::Decode(codec),
            None => Plan::Leave("a coding not enabled for decoding"),
        }
    }

    fn codec(&self, encoding: &[u8]) -> Option<Codec> {
        let encoding = encoding.trim_ascii();
        let c = &self.config;
        let _ = (c, encoding);
        #[cfg(feature = "gzip")]
        if c.gzip
            && (encoding.eq_ignore_ascii_case(b"gzip") || encoding.eq_ignore_ascii_case(b"x-gzip"))
        {
            return Some(Codec::Gzip);
        }
        #[cfg(feature = "deflate")]
        if c.deflate && encoding.eq_ignore_ascii_case(b"deflate") {
            return Some(Codec::Deflate);
        }
        #[cfg(feature = "brotli")]
        if c.brotli && encoding.eq_ignore_ascii_case(b"br") {
            return Some(Codec::Brotli);
        }
        #[cfg(feature = "zstd")]
        if c.zstd && encoding.eq_ignore_ascii_case(b"zstd") {
            return Some(Codec::Zstd);
        }
        None
    }
}

/// The decoder of a client or of a [`DecompressionLayer`](crate::middleware::DecompressionLayer):
/// the `Accept-Encoding` it asks with, and what it decodes.
pub(crate) struct Decoder {
    shared: Shared,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("config", &self.shared.config)
            .field("accept", &self.shared.accept)
            .finish()
    }
}

impl Decoder {
    /// A decoder of the codecs `config` enables and the build has.
    pub(crate) fn new(config: DecompressionConfig) -> Decoder {
        #[allow(unused_mut)]
        let mut names: Vec<&str> = Vec::new();
        #[cfg(feature = "gzip")]
        if config.gzip {
            names.push("gzip");
        }
        #[cfg(feature = "deflate")]
        if config.deflate {
            names.push("deflate");
        }
        #[cfg(feature = "brotli")]
        if config.brotli {
            names.push("br");
        }
        #[cfg(feature = "zstd")]
        if config.zstd {
            names.push("zstd");
        }
        let accept = (!names.is_empty())
            .then(|| HeaderValue::from_str(&names.join(", ")).expect("codec names are ASCII"));
        Decoder {
            shared: Shared { accept, config },
        }
    }

    /// The `Accept-Encoding` value, `None` when no codec is enabled.
    pub(crate) fn accept(&self) -> Option<&HeaderValue> {
        self.shared.accept.as_ref()
    }

    /// The settings.
    pub(crate) fn config(&self) -> &DecompressionConfig {
        &self.shared.config
    }

    /// Whether the response to `req` is this decoder's to decode: a codec
    /// is enabled, and the request asks for no encoding of its own
    /// (`Accept-Encoding`), no range (of an encoded representation), and
    /// is no HEAD (no body).
    pub(crate) fn applies(&self, req: &Request<Body>) -> bool {
        let headers = req.headers();
        // An empty map (most requests: the defaults are added as the head
        // is written) is two lookups of about 25 instructions each saved.
        self.shared.accept.is_some()
            && (headers.is_empty()
                || (!headers.contains_key(ACCEPT_ENCODING) && !headers.contains_key(RANGE)))
            && req.method() != Method::HEAD
    }

    /// Decodes `res`'s body when the server used one enabled coding,
    /// removing `Content-Encoding` and `Content-Length`; else `res` as it
    /// came. A response with no `Content-Encoding` costs one header lookup.
    // Inlined: a response with nothing to decode (most) is handed back
    // where it is, not moved into a call and out again.
    #[inline]
    pub(crate) fn decode(&self, res: Response) -> Response {
        if !may_decode(&res) {
            return res;
        }
        self.decode_encoded(res)
    }

    fn decode_encoded(&self, mut res: Response) -> Response {
        let codec = match self.shared.plan(res.headers()) {
            Plan::Plain => return res,
            Plan::Leave(why) => {
                tracing::debug!(
                    encoding = ?res.headers().get_all(CONTENT_ENCODING),
                    "response body left encoded: {why}"
                );
                return res;
            }
            Plan::Decode(codec) => codec,
        };
        res.headers_mut().remove(CONTENT_ENCODING);
        res.headers_mut().remove(CONTENT_LENGTH);
        let limit = self.shared.config.max_size;
        res.map_body(|body| Decoded::new(body, codec, limit))
    }
}

/// Whether [`Decoder::decode`] may change `res`: it has a `Content-Encoding`
/// and may have content. One header lookup, by reference, so that a caller
/// can hand a response it leaves alone back without moving it.
#[inline]
pub(crate) fn may_decode(res: &Response) -> bool {
    res.headers().contains_key(CONTENT_ENCODING)
        && !matches!(
            res.status(),
            StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
        )
}

// Without any codec feature nothing is ever decoded (`Codec` has no variant).
#[cfg_attr(
    not(any(
        feature = "gzip",
        feature = "deflate",
        feature = "brotli",
        feature = "zstd"
    )),
    allow(dead_code, unused_imports, unused_variables, unreachable_code)
)]
mod codec {
    use super::*;
    #[cfg(any(
        feature = "gzip",
        feature = "deflate",
        feature = "brotli",
        feature = "zstd"
    ))]
    use async_compression::tokio::bufread as dec;
    use http_body::Body as _;
    use std::io;
    use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

    const CHUNK: usize = 16 * 1024;

    /// The compressed body as an `AsyncBufRead`, one frame at a time.
    pub(super) struct BodyReader {
        body: ResponseBody,
        chunk: Bytes,
        eof: bool,
    }

    impl AsyncRead for BodyReader {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let available = std::task::ready!(self.as_mut().poll_fill_buf(cx))?;
            let n = available.len().min(buf.remaining());
            buf.put_slice(&available[..n]);
            self.consume(n);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncBufRead for BodyReader {
        fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
            let this = self.get_mut();
            while this.chunk.is_empty() && !this.eof {
                match std::task::ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            this.chunk = data;
                        }
                    }
                    Some(Err(e)) => return Poll::Ready(Err(io::Error::other(e))),
                    None => this.eof = true,
                }
            }
            Poll::Ready(Ok(&this.chunk[..]))
        }

        fn consume(mut self: Pin<&mut Self>, amt: usize) {
            bytes::Buf::advance(&mut self.chunk, amt);
        }
    }

    type Reader = Pin<Box<dyn AsyncRead + Send + Sync>>;

    // Lives inside the boxed body; the reader is moved, not copied, per chunk.
    #[allow(clippy::large_enum_variant)]
    pub(super) enum State {
        /// Waiting for the first bytes: none at all is an empty body (no
        /// decoder would accept it), and deflate tells zlib from raw
        /// deflate by them.
        Sniff(Option<BodyReader>, Codec),
        Reading(Reader),
        Done,
    }

    pub(super) fn start(body: ResponseBody, codec: Codec) -> State {
        let reader = BodyReader {
            body,
            chunk: Bytes::new(),
            eof: false,
        };
        State::Sniff(Some(reader), codec)
    }

    /// The decoder for `codec`, once the body is known not to be empty.
    fn decoder(reader: BodyReader, codec: Codec, head: &[u8]) -> Reader {
        let _ = head;
        match codec {
            #[cfg(feature = "gzip")]
            Codec::Gzip => {
                let mut d = dec::GzipDecoder::new(reader);
                d.multiple_members(true);
                Box::pin(d)
            }
            #[cfg(feature = "deflate")]
            Codec::Deflate if is_zlib(head) => Box::pin(dec::ZlibDecoder::new(reader)),
            #[cfg(feature = "deflate")]
            Codec::Deflate => Box::pin(dec::DeflateDecoder::new(reader)),
            #[cfg(feature = "brotli")]
            Codec::Brotli => Box::pin(dec::BrotliDecoder::new(reader)),
            #[cfg(feature = "zstd")]
            Codec::Zstd => {
                let mut d = dec::ZstdDecoder::new(reader);
                d.multiple_members(true);
                Box::pin(d)
            }
        }
    }

    /// A zlib stream starts with CMF/FLG: compression method 8 and a header
    /// checksum (RFC 1950); anything else is taken as raw deflate (RFC 1951).
    #[cfg(feature = "deflate")]
    fn is_zlib(head: &[u8]) -> bool {
        match head {
            [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
            _ => true,
        }
    }

    fn from_io(e: io::Error) -> Error {
        if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
            if let Some(Ok(inner)) = e.into_inner().map(|b| b.downcast::<Error>()) {
                return *inner;
            }
            return Error::msg(ErrorKind::Body, "error reading the compressed body");
        }
        Error::new(ErrorKind::Decompression, e)
    }

    /// Polls the next decoded chunk: `None` at the end.
    pub(super) fn poll_decoded(
        state: &mut State,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Error>>> {
        loop {
            match state {
                State::Done => return Poll::Ready(None),
                State::Sniff(reader, codec) => {
                    let r = reader.as_mut().expect("sniff holds the reader");
                    let head = match std::task::ready!(Pin::new(&mut *r).poll_fill_buf(cx)) {
                        Ok(head) => head,
                        Err(e) => {
                            *state = State::Done;
                            return Poll::Ready(Some(Err(from_io(e))));
                        }
                    };
                    if head.is_empty() {
                        // The body ended before its first byte: an empty
                        // body, as curl and Go read it.
                        *state = State::Done;
                        return Poll::Ready(None);
                    }
                    // Two bytes tell zlib from raw deflate; one is enough to
                    // go on (`is_zlib` takes a lone byte as zlib).
                    let mut two = [0u8; 2];
                    let n = head.len().min(2);
                    two[..n].copy_from_slice(&head[..n]);
                    let codec = *codec;
                    let r = reader.take().expect("sniff holds the reader");
                    *state = State::Reading(decoder(r, codec, &two[..n]));
                }
                State::Reading(reader) => {
                    let mut buf = BytesMut::zeroed(CHUNK);
                    let mut read_buf = ReadBuf::new(&mut buf);
                    match std::task::ready!(reader.as_mut().poll_read(cx, &mut read_buf)) {
                        Ok(()) => {
                            let n = read_buf.filled().len();
                            if n == 0 {
                                *state = State::Done;
                                return Poll::Ready(None);
                            }
                            buf.truncate(n);
                            return Poll::Ready(Some(Ok(buf.freeze())));
                        }
                        Err(e) => {
                            *state = State::Done;
                            return Poll::Ready(Some(Err(from_io(e))));
                        }
                    }
                }
            }
        }
    }
}

/// The decoded body.
struct Decoded {
    state: codec::State,
    produced: u64,
    limit: Option<u64>,
    failed: bool,
}

impl Decoded {
    fn new(body: ResponseBody, codec: Codec, limit: Option<u64>) -> Decoded {
        Decoded {
            state: codec::start(body, codec),
            produced: 0,
            limit,
            failed: false,
        }
    }
}

#[derive(Debug)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "decompressed body exceeds the limit of {} bytes (DecompressionConfig::max_size)",
            self.0
        )
    }
}

impl std::error::Error for TooLarge {}

impl http_body::Body for Decoded {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        {
            let next = std::task::ready!(codec::poll_decoded(&mut this.state, cx));
            match next {
                None => Poll::Ready(None),
                Some(Err(e)) => {
                    this.failed = true;
                    Poll::Ready(Some(Err(e)))
                }
                Some(Ok(data)) => {
                    this.produced += data.len() as u64;
                    if let Some(limit) = this.limit.filter(|l| this.produced > *l) {
                        this.failed = true;
                        // Dropping the decoder drops the compressed body: its
                        // connection is drained or closed, not read further here.
                        this.state = codec::State::Done;
                        return Poll::Ready(Some(Err(Error::new(
                            ErrorKind::BodyTooLarge,
                            TooLarge(limit),
                        ))));
                    }
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
