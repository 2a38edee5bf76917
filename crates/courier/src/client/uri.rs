//! [`IntoUri`]: what can name a request's URL, and how text becomes one
//! (RFC 3986 first, the WHATWG rules as reqwest reads them otherwise).

use http::Uri;

use crate::error::{Error, ErrorKind};

/// Anything that can name the URL of a request.
///
/// Implemented for `&str`, `String`, `&String`, [`url::Url`], `&Url`,
/// [`http::Uri`] and `&Uri`. Text that is no plain RFC 3986 URI is read
/// with the WHATWG URL rules, as reqwest and browsers read it
/// (`http://bücher.example/a b` is `http://xn--bcher-kva.example/a%20b`);
/// an `http::Uri`, or text that is one, is sent as it is.
/// Parsing errors surface when the request is sent, as [`ErrorKind::InvalidUrl`].
pub trait IntoUri {
    /// Parses or converts into a [`Uri`].
    fn into_uri(self) -> Result<Uri, Error>;

    /// The text of a URL reference, when this is text: a relative
    /// reference such as `invoices/42` is no `Uri` on its own, but resolves
    /// against a [`ServiceClient`](crate::ServiceClient)'s base URL.
    #[doc(hidden)]
    fn as_reference(&self) -> Option<&str> {
        None
    }
}

impl IntoUri for Uri {
    fn into_uri(self) -> Result<Uri, Error> {
        Ok(self)
    }
}

impl IntoUri for &Uri {
    fn into_uri(self) -> Result<Uri, Error> {
        Ok(self.clone())
    }
}

// URLs as text and `url::Url`s: read with the WHATWG URL rules (the `url`
// crate, as reqwest and browsers), then sent as the `http::Uri` they
// serialize to.
impl IntoUri for &str {
    fn as_reference(&self) -> Option<&str> {
        Some(self)
    }

    fn into_uri(self) -> Result<Uri, Error> {
        parse_url(self)
    }
}

impl IntoUri for String {
    fn as_reference(&self) -> Option<&str> {
        Some(self)
    }

    fn into_uri(self) -> Result<Uri, Error> {
        parse_url(&self)
    }
}

impl IntoUri for &String {
    fn as_reference(&self) -> Option<&str> {
        Some(self)
    }

    fn into_uri(self) -> Result<Uri, Error> {
        parse_url(self)
    }
}

impl IntoUri for url::Url {
    fn into_uri(self) -> Result<Uri, Error> {
        url_to_uri(&self)
    }
}

impl IntoUri for &url::Url {
    fn into_uri(self) -> Result<Uri, Error> {
        url_to_uri(self)
    }
}

/// Text as a request target. A URI as RFC 3986 writes it (ASCII, nothing
/// to encode) is sent as written, as before, and costs no second parse;
/// anything else is read as a WHATWG URL: spaces and non-ASCII text
/// percent-encoded, an IDNA host in punycode, surrounding spaces trimmed;
/// a control character (CR, LF, tab) anywhere is refused. Both parsers name the same host for
/// any text the first accepts (no backslash, no whitespace in it). What
/// still fails is [`ErrorKind::InvalidUrl`] with the `url::ParseError`
/// as its source.
fn parse_url(text: &str) -> Result<Uri, Error> {
    if let Ok(uri) = Uri::try_from(text) {
        return Ok(uri);
    }
    // The WHATWG rules drop tabs and line breaks from anywhere in a URL;
    // in a caller's URL they are refused instead: a CR LF there is an
    // injection attempt more often than a typo.
    if text.bytes().any(|b| b.is_ascii_control()) {
        return Err(Error::msg(
            ErrorKind::InvalidUrl,
            "a control character (CR, LF, tab, …) in the URL",
        ));
    }
    let url = url::Url::parse(text).map_err(|e| Error::new(ErrorKind::InvalidUrl, e))?;
    url_to_uri(&url)
}

/// The request target of a WHATWG URL (without its fragment, which is not
/// sent). Its serialization is ASCII, so what reaches the wire is what the
/// URL says.
pub(crate) fn url_to_uri(url: &url::Url) -> Result<Uri, Error> {
    // The WHATWG rules leave DNS lengths unchecked: a name no resolver
    // takes is refused here, before it could be looked up.
    if let Some(url::Host::Domain(name)) = url.host() {
        if name.len() > 253 || name.split('.').any(|label| label.len() > 63) {
            return Err(Error::msg(
                ErrorKind::InvalidUrl,
                "the host is no DNS name (a label over 63 bytes, or over 253 in all)",
            ));
        }
    }
    let text = match url.fragment() {
        Some(_) => &url[..url::Position::AfterQuery],
        None => url.as_str(),
    };
    Uri::try_from(text).map_err(|e| Error::new(ErrorKind::InvalidUrl, e))
}
