//! QUIC keep-alive fitted to the connection's effective idle timeout, and
//! only while requests wait.
//!
//! QUIC closes a connection after the *lower* of both sides' announced
//! `max_idle_timeout` without a packet (RFC 9000 §10.1). quinn's own
//! keep-alive is one static interval for every connection, chosen before
//! the server has said anything: a server announcing 5 s killed a quiet
//! 12 s long poll under the 10 s interval we had, and the same interval
//! kept idle pooled connections alive with PINGs forever. quinn exposes
//! neither the peer's transport parameters nor an on-demand PING, so:
//! - the peer's `max_idle_timeout` is read where quinn hands it over, in a
//!   thin wrapper of the TLS session ([`Learning`]);
//! - a connection's driver is wrapped ([`KeepAlive::around`]) with a timer
//!   that, at a third of the effective timeout and only while the caller
//!   says requests are in flight (an idle connection has no timer at all:
//!   it sleeps until its first request), makes quinn send an ack-eliciting frame:
//!   the connection's receive window is raised by one byte and set back at
//!   once, which queues a MAX_DATA frame and leaves the window as it was
//!   (quinn takes the byte back from the next read). An idle connection is
//!   left to QUIC's idle timeout (and the pool's own idle timer).
//!
//! The same wrapper reads the peer's `initial_max_streams_bidi` too
//! ([`PeerStreams`]): the HTTP/3 pool plans a connection by it.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::{self, ExportKeyingMaterialError, KeyPair, Keys, PacketKey};
use quinn::{ConnectError, ConnectionId, Side, VarInt};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::TransportError;

use crate::connect::quic_resumed::{HandshakeWatch, HelloReader};

/// The shortest keep-alive interval, whatever the server announces: a
/// peer saying "1 ms" must not make us send a packet a millisecond.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Transport parameter id of `max_idle_timeout` (RFC 9000 §18.2).
const MAX_IDLE_TIMEOUT: u64 = 0x01;

/// Transport parameter id of `initial_max_streams_bidi` (RFC 9000 §18.2).
const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;

/// Not learnt yet (or the handshake never got so far).
const UNKNOWN: u64 = u64::MAX;

/// The peer's announced `max_idle_timeout` in milliseconds (0: none), as
/// one connection's handshake learns it.
#[derive(Debug, Clone)]
pub(crate) struct PeerIdle(Arc<AtomicU64>);

impl PeerIdle {
    pub(crate) fn new() -> PeerIdle {
        PeerIdle(Arc::new(AtomicU64::new(UNKNOWN)))
    }

    /// `Some(None)`: the peer announced no timeout; `None`: not learnt.
    fn get(&self) -> Option<Option<Duration>> {
        match self.0.load(Ordering::Acquire) {
            UNKNOWN => None,
            0 => Some(None),
            ms => Some(Some(Duration::from_millis(ms))),
        }
    }
}

/// The request streams the peer lets us open at first (its
/// `initial_max_streams_bidi`), as one connection's handshake learns it.
///
/// The HTTP/3 pool plans a connection by it, as HTTP/2's by the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS: without it a connection was assumed to
/// take 100, and 256 requests in flight to a server granting 512 were
/// spread over three connections, each carrying fewer requests per packet
/// and per wake of its driver.
#[derive(Debug, Clone)]
pub(crate) struct PeerStreams(Arc<AtomicU64>);

impl PeerStreams {
    pub(crate) fn new() -> PeerStreams {
        PeerStreams(Arc::new(AtomicU64::new(UNKNOWN)))
    }

    /// The peer's initial limit, when learnt and not 0 (a server granting
    /// none at first may grant some later: that is learnt as before, from
    /// an open that waits).
    pub(crate) fn get(&self) -> Option<u64> {
        match self.0.load(Ordering::Acquire) {
            UNKNOWN | 0 => None,
            n => Some(n),
        }
    }
}

/// A client's TLS for QUIC, for one connection: as `inner`, and noting the
/// peer's idle timeout in `peer`, its initial stream limit in `streams`,
/// and whether the handshake resumed and completed in `handshake`
/// (`quic_resumed.rs`).
pub(crate) struct Learning {
    pub(crate) inner: Arc<dyn crypto::ClientConfig>,
    pub(crate) peer: PeerIdle,
    pub(crate) streams: PeerStreams,
    pub(crate) handshake: HandshakeWatch,
}

impl crypto::ClientConfig for Learning {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let inner = Arc::clone(&self.inner).start_session(version, server_name, params)?;
        Ok(Box::new(Session {
            inner,
            peer: self.peer.clone(),
            streams: self.streams.clone(),
            hello: HelloReader::default(),
            handshake: self.handshake.clone(),
        }))
    }
}

struct Session {
    inner: Box<dyn crypto::Session>,
    peer: PeerIdle,
    streams: PeerStreams,
    hello: HelloReader,
    handshake: HandshakeWatch,
}

impl crypto::Session for Session {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }
    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.inner.handshake_data()
    }
    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }
    fn early_crypto(&self) -> Option<(Box<dyn crypto::HeaderKey>, Box<dyn PacketKey>)> {
        self.inner.early_crypto()
    }
    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }
    fn is_handshaking(&self) -> bool {
        let handshaking = self.inner.is_handshaking();
        if !handshaking {
            self.handshake.set_complete();
        }
        handshaking
    }
    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        let read = self.inner.read_handshake(buf)?;
        self.hello.read(buf, &self.handshake);
        Ok(read)
    }
    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        let params = self.inner.transport_parameters()?;
        if let Some(params) = &params {
            // quinn keeps the fields to itself but encodes them.
            let mut wire = Vec::with_capacity(128);
            params.write(&mut wire);
            let ms = param_of(&wire, MAX_IDLE_TIMEOUT).unwrap_or(0);
            self.peer.0.store(ms.min(UNKNOWN - 1), Ordering::Release);
            // Absent: 0 (RFC 9000 §18.2).
            let streams = param_of(&wire, INITIAL_MAX_STREAMS_BIDI).unwrap_or(0);
            self.streams
                .0
                .store(streams.min(UNKNOWN - 1), Ordering::Release);
        }
        Ok(params)
    }
    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        self.inner.write_handshake(buf)
    }
    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.inner.next_1rtt_keys()
    }
    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }
    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

/// Parameter `wanted` in encoded transport parameters (id, length, value,
/// each a varint); `None` when absent or the encoding is cut.
fn param_of(mut wire: &[u8], wanted: u64) -> Option<u64> {
    while !wire.is_empty() {
        let id = varint(&mut wire)?;
        let len = usize::try_from(varint(&mut wire)?).ok()?;
        let value = wire.get(..len)?;
        wire = &wire[len..];
        if id == wanted {
            let mut value = value;
            return varint(&mut value);
        }
    }
    None
}

/// One QUIC varint (RFC 9000 §16) off the front of `buf`.
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        value = (value << 8) | u64::from(*b);
    }
    *buf = &buf[len..];
    Some(value)
}

/// What one connection needs for its keep-alive: our own idle timeout, the
/// peer's as learnt, and the receive window to nudge.
#[derive(Debug, Clone)]
pub(crate) struct KeepAlive {
    pub(crate) conn: quinn::Connection,
    pub(crate) ours: Duration,
    pub(crate) peer: PeerIdle,
    pub(crate) window: u32,
}

/// A connection's driver.
type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

impl KeepAlive {
    /// The effective idle timeout (RFC 9000 §10.1: the lower of the
    /// announced ones; 0 or absent is none).
    pub(crate) fn effective(&self) -> Option<Duration> {
        let ours = Some(self.ours).filter(|d| !d.is_zero());
        // Unknown cannot happen after the handshake; ours alone then.
        let peer = self.peer.get().flatten();
        match (ours, peer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The interval between PINGs while requests wait: a third of the
    /// effective idle timeout (a PING lost, and one more, still leave time),
    /// at least [`MIN_INTERVAL`]; `None` without a timeout.
    pub(crate) fn interval(&self) -> Option<Duration> {
        self.effective().map(|t| (t / 3).max(MIN_INTERVAL))
    }

    /// `driver`, ending when it ends, with PINGs while `waiting` says a
    /// request is in flight.
    pub(crate) fn around<D>(self, driver: D, waiting: Arc<dyn Waiting>) -> Driver
    where
        D: Future<Output = ()> + Send + 'static,
    {
        let Some(interval) = self.interval() else {
            return Box::pin(driver);
        };
        Box::pin(async move {
            tokio::select! {
                () = driver => {}
                () = pings(interval, &*waiting, || self.ping()) => {}
            }
        })
    }

    /// An ack-eliciting packet now: MAX_DATA one byte higher, the window
    /// then set back (quinn keeps the byte as a debt against later reads).
    fn ping(&self) {
        self.conn
            .set_receive_window(VarInt::from_u32(self.window.saturating_add(1)));
        self.conn.set_receive_window(VarInt::from_u32(self.window));
    }
}

/// Whether a connection has a request waiting, and a wake-up when it gets
/// one after none.
pub(crate) trait Waiting: Send + Sync + 'static {
    /// A request is in flight.
    fn busy(&self) -> bool;
    /// Notified (`notify_one`: the permit is kept) when the first request
    /// after none starts.
    fn woken(&self) -> &tokio::sync::Notify;
}

/// `ping()` every `interval` while a request waits (never returns). An idle
/// connection sleeps on `woken` with no timer: a timer that woke to find
/// nothing waiting cost ~100 wake-ups a second at 1,000 idle connections.
async fn pings(interval: Duration, waiting: &dyn Waiting, ping: impl Fn()) {
    loop {
        // A stale permit (the connection went busy and idle again while we
        // slept) costs one more look, no timer.
        while !waiting.busy() {
            waiting.woken().notified().await;
        }
        // The request's own packets restarted QUIC's idle timer; the first
        // PING is due an interval later.
        tokio::time::sleep(interval).await;
        if waiting.busy() {
            ping();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_timeout_is_found_among_other_parameters() {
        // initial_max_data (0x04) = 1,048,576 (4-byte varint), then
        // max_idle_timeout (0x01) = 5,000 (2-byte varint).
        let wire = [0x04, 0x04, 0x80, 0x10, 0x00, 0x00, 0x01, 0x02, 0x53, 0x88];
        assert_eq!(param_of(&wire, MAX_IDLE_TIMEOUT), Some(5_000));
        assert_eq!(param_of(&wire[..6], MAX_IDLE_TIMEOUT), None, "absent");
        assert_eq!(param_of(&wire[..9], MAX_IDLE_TIMEOUT), None, "cut");
    }

    #[test]
    fn the_initial_stream_limit_is_found_and_zero_counts_as_unknown() {
        // max_idle_timeout (0x01) = 5,000, then initial_max_streams_bidi
        // (0x08) = 512 (2-byte varint).
        let wire = [0x01, 0x02, 0x53, 0x88, 0x08, 0x02, 0x42, 0x00];
        assert_eq!(param_of(&wire, INITIAL_MAX_STREAMS_BIDI), Some(512));
        assert_eq!(param_of(&wire[..4], INITIAL_MAX_STREAMS_BIDI), None);
        let streams = PeerStreams::new();
        assert_eq!(streams.get(), None, "not learnt");
        streams.0.store(0, Ordering::Release);
        assert_eq!(streams.get(), None, "none granted at first");
        streams.0.store(512, Ordering::Release);
        assert_eq!(streams.get(), Some(512));
    }

    /// A connection as `pings` sees it, counting how often it is asked.
    #[derive(Default)]
    struct Fake {
        busy: std::sync::atomic::AtomicBool,
        asked: AtomicU64,
        woken: tokio::sync::Notify,
    }

    impl Waiting for Fake {
        fn busy(&self) -> bool {
            self.asked.fetch_add(1, Ordering::Relaxed);
            self.busy.load(Ordering::Relaxed)
        }
        fn woken(&self) -> &tokio::sync::Notify {
            &self.woken
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_sets_no_timer_and_a_busy_one_pings_each_interval() {
        let interval = Duration::from_secs(10);
        let fake = Arc::new(Fake::default());
        let pinged = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (fake, pinged) = (Arc::clone(&fake), Arc::clone(&pinged));
            async move {
                pings(interval, &*fake, || {
                    pinged.fetch_add(1, Ordering::Relaxed);
                })
                .await;
            }
        });
        // Idle for 100 intervals: asked once, then asleep with no timer.
        tokio::time::sleep(interval * 100).await;
        assert_eq!(fake.asked.load(Ordering::Relaxed), 1, "woke while idle");
        assert_eq!(pinged.load(Ordering::Relaxed), 0);
        // A request starts: a PING each interval from then on.
        fake.busy.store(true, Ordering::Relaxed);
        fake.woken.notify_one();
        tokio::time::sleep(interval * 3 + interval / 2).await;
        assert_eq!(pinged.load(Ordering::Relaxed), 3);
        // Idle again: the next tick finds it so, and nothing after.
        fake.busy.store(false, Ordering::Relaxed);
        tokio::time::sleep(interval).await;
        let asked = fake.asked.load(Ordering::Relaxed);
        tokio::time::sleep(interval * 100).await;
        assert_eq!(fake.asked.load(Ordering::Relaxed), asked, "woke while idle");
        assert_eq!(pinged.load(Ordering::Relaxed), 3);
        task.abort();
    }
}
