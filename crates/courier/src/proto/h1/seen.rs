//! What the headers that decide a response's framing and persistence
//! (`Connection`, `Content-Length`, `Transfer-Encoding`) say, noted while
//! its head is read (`decode.rs`), so nothing is looked up in the map
//! afterwards.

use http::Version;

use super::decode::Role;
use crate::error::{Error, ErrorKind};

/// What the headers that decide framing and persistence say, noted while
/// the head is read: nothing is looked up in the map afterwards.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Seen {
    pub(super) connection: bool,
    /// A `Connection` header lists `close` / `keep-alive`.
    pub(super) close: bool,
    pub(super) keep_alive: bool,
    pub(super) length: Length,
    /// The first Content-Length value, as the response reads it.
    pub(super) first_length: FirstLength,
    pub(super) transfer_encoding: bool,
}

/// The first `Content-Length` header's value, if it is one number as
/// `Response::content_length` reads it (`u64::from_str`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum FirstLength {
    #[default]
    Absent,
    Number(u64),
    /// Anything else: the response reads the header itself.
    Other,
}

/// The Content-Length over every value of every `Content-Length` header.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Length {
    #[default]
    Absent,
    Is(u64),
    /// The first fault met, in order (as reading them one by one would).
    Invalid,
    Conflicting,
}

impl Seen {
    // Inlined: most headers are none of the three, and cost one compare.
    #[inline]
    pub(super) fn note(&mut self, role: Role, value: &[u8]) {
        if role != Role::Other {
            self.note_framing(role, value);
        }
    }

    fn note_framing(&mut self, role: Role, value: &[u8]) {
        // One element, as servers send them (`keep-alive`, `128`), is read
        // as is, without looking for a comma first: a value that reads as
        // one token or one number has none, and anything else is split
        // below, which reads a single element the same way.
        if role == Role::Connection {
            self.connection = true;
            // As nginx and most servers send it: no trimming, no case.
            if value == b"keep-alive" {
                self.keep_alive = true;
                return;
            }
            let token = value.trim_ascii();
            let close = token.eq_ignore_ascii_case(b"close");
            let keep_alive = !close && token.eq_ignore_ascii_case(b"keep-alive");
            if close || keep_alive {
                self.close |= close;
                self.keep_alive |= keep_alive;
                return;
            }
            for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                self.close |= token.eq_ignore_ascii_case(b"close");
                self.keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if role == Role::ContentLength {
            let first = self.first_length == FirstLength::Absent;
            if self.length == Length::Absent {
                let digits = value.trim_ascii();
                if let Some(n) = parse_decimal(digits) {
                    self.length = Length::Is(n);
                    if first {
                        // `parse_decimal` takes digits only, as few as
                        // `u64::from_str` reads alike; untrimmed, the
                        // response's reading fails (it reads the header).
                        self.first_length = if digits.len() == value.len() {
                            FirstLength::Number(n)
                        } else {
                            FirstLength::Other
                        };
                    }
                    return;
                }
            }
            if first {
                self.first_length = match parse_decimal(value) {
                    Some(n) => FirstLength::Number(n),
                    None => FirstLength::Other,
                };
            }
            for part in value.split(|&b| b == b',') {
                self.length = match (self.length, parse_decimal(part.trim_ascii())) {
                    (fault @ (Length::Invalid | Length::Conflicting), _) => fault,
                    (_, None) => Length::Invalid,
                    (Length::Is(f), Some(n)) if f != n => Length::Conflicting,
                    (_, Some(n)) => Length::Is(n),
                };
            }
        } else {
            self.transfer_encoding = true;
        }
    }

    /// The Content-Length, if any; several that disagree are an error.
    pub(super) fn content_length(&self) -> Result<Option<u64>, Error> {
        match self.length {
            Length::Absent => Ok(None),
            Length::Is(n) => Ok(Some(n)),
            Length::Invalid => Err(Error::msg(
                ErrorKind::Protocol,
                "invalid Content-Length in response",
            )),
            Length::Conflicting => Err(Error::msg(
                ErrorKind::Protocol,
                "conflicting Content-Length values in response",
            )),
        }
    }

    /// The Content-Length the response declares, as `Response` reads it
    /// (the first value, if it is a number), or `None` when only the
    /// header itself can say.
    pub(super) fn declared(&self) -> Option<Option<u64>> {
        match self.first_length {
            FirstLength::Absent => Some(None),
            FirstLength::Number(n) => Some(Some(n)),
            FirstLength::Other => None,
        }
    }

    /// Whether the server lets the connection persist: HTTP/1.1 unless it
    /// says `close`, HTTP/1.0 only if it says `keep-alive`.
    pub(super) fn persistent(&self, version: Version) -> bool {
        if version == Version::HTTP_10 {
            self.keep_alive
        } else {
            !self.close
        }
    }
}

pub(super) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    // Leading zeros are valid and change nothing: only the others can overflow.
    let zeros = digits.iter().take_while(|&&b| b == b'0').count();
    if digits.is_empty() || digits.len() - zeros > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}
