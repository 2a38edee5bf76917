//! The pool's leaves: what every part of the pool reads and that imports no
//! other part of it — the [`Protocol`](protocol::Protocol) contract with the
//! connections, the pool's own [`PoolConfig`], what all origins of one
//! client [`Shared`], and the request budget GOAWAYs teach.
//!
//! A folder of its own so that the pool's folders import one way only: the
//! root (the origin map, the scavenger) imports `origin/` (one origin's
//! connections, leases and dialing), and both import this folder, which
//! imports neither.

pub(crate) mod budget;
mod config;
pub(crate) mod protocol;
mod shared;

pub(crate) use config::PoolConfig;
pub(crate) use shared::Shared;
