//! Redirect policy, with reqwest's names: a [`Client`](crate::Client)
//! follows redirects by default ([`Policy::limited`]`(10)`), and
//! [`ClientBuilder::redirect`](crate::ClientBuilder::redirect) changes that.
//!
//! The policy only decides *whether* to follow a redirect the client may
//! follow at all: the safety rules come first and no policy can lift them
//! (credentials withheld from another origin, no `https` → `http`
//! downgrade unless allowed, no `Location` with credentials or a
//! backslash, only `http` and `https`; see
//! [`FollowRedirectLayer`](crate::middleware::FollowRedirectLayer), which
//! runs the same code).
//!
//! ```no_run
//! use courier::redirect::Policy;
//!
//! # async fn run() -> Result<(), courier::Error> {
//! let client = courier::Client::builder()
//!     .redirect(Policy::custom(|attempt| {
//!         if attempt.previous().len() > 5 {
//!             attempt.error("too many redirects")
//!         } else if attempt.url().host_str() == Some("example.com") {
//!             attempt.stop()
//!         } else {
//!             attempt.follow()
//!         }
//!     }))
//!     .build()?;
//! let res = client.get("http://127.0.0.1:8080/redirect/2").send().await?;
//! assert_eq!(res.url().path(), "/redirect/0");
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use http::StatusCode;
use url::Url;

use crate::error::BoxError;

/// How many redirects a client follows, or a function that decides.
///
/// Default: [`Policy::limited`]`(10)`, as reqwest, Go and browsers.
#[derive(Clone)]
pub struct Policy {
    pub(crate) kind: Kind,
}

type Decide = dyn Fn(Attempt<'_>) -> Action + Send + Sync;

#[derive(Clone)]
pub(crate) enum Kind {
    Limited(usize),
    None,
    Custom(Arc<Decide>),
}

impl Policy {
    /// Follows at most `max` redirects; the next one fails the request with
    /// [`ErrorKind::TooManyRedirects`](crate::ErrorKind::TooManyRedirects).
    pub fn limited(max: usize) -> Policy {
        Policy {
            kind: Kind::Limited(max),
        }
    }

    /// Follows no redirect: the 3xx response is returned as it came.
    pub fn none() -> Policy {
        Policy { kind: Kind::None }
    }

    /// Decides each redirect with `policy`, called with the redirect about
    /// to be followed (after the safety rules passed it); it returns
    /// [`Attempt::follow`], [`Attempt::stop`] (the 3xx response is
    /// returned) or [`Attempt::error`] (the request fails with
    /// [`ErrorKind::Redirect`](crate::ErrorKind::Redirect)). A custom policy
    /// has no limit of its own: count [`Attempt::previous`].
    pub fn custom<F>(policy: F) -> Policy
    where
        F: Fn(Attempt<'_>) -> Action + Send + Sync + 'static,
    {
        Policy {
            kind: Kind::Custom(Arc::new(policy)),
        }
    }

    /// Applies the policy to `attempt`, as the client does: for use inside
    /// a custom policy that falls back to a limit.
    pub fn redirect(&self, attempt: Attempt<'_>) -> Action {
        match &self.kind {
            Kind::Limited(max) if attempt.previous.len() > *max => Action {
                kind: ActionKind::TooMany,
            },
            Kind::Limited(_) => attempt.follow(),
            Kind::None => attempt.stop(),
            Kind::Custom(decide) => decide(attempt),
        }
    }

    /// Whether this policy can follow anything: [`Policy::none`] cannot,
    /// and then nothing is kept for a next hop.
    pub(crate) fn follows(&self) -> bool {
        !matches!(self.kind, Kind::None)
    }
}

impl Default for Policy {
    fn default() -> Policy {
        Policy::limited(10)
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Limited(max) => f.debug_tuple("Policy::limited").field(max).finish(),
            Kind::None => f.write_str("Policy::none"),
            Kind::Custom(_) => f.write_str("Policy::custom"),
        }
    }
}

/// A redirect about to be followed, given to a [`Policy::custom`] function.
#[derive(Debug)]
pub struct Attempt<'a> {
    pub(crate) status: StatusCode,
    pub(crate) next: &'a Url,
    pub(crate) previous: &'a [Url],
}

impl<'a> Attempt<'a> {
    /// The status of the redirect response (301, 302, 303, 307 or 308).
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Where the redirect leads: the `Location`, resolved.
    pub fn url(&self) -> &Url {
        self.next
    }

    /// The URLs requested so far, the first the original one.
    pub fn previous(&self) -> &[Url] {
        self.previous
    }

    /// Follow the redirect.
    pub fn follow(self) -> Action {
        Action {
            kind: ActionKind::Follow,
        }
    }

    /// Do not follow it: the redirect response is returned.
    pub fn stop(self) -> Action {
        Action {
            kind: ActionKind::Stop,
        }
    }

    /// Fail the request with [`ErrorKind::Redirect`](crate::ErrorKind::Redirect)
    /// and `error` as its source.
    pub fn error<E: Into<BoxError>>(self, error: E) -> Action {
        Action {
            kind: ActionKind::Error(error.into()),
        }
    }
}

/// What a [`Policy`] decided about one redirect.
#[derive(Debug)]
pub struct Action {
    pub(crate) kind: ActionKind,
}

#[derive(Debug)]
pub(crate) enum ActionKind {
    Follow,
    Stop,
    Error(BoxError),
    TooMany,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(policy: &Policy, hops: usize) -> &'static str {
        let previous: Vec<Url> = (0..hops)
            .map(|i| Url::parse(&format!("http://h.test/{i}")).unwrap())
            .collect();
        let next = Url::parse("http://h.test/next").unwrap();
        let attempt = Attempt {
            status: StatusCode::FOUND,
            next: &next,
            previous: &previous,
        };
        match policy.redirect(attempt).kind {
            ActionKind::Follow => "follow",
            ActionKind::Stop => "stop",
            ActionKind::Error(_) => "error",
            ActionKind::TooMany => "too many",
        }
    }

    #[test]
    fn limited_counts_the_original_request_as_reqwest_does() {
        // `previous` holds the original URL and each one followed: with a
        // limit of 2, the third redirect is one too many.
        let p = Policy::limited(2);
        assert_eq!(decide(&p, 1), "follow");
        assert_eq!(decide(&p, 2), "follow");
        assert_eq!(decide(&p, 3), "too many");
        assert_eq!(decide(&Policy::none(), 1), "stop");
        let custom = Policy::custom(|a| {
            if a.url().path() == "/next" && a.previous().len() > 1 {
                a.error("no")
            } else {
                a.follow()
            }
        });
        assert_eq!(decide(&custom, 1), "follow");
        assert_eq!(decide(&custom, 2), "error");
        assert_eq!(format!("{:?}", Policy::default()), "Policy::limited(10)");
    }
}
