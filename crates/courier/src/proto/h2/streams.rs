//! The streams of one connection: a slab of compact per-stream state, found
//! by stream id through a small map.
//!
//! Each stream costs one slab slot for its whole life, and nothing per frame:
//! a HEADERS frame is encoded straight into the connection's write buffer, and
//! a response head or DATA payload waits in the slot until its request reads
//! it. With a million long polls in flight, the slot is most of what an idle
//! stream costs the client.

use std::collections::{HashMap, VecDeque};
use std::task::Waker;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;

use super::counts::Counts;
use super::flow::{RecvWindow, SendWindow};
use super::head::ResponseHead;
use super::stream_state::{Illegal, StreamState};

/// Which slot a stream lives in. Handles keep it with the stream id, so a
/// slot reused by a later stream is never mistaken for theirs.
pub(crate) type Key = u32;

const NONE: u32 = u32::MAX;

/// Slots kept when the last stream closes; more are freed, so a connection
/// that once held a burst of long polls does not keep their memory.
const KEEP_SLOTS: usize = 64;

/// One stream's state.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(crate) id: u32,
    /// What courier may still send on it (may go negative when the server
    /// lowers SETTINGS_INITIAL_WINDOW_SIZE).
    pub(crate) send_window: SendWindow,
    /// What the server may still send on it, and what the request read of
    /// it that is not yet granted back.
    pub(crate) recv_window: RecvWindow,
    /// Open, half-closed or closed (and why), per RFC 9113 §5.1; changed
    /// only by [`Stream::transition`], which keeps the count of open streams.
    state: StreamState,
    /// Courier reset it while the server could still send: frames the server
    /// sent before it knew are ignored, not an error.
    pub(crate) rst_sent: bool,
    /// The request was HEAD: a Content-Length is not a body length.
    pub(crate) head_request: bool,
    /// Its response head waits in `Streams::heads`: without one, taking the
    /// head or removing the stream need not search that list.
    head_waiting: bool,
    /// Interim (1xx) heads received, to a bound.
    pub(crate) informational: u8,
    /// The request's deadline while it waits for its head
    /// ([`super::deadline`]: a mark, `NONE` or `PASSED`).
    pub(crate) deadline: u32,
    /// Body bytes still due per the response's Content-Length.
    pub(crate) content_length: Option<u64>,
    pub(crate) data: Chunks,
    pub(crate) trailers: Option<Box<HeaderMap>>,
    /// The request's task, waiting for its head or its body.
    pub(crate) waker: Option<Waker>,
    /// A body being sent that the windows have not taken yet (rare: most
    /// requests fit in the first HEADERS and DATA frames).
    pub(crate) upload: Option<Box<Upload>>,
}

/// DATA received and not yet read. Most responses have one DATA frame
/// unread at a time, held without an allocation.
///
/// Small frames are copied together: each frame held as it came would cost a
/// queue entry (32 B) and pin the read buffer it was cut from, so a server
/// sending its window in 1-byte frames would make the client hold some 40
/// times the window. Copied, they cost what they carry.
#[derive(Debug, Default)]
pub(crate) enum Chunks {
    #[default]
    Empty,
    One(Bytes),
    /// Boxed: the stream slot stays small for the common cases above.
    Many(Box<Queue>),
}

/// Several pieces unread: whole frames, then `tail`, small frames copied
/// together (the newest bytes).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    chunks: VecDeque<Bytes>,
    tail: BytesMut,
}

/// A frame this small is copied into the tail rather than queued: one
/// queued pins at most 16 times its size of read buffer.
const SMALL: usize = super::readbuf::CHUNK / 16;

/// The tail is queued once it holds this much.
const TAIL_MAX: usize = 16 * 1024;

impl Queue {
    fn push(&mut self, data: Bytes) {
        if data.len() < SMALL {
            self.tail.extend_from_slice(&data);
            if self.tail.len() >= TAIL_MAX {
                self.chunks.push_back(self.tail.split().freeze());
            }
            return;
        }
        if !self.tail.is_empty() {
            self.chunks.push_back(self.tail.split().freeze());
        }
        self.chunks.push_back(data);
    }

    fn pop(&mut self) -> Option<Bytes> {
        self.chunks
            .pop_front()
            .or_else(|| (!self.tail.is_empty()).then(|| self.tail.split().freeze()))
    }

    fn len(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum::<usize>() + self.tail.len()
    }
}

impl Chunks {
    pub(crate) fn push(&mut self, data: Bytes) {
        match self {
            Chunks::Empty => *self = Chunks::One(data),
            Chunks::One(_) => {
                let Chunks::One(first) = std::mem::take(self) else {
                    unreachable!("matched above")
                };
                let mut queue = Box::<Queue>::default();
                queue.chunks.push_back(first);
                queue.push(data);
                *self = Chunks::Many(queue);
            }
            Chunks::Many(queue) => queue.push(data),
        }
    }

    pub(crate) fn pop(&mut self) -> Option<Bytes> {
        match self {
            Chunks::Empty => None,
            Chunks::One(_) => match std::mem::take(self) {
                Chunks::One(data) => Some(data),
                _ => unreachable!("matched above"),
            },
            Chunks::Many(queue) => queue.pop(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Chunks::Empty => true,
            Chunks::One(_) => false,
            Chunks::Many(queue) => queue.chunks.is_empty() && queue.tail.is_empty(),
        }
    }

    /// Drops everything unread; returns how many bytes that was.
    pub(crate) fn discard(&mut self) -> usize {
        match std::mem::take(self) {
            Chunks::Empty => 0,
            Chunks::One(data) => data.len(),
            Chunks::Many(queue) => queue.len(),
        }
    }

    /// Pieces held (whole frames, and the copied tail as one).
    #[cfg(test)]
    fn pieces(&self) -> usize {
        match self {
            Chunks::Empty => 0,
            Chunks::One(_) => 1,
            Chunks::Many(queue) => queue.chunks.len() + usize::from(!queue.tail.is_empty()),
        }
    }
}

/// Request body bytes waiting for flow-control window.
#[derive(Debug, Default)]
pub(crate) struct Upload {
    pub(crate) queued: VecDeque<Bytes>,
    pub(crate) queued_len: usize,
    /// No more data will be queued: END_STREAM goes on the last frame.
    pub(crate) end: bool,
    pub(crate) trailers: Option<HeaderMap>,
    /// In the list of streams with data to send.
    pub(crate) ready: bool,
    /// The task feeding a streamed body, waiting for room.
    pub(crate) waker: Option<Waker>,
}

impl Stream {
    /// Stream `id`, opened (its HEADERS queued) with END_STREAM or not.
    pub(crate) fn new(id: u32, send_window: u32, recv_window: u32, end_stream: bool) -> Stream {
        Stream {
            id,
            send_window: SendWindow::new(send_window),
            recv_window: RecvWindow::new(recv_window),
            state: StreamState::opened(end_stream),
            rst_sent: false,
            head_request: false,
            head_waiting: false,
            informational: 0,
            deadline: super::deadline::NONE,
            content_length: None,
            data: Chunks::Empty,
            trailers: None,
            waker: None,
            upload: None,
        }
    }

    /// Closed in both directions, or failed.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    pub(crate) fn state(&self) -> &StreamState {
        &self.state
    }

    /// Changes the stream's state by `change`, and settles `counts`: a
    /// stream that closes stops counting against the server's limit. The
    /// one place a stream's state changes (h2's `Counts::transition`).
    pub(crate) fn transition<T>(
        &mut self,
        counts: &mut Counts,
        change: impl FnOnce(&mut StreamState) -> Result<T, Illegal>,
    ) -> Result<T, Illegal> {
        let was_closed = self.state.is_closed();
        let result = change(&mut self.state);
        if !was_closed && self.state.is_closed() {
            counts.closed();
        }
        result
    }

    pub(crate) fn wake(&mut self, wakers: &mut Vec<Waker>) {
        if let Some(w) = self.waker.take() {
            wakers.push(w);
        }
        if let Some(w) = self.upload.as_mut().and_then(|u| u.waker.take()) {
            wakers.push(w);
        }
    }
}

// A slab's slots are all one size whatever their variant; boxing the stream
// would add an allocation per request.
#[allow(clippy::large_enum_variant)]
enum Slot {
    Free { next: u32 },
    Used(Stream),
}

/// The slab and the id map.
#[derive(Default)]
pub(crate) struct Streams {
    slots: Vec<Slot>,
    free: Option<u32>,
    /// Stream id → slot. Ids are courier's own (odd, increasing), so a fixed
    /// hash is enough: the server chooses none of the keys.
    ids: HashMap<u32, Key, foldhash::fast::FixedState>,
    /// Response heads received and not yet taken by their requests, by slot.
    /// Beside the slots, not in them: a head waits there only from its
    /// HEADERS frame until its request's task runs, while a slot lasts the
    /// whole stream, and a long poll's slot would carry an empty head's
    /// 112 B for as long as it waits (a third of the slot). With the
    /// head's Content-Length, read while it was decoded.
    heads: Vec<(Key, ResponseHead, Option<u64>)>,
}

/// Heads waiting to be taken, kept room for once no stream is open: more is
/// freed, so a burst of responses does not leave its room behind.
const KEEP_HEADS: usize = 8;

impl Streams {
    /// Adds `stream`; `limit` is how many the server lets courier open at
    /// once, so a slab growing towards it grows to it, not to the next
    /// power of two (128 slots for 100 long polls: 28 slots unused).
    pub(crate) fn insert(&mut self, stream: Stream, limit: usize) -> Key {
        let id = stream.id;
        let key = match self.free {
            Some(key) => {
                let slot = &mut self.slots[key as usize];
                let Slot::Free { next } = *slot else {
                    unreachable!("the free list holds free slots only")
                };
                self.free = (next != NONE).then_some(next);
                *slot = Slot::Used(stream);
                key
            }
            None => {
                let len = self.slots.len();
                if len == self.slots.capacity() {
                    let doubled = (len * 2).max(4);
                    let want = if len < limit {
                        doubled.min(limit)
                    } else {
                        doubled
                    };
                    self.slots.reserve_exact(want - len);
                }
                self.slots.push(Slot::Used(stream));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 streams")
            }
        };
        self.ids.insert(id, key);
        key
    }

    /// The stream in `key`, if it is still stream `id`.
    pub(crate) fn get(&mut self, key: Key, id: u32) -> Option<&mut Stream> {
        match self.slots.get_mut(key as usize) {
            Some(Slot::Used(s)) if s.id == id => Some(s),
            _ => None,
        }
    }

    /// Keeps the response head of the stream in `key`, and the
    /// Content-Length it declares, until its request takes them.
    pub(crate) fn set_head(&mut self, key: Key, head: ResponseHead, length: Option<u64>) {
        if let Some(Slot::Used(stream)) = self.slots.get_mut(key as usize) {
            stream.head_waiting = true;
            self.heads.push((key, head, length));
        }
    }

    /// The response head of stream `id` in `key` and its Content-Length,
    /// if it came and was not taken yet.
    pub(crate) fn take_head(&mut self, key: Key, id: u32) -> Option<(ResponseHead, Option<u64>)> {
        let stream = self.get(key, id)?;
        if !std::mem::take(&mut stream.head_waiting) {
            return None;
        }
        let at = self.heads.iter().position(|(k, ..)| *k == key)?;
        let (_, head, length) = self.heads.swap_remove(at);
        Some((head, length))
    }

    pub(crate) fn key_of(&self, id: u32) -> Option<Key> {
        self.ids.get(&id).copied()
    }

    /// The stream with id `id`, and its key.
    pub(crate) fn by_id(&mut self, id: u32) -> Option<(Key, &mut Stream)> {
        let key = self.key_of(id)?;
        self.get(key, id).map(|s| (key, s))
    }

    pub(crate) fn remove(&mut self, key: Key) -> Option<Stream> {
        let slot = self.slots.get_mut(key as usize)?;
        if matches!(slot, Slot::Free { .. }) {
            return None;
        }
        let next = self.free.unwrap_or(NONE);
        let Slot::Used(stream) = std::mem::replace(slot, Slot::Free { next }) else {
            unreachable!("checked above")
        };
        self.free = Some(key);
        self.ids.remove(&stream.id);
        if stream.head_waiting {
            // Its request went away without taking it.
            if let Some(at) = self.heads.iter().position(|(k, ..)| *k == key) {
                self.heads.swap_remove(at);
            }
        }
        if self.ids.is_empty() {
            self.free = None;
            if self.heads.capacity() > KEEP_HEADS {
                // Nothing open: give back what a burst of heads grew (kept
                // while streams are open, or a busy connection would grow
                // it again for every burst).
                self.heads = Vec::new();
            }
            if self.slots.capacity() > KEEP_SLOTS {
                // Nothing open: give back what a burst grew.
                self.slots = Vec::new();
                self.ids = HashMap::default();
            } else {
                self.slots.clear();
            }
        }
        Some(stream)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    #[cfg(debug_assertions)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Streams not closed, walking them all: what the count of open streams
    /// must say ([`Counts`]).
    #[cfg(debug_assertions)]
    pub(crate) fn open_count(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| matches!(slot, Slot::Used(s) if !s.is_closed()))
            .count()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (Key, &mut Stream)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, slot)| match slot {
                Slot::Used(s) => Some((i as Key, s)),
                Slot::Free { .. } => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_slot_stays_small() {
        // Every stream in flight costs one; a million long polls, a million.
        // 256 B with raw i64 windows and flags; 248 B since the windows are
        // 4-byte types and the state's cause sits in its error's niche; 136 B
        // since the response head waits beside the slots.
        let size = std::mem::size_of::<Slot>();
        assert!(size <= 136, "a stream slot is {size} B");
    }

    #[test]
    fn the_slab_grows_to_the_stream_limit_not_past_it() {
        let mut streams = Streams::default();
        for i in 0..100 {
            streams.insert(Stream::new(2 * i + 1, 0, 0, true), 100);
        }
        assert_eq!(streams.slots.capacity(), 100);
        // Past the limit (streams reset, their handles not yet dropped), it doubles.
        streams.insert(Stream::new(201, 0, 0, true), 100);
        assert!(streams.slots.capacity() >= 101);
    }

    #[test]
    fn a_head_waits_beside_its_slot_until_taken_or_the_stream_goes() {
        let head = || ResponseHead {
            parts: http::Response::new(()).into_parts().0,
            shared: None,
        };
        let mut streams = Streams::default();
        let a = streams.insert(Stream::new(1, 0, 0, true), 100);
        let b = streams.insert(Stream::new(3, 0, 0, true), 100);
        streams.set_head(a, head(), None);
        streams.set_head(b, head(), None);
        assert!(streams.take_head(a, 3).is_none(), "another stream's key");
        assert!(streams.take_head(a, 1).is_some());
        assert!(streams.take_head(a, 1).is_none(), "taken once");
        // A stream removed with its head untaken takes the head with it: the
        // slot's next stream does not find it.
        streams.remove(b);
        let c = streams.insert(Stream::new(5, 0, 0, true), 100);
        assert_eq!(c, b);
        assert!(streams.take_head(c, 5).is_none());
        assert!(streams.heads.is_empty());
        // A burst of heads.
        let keys: Vec<Key> = (0..50)
            .map(|i| streams.insert(Stream::new(7 + 2 * i, 0, 0, true), 100))
            .collect();
        for key in &keys {
            streams.set_head(*key, head(), None);
        }
        for (i, key) in keys.iter().enumerate() {
            assert!(streams.take_head(*key, 7 + 2 * i as u32).is_some());
        }
        assert!(streams.heads.is_empty());
        // Once no stream is open, the room is given back.
        for key in keys.into_iter().chain([a, c]) {
            streams.remove(key);
        }
        assert_eq!(streams.heads.capacity(), 0);
    }

    #[test]
    fn chunks_come_out_in_order() {
        let mut chunks = Chunks::default();
        assert!(chunks.is_empty());
        chunks.push(Bytes::from_static(b"a"));
        assert!(!chunks.is_empty());
        chunks.push(Bytes::from_static(b"bc"));
        chunks.push(Bytes::from_static(b"def"));
        assert_eq!(chunks.pop().as_deref(), Some(&b"a"[..]));
        assert_eq!(chunks.discard(), 5);
        assert!(chunks.is_empty());
        assert_eq!(chunks.pop(), None);
        chunks.push(Bytes::from_static(b"g"));
        assert_eq!(chunks.pop().as_deref(), Some(&b"g"[..]));
        assert!(chunks.is_empty());
    }

    #[test]
    fn small_frames_are_copied_together_in_order() {
        // A window's worth of 1-byte frames cut from one read buffer, as
        // the driver cuts them: held as they came, each would be a queue
        // entry pinning the buffer.
        let wire = Bytes::from((0..100_000u32).map(|i| i as u8).collect::<Vec<u8>>());
        let mut chunks = Chunks::default();
        for i in 0..wire.len() {
            chunks.push(wire.slice(i..i + 1));
        }
        chunks.push(wire.slice(..SMALL)); // a large one between small ones
        chunks.push(wire.slice(..1));
        let pieces = chunks.pieces();
        assert!(pieces <= 100_000 / TAIL_MAX + 4, "{pieces} pieces held");
        let mut out = Vec::new();
        while let Some(piece) = chunks.pop() {
            out.extend_from_slice(&piece);
        }
        assert_eq!(&out[..wire.len()], &wire[..]);
        assert_eq!(&out[wire.len()..wire.len() + SMALL], &wire[..SMALL]);
        assert_eq!(&out[wire.len() + SMALL..], &wire[..1]);
        assert!(chunks.is_empty());
    }

    #[test]
    fn slots_are_reused_and_stale_keys_miss() {
        let mut streams = Streams::default();
        let a = streams.insert(Stream::new(1, 0, 0, true), 100);
        let b = streams.insert(Stream::new(3, 0, 0, true), 100);
        assert_eq!(streams.by_id(3).map(|(k, _)| k), Some(b));
        assert!(streams.remove(a).is_some());
        let c = streams.insert(Stream::new(5, 0, 0, true), 100);
        assert_eq!(c, a, "the freed slot is reused");
        assert!(streams.get(a, 1).is_none(), "a stale handle finds nothing");
        assert!(streams.get(c, 5).is_some());
        assert_eq!(streams.iter_mut().count(), 2);
        streams.remove(b);
        streams.remove(c);
        assert!(streams.is_empty());
        assert!(streams.remove(c).is_none());
        let d = streams.insert(Stream::new(7, 0, 0, true), 100);
        assert_eq!(streams.by_id(7).map(|(k, _)| k), Some(d));
    }
}
