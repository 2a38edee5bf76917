//! Reads the server's control stream as it passes to h3, for what h3 keeps
//! private: the GOAWAY id (which requests the server did not take) and the
//! SETTINGS (to remember for 0-RTT, RFC 9114 §7.2.4.2). It only watches:
//! h3 still reads every byte and enforces the protocol (a GOAWAY id that
//! rises, a second SETTINGS, a malformed frame close the connection there).
//!
//! Bounded by construction: it holds one varint and at most
//! [`MAX_KEPT_PAYLOAD`] bytes of one frame; longer SETTINGS or GOAWAY
//! payloads are skipped (h3 rejects them anyway), other frames are skipped
//! as they pass.

/// Largest SETTINGS or GOAWAY payload read (a GOAWAY is one varint; a
/// SETTINGS with a few grease entries is under 100 bytes).
const MAX_KEPT_PAYLOAD: usize = 1024;

/// HTTP/3 frame and stream types (RFC 9114 §7.2, §6.2.1).
const CONTROL_STREAM: u64 = 0x00;
const SETTINGS: u64 = 0x04;
const GOAWAY: u64 = 0x07;

/// What the tap found in a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The server's SETTINGS: (identifier, value) pairs, as sent.
    Settings(Vec<(u64, u64)>),
    /// A GOAWAY with this stream id.
    Goaway(u64),
}

/// A server-initiated unidirectional stream's bytes, watched.
#[derive(Debug)]
pub(crate) struct ControlTap {
    state: State,
    varint: Varint,
    frame_type: u64,
    remaining: u64,
    payload: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StreamType,
    FrameType,
    FrameLength,
    /// `true`: the payload is kept (SETTINGS, GOAWAY within the bound).
    Payload(bool),
    /// Not a control stream, or past what can be followed.
    Off,
}

/// A QUIC variable-length integer read a byte at a time.
#[derive(Debug, Default)]
struct Varint {
    value: u64,
    have: u8,
    need: u8,
}

impl Varint {
    /// Feeds one byte; the value once complete.
    fn push(&mut self, b: u8) -> Option<u64> {
        if self.have == 0 {
            self.need = 1 << (b >> 6);
            self.value = u64::from(b & 0x3f);
        } else {
            self.value = self.value << 8 | u64::from(b);
        }
        self.have += 1;
        (self.have == self.need).then(|| {
            self.have = 0;
            self.value
        })
    }
}

/// Decodes a whole varint from `buf`, advancing it.
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut v = Varint::default();
    while let Some((&b, rest)) = buf.split_first() {
        *buf = rest;
        if let Some(value) = v.push(b) {
            return Some(value);
        }
    }
    None
}

impl Default for ControlTap {
    fn default() -> Self {
        ControlTap {
            state: State::StreamType,
            varint: Varint::default(),
            frame_type: 0,
            remaining: 0,
            payload: Vec::new(),
        }
    }
}

impl ControlTap {
    /// Whether it still watches (false once the stream proved not to be
    /// the control stream).
    pub(crate) fn is_on(&self) -> bool {
        self.state != State::Off
    }

    /// Watches `data`, the next bytes of the stream; calls `seen` for each
    /// SETTINGS or GOAWAY completed in it.
    pub(crate) fn feed(&mut self, mut data: &[u8], seen: &mut impl FnMut(Seen)) {
        while !data.is_empty() {
            match self.state {
                State::Off => return,
                State::StreamType | State::FrameType | State::FrameLength => {
                    let (&b, rest) = data.split_first().expect("not empty");
                    data = rest;
                    if let Some(value) = self.varint.push(b) {
                        self.next_after(value, seen);
                    }
                }
                State::Payload(keep) => {
                    let n = usize::try_from(self.remaining)
                        .unwrap_or(usize::MAX)
                        .min(data.len());
                    if keep {
                        self.payload.extend_from_slice(&data[..n]);
                    }
                    data = &data[n..];
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        self.frame_done(keep, seen);
                    }
                }
            }
        }
    }

    fn next_after(&mut self, value: u64, seen: &mut impl FnMut(Seen)) {
        self.state = match self.state {
            State::StreamType if value == CONTROL_STREAM => State::FrameType,
            State::StreamType => State::Off,
            State::FrameType => {
                self.frame_type = value;
                State::FrameLength
            }
            State::FrameLength => {
                self.remaining = value;
                let keep = matches!(self.frame_type, SETTINGS | GOAWAY)
                    && value <= MAX_KEPT_PAYLOAD as u64;
                self.payload.clear();
                if value == 0 {
                    self.frame_done(keep, seen);
                    return;
                }
                State::Payload(keep)
            }
            other => other,
        };
    }

    fn frame_done(&mut self, keep: bool, seen: &mut impl FnMut(Seen)) {
        self.state = State::FrameType;
        if !keep {
            return;
        }
        let mut buf = &self.payload[..];
        match self.frame_type {
            GOAWAY => {
                if let Some(id) = varint(&mut buf) {
                    seen(Seen::Goaway(id));
                }
            }
            _ => {
                let mut pairs = Vec::new();
                while !buf.is_empty() {
                    match (varint(&mut buf), varint(&mut buf)) {
                        (Some(id), Some(value)) => pairs.push((id, value)),
                        _ => break,
                    }
                }
                seen(Seen::Settings(pairs));
            }
        }
        self.payload = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bytes: &[u8], cut: usize) -> Vec<Seen> {
        let mut tap = ControlTap::default();
        let mut out = Vec::new();
        let (a, b) = bytes.split_at(cut.min(bytes.len()));
        tap.feed(a, &mut |s| out.push(s));
        tap.feed(b, &mut |s| out.push(s));
        out
    }

    #[test]
    fn finds_settings_and_goaway_however_cut() {
        // Control stream; SETTINGS: QPACK_MAX_TABLE_CAPACITY=0,
        // MAX_FIELD_SECTION_SIZE=16384 (a 4-byte varint).
        let wire = {
            let mut w = vec![0x00, 0x04, 0x07, 0x01, 0x00, 0x06, 0x80, 0x00, 0x40, 0x00];
            // An unknown (grease) frame, skipped.
            w.extend([0x21, 0x03, 0xaa, 0xbb, 0xcc]);
            // GOAWAY 8 (2-byte varint form).
            w.extend([0x07, 0x02, 0x40, 0x08]);
            w
        };
        let expected = vec![
            Seen::Settings(vec![(0x01, 0), (0x06, 0x4000)]),
            Seen::Goaway(8),
        ];
        for cut in 0..=wire.len() {
            assert_eq!(run(&wire, cut), expected, "cut at {cut}");
        }
    }

    #[test]
    fn other_streams_and_oversized_frames_are_not_kept() {
        let mut tap = ControlTap::default();
        let mut out = Vec::new();
        tap.feed(&[0x02, 0x07, 0x01, 0x00], &mut |s| out.push(s));
        assert!(!tap.is_on(), "a QPACK encoder stream is not watched");
        assert!(out.is_empty());

        // A SETTINGS over the bound is skipped whole, then frames go on.
        let mut tap = ControlTap::default();
        let mut wire = vec![0x00, 0x04, 0x44, 0x01]; // length 0x401 = 1025
        wire.extend(std::iter::repeat_n(0u8, 1025));
        wire.extend([0x07, 0x01, 0x04]);
        tap.feed(&wire, &mut |s| out.push(s));
        assert_eq!(out, vec![Seen::Goaway(4)]);
        assert!(tap.payload.capacity() <= MAX_KEPT_PAYLOAD);
    }
}
