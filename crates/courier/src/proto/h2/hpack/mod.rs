//! HPACK (RFC 7541): header compression for HTTP/2.
//!
//! Both directions keep a dynamic table of recently sent fields that the
//! other side mirrors, so a field repeated across requests costs one byte.
//! The [`Decoder`] reads the peer's response headers; the [`Encoder`] writes
//! our request headers.
//!
//! - [`integer`]: prefixed integers (§5.1);
//! - [`huffman`]: decoding of Huffman-coded strings (§5.2, Appendix B);
//! - [`static_table`]: the 61 predefined fields (Appendix A);
//! - [`table`]: the dynamic table (§4), in one buffer without an allocation
//!   per entry;
//! - [`decoder`] and [`encoder`]: header blocks (§6);
//! - [`replay`]: the decoder's last block, replayed when it comes again.

pub(crate) mod decoder;
pub(crate) mod encoder;
pub(crate) mod huffman;
pub(crate) mod integer;
mod replay;
pub(crate) mod static_table;
pub(crate) mod table;

#[cfg(test)]
mod tests;

pub(crate) use decoder::{DecodeError, Decoder};
pub(crate) use encoder::Encoder;

/// Default SETTINGS_HEADER_TABLE_SIZE.
pub(crate) const DEFAULT_TABLE_SIZE: usize = 4096;
