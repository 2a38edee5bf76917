//! The `courier` command's integration tests, one binary (as courier-http's
//! `tests/it`): each file here was a test binary of its own, and each linked
//! the same support code again. Select by module path:
//! `cargo test -p courier-cli --test it bench::`, `... --test it interrupt::`.
//!
//! Every test runs the real binary (`CARGO_BIN_EXE_courier`) in a child
//! process, with its own scratch directory and, where it needs one, its own
//! `courier serve` child: the tests share this process but nothing in it.

mod support;

mod bench;
mod cluster;
mod failures;
mod help;
mod interrupt;
mod merge;
mod network;
mod progress;
mod report;
mod thresholds;
mod workloads;
