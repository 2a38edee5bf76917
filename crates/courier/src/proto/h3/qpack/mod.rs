//! QPACK (RFC 9204): field compression for HTTP/3, with no dynamic table.
//!
//! We announce QPACK_MAX_TABLE_CAPACITY 0 and QPACK_BLOCKED_STREAMS 0, so
//! a field section can only use the static table and literals, and the
//! peer's encoder stream can carry nothing but "capacity 0". That costs a
//! few bytes per response head against a dynamic table and buys: no state
//! shared across streams (no lock, no head-of-line blocking, no
//! encoder-stream bombs to bound), and a request head that can be encoded
//! once and sent many times (`request.rs` caches it, as HTTP/2's side does).
//!
//! - [`static_table`]: the 99 predefined fields (Appendix A);
//! - [`decode`]: field sections (§4.5) into fields, bounded by our
//!   SETTINGS_MAX_FIELD_SECTION_SIZE;
//! - [`encode`]: field lines, Huffman-coded when that is shorter;
//! - [`check_encoder_stream`]: the peer's encoder stream, held to capacity 0.
//!
//! Prefixed integers and Huffman codes are HPACK's (RFC 7541 §5.1, §5.2,
//! which RFC 9204 reuses), from `proto/h2/hpack`.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod static_table;

#[allow(unused_imports)] // the connection uses them from step 3
pub(crate) use decode::{check_encoder_stream, decode, DecodeError};

#[cfg(test)]
mod tests;
