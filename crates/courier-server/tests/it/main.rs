//! courier-server's integration tests, one binary (as courier-http's
//! `tests/it`): each file here was a test binary of its own, and each linked
//! the same raw and hyper-based clients again. Select by module path:
//! `cargo test -p courier-server --test it faults::`, `... --test it http3::`.
//!
//! Each test starts its own server on a loopback port and talks to it with
//! the clients in `support`: the tests share this process but no server.

mod support;

mod endpoints;
mod faults;
mod http2;
mod http3;
mod lifecycle;
mod tls;
