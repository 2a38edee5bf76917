//! Decoding a response body out of the connection's read buffer: a known
//! length, chunked (with its trailers), or everything until the server closes.
//!
//! Trailers are handed to the caller as they are over HTTP/2 (a trailers
//! frame after the data), bounded by `max_response_headers_size` like a head.
//! RFC 9110 §6.5.1 lets a recipient keep trailers apart from the header
//! section, which courier does, and §6.5.2 forbids merging fields whose
//! definition does not allow trailers: those that frame, route, authenticate
//! or describe the content ([`cannot_be_a_trailer`], hyper's list plus the
//! connection-specific fields) are dropped, not rejected, since the body they
//! follow is whole and the rest of the trailers may be what the caller wants.

use bytes::{Buf, Bytes, BytesMut};
use http::header::HeaderName;
use http::{HeaderMap, HeaderValue};

use super::arena::copy_out;
use super::decode::Framing;
use crate::error::{Error, ErrorKind};
use crate::proto::fields::cannot_be_a_trailer;

/// Pieces up to this size are copied out of the read buffer (into the arena),
/// which then stays the connection's alone and is reused; larger ones are
/// split off without a copy (and the buffer reallocates on the next read).
const COPY_MAX: usize = 4 * 1024;

/// A chunk-size line or trailer line longer than this is hostile.
const MAX_LINE: usize = 4 * 1024;

/// More trailer lines than this is hostile (the head's bound too).
const MAX_TRAILER_FIELDS: usize = 100;

/// Where the body of the current response stands.
#[derive(Debug)]
pub(crate) enum Decoder {
    Length(u64),
    /// `max_trailers`: the bound on the trailer section, in bytes.
    Chunked {
        state: Chunk,
        max_trailers: usize,
    },
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
    /// After the last chunk: the trailer section, up to an empty line (the
    /// bytes already searched for its end, so a trickle is not rescanned).
    Trailers(usize),
}

/// One step of decoding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Data(Bytes),
    /// The trailer section (its allowed fields), after the last chunk; the
    /// body is complete.
    Trailers(HeaderMap),
    /// The buffer holds nothing more of the body: read from the connection.
    NeedMore,
    /// The body is complete.
    End,
}

impl Decoder {
    /// A decoder for `framing`; chunked trailers may take up to `max_trailers` bytes.
    pub(crate) fn new(framing: Framing, max_trailers: usize) -> Decoder {
        match framing {
            Framing::Empty | Framing::Length(0) => Decoder::Done,
            Framing::Length(n) => Decoder::Length(n),
            Framing::Chunked => Decoder::Chunked {
                state: Chunk::Size,
                max_trailers,
            },
            Framing::UntilClose => Decoder::UntilClose,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        matches!(self, Decoder::Done)
    }

    /// Bytes of body known to be still to come, to size the next read.
    pub(crate) fn remaining(&self) -> Option<u64> {
        match self {
            Decoder::Length(n)
            | Decoder::Chunked {
                state: Chunk::Data(n),
                ..
            } => Some(*n),
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
            Decoder::Chunked {
                state,
                max_trailers,
            } => {
                let step = decode_chunked(state, *max_trailers, buf, arena)?;
                if matches!(step, Step::End | Step::Trailers(_)) {
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
    max_trailers: usize,
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
            Chunk::Trailers(searched) => {
                return match trailer_section(buf, searched, max_trailers)? {
                    None => {
                        *state = Chunk::Trailers(buf.len());
                        Ok(Step::NeedMore)
                    }
                    Some(2) => {
                        buf.advance(2);
                        Ok(Step::End)
                    }
                    Some(len) => {
                        let trailers = parse_trailers(&buf[..len])?;
                        buf.advance(len);
                        Ok(Step::Trailers(trailers))
                    }
                };
            }
        }
    }
}

/// The length of the trailer section at the start of `buf` (its empty line
/// included) once it is all there; `searched` bytes were already searched.
fn trailer_section(buf: &[u8], searched: usize, max: usize) -> Result<Option<usize>, Error> {
    if buf.starts_with(b"\r\n") {
        return Ok(Some(2));
    }
    let from = searched.saturating_sub(3);
    let end = buf[from..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| from + i + 4);
    if end.unwrap_or(buf.len()) > max {
        return Err(Error::msg(
            ErrorKind::HeadersTooLarge,
            "response trailers exceed max_response_headers_size",
        ));
    }
    Ok(end)
}

/// The fields of a complete trailer section, less those that cannot be trailers.
fn parse_trailers(section: &[u8]) -> Result<HeaderMap, Error> {
    // CRLF only, as on chunk lines: the section was found by its CRLFCRLF,
    // and a bare LF that httparse would take as a line (or the blank line)
    // is where readers part ways on its end (hyper refuses it).
    let bare_lf =
        (0..section.len()).any(|i| section[i] == b'\n' && (i == 0 || section[i - 1] != b'\r'));
    if bare_lf {
        return Err(body_error("trailer line not terminated by CRLF"));
    }
    let mut slots = [httparse::EMPTY_HEADER; MAX_TRAILER_FIELDS];
    let fields = match httparse::parse_headers(section, &mut slots) {
        Ok(httparse::Status::Complete((_, fields))) => fields,
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Error::msg(
                ErrorKind::HeadersTooLarge,
                "response has more than 100 trailer lines",
            ))
        }
        Ok(httparse::Status::Partial) => return Err(body_error("malformed response trailers")),
        Err(e) => return Err(Error::new(ErrorKind::Protocol, e)),
    };
    let mut trailers = HeaderMap::with_capacity(fields.len());
    for field in fields.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|e| Error::new(ErrorKind::Protocol, e))?;
        if cannot_be_a_trailer(&name) {
            continue;
        }
        let value =
            HeaderValue::from_bytes(field.value).map_err(|e| Error::new(ErrorKind::Protocol, e))?;
        trailers.append(name, value);
    }
    Ok(trailers)
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

/// A chunk-size line: hex digits, then optional whitespace and `;extensions`
/// (RFC 9112 §7.1: `chunk-size [ chunk-ext ]`, the extensions each after
/// `BWS ";"`). Anything else after the whitespace is refused: `5 x` or `1 0`
/// read as a size by one parser and refused (or read otherwise) by another is
/// how two of them come to disagree on where a body ends.
fn chunk_size(line: &[u8]) -> Result<u64, Error> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    let blanks = line[digits..]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    let rest = &line[digits + blanks..];
    // Leading zeros are valid and change nothing: only the others can overflow.
    let zeros = line[..digits].iter().take_while(|&&b| b == b'0').count();
    // A CR inside the line (an extension's, say) is a line end to some readers.
    let bare_cr = rest.contains(&b'\r');
    if digits == 0 || digits - zeros > 16 || !(rest.is_empty() || rest[0] == b';') || bare_cr {
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
        trickle_with_trailers(framing, input, 1024).map(|(body, _, clean)| (body, clean))
    }

    /// [`trickle`], also collecting trailers, bounded by `max_trailers`.
    fn trickle_with_trailers(
        framing: Framing,
        input: &[u8],
        max_trailers: usize,
    ) -> Result<(Vec<u8>, Option<HeaderMap>, bool), Error> {
        let mut decoder = Decoder::new(framing, max_trailers);
        let (mut buf, mut arena) = (BytesMut::new(), BytesMut::new());
        let (mut out, mut trailers) = (Vec::new(), None);
        for &b in input {
            buf.extend_from_slice(&[b]);
            loop {
                match decoder.decode(&mut buf, &mut arena)? {
                    Step::Data(d) => out.extend_from_slice(&d),
                    Step::NeedMore => break,
                    Step::Trailers(t) => trailers = Some(t),
                    Step::End => return Ok((out, trailers, buf.is_empty())),
                }
            }
            if decoder.is_done() {
                return Ok((out, trailers, buf.is_empty()));
            }
        }
        decoder.eof()?;
        Ok((out, trailers, buf.is_empty()))
    }

    #[test]
    fn chunked_bodies_decode_byte_by_byte() {
        let input = b"5\r\nhello\r\n1;ext=1\r\n \r\n0000000000000000A\r\n0123456789\r\n0\r\nx-trailer: 1\r\n\r\n";
        let (body, clean) = trickle(Framing::Chunked, input).unwrap();
        assert_eq!(body, b"hello 0123456789");
        assert!(clean);
    }

    #[test]
    fn trailers_are_parsed_bounded_and_filtered() {
        let input = b"3\r\nabc\r\n0\r\nx-sum: 1\r\ncontent-length: 9\r\nX-Sum: 2\r\n\r\n";
        let (body, trailers, clean) = trickle_with_trailers(Framing::Chunked, input, 64).unwrap();
        let trailers = trailers.unwrap();
        assert_eq!((body.as_slice(), clean), (&b"abc"[..], true));
        let sums: Vec<_> = trailers.get_all("x-sum").iter().collect();
        assert_eq!(sums, ["1", "2"]);
        assert!(!trailers.contains_key("content-length"));
        // The section counts its empty line; one byte short of it is too large.
        let section = input.len() - b"3\r\nabc\r\n0\r\n".len();
        let err = trickle_with_trailers(Framing::Chunked, input, section - 1).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::HeadersTooLarge);
        let (_, none, _) = trickle_with_trailers(Framing::Chunked, b"0\r\n\r\n", 16).unwrap();
        assert!(none.is_none());
        let err = trickle_with_trailers(Framing::Chunked, b"0\r\nbad line\r\n\r\n", 64);
        assert_eq!(err.unwrap_err().kind(), ErrorKind::Protocol);
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
            b"5 x\r\nhello\r\n0\r\n\r\n",
            b"5;a\rb\r\nhello\r\n0\r\n\r\n",
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
        let mut d = Decoder::new(Framing::Length((COPY_MAX * 2) as u64), 0);
        let Step::Data(data) = d.decode(&mut buf, &mut BytesMut::new()).unwrap() else {
            panic!("data expected")
        };
        assert_eq!(data.len(), COPY_MAX * 2);
        assert!(d.is_done());
    }
}
