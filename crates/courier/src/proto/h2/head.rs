//! Header blocks into response heads and trailers, checked as RFC 9113 §8
//! requires of a response.
//!
//! Values are copied once, out of HPACK, into a per-connection arena, and
//! every `HeaderValue` of a block shares it: a response head costs its
//! `HeaderMap` and nothing per value.

use bytes::BytesMut;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version};

use super::hpack::{DecodeError, Decoder};

/// A decoded header block.
pub(crate) enum Block {
    /// A final response head.
    Response(http::response::Parts),
    /// A 1xx informational head, to skip.
    Informational,
    Trailers(HeaderMap),
}

pub(crate) enum BlockError {
    /// HPACK failed: the connection's header table can no longer be trusted
    /// (COMPRESSION_ERROR for the whole connection).
    Compression(&'static str),
    /// Larger than the header list limit; the stream alone fails.
    TooLarge,
    /// Not a valid response (or trailers); the stream alone fails.
    Malformed(&'static str),
}

/// Decodes the header blocks of one connection, in order.
pub(crate) struct BlockDecoder {
    hpack: Decoder,
    arena: BytesMut,
    /// (name, value start, value end) in the arena, reused block to block.
    fields: Vec<(HeaderName, usize, usize)>,
    names: Names,
    max_list: usize,
}

/// Arena allocation: a few typical response heads.
const ARENA: usize = 4 * 1024;

impl BlockDecoder {
    pub(crate) fn new(max_table: usize, max_list: usize) -> BlockDecoder {
        BlockDecoder {
            hpack: Decoder::new(max_table),
            arena: BytesMut::new(),
            fields: Vec::new(),
            names: Names::default(),
            max_list,
        }
    }

    /// Decodes `block`, a response head unless `trailers`. Always decodes the
    /// whole block, even when the stream is malformed or gone, to keep HPACK
    /// in step with the server.
    pub(crate) fn decode(&mut self, block: &[u8], trailers: bool) -> Result<Block, BlockError> {
        // Room for the values: Huffman expands a string by at most 8/5, and
        // a field from the dynamic table can be far longer than its index,
        // so leave a margin; a block that outgrows it reallocates once.
        let want = (block.len() * 2).max(ARENA / 16);
        if self.arena.capacity() < want {
            // Reclaims the arena when no value of earlier blocks is alive.
            self.arena.reserve(want.max(ARENA));
        }
        let mut status: Option<StatusCode> = None;
        let mut regular = false;
        let mut malformed: Option<&'static str> = None;
        let arena = &mut self.arena;
        let fields = &mut self.fields;
        let names = &mut self.names;
        fields.clear();
        let result = self.hpack.decode(block, self.max_list, |name, value| {
            if malformed.is_some() {
                return;
            }
            if let Some(pseudo) = name.strip_prefix(b":") {
                malformed = if trailers {
                    Some("pseudo-header in trailers")
                } else if regular {
                    Some("pseudo-header after a regular header")
                } else if pseudo != b"status" {
                    Some("unknown response pseudo-header")
                } else if status.is_some() {
                    Some("repeated :status")
                } else {
                    match StatusCode::from_bytes(value) {
                        Ok(s) => {
                            status = Some(s);
                            None
                        }
                        Err(_) => Some("invalid :status"),
                    }
                };
                return;
            }
            regular = true;
            if name.iter().any(u8::is_ascii_uppercase) {
                malformed = Some("uppercase header name");
                return;
            }
            let Some(name) = names.get(name) else {
                malformed = Some("invalid header name");
                return;
            };
            if is_connection_specific(&name, value) {
                malformed = Some("connection-specific header");
                return;
            }
            let start = arena.len();
            arena.extend_from_slice(value);
            fields.push((name, start, arena.len()));
        });
        match result {
            Ok(()) => {}
            Err(DecodeError::ListTooLarge) => {
                self.arena.clear();
                return Err(BlockError::TooLarge);
            }
            Err(DecodeError::Invalid(what)) => return Err(BlockError::Compression(what)),
        }
        let values = self.arena.split().freeze();
        if let Some(what) = malformed {
            return Err(BlockError::Malformed(what));
        }
        let mut headers = HeaderMap::with_capacity(self.fields.len());
        for (name, start, end) in self.fields.drain(..) {
            let Ok(value) = HeaderValue::from_maybe_shared(values.slice(start..end)) else {
                return Err(BlockError::Malformed("invalid header value"));
            };
            headers.append(name, value);
        }
        if trailers {
            return Ok(Block::Trailers(headers));
        }
        let Some(status) = status else {
            return Err(BlockError::Malformed("no :status"));
        };
        if status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(BlockError::Malformed("101 is not allowed in HTTP/2"));
        }
        if status.is_informational() {
            return Ok(Block::Informational);
        }
        let (mut parts, ()) = http::Response::new(()).into_parts();
        parts.status = status;
        parts.version = Version::HTTP_2;
        parts.headers = headers;
        Ok(Block::Response(parts))
    }
}

/// The header names a connection has seen. A name outside `http`'s standard
/// set costs an allocation to make, and a server sends the same few on every
/// response; once seen, a name is a clone (a reference count at most).
#[derive(Default)]
struct Names {
    seen: Vec<HeaderName>,
}

/// Names kept per connection: a server's usual response headers, several times over.
const NAMES: usize = 32;

impl Names {
    fn get(&mut self, bytes: &[u8]) -> Option<HeaderName> {
        if let Some(seen) = self.seen.iter().find(|n| n.as_str().as_bytes() == bytes) {
            return Some(seen.clone());
        }
        let name = HeaderName::from_bytes(bytes).ok()?;
        if self.seen.len() < NAMES {
            self.seen.push(name.clone());
        }
        Some(name)
    }
}

/// Headers a response must not carry in HTTP/2 (RFC 9113 §8.2.2).
fn is_connection_specific(name: &HeaderName, value: &[u8]) -> bool {
    (super::encode::FORBIDDEN.contains(name) && name != http::header::HOST)
        || (name == http::header::TE && value != b"trailers")
}
