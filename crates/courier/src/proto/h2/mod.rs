//! courier's own HTTP/2 client connection (RFC 9113, with HPACK per RFC 7541).
//!
//! Why not the `h2` crate: measured under callgrind, most of an h2c request's
//! instructions were h2's, and most of a long poll's memory was its tables.
//! h2 keeps a 300-byte slab entry per stream plus one per frame queued in
//! either direction (which grow to the largest burst and never shrink),
//! HPACK-decodes every response value into an allocation of its own, takes
//! the connection's lock once per handle per operation, and SipHashes stream
//! ids. Here:
//!
//! - a stream is one compact slot ([`streams`]); HEADERS are encoded straight
//!   into the connection's write buffer by the request's task ([`conn`]), so
//!   nothing is queued per frame;
//! - response header values share one arena allocation per block ([`head`]);
//! - a request takes the connection's lock about four times in its life;
//! - buffers an idle connection does not need are freed ([`driver`]).
//!
//! Layout: [`frame`] and [`hpack`] are the wire formats, [`encode`] and
//! [`head`] the request and response heads in them ([`template`] the last
//! request head's bytes, kept to copy; [`header_list`] its size as the
//! server's SETTINGS_MAX_HEADER_LIST_SIZE counts it). The connection's state
//! ([`conn`]: what streams and driver share, behind one lock) is made of
//! parts, each a type in a leaf file with fields of its own, after h2's
//! `Recv`/`Send`/`Counts`: [`streams`] the slab of stream slots, each with
//! its RFC 9113 state ([`stream_state`], changed only through
//! `Stream::transition`); [`counts`] the streams the server counts, settled
//! by that one transition; [`sender`] what courier sends (the HPACK encoder,
//! the queued frames, the ids, the send window, the server's [`settings`],
//! the bodies waiting for window); [`recv_flow`] courier's settings and
//! receive window, and [`grow`] how the windows grow ([`tune`] when);
//! [`going_away`] the server's GOAWAY; [`flood`] how many frames that do
//! nothing the connection puts up with; [`resets`] the streams courier reset
//! once their slots are gone ([`flow`] is the windows' arithmetic). Which
//! part talks to which is decided above them, in [`conn`] and the files that
//! add to its `State`: [`release`] (read bytes go back), [`control`],
//! [`closed`], [`goaway`]. [`driver`] is the task that runs the I/O
//! ([`readbuf`] the buffers it reads into); [`recv`] what it does with each
//! frame, [`control`] with SETTINGS and WINDOW_UPDATE, [`closed`] with
//! frames on closed streams, [`goaway`] with a GOAWAY; [`keepalive`] the
//! PINGs that watch the peer. [`stream`] is a request's handles (head, then
//! body), [`send`] request bodies that wait for window; [`request`] a
//! request from its head to the response head, and the handshake;
//! [`signals`] what a connection tells whoever keeps it (the pool), through
//! a listener of its own. No file imports one that imports it back.

pub(crate) mod closed;
pub(crate) mod conn;
pub(crate) mod control;
pub(crate) mod counts;
pub(crate) mod deadline;
pub(crate) mod driver;
pub(crate) mod encode;
pub(crate) mod error;
pub(crate) mod flood;
pub(crate) mod flow;
pub(crate) mod frame;
pub(crate) mod goaway;
pub(crate) mod going_away;
pub(crate) mod grow;
#[cfg(test)]
mod grow_tests;
pub(crate) mod head;
pub(crate) mod header_list;
pub(crate) mod hpack;
pub(crate) mod keepalive;
mod linger;
pub(crate) mod readbuf;
pub(crate) mod recv;
pub(crate) mod recv_flow;
pub(crate) mod release;
pub(crate) mod request;
pub(crate) mod resets;
pub(crate) mod send;
pub(crate) mod sender;
pub(crate) mod settings;
pub(crate) mod signals;
pub(crate) mod stream;
pub(crate) mod stream_state;
pub(crate) mod streams;
pub(crate) mod template;
pub(crate) mod tune;
pub(crate) mod tunnel;
