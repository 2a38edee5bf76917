//! Order: in which order a request's attempts visit the replicas, and the
//! per-replica figures it is decided by (adaptive health, peak EWMA
//! latency, recent latency, relative weights, the gray list) kept in each
//! replica's state.
//!
//! Why a folder: every ordering reads the same per-replica state, and the
//! state exists to serve the orderings; sending only asks for an order.

pub(crate) mod choose;
pub(crate) mod ewma;
pub(crate) mod gray;
pub(crate) mod health;
pub(crate) mod load;
pub(crate) mod ordering;
pub(crate) mod recent;
pub(crate) mod relative;
pub(crate) mod relative_stats;
pub(crate) mod state;
pub(crate) mod weighing;
