//! Small copies out of the read buffer, without an allocation each.
//!
//! A response head and a small body are copied out of the connection's read
//! buffer, so the read buffer is never shared and is reused as is. The copies
//! go into an arena: one buffer per connection that each copy is split off
//! (a reference count, not an allocation). Once the caller has dropped the
//! previous response's headers and body, the arena is unique again and the
//! next copies reuse its memory; if they are still held, it starts a new one.
//! A header value kept for long pins at most one arena, not a read buffer.

use bytes::{Bytes, BytesMut};

/// Arena size: a typical head plus a small body, several times over.
const ARENA: usize = 2 * 1024;

/// Copies `data` into `arena` and splits the copy off.
pub(crate) fn copy_out(arena: &mut BytesMut, data: &[u8]) -> Bytes {
    if arena.capacity() < data.len() {
        // Reclaims the arena's memory when no copy is alive any more.
        arena.reserve(data.len().max(ARENA));
    }
    arena.extend_from_slice(data);
    arena.split().freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_share_one_buffer_that_is_reused_once_they_are_dropped() {
        let mut arena = BytesMut::new();
        let a = copy_out(&mut arena, b"hello");
        let b = copy_out(&mut arena, b"world");
        assert_eq!((&a[..], &b[..]), (&b"hello"[..], &b"world"[..]));
        assert_eq!(a.as_ptr().wrapping_add(5), b.as_ptr(), "one buffer");
        let first = a.as_ptr();
        drop((a, b));
        let big = copy_out(&mut arena, &[1; ARENA]);
        assert_eq!(big.as_ptr(), first, "memory reclaimed, not reallocated");
        let held = copy_out(&mut arena, &[2; ARENA]);
        assert_ne!(held.as_ptr(), first, "a live copy is never overwritten");
        assert_eq!(&big[..], &[1; ARENA][..]);
    }
}
