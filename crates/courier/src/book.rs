//! The README's and the book's Rust blocks as doc-tests, so every example a
//! newcomer pastes compiles (`cargo test -p courier-http --doc book::`).
//! Each block is a whole program (`#[tokio::main]`, no hidden lines) marked
//! `no_run`: it talks to `courier serve` on 127.0.0.1:8080, which a doc-test
//! does not have; the programs in `examples/` run against it in
//! `tests/it/examples.rs`. Compiled only for doc-tests (`cfg(doctest)`), so
//! the published crate does not need the files.

#[doc = include_str!("../../../README.md")]
mod readme {}

#[doc = include_str!("../../../docs/src/getting-started.md")]
mod getting_started {}

#[doc = include_str!("../../../docs/src/pool.md")]
mod pool {}

#[doc = include_str!("../../../docs/src/http2.md")]
mod http2 {}

#[doc = include_str!("../../../docs/src/factory-middleware.md")]
mod factory_middleware {}

#[doc = include_str!("../../../docs/src/clusters.md")]
mod clusters {}

#[doc = include_str!("../../../docs/src/observability.md")]
mod observability {}

#[doc = include_str!("../../../docs/src/bench.md")]
mod bench {}

#[doc = include_str!("../../../docs/src/reliability.md")]
mod reliability {}

#[doc = include_str!("../../../docs/src/performance.md")]
mod performance {}

// Chapters written in parallel branches (placeholders until they merge):
// their Rust blocks are held to the same rule.

#[doc = include_str!("../../../docs/src/porting-from-reqwest.md")]
mod porting_from_reqwest {}

#[doc = include_str!("../../../docs/src/testing.md")]
mod testing {}

#[doc = include_str!("../../../docs/src/tls.md")]
mod tls {}

#[doc = include_str!("../../../docs/src/upgrades.md")]
mod upgrades {}

#[doc = include_str!("../../../docs/src/bench-flags.md")]
mod bench_flags {}
