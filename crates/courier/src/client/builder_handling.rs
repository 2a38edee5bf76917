//! The builder's redirect and decompression knobs (reqwest's names, on by
//! default) and what it keeps for them; a child of `builder.rs`, so they
//! reach the builder's private fields.

use super::ClientBuilder;
use crate::client::decode::{Decoder, DecompressionConfig};
use crate::client::follow::Rules;
use crate::client::Handling;
use crate::redirect::Policy;

/// What the builder keeps for redirects and decompression.
#[derive(Debug, Default)]
pub(super) struct HandlingSettings {
    redirect: Policy,
    decompression: DecompressionConfig,
}

impl HandlingSettings {
    /// The client's handling; asks for the enabled codings with a default
    /// `Accept-Encoding` (written with the request, no allocation per
    /// request), unless the default headers name their own, which then
    /// stands and turns decoding off (what the caller asked for is what
    /// they read).
    pub(super) fn build(self, default_headers: &mut http::HeaderMap) -> Handling {
        let follow = self.redirect.follows().then(|| Rules {
            policy: self.redirect,
            allow_https_to_http: false,
            sensitive: Rules::default_sensitive().into(),
        });
        let decoder = (self.decompression.any()
            && !default_headers.contains_key(http::header::ACCEPT_ENCODING))
        .then(|| Decoder::new(self.decompression));
        if let Some(accept) = decoder.as_ref().and_then(Decoder::accept) {
            default_headers.insert(http::header::ACCEPT_ENCODING, accept.clone());
        }
        Handling { follow, decoder }
    }
}

/// Redirects and decompression, with reqwest's names: on by default.
impl ClientBuilder {
    /// How redirects are followed. Default: [`Policy::limited`]`(10)`.
    ///
    /// Whatever the policy, a redirect to another origin (scheme, host,
    /// port) goes without `Authorization`, `Cookie`, `Proxy-Authorization`
    /// and `WWW-Authenticate`, from the request and from the
    /// [default headers](Self::default_headers); `https` to `http`, a
    /// `Location` with credentials or a backslash, and schemes other than
    /// `http` and `https` fail with [`ErrorKind::Redirect`](crate::ErrorKind::Redirect); 303 turns the
    /// request into a GET (as do 301 and 302 a POST), and 307 and 308 send
    /// the body again only when it is buffered (a streamed body: the 3xx
    /// is returned). The final response's [`url`](crate::Response::url) is
    /// the last one requested, and its extensions hold a
    /// [`Redirects`](crate::middleware::Redirects) with the chain.
    ///
    /// A [`FollowRedirectLayer`](crate::middleware::FollowRedirectLayer)
    /// over the client follows instead of it, with its own settings.
    ///
    /// ```
    /// let client = courier::Client::builder()
    ///     .redirect(courier::redirect::Policy::limited(5))
    ///     .build()
    ///     .unwrap();
    /// # drop(client);
    /// ```
    pub fn redirect(mut self, policy: Policy) -> Self {
        self.handling.redirect = policy;
        self
    }

    /// Decompression settings at once: the codecs and the most bytes a
    /// decoded body may have (default 64 MiB; past it the body fails with
    /// [`ErrorKind::BodyTooLarge`](crate::ErrorKind::BodyTooLarge)). Default: every codec compiled in
    /// (the `gzip`, `brotli`, `zstd`, `deflate` features) on.
    ///
    /// The client asks for them with a default `Accept-Encoding` and
    /// decodes a response whose `Content-Encoding` names one, removing
    /// `Content-Encoding` and `Content-Length`. A request that sets its own
    /// `Accept-Encoding` (or default headers that do), a `Range` request and
    /// a HEAD get the body as the server sent it.
    pub fn decompression(mut self, config: DecompressionConfig) -> Self {
        self.handling.decompression = config;
        self
    }

    /// Decode `gzip` bodies (the `gzip` feature). Default: on.
    pub fn gzip(mut self, enable: bool) -> Self {
        self.handling.decompression.gzip = enable;
        self
    }

    /// Decode `br` bodies (the `brotli` feature). Default: on.
    pub fn brotli(mut self, enable: bool) -> Self {
        self.handling.decompression.brotli = enable;
        self
    }

    /// Decode `zstd` bodies (the `zstd` feature). Default: on.
    pub fn zstd(mut self, enable: bool) -> Self {
        self.handling.decompression.zstd = enable;
        self
    }

    /// Decode `deflate` bodies (the `deflate` feature). Default: on.
    pub fn deflate(mut self, enable: bool) -> Self {
        self.handling.decompression.deflate = enable;
        self
    }

    /// `gzip(false)`.
    pub fn no_gzip(self) -> Self {
        self.gzip(false)
    }

    /// `brotli(false)`.
    pub fn no_brotli(self) -> Self {
        self.brotli(false)
    }

    /// `zstd(false)`.
    pub fn no_zstd(self) -> Self {
        self.zstd(false)
    }

    /// `deflate(false)`.
    pub fn no_deflate(self) -> Self {
        self.deflate(false)
    }
}
