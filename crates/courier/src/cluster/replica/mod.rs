//! One replica of a service: the base URL its requests are resolved against.
//!
//! A replica is an origin (scheme, host, port) and an optional path prefix;
//! every replica is one more origin in the client's shared pool, so its
//! connections are pooled, limited and measured as any other origin's.

pub(crate) mod metrics;

use std::fmt;
use std::net::SocketAddr;

use http::Uri;

use crate::client::request::IntoUri;
use crate::error::{Error, ErrorKind};

/// A replica of a service, named by its base URL (`http://10.0.0.1:8080`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Replica {
    url: Uri,
}

impl Replica {
    /// A replica at `url`, which must be absolute `http` or `https` with a
    /// host; a path (`http://10.0.0.1/api/`) is the prefix request targets
    /// are resolved against. Fails with [`ErrorKind::InvalidUrl`].
    pub fn new(url: impl IntoUri) -> Result<Replica, Error> {
        let url = url.into_uri()?;
        match url.scheme_str() {
            Some("http" | "https") if url.authority().is_some() => Ok(Replica { url }),
            _ => Err(Error::msg(
                ErrorKind::InvalidUrl,
                "a replica needs an absolute http or https URL",
            )),
        }
    }

    /// A replica at a socket address (`http://10.0.0.1:8080`).
    pub fn from_addr(https: bool, addr: SocketAddr) -> Replica {
        let scheme = if https { "https" } else { "http" };
        let url = format!("{scheme}://{addr}/")
            .parse()
            .expect("a socket address is a valid authority");
        Replica { url }
    }

    /// The base URL.
    pub fn url(&self) -> &Uri {
        &self.url
    }

    /// `target` (`/invoices/42`, `invoices/42?x=1`) resolved against the
    /// base URL as a reference (RFC 3986 §5), as `ServiceClient` does.
    pub(crate) fn resolve(&self, target: &str) -> Result<Uri, Error> {
        crate::middleware::resolve_reference(&self.url, target).ok_or_else(|| {
            Error::msg(
                ErrorKind::InvalidUrl,
                "cannot resolve the target against the replica",
            )
        })
    }
}

impl fmt::Display for Replica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.url, f)
    }
}

impl fmt::Debug for Replica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Replica({})", self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_against_the_base() {
        let r = Replica::new("http://10.0.0.1:8080").unwrap();
        assert_eq!(
            r.resolve("/invoices/42?x=1").unwrap(),
            "http://10.0.0.1:8080/invoices/42?x=1"
        );
        let prefixed = Replica::new("http://10.0.0.1/api/").unwrap();
        assert_eq!(
            prefixed.resolve("invoices").unwrap(),
            "http://10.0.0.1/api/invoices"
        );
        assert!(Replica::new("/relative").is_err());
        assert!(Replica::new("ftp://x/").is_err());
        let a = Replica::from_addr(false, "127.0.0.1:9".parse().unwrap());
        assert_eq!(a.url(), "http://127.0.0.1:9/");
    }
}
