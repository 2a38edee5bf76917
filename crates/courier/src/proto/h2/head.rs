//! Header blocks into response heads and trailers, checked as RFC 9113 §8
//! requires of a response.
//!
//! Values are copied once, out of HPACK, into a per-connection arena, and
//! every `HeaderValue` of a block shares it: a response head costs its
//! `HeaderMap` and nothing per value.
//!
//! A server sends the same head many times over (a static file's, until its
//! `date` changes): once a block has come twice in a row, its head is kept,
//! and the same block again is that head's header map shared (a reference
//! count, as HTTP/1.1 shares its repeated head: `proto/h1/names.rs`) and the
//! block's table insertions (`Decoder::replay`), not a decoding.

use std::sync::Arc;

use bytes::BytesMut;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version};

use super::hpack::{DecodeError, Decoder};
use crate::proto::fields::{drop_non_trailers, is_connection_specific, Declared};

/// A decoded header block.
pub(crate) enum Block {
    /// A final response head, and its Content-Length as read while decoding.
    Response(ResponseHead, Declared),
    /// A 1xx informational head, to skip.
    Informational,
    Trailers(HeaderMap),
}

/// A final response head as decoded.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    /// Status, version and (unless `shared`) the headers.
    pub(crate) parts: http::response::Parts,
    /// The headers, when they are the connection's kept head's: shared
    /// with every response that replayed it; `parts.headers` is empty then.
    /// The response copies them the first time a caller changes them.
    pub(crate) shared: Option<Arc<HeaderMap>>,
}

impl ResponseHead {
    /// The headers, wherever they are kept.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.shared.as_deref().unwrap_or(&self.parts.headers)
    }
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
    /// The head the last block decoded to, while that block may be replayed.
    last: Option<(StatusCode, Arc<HeaderMap>, Declared)>,
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
            last: None,
        }
    }

    /// Decodes `block`, a response head unless `trailers`. Always decodes the
    /// whole block, even when the stream is malformed or gone, to keep HPACK
    /// in step with the server.
    pub(crate) fn decode(&mut self, block: &[u8], trailers: bool) -> Result<Block, BlockError> {
        if let Some((status, headers, declared)) = self.last.as_ref().filter(|_| !trailers) {
            if self.hpack.replay(block) {
                // The map shared, not cloned: a clone was two allocations
                // and a reference count per value, and its drop as much.
                let head = ResponseHead {
                    parts: response(*status, HeaderMap::new()),
                    shared: Some(Arc::clone(headers)),
                };
                return Ok(Block::Response(head, *declared));
            }
        }
        self.last = None;
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
        let mut declared = Declared::Absent;
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
            if name == http::header::CONTENT_LENGTH {
                declared = declared.add(value);
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
            drop_non_trailers(&mut headers);
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
        if self.hpack.repeated() {
            self.last = Some((status, Arc::new(detached(&headers)), declared));
        }
        let head = ResponseHead {
            parts: response(status, headers),
            shared: None,
        };
        Ok(Block::Response(head, declared))
    }
}

fn response(status: StatusCode, headers: HeaderMap) -> http::response::Parts {
    let (mut parts, ()) = http::Response::new(()).into_parts();
    parts.status = status;
    parts.version = Version::HTTP_2;
    parts.headers = headers;
    parts
}

/// A copy of `headers` whose values share one buffer of their own, so that
/// keeping it does not keep the arena's block (which the arena reuses once
/// the responses that share it are gone).
fn detached(headers: &HeaderMap) -> HeaderMap {
    let mut bytes = BytesMut::with_capacity(headers.values().map(|v| v.len()).sum());
    for value in headers.values() {
        bytes.extend_from_slice(value.as_bytes());
    }
    let bytes = bytes.freeze();
    let mut copy = HeaderMap::with_capacity(headers.len());
    let mut start = 0;
    for (name, value) in headers {
        let end = start + value.len();
        let shared = HeaderValue::from_maybe_shared(bytes.slice(start..end))
            .expect("the bytes of a valid value");
        copy.append(name.clone(), shared);
        start = end;
    }
    copy
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

#[cfg(test)]
mod tests {
    use super::*;

    /// nginx 1.22's head for a static file (as in `hpack::tests::replay`).
    const NGINX: &str = "887689aa6355e580ae212e1f6196dd6d5f4a09f5349fba82009c5021b816ae32253168df\
        5f901d75d0620d263d4c1c892a56426c28e95c033132386c96dd6d5f4a09f5349fba82009c5021b8166e\
        36153168df00832a47378bfe5c8c0403c5956781fcff008919085ad2b583aa62a3848fd24a8f";

    fn hex(dump: &str) -> Vec<u8> {
        (0..dump.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&dump[i..i + 2], 16).unwrap())
            .collect()
    }

    fn head(decoded: Result<Block, BlockError>) -> ResponseHead {
        match decoded {
            Ok(Block::Response(head, _)) => head,
            _ => panic!("not a response head"),
        }
    }

    #[test]
    fn a_repeated_head_is_kept_and_shared_whole() {
        let block = hex(NGINX);
        let mut decoder = BlockDecoder::new(4096, 16 * 1024);
        let first = head(decoder.decode(&block, false));
        assert!(decoder.last.is_none(), "kept after one block");
        let second = head(decoder.decode(&block, false));
        assert!(decoder.last.is_some(), "not kept after two");
        let third = head(decoder.decode(&block, false));
        let fourth = head(decoder.decode(&block, false));
        for head in [&second, &third, &fourth] {
            assert_eq!(head.parts.status, first.parts.status);
            assert_eq!(head.parts.version, Version::HTTP_2);
            assert_eq!(head.headers(), first.headers());
        }
        assert_eq!(first.headers().len(), 7);
        assert_eq!(first.headers()["server"], "nginx/1.22.1");
        // Decoded heads own their maps; replayed ones share the kept one.
        assert!(first.shared.is_none() && second.shared.is_none());
        let (Some(one), Some(two)) = (&third.shared, &fourth.shared) else {
            panic!("a replayed head is not shared");
        };
        assert!(Arc::ptr_eq(one, two), "one map, shared");
        assert!(third.parts.headers.is_empty());
        // Trailers are never copied from a head.
        assert!(matches!(
            decoder.decode(&block, true),
            Err(BlockError::Malformed(_))
        ));
        assert!(decoder.last.is_none());
    }

    /// A block of `:status: 200` and `fields` as literals that are not
    /// indexed: the same bytes decode the same way every time (no index
    /// into the dynamic table), so the decoder keeps and replays it.
    fn block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = vec![0x88];
        for (name, value) in fields {
            // Literal without indexing, new name (RFC 7541 §6.2.2), raw strings.
            out.push(0x00);
            for s in [name, value] {
                out.push(u8::try_from(s.len()).ok().filter(|&n| n < 127).unwrap());
                out.extend_from_slice(s.as_bytes());
            }
        }
        out
    }

    /// The Content-Length read while a head is decoded, which the stream's
    /// framing and the response take instead of reading the header again,
    /// is what the response would read from the head (its first value,
    /// `u64::from_str`), and a head whose copies are not all the same
    /// `1*DIGIT` number is malformed; the same for a head kept and replayed.
    #[test]
    fn the_declared_length_is_what_the_response_would_read() {
        let values = [
            "128",
            "0",
            "007",
            "",
            " 128",
            "x",
            "-1",
            "+1",
            "1,1",
            "18446744073709551615",
            "18446744073709551616",
            "00000000000000000000000001",
        ];
        let mut cases: Vec<Vec<&str>> = vec![vec![]];
        for v in values {
            cases.push(vec![v]);
            for second in ["5", "x", v] {
                cases.push(vec![v, second]);
            }
        }
        for lengths in cases {
            let mut fields = vec![("server", "s")];
            fields.extend(lengths.iter().map(|v| ("content-length", *v)));
            let block = block(&fields);
            let mut decoder = BlockDecoder::new(4096, 16 * 1024);
            // Decoded, decoded again and kept, replayed.
            for round in 0..3 {
                let replayed = decoder.last.is_some();
                assert_eq!(replayed, round == 2, "{lengths:?} round {round}");
                let decoded = decoder.decode(&block, false);
                let numbers: Vec<Option<u64>> = lengths
                    .iter()
                    .map(|v| crate::validate::parse_length(v.as_bytes()))
                    .collect();
                let expected = match numbers.first() {
                    None => Declared::Absent,
                    Some(Some(n)) if numbers.iter().all(|m| *m == Some(*n)) => Declared::Length(*n),
                    Some(_) => Declared::Invalid,
                };
                let Ok(Block::Response(head, declared)) = decoded else {
                    panic!("{lengths:?}: not a response head");
                };
                assert_eq!(declared, expected, "{lengths:?} round {round}");
                if let Declared::Length(n) = declared {
                    let read = head.headers()[http::header::CONTENT_LENGTH]
                        .to_str()
                        .unwrap();
                    assert_eq!(read.parse::<u64>().ok(), Some(n), "{lengths:?}");
                }
                if let Declared::Absent = declared {
                    assert!(!head.headers().contains_key(http::header::CONTENT_LENGTH));
                }
            }
            assert!(
                decoder.last.is_some(),
                "{lengths:?}: the third block was not replayed"
            );
        }
    }
}
