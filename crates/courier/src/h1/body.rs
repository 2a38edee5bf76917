//! Decoding a response body out of the connection's read buffer: a known
//! length, chunked, or everything until the server closes.

use bytes::{Buf, Bytes, BytesMut};

use super::arena::copy_out;
use super::decode::Framing;
use crate::error::{Error, ErrorKind};

/// Pieces up to this size are copied out of the read buffer (into the arena),
/// which then stays the connection's alone and is reused; larger ones are
/// split off without a copy (and the buffer reallocates on the next read).
const COPY_MAX: usize = 4 * 1024;

/// A chunk-size line or trailer line longer than this is hostile.
const MAX_LINE: usize = 4 * 1024;

/// All trailer lines together may not exceed this.
const MAX_TRAILERS: usize = 16 * 1024;

/// Where the body of the current response stands.
#[derive(Debug)]
pub(crate) enum Decoder {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
}

/// The chunked decoder's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this much left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one (bytes seen so far).
    Trailers(usize),
}

/// One step of decoding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Data(Bytes),
    /// The buffer holds nothing more of the body: read from the connection.
    NeedMore,
    /// The body is complete.
    End,
}

impl Decoder {
    pub(crate) fn new(framing: Framing) -> Decoder {
        match framing {
            Framing::Empty | Framing::Length(0) => Decoder::Done,
            Framing::Length(n) => Decoder::Length(n),
            Framing::Chunked => Decoder::Chunked(Chunk::Size),
            Framing::UntilClose => Decoder::UntilClose,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        matches!(self, Decoder::Done)
    }

    /// Bytes of body known to be still to come, to size the next read.
    pub(crate) fn remaining(&self) -> Option<u64> {
        match self {
            Decoder::Length(n) | Decoder::Chunked(Chunk::Data(n)) => Some(*n),
            _ => None,
        }
    }

    /// Takes the next piece of body from `buf`.
    /// Small pieces are copied into `arena`.
    pub(crate) fn decode(
        &mut self,
        buf: &mut BytesMut,
        arena: &mut BytesMut,
    ) -> Result<Step, Error> {
        match self {
            Decoder::Done => Ok(Step::End),
            Decoder::Length(left) => {
                if buf.is_empty() {
                    return Ok(Step::NeedMore);
                }
                let n = take_len(*left, buf);
                *left -= n as u64;
                let data = take(buf, n, arena);
                if *left == 0 {
                    *self = Decoder::Done;
                }
                Ok(Step::Data(data))
            }
            Decoder::UntilClose => {
                if buf.is_empty() {
                    return Ok(Step::NeedMore);
                }
                let n = buf.len();
                Ok(Step::Data(take(buf, n, arena)))
            }
            Decoder::Chunked(state) => {
                let step = decode_chunked(state, buf, arena)?;
                if step == Step::End {
                    *self = Decoder::Done;
                }
                Ok(step)
            }
        }
    }

    /// The connection reached its end: that completes a body delimited by
    /// the close, and truncates any other.
    pub(crate) fn eof(&mut self) -> Result<Step, Error> {
        match self {
            Decoder::Done => Ok(Step::End),
            Decoder::UntilClose => {
                *self = Decoder::Done;
                Ok(Step::End)
            }
            _ => Err(Error::msg(
                ErrorKind::Body,
                "connection closed before the end of the response body",
            )),
        }
    }
}

fn take_len(left: u64, buf: &BytesMut) -> usize {
    usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()))
}

fn take(buf: &mut BytesMut, n: usize, arena: &mut BytesMut) -> Bytes {
    if n <= COPY_MAX {
        let data = copy_out(arena, &buf[..n]);
        buf.advance(n);
        data
    } else {
        buf.split_to(n).freeze()
    }
}

fn decode_chunked(
    state: &mut Chunk,
    buf: &mut BytesMut,
    arena: &mut BytesMut,
) -> Result<Step, Error> {
    loop {
        match *state {
            Chunk::Size => {
                let Some(len) = line(buf)? else {
                    return Ok(Step::NeedMore);
                };
                let size = chunk_size(&buf[..len])?;
                buf.advance(len + 2);
                *state = if size == 0 {
                    Chunk::Trailers(0)
                } else {
                    Chunk::Data(size)
                };
            }
            Chunk::Data(left) => {
                if buf.is_empty() {
                    return Ok(Step::NeedMore);
                }
                let n = take_len(left, buf);
                let left = left - n as u64;
                *state = if left == 0 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(left)
                };
                return Ok(Step::Data(take(buf, n, arena)));
            }
            Chunk::DataEnd => {
                if buf.len() < 2 {
                    return Ok(Step::NeedMore);
                }
                if &buf[..2] != b"\r\n" {
                    return Err(body_error("chunk data not followed by CRLF"));
                }
                buf.advance(2);
                *state = Chunk::Size;
            }
            Chunk::Trailers(seen) => {
                let Some(len) = line(buf)? else {
                    return Ok(Step::NeedMore);
                };
                buf.advance(len + 2);
                if len == 0 {
                    return Ok(Step::End);
                }
                // Trailers are read past (courier does not surface them), within bounds.
                let seen = seen + len + 2;
                if seen > MAX_TRAILERS {
                    return Err(body_error("response trailers too large"));
                }
                *state = Chunk::Trailers(seen);
            }
        }
    }
}

/// The length of the CRLF-terminated line at the start of `buf` (without the
/// CRLF), once it is all there.
fn line(buf: &BytesMut) -> Result<Option<usize>, Error> {
    let Some(lf) = buf.iter().take(MAX_LINE + 2).position(|&b| b == b'\n') else {
        if buf.len() > MAX_LINE {
            return Err(body_error("chunk line too long"));
        }
        return Ok(None);
    };
    if lf == 0 || buf[lf - 1] != b'\r' {
        return Err(body_error("chunk line not terminated by CRLF"));
    }
    Ok(Some(lf - 1))
}

/// A chunk-size line: hex digits, then optional whitespace and `;extensions`.
fn chunk_size(line: &[u8]) -> Result<u64, Error> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    let rest = &line[digits..];
    if digits == 0 || digits > 16 || !(rest.is_empty() || matches!(rest[0], b';' | b' ' | b'\t')) {
        return Err(body_error("invalid chunk size"));
    }
    let mut size = 0u64;
    for &d in &line[..digits] {
        let v = (d as char).to_digit(16).unwrap_or(0);
        size = (size << 4) | u64::from(v);
    }
    Ok(size)
}

fn body_error(message: &'static str) -> Error {
    Error::msg(ErrorKind::Body, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` one byte at a time, collecting the body.
    fn trickle(framing: Framing, input: &[u8]) -> Result<(Vec<u8>, bool), Error> {
        let mut decoder = Decoder::new(framing);
        let (mut buf, mut arena) = (BytesMut::new(), BytesMut::new());
        let mut out = Vec::new();
        for &b in input {
            buf.extend_from_slice(&[b]);
            loop {
                match decoder.decode(&mut buf, &mut arena)? {
                    Step::Data(d) => out.extend_from_slice(&d),
                    Step::NeedMore => break,
                    Step::End => return Ok((out, buf.is_empty())),
                }
            }
        }
        decoder.eof()?;
        Ok((out, buf.is_empty()))
    }

    #[test]
    fn chunked_bodies_decode_byte_by_byte() {
        let input = b"5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nx-trailer: 1\r\n\r\n";
        let (body, clean) = trickle(Framing::Chunked, input).unwrap();
        assert_eq!(body, b"hello 0123456789");
        assert!(clean);
    }

    #[test]
    fn length_and_close_delimited_bodies() {
        assert_eq!(trickle(Framing::Length(3), b"abc").unwrap().0, b"abc");
        assert_eq!(
            trickle(Framing::UntilClose, b"to the end").unwrap().0,
            b"to the end"
        );
        let err = trickle(Framing::Length(5), b"abc").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Body);
    }

    #[test]
    fn broken_chunking_is_a_body_error() {
        for bad in [
            &b"zz\r\nhello\r\n0\r\n\r\n"[..],
            b"5\r\nhelloXX0\r\n\r\n",
            b"5\nhello\r\n0\r\n\r\n",
            b"11111111111111111\r\n",
            b"5\r\nhel",
        ] {
            let err = trickle(Framing::Chunked, bad).unwrap_err();
            assert_eq!(
                err.kind(),
                ErrorKind::Body,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = vec![b'1'; MAX_LINE + 10];
        assert!(trickle(Framing::Chunked, &long).is_err());
    }

    #[test]
    fn large_pieces_are_split_off_small_ones_copied() {
        let mut buf = BytesMut::from(&vec![7u8; COPY_MAX * 2][..]);
        let mut d = Decoder::new(Framing::Length((COPY_MAX * 2) as u64));
        let Step::Data(data) = d.decode(&mut buf, &mut BytesMut::new()).unwrap() else {
            panic!("data expected")
        };
        assert_eq!(data.len(), COPY_MAX * 2);
        assert!(d.is_done());
    }
}
