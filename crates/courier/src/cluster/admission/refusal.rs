//! The cluster's own refusals, as `courier::Error`s.
//!
//! Why not a new error type: callers already handle `courier::Error`, and a
//! cluster request fails the ways any request does. A request the cluster
//! refuses without sending it is [`ErrorKind::Refused`] (nothing was sent, so
//! it is safe to send again later) with a [`Throttled`] source; a cluster
//! with no replica fails with [`ErrorKind::Connect`] and a [`NoReplicas`]
//! source. [`is_throttled`] tells the first apart from a server's refusal.

use std::error::Error as StdError;
use std::fmt;

use crate::error::{Error, ErrorKind};

/// The source of an error for a request refused by adaptive throttling.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Throttled {
    /// The cluster's name.
    pub cluster: String,
    /// The refusal probability at the time.
    pub probability: f64,
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cluster {} refused the request locally (adaptive throttling, p = {:.2})",
            self.cluster, self.probability
        )
    }
}

impl StdError for Throttled {}

/// The source of an error for a request to a cluster with no replica.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NoReplicas {
    /// The cluster's name.
    pub cluster: String,
}

impl fmt::Display for NoReplicas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cluster {} has no replica", self.cluster)
    }
}

impl StdError for NoReplicas {}

/// Whether `err` is a request refused by the cluster's adaptive throttling.
pub fn is_throttled(err: &Error) -> bool {
    err.kind() == ErrorKind::Refused
        && err
            .source()
            .is_some_and(|s| s.downcast_ref::<Throttled>().is_some())
}

pub(crate) fn throttled(cluster: &str, probability: f64) -> Error {
    Error::new(
        ErrorKind::Refused,
        Throttled {
            cluster: cluster.to_owned(),
            probability,
        },
    )
}

pub(crate) fn no_replicas(cluster: &str) -> Error {
    Error::new(
        ErrorKind::Connect,
        NoReplicas {
            cluster: cluster.to_owned(),
        },
    )
}
