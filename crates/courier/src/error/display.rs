//! How an [`Error`] prints: `Display` (what, then the URL without its
//! credentials), the alternate form with the whole cause chain, `Debug`.

use std::error::Error as StdError;
use std::fmt;

use super::{Error, ErrorKind};

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("courier::Error");
        d.field("kind", &self.inner.kind);
        if let Some(m) = &self.inner.message {
            d.field("message", m);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        if let Some(url) = &self.inner.url {
            d.field("url", &format_args!("{}", Redacted(url)));
        }
        if let Some(status) = &self.inner.status {
            d.field("status", status);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.inner.kind {
            ErrorKind::InvalidUrl => "invalid URL",
            ErrorKind::InvalidRequest => "invalid request",
            ErrorKind::Dns => "DNS resolution failed",
            ErrorKind::Connect => "connection failed",
            ErrorKind::ConnectTimeout => "connect timed out",
            ErrorKind::Tls => "TLS handshake failed",
            ErrorKind::Timeout => "request timed out",
            ErrorKind::PoolQueueTimeout => "timed out waiting for a pooled connection",
            ErrorKind::ConnectionClosed => "connection closed before the response",
            ErrorKind::Protocol => "HTTP protocol error",
            ErrorKind::Refused => "request refused unprocessed by the server",
            ErrorKind::HeadersTooLarge => "response headers too large",
            ErrorKind::Body => "error reading response body",
            ErrorKind::BodyTooLarge => "response body too large",
            ErrorKind::Decode => "error decoding response body",
            ErrorKind::Canceled => "request canceled",
            ErrorKind::TooManyRedirects => "too many redirects",
            ErrorKind::Redirect => "redirect not followed",
            ErrorKind::CircuitOpen => "circuit breaker open",
            ErrorKind::Decompression => "error decompressing response body",
            ErrorKind::Config => "invalid configuration",
            ErrorKind::Status => "HTTP status",
            ErrorKind::Middleware => "middleware error",
            ErrorKind::Upgrade => "upgrade failed",
        };
        f.write_str(what)?;
        if let Some(status) = self.inner.status {
            write!(f, " {status}")?;
        }
        // A message that only repeats the kind's words adds nothing.
        if let Some(m) = self.inner.message.as_deref().filter(|m| *m != what) {
            write!(f, ": {m}")?;
        }
        if self.inner.sends > 1 {
            write!(f, "; sent {} times", self.inner.sends)?;
        }
        if let Some(url) = &self.inner.url {
            write!(f, " ({})", Redacted(url))?;
        }
        if f.alternate() {
            // Each cause in its plain form: a courier error among them
            // prints its own line, and the walk goes on to its sources.
            let mut source = self.source();
            while let Some(cause) = source {
                write!(f, ": {cause}")?;
                source = cause.source();
            }
        }
        Ok(())
    }
}

/// A URL as errors print it: without user info and query, which may carry
/// credentials.
struct Redacted<'a>(&'a http::Uri);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.0;
        let userinfo = url.authority().is_some_and(|a| a.as_str().contains('@'));
        if !userinfo && url.query().is_none() {
            return write!(f, "{url}");
        }
        if let Some(scheme) = url.scheme_str() {
            write!(f, "{scheme}://")?;
        }
        if let Some(host) = url.host() {
            f.write_str(host)?;
        }
        if let Some(port) = url.port() {
            write!(f, ":{port}")?;
        }
        f.write_str(url.path())
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|s| &**s as &(dyn StdError + 'static))
    }
}
