//! Support shared by several integration-test binaries, each of which
//! includes it with `mod support;` (as `tests/common` is included).

pub mod h2;
