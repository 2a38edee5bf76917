//! Attempts: how many replicas a request may go to and when (the
//! strategies, the fork delay and the recent answer times it reads), and how
//! one attempt is sent (on the client, or through the attempt-side layers).
//!
//! Why a folder: these decide and send single attempts and know nothing of
//! the cluster that asks for them; `send.rs` above walks a request through
//! admission, order and these.

pub(crate) mod fork_delay;
pub(crate) mod latency;
pub(crate) mod strategy;
pub(crate) mod transport;
