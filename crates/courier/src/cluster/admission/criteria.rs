//! Response criteria: which answers reject a replica (so another is tried
//! and its health drops) and which are accepted (returned to the caller).
//!
//! Why: a 503 or a reset says "this replica, now" and another replica may
//! well succeed; a 404 or a 400 is the answer whoever gives it, and
//! sending it elsewhere only doubles the load. Defaults are Vostok's.

use http::header::HeaderName;
use http::StatusCode;

use crate::client::response::Response;
use crate::error::{Error, ErrorKind};

/// The verdict on one replica's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The answer is the request's answer.
    Accept,
    /// The replica failed: try another one.
    Reject,
}

/// Which answers are rejected.
///
/// Errors are rejected (connect, TLS, timeouts, resets: the network), except
/// those that are the request's own fault (`InvalidUrl`, `InvalidRequest`,
/// `Config`), which no other replica would fix.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResponseCriteria {
    /// Statuses that reject. Default: 429, 500, 502, 503, 504.
    pub reject_statuses: Vec<StatusCode>,
    /// A response carrying this header is accepted whatever its status (the
    /// server says another replica would not do better). Default: `dont-retry`.
    pub dont_retry_header: Option<HeaderName>,
}

impl Default for ResponseCriteria {
    fn default() -> Self {
        ResponseCriteria {
            reject_statuses: [429, 500, 502, 503, 504]
                .map(|s| StatusCode::from_u16(s).expect("valid status"))
                .to_vec(),
            dont_retry_header: Some(HeaderName::from_static("dont-retry")),
        }
    }
}

impl ResponseCriteria {
    /// Sets the statuses that reject.
    pub fn reject_statuses(mut self, statuses: impl IntoIterator<Item = StatusCode>) -> Self {
        self.reject_statuses = statuses.into_iter().collect();
        self
    }

    /// Sets (or, with `None`, removes) the header that forces acceptance.
    pub fn dont_retry_header(mut self, name: Option<HeaderName>) -> Self {
        self.dont_retry_header = name;
        self
    }

    /// The verdict on an answer.
    pub fn judge(&self, answer: &Result<Response, Error>) -> Verdict {
        match answer {
            Ok(res) => {
                let forced = self
                    .dont_retry_header
                    .as_ref()
                    .is_some_and(|h| res.headers().contains_key(h));
                if !forced && self.reject_statuses.contains(&res.status()) {
                    Verdict::Reject
                } else {
                    Verdict::Accept
                }
            }
            Err(e) => match e.kind() {
                ErrorKind::InvalidUrl | ErrorKind::InvalidRequest | ErrorKind::Config => {
                    Verdict::Accept
                }
                _ => Verdict::Reject,
            },
        }
    }
}
