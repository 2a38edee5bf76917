//! Whether a QUIC handshake resumed a TLS session, and when it completed,
//! as the client's TLS session sees them.
//!
//! Over TCP, rustls says whether a handshake resumed
//! (`handshake_kind()`); quinn keeps its rustls connection to itself and
//! says nothing of the kind. A ticket offered (the session store) is not
//! a session resumed (the server may refuse it and do a full handshake),
//! and 0-RTT accepted is resumption only for the connections that tried
//! it. What is exact is the server's `ServerHello`: in TLS 1.3 it carries
//! a `pre_shared_key` extension if and only if the server took a PSK, i.e.
//! resumed (RFC 8446 §4.2.11), which is what rustls' `Resumed` means. The
//! TLS session wrapper (`quic_idle.rs`) hands the handshake bytes it reads
//! to a [`HelloReader`], which keeps at most one `ServerHello`'s worth of
//! them until it has seen one.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Handshake message type of `ServerHello` (RFC 8446 §4).
const SERVER_HELLO: u8 = 2;
/// Extension type of `pre_shared_key` (RFC 8446 §4.2).
const PRE_SHARED_KEY: u16 = 41;
/// The `random` of a `HelloRetryRequest`, which is a `ServerHello` in form
/// (RFC 8446 §4.1.3): the real one follows it.
const HELLO_RETRY: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0x33, 0x9C, 0x5C,
];
/// The most handshake bytes kept while looking for the `ServerHello` (a
/// `HelloRetryRequest` and a `ServerHello` are a few hundred bytes; a
/// server sending more before one is not read further: not resumed).
const MAX_KEPT: usize = 8 * 1024;

const RESUMED: u8 = 1;
const HELLO_SEEN: u8 = 2;
const COMPLETE: u8 = 4;

/// What one connection's handshake showed, shared between its TLS session
/// (which writes it on quinn's connection task) and whoever counts it.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandshakeWatch(Arc<AtomicU8>);

impl HandshakeWatch {
    /// The server resumed a session (its `ServerHello` took a PSK).
    pub(crate) fn resumed(&self) -> bool {
        self.0.load(Ordering::Acquire) & RESUMED != 0
    }

    /// The TLS handshake completed (the client has the server's Finished
    /// and sent its own).
    pub(crate) fn complete(&self) -> bool {
        self.0.load(Ordering::Acquire) & COMPLETE != 0
    }

    pub(crate) fn set_complete(&self) {
        self.0.fetch_or(COMPLETE, Ordering::AcqRel);
    }

    fn hello_seen(&self, resumed: bool) {
        let bits = HELLO_SEEN | if resumed { RESUMED } else { 0 };
        self.0.fetch_or(bits, Ordering::AcqRel);
    }
}

/// Reads the server's handshake bytes up to its `ServerHello`.
#[derive(Debug, Default)]
pub(crate) struct HelloReader {
    kept: Vec<u8>,
    done: bool,
}

impl HelloReader {
    /// The next handshake bytes the server sent, in order.
    pub(crate) fn read(&mut self, bytes: &[u8], watch: &HandshakeWatch) {
        if self.done {
            return;
        }
        self.kept.extend_from_slice(bytes);
        match server_hello(&self.kept) {
            Hello::More if self.kept.len() <= MAX_KEPT => return,
            Hello::More | Hello::Malformed => {}
            Hello::Found { resumed } => watch.hello_seen(resumed),
        }
        self.done = true;
        self.kept = Vec::new();
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Hello {
    /// Not all of it yet.
    More,
    /// Not a `ServerHello` where one belongs (rustls fails the handshake).
    Malformed,
    Found {
        resumed: bool,
    },
}

/// The first `ServerHello` that is not a `HelloRetryRequest` in the
/// handshake messages `bytes` (type, 24-bit length, body).
fn server_hello(mut bytes: &[u8]) -> Hello {
    loop {
        let Some(&[kind, a, b, c]) = bytes.get(..4) else {
            return Hello::More;
        };
        let len = (usize::from(a) << 16) | (usize::from(b) << 8) | usize::from(c);
        let Some(body) = bytes.get(4..4 + len) else {
            return Hello::More;
        };
        if kind != SERVER_HELLO {
            return Hello::Malformed;
        }
        match hello_body(body) {
            Some((random, extensions)) if random != HELLO_RETRY => {
                return Hello::Found {
                    resumed: extensions.contains(&PRE_SHARED_KEY),
                }
            }
            Some(_) => bytes = &bytes[4 + len..],
            None => return Hello::Malformed,
        }
    }
}

/// A `ServerHello` body's random and extension types: version (2),
/// random (32), session id (8-bit length), cipher suite (2), compression
/// (1), extensions (16-bit length; each type, 16-bit length, data).
fn hello_body(body: &[u8]) -> Option<([u8; 32], Vec<u16>)> {
    let random: [u8; 32] = body.get(2..34)?.try_into().ok()?;
    let session = usize::from(*body.get(34)?);
    let mut rest = body.get(35 + session + 3..)?;
    let total = usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?));
    rest = rest.get(2..2 + total)?;
    let mut types = Vec::new();
    while !rest.is_empty() {
        let kind = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?);
        let len = usize::from(u16::from_be_bytes(rest.get(2..4)?.try_into().ok()?));
        rest = rest.get(4 + len..)?;
        types.push(kind);
    }
    Some((random, types))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `ServerHello` message with these extensions (type, data).
    fn hello(random: [u8; 32], extensions: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&random);
        body.push(32);
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0x13, 0x01, 0]);
        let mut ext = Vec::new();
        for (kind, data) in extensions {
            ext.extend_from_slice(&kind.to_be_bytes());
            ext.extend_from_slice(&u16::try_from(data.len()).unwrap().to_be_bytes());
            ext.extend_from_slice(data);
        }
        body.extend_from_slice(&u16::try_from(ext.len()).unwrap().to_be_bytes());
        body.extend_from_slice(&ext);
        let len = u32::try_from(body.len()).unwrap().to_be_bytes();
        let mut message = vec![SERVER_HELLO, len[1], len[2], len[3]];
        message.extend_from_slice(&body);
        message
    }

    fn read_in(pieces: &[&[u8]]) -> HandshakeWatch {
        let watch = HandshakeWatch::default();
        let mut reader = HelloReader::default();
        for piece in pieces {
            reader.read(piece, &watch);
        }
        watch
    }

    #[test]
    fn a_pre_shared_key_in_the_server_hello_is_a_resumption() {
        let key_share: (u16, &[u8]) = (51, &[0; 36]);
        let versions: (u16, &[u8]) = (43, &[3, 4]);
        let full = hello([1; 32], &[key_share, versions]);
        let resumed = hello([1; 32], &[key_share, versions, (PRE_SHARED_KEY, &[0, 0])]);
        assert!(!read_in(&[&full]).resumed());
        assert!(read_in(&[&resumed]).resumed());
        // Byte by byte, as CRYPTO frames may cut it, with what follows.
        let mut stream = resumed.clone();
        stream.extend_from_slice(&[8, 0, 0, 2, 0, 0]);
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let watch = read_in(&bytes);
        assert!(watch.resumed());
        assert_eq!(watch.0.load(Ordering::Relaxed) & HELLO_SEEN, HELLO_SEEN);
    }

    #[test]
    fn a_hello_retry_request_is_passed_over() {
        let retry = hello(HELLO_RETRY, &[(PRE_SHARED_KEY, &[0, 0])]);
        let full = hello([2; 32], &[(51, &[0; 4])]);
        assert!(!read_in(&[&retry, &full]).resumed());
        let resumed = hello([2; 32], &[(PRE_SHARED_KEY, &[0, 0])]);
        assert!(read_in(&[&hello(HELLO_RETRY, &[]), &resumed]).resumed());
    }

    #[test]
    fn what_is_no_server_hello_is_not_a_resumption_and_is_not_kept() {
        let watch = HandshakeWatch::default();
        let mut reader = HelloReader::default();
        reader.read(&[8, 0, 0, 1, 0], &watch);
        assert!(!watch.resumed() && reader.done && reader.kept.is_empty());
        // A length never reached: kept up to the bound, then given up.
        let mut reader = HelloReader::default();
        reader.read(&[SERVER_HELLO, 0xff, 0xff, 0xff], &watch);
        for _ in 0..=MAX_KEPT / 1024 {
            reader.read(&[0; 1024], &watch);
        }
        assert!(reader.done && reader.kept.is_empty() && !watch.resumed());
        // A cut extension list.
        let mut cut = hello([1; 32], &[(PRE_SHARED_KEY, &[0, 0])]);
        let at = cut.len() - 3;
        cut[at] = 0x40;
        assert!(!read_in(&[&cut]).resumed());
    }

    /// The server writes these bytes, so none may panic the reader or grow
    /// what it keeps past its bound: random messages, mutated hellos (each
    /// byte in turn set to 0x00, 0xff and its neighbour's value), cut at
    /// random points.
    #[test]
    fn no_bytes_a_server_sends_panic_the_reader_or_outgrow_its_bound() {
        let mut next = crate::test_support::xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let good = hello([3; 32], &[(51, &[0; 36]), (PRE_SHARED_KEY, &[0, 0])]);
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for at in 0..good.len() {
            for value in [0x00, 0xff, good[(at + 1) % good.len()]] {
                let mut bad = good.clone();
                bad[at] = value;
                inputs.push(bad);
            }
        }
        for _ in 0..2_000 {
            let len = (next() % 700) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if next() % 2 == 0 && len >= 4 {
                bytes[0] = SERVER_HELLO;
            }
            inputs.push(bytes);
        }
        for bytes in &inputs {
            let watch = HandshakeWatch::default();
            let mut reader = HelloReader::default();
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let cut = 1 + (next() as usize % rest.len());
                reader.read(&rest[..cut], &watch);
                assert!(
                    reader.kept.len() <= MAX_KEPT + cut,
                    "kept {}",
                    reader.kept.len()
                );
                rest = &rest[cut..];
            }
        }
    }
}
