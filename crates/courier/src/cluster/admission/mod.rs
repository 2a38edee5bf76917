//! Admission: whether a request, an extra attempt, an answer or a replica
//! is let in — adaptive throttling, the replica budget, outlier ejection,
//! the response criteria, and the refusals they produce.
//!
//! Why a folder: these are the cluster's "no" in its four forms, each a
//! small counter or window with no knowledge of ordering or sending; the
//! rest of the cluster asks them and they import nothing of it.

pub(crate) mod budget;
pub(crate) mod criteria;
pub(crate) mod outlier;
pub(crate) mod refusal;
pub(crate) mod throttle;
pub(crate) mod window;
