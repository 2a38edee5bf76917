//! [`DecompressionLayer`]: response decompression as a tower layer, for a
//! stack over a service that does not decode. The decoder is the client's
//! own (`client/decode.rs`): a plain [`Client`](crate::Client) decodes by
//! default with the same code.

use std::sync::Arc;

use http::header::ACCEPT_ENCODING;
use http::Request;

use super::{call, HttpService, ResponseFuture};
use crate::body::Body;
use crate::client::decode::Decoder;
pub use crate::client::decode::DecompressionConfig;

/// Adds `Accept-Encoding` (the enabled codecs) to requests that have none and
/// decodes the response body when the server used one of them, removing
/// `Content-Encoding` and `Content-Length` from the response. A request that
/// sets its own `Accept-Encoding` gets the body as sent (so does a HEAD or a
/// `Range` request). `Content-Encoding` is read as one list over all its
/// field lines; a body with more than one coding, or with one
/// not enabled here, is left as sent with its headers. An empty body
/// decodes to an empty body; bytes after the end of the compressed stream
/// are a [`ErrorKind::Decompression`](crate::ErrorKind::Decompression) error, as Go reads them.
///
/// Over a [`Client`](crate::Client) that decodes by default, the layer's
/// settings win: the request it sends carries its `Accept-Encoding`, and a
/// client leaves the response to a request that chose its own encoding
/// alone, so a body is decoded once.
#[derive(Clone)]
pub struct DecompressionLayer {
    decoder: Arc<Decoder>,
}

impl Default for DecompressionLayer {
    fn default() -> Self {
        Self::new(DecompressionConfig::default())
    }
}

impl std::fmt::Debug for DecompressionLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecompressionLayer")
            .field("config", self.decoder.config())
            .field("accept", &self.decoder.accept())
            .finish()
    }
}

impl DecompressionLayer {
    /// A layer with `config`.
    pub fn new(config: DecompressionConfig) -> Self {
        DecompressionLayer {
            decoder: Arc::new(Decoder::new(config)),
        }
    }
}

layer_service!(
    /// The service made by [`DecompressionLayer`].
    DecompressionLayer => Decompression
);

impl DecompressionLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        if !self.decoder.applies(&req) {
            return Box::pin(call(inner, req));
        }
        let accept = self.decoder.accept().expect("applies").clone();
        req.headers_mut().insert(ACCEPT_ENCODING, accept);
        let decoder = Arc::clone(&self.decoder);
        Box::pin(async move { Ok(decoder.decode(call(inner, req).await?)) })
    }
}
