//! The driver's read buffer, and the few it takes turns with while a
//! connection receives.
//!
//! Why: DATA payloads are handed to their streams as slices of the buffer
//! they were read into (no copy), so a buffer cannot be written again until
//! the application has read every frame cut from it. Allocating a fresh one
//! whenever that is not yet so (as `BytesMut::reserve` does) made a large
//! download cost page faults by the thousand: the allocator returned the
//! freed buffers to the kernel and faulted new ones in (HTTP/1.1's one
//! buffer is reclaimed, since its reader drops each chunk before the next
//! read). Here a buffer whose frames were all read is reclaimed in place,
//! or one of a few kept aside is, and only when all of them still hold
//! unread frames is one allocated. An idle connection keeps none, and
//! neither does a quiet one: a read with no buffer goes to the stack first
//! (see [`ReadBuf::poll_read`]), so a connection of long polls, whose
//! driver runs to write their HEADERS and finds nothing to read, allocates
//! nothing until an answer comes.

use std::collections::VecDeque;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::AsyncRead;

/// The size of a read buffer while a read fills what it is given (a
/// download): four frames of the default maximum size, so one read takes
/// up to 64 KiB (a quarter of the system calls 16 KiB took).
pub(crate) const CHUNK: usize = 64 * 1024;
/// Its size otherwise: a connection of long polls keeps one this large.
const FIRST: usize = 16 * 1024;
/// Buffers kept aside, waiting for their frames to be read.
const SPARES: usize = 3;

/// The buffer frames are read into, and its spares.
#[derive(Debug)]
pub(crate) struct ReadBuf {
    buf: BytesMut,
    spares: VecDeque<BytesMut>,
    /// [`FIRST`], or [`CHUNK`] once a read filled the room it had.
    size: usize,
    /// `buf` has an allocation (or is a slice of one).
    allocated: bool,
}

impl Default for ReadBuf {
    fn default() -> ReadBuf {
        ReadBuf {
            buf: BytesMut::new(),
            spares: VecDeque::new(),
            size: FIRST,
            allocated: false,
        }
    }
}

impl ReadBuf {
    /// The bytes read and not yet taken.
    pub(crate) fn bytes(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Reads once from `io` into the buffer (with room for `rest` more
    /// bytes at least: what a frame cut by the last read still needs);
    /// the bytes read, 0 at the end of the stream.
    ///
    /// With no buffer allocated, the read goes to the stack, and a buffer
    /// is allocated only for what it brought: a read that finds nothing
    /// allocates nothing. Allocating first, a connection of long polls
    /// took a 16 KiB buffer at the driver's first run after their HEADERS
    /// (164 B per long poll at 100 streams), and kept it while they waited,
    /// since responses were due. Only that first read is copied.
    pub(crate) fn poll_read<S: AsyncRead>(
        &mut self,
        io: Pin<&mut S>,
        cx: &mut Context<'_>,
        rest: usize,
    ) -> Poll<io::Result<usize>> {
        if self.allocated || rest > 0 {
            let buf = self.for_reading(rest);
            let room = buf.capacity() - buf.len();
            let n = std::task::ready!(tokio_util::io::poll_read_buf(io, cx, buf))?;
            self.read(n, room);
            return Poll::Ready(Ok(n));
        }
        let mut stack = [MaybeUninit::<u8>::uninit(); FIRST];
        let mut read = tokio::io::ReadBuf::uninit(&mut stack);
        std::task::ready!(io.poll_read(cx, &mut read))?;
        let n = read.filled().len();
        if n > 0 {
            self.for_reading(0).extend_from_slice(read.filled());
            self.read(n, FIRST);
        }
        Poll::Ready(Ok(n))
    }

    /// The buffer to read into, with room for `rest` more bytes at least
    /// (what a frame cut by the last read still needs) and a large read.
    fn for_reading(&mut self, rest: usize) -> &mut BytesMut {
        // Less room than this, and the buffer is swapped for one with more:
        // reads stay large.
        let need = rest.max(self.size / 4);
        if self.buf.capacity() - self.buf.len() >= need {
            return &mut self.buf;
        }
        let want = self.size.max(self.buf.len() + rest);
        if !self.allocated {
            // The first read since the connection was idle.
            self.allocated = true;
            self.buf = BytesMut::with_capacity(want);
            return &mut self.buf;
        }
        // Every frame cut from it was read: the whole allocation is free
        // again (the start of a cut frame moves to its front).
        if self.buf.try_reclaim(want - self.buf.len()) {
            return &mut self.buf;
        }
        let spare = self.spares.iter_mut().position(|s| s.try_reclaim(want));
        let mut next = match spare.and_then(|i| self.spares.remove(i)) {
            Some(s) => s,
            None => BytesMut::with_capacity(want),
        };
        next.extend_from_slice(&self.buf);
        let mut old = std::mem::replace(&mut self.buf, next);
        old.clear();
        if self.spares.len() == SPARES {
            // Its frames are still unread: they keep it alive, not us.
            self.spares.pop_front();
        }
        self.spares.push_back(old);
        &mut self.buf
    }

    /// A read took `n` bytes into `room`: one that filled it asks for
    /// larger buffers.
    fn read(&mut self, n: usize, room: usize) {
        if n == room {
            self.size = CHUNK;
        }
    }

    /// Nothing is due: hold no memory (unless a frame's start waits).
    pub(crate) fn release(&mut self) {
        self.size = FIRST;
        self.spares = VecDeque::new();
        if self.buf.is_empty() {
            // Even with no room left, it holds its allocation alive.
            self.buf = BytesMut::new();
            self.allocated = false;
        }
    }
}

#[cfg(test)]
impl ReadBuf {
    /// The bytes of buffer held (the current one's capacity; spares aside).
    pub(crate) fn held(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_whose_frames_were_read_is_used_again() {
        let mut r = ReadBuf::default();
        r.read(1, 1);
        r.for_reading(0).extend_from_slice(&[1; CHUNK - 100]);
        let first = r.bytes().as_ptr();
        let frame = r.bytes().split_to(CHUNK - 200).freeze();
        // 100 bytes of a cut frame left, little room: while the frame is
        // unread, another buffer takes over, and the cut frame moves there.
        let buf = r.for_reading(1000);
        assert_ne!(buf.as_ptr(), first);
        assert_eq!(&buf[..], &[1; 100]);
        assert!(buf.capacity() >= CHUNK);
        let second = buf.as_ptr();
        let frame2 = buf.split_to(100).freeze();
        buf.extend_from_slice(&[2; CHUNK - CHUNK / 4]);
        let frame3 = buf.split().freeze();
        // Both buffers' frames read: the current one is reclaimed in place.
        drop((frame, frame2, frame3));
        assert_eq!(r.for_reading(0).as_ptr(), second);
        assert_eq!(r.bytes().capacity(), CHUNK);
    }

    #[test]
    fn a_spare_whose_frames_were_read_takes_over() {
        let mut r = ReadBuf::default();
        r.read(1, 1);
        r.for_reading(0).extend_from_slice(&[1; CHUNK]);
        let first = r.bytes().as_ptr();
        let frame = r.bytes().split().freeze();
        r.for_reading(0).extend_from_slice(&[2; CHUNK]);
        let held = r.bytes().split().freeze();
        drop(frame);
        // The current buffer's frame is unread; the first one's was read.
        assert_eq!(r.for_reading(0).as_ptr(), first);
        drop(held);
    }

    #[test]
    fn buffers_still_held_are_let_go_past_a_few() {
        let mut r = ReadBuf::default();
        r.read(1, 1);
        let mut held = Vec::new();
        for _ in 0..10 {
            r.for_reading(0).extend_from_slice(&[0; CHUNK]);
            held.push(r.bytes().split().freeze());
        }
        assert_eq!(r.spares.len(), SPARES);
        r.release();
        assert_eq!(r.bytes().capacity(), 0);
        assert!(r.spares.is_empty());
    }

    #[test]
    fn buffers_grow_only_once_a_read_fills_one() {
        let mut r = ReadBuf::default();
        assert_eq!(r.for_reading(0).capacity(), FIRST);
        r.read(100, FIRST);
        r.bytes().clear();
        assert_eq!(r.for_reading(0).capacity(), FIRST);
        r.read(FIRST, FIRST);
        r.bytes().extend_from_slice(&[0; FIRST]);
        let frame = r.bytes().split().freeze();
        assert_eq!(r.for_reading(0).capacity(), CHUNK);
        drop(frame);
        // Idle again: back to the small size.
        r.bytes().clear();
        r.release();
        assert_eq!(r.for_reading(0).capacity(), FIRST);
    }
}
