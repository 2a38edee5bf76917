//! QUIC connections for HTTP/3, on quinn: one UDP endpoint per client and
//! address family, bound on first use (`0.0.0.0:0` or `[::]:0`, by the
//! target's family) and shared by every connection of the client, as a
//! browser's socket pool does; the client's TLS settings (roots, identity,
//! verification, resumption) with TLS 1.3 and ALPN `h3`
//! (`tls::quic_client_config`); transport limits so that nothing the peer
//! does grows without bound; and the connect deadline.
//!
//! Datagrams are batched by quinn-udp: GSO (one `sendmsg` for up to 64
//! datagrams of a burst) and GRO on receive, where the kernel and the
//! interface have them (Linux ≥ 4.18 for GSO, ≥ 5.0 for UDP GRO); quinn-udp
//! probes both at bind and falls back to one datagram a call. What a bound
//! endpoint got is [`Offload`], logged at bind and read by the tests.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use quinn::{IdleTimeout, TransportConfig, VarInt};
use tokio::time::Instant;

use crate::connect::quic_idle::{KeepAlive, Learning, PeerIdle, PeerStreams};
use crate::connect::quic_resumed::HandshakeWatch;

/// A server's HTTP/3 settings as remembered: (identifier, value) pairs
/// (`proto/h3/early.rs` chooses which; connect reads none of them).
pub(crate) type Remembered = Vec<(u64, u64)>;
use crate::connect::tls::TlsSettings;
use crate::error::{Error, ErrorKind};

/// QUIC transport limits for a client connection.
#[derive(Debug, Clone)]
pub(crate) struct QuicOptions {
    /// QUIC's idle timeout (no packet either way), announced to the peer:
    /// the connection is gone after this much silence (or the peer's
    /// shorter one; `quic_idle.rs` keeps waiting requests alive).
    pub(crate) idle_timeout: Duration,
    /// Receive window per request stream (the response body in flight).
    pub(crate) stream_window: u32,
    /// Receive window for the whole connection.
    pub(crate) connection_window: u32,
    /// Unacknowledged bytes we may have in flight (request bodies).
    pub(crate) send_window: u64,
    /// BBR instead of quinn's default Cubic (for what we send).
    pub(crate) bbr: bool,
    /// Unidirectional streams the server may have open: HTTP/3 needs
    /// three (control, QPACK encoder, QPACK decoder), the rest is room for
    /// grease streams. A flood beyond it is held off by QUIC's own stream
    /// credit, not by us.
    pub(crate) max_uni_streams: u32,
    /// 0-RTT on a resumed session (`tls_early_data`).
    pub(crate) early_data: bool,
}

/// The smallest window taken (a zero window would stall every response).
const MIN_WINDOW: u32 = 16 * 1024;

/// Receive window per stream: one response's throughput is at most this
/// per round trip (16 MiB: 335 MB/s at 50 ms; 2 MiB capped a 64 MiB download
/// at 0.46 x TLS HTTP/1.1 on a 50 ms link, docs/src/http3.md). quinn grants
/// it as credit and allocates only what arrives unread.
pub(crate) const DEFAULT_STREAM_WINDOW: u32 = 16 * 1024 * 1024;
/// Receive window for a whole connection.
pub(crate) const DEFAULT_CONN_WINDOW: u32 = 32 * 1024 * 1024;
/// Request-body bytes in flight unacknowledged.
pub(crate) const DEFAULT_SEND_WINDOW: u64 = 32 * 1024 * 1024;
/// QUIC's idle timeout announced to servers.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for QuicOptions {
    fn default() -> Self {
        QuicOptions::new(
            DEFAULT_IDLE_TIMEOUT,
            (
                DEFAULT_STREAM_WINDOW,
                DEFAULT_CONN_WINDOW,
                DEFAULT_SEND_WINDOW,
            ),
            false,
        )
    }
}

impl QuicOptions {
    /// The idle timeout, the windows (per stream, per connection, to send;
    /// each at least 16 KiB) and whether to use BBR.
    pub(crate) fn new(idle_timeout: Duration, windows: (u32, u32, u64), bbr: bool) -> Self {
        let (stream, connection, send) = windows;
        QuicOptions {
            idle_timeout,
            stream_window: stream.max(MIN_WINDOW),
            connection_window: connection.max(MIN_WINDOW),
            send_window: send.max(u64::from(MIN_WINDOW)),
            bbr,
            max_uni_streams: 8,
            early_data: false,
        }
    }

    /// Fails as [`QuicConnector::new`] would for these options.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for an idle timeout QUIC cannot carry.
    pub(crate) fn check(&self) -> Result<(), Error> {
        self.transport().map(drop)
    }

    fn transport(&self) -> Result<TransportConfig, Error> {
        let idle = IdleTimeout::try_from(self.idle_timeout)
            .map_err(|e| Error::new(ErrorKind::Config, format!("QUIC idle timeout: {e}")))?;
        let mut transport = TransportConfig::default();
        transport
            .max_idle_timeout(Some(idle))
            // Our own, per connection and only while requests wait
            // (`quic_idle.rs`): quinn's is one interval for every peer.
            .keep_alive_interval(None)
            .stream_receive_window(VarInt::from_u32(self.stream_window))
            .receive_window(VarInt::from_u32(self.connection_window))
            .send_window(self.send_window)
            // A client opens every request stream; HTTP/3 forbids the
            // server's own bidirectional streams (RFC 9114 §6.1).
            .max_concurrent_bidi_streams(VarInt::from_u32(0))
            .max_concurrent_uni_streams(VarInt::from_u32(self.max_uni_streams))
            .mtu_discovery_config(Some(jumbo_discovery()));
        if self.bbr {
            transport
                .congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
        }
        Ok(transport)
    }
}

/// Largest UDP payload MTU discovery probes for. quinn's default ceiling
/// (1,452, Ethernet's 1,500) held HTTP/3 to a sixth of the packet size TCP
/// used on a 9,000-byte link (0.57–0.62 × TLS HTTP/1.1 for 64 MiB at 50 ms).
/// Not the jumbo frame's 8,952: quinn batches up to 10 datagrams in one GSO
/// send (its private `MAX_TRANSMIT_SEGMENTS`), the kernel refuses a send over
/// 65,507 bytes with EMSGSIZE, and quinn-udp drops such a batch without a
/// word, so every full batch was lost. 10 × 6,550 fits. quinn probes up from
/// the working size and falls back on loss (black hole detection), so a
/// 1,500-byte path costs only the probes.
pub(crate) const JUMBO_PAYLOAD: u16 = 65_507 / 10;

/// MTU discovery up to [`JUMBO_PAYLOAD`], quinn's other defaults.
fn jumbo_discovery() -> quinn::MtuDiscoveryConfig {
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(JUMBO_PAYLOAD);
    mtu
}

/// The endpoint's `max_udp_payload_size` (what we accept, announced to the
/// server, whose discovery stops there): [`JUMBO_PAYLOAD`], no more. quinn
/// sizes the endpoint's receive buffer from it (32 receives of 64 GRO
/// segments: 13.4 MB here, 3 MB at quinn's default 1,472), and the
/// allocator may touch all of it: at 8,972 (a 9,000-byte frame's IPv4
/// payload) the hostile-peer corpus saw the client's RSS grow 17.7 MB in a
/// case, over its 16 MiB budget.
fn endpoint_config() -> quinn::EndpointConfig {
    let mut config = quinn::EndpointConfig::default();
    config
        .max_udp_payload_size(JUMBO_PAYLOAD)
        .expect("within QUIC's bounds");
    config
}

/// What quinn-udp found the kernel does for a bound socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offload {
    /// Most datagrams one send takes (GSO); 1: none.
    pub(crate) gso_segments: usize,
    /// Most datagrams one receive returns (GRO); 1: none.
    pub(crate) gro_segments: usize,
    /// The socket's receive buffer as the kernel granted it (see
    /// [`SOCKET_BUFFER`]); 0 if it could not be read.
    pub(crate) recv_buffer: usize,
}

/// Dials QUIC for one client: its TLS and transport configuration and its
/// endpoints, one per address family, bound on first use.
pub(crate) struct QuicConnector {
    /// The client's TLS for QUIC; each server port gets a copy with a
    /// session store of its own ([`Scope`]).
    rustls: Arc<rustls::ClientConfig>,
    tls: TlsSettings,
    scopes: Mutex<VecDeque<Arc<Scope>>>,
    transport: Arc<TransportConfig>,
    options: QuicOptions,
    v4: Mutex<Option<Bound>>,
    v6: Mutex<Option<Bound>>,
}

/// Server ports whose sessions a client keeps; past it the least recently
/// dialed port's are dropped (its next connection does a full handshake).
const SCOPES: usize = 64;
/// Server names whose HTTP/3 settings a port's scope remembers (rustls
/// keeps 256 names' sessions per store).
const REMEMBERED_NAMES: usize = 256;

/// What a client keeps for one server port: the TLS configuration with its
/// session store (tickets keyed by server name within the port), and each
/// server's HTTP/3 settings remembered with its tickets for 0-RTT (RFC
/// 9114 §7.2.4.2). Per port because rustls keys tickets by name alone: a
/// ticket from `a.test:443` must not be offered to `a.test:8443`.
struct Scope {
    port: u16,
    crypto: Arc<dyn quinn::crypto::ClientConfig>,
    settings: Mutex<HashMap<String, Remembered>>,
}

/// A resumable dial's parts for HTTP/3: see [`QuicConnector::dial`].
pub(crate) struct Dialed {
    pub(crate) conn: quinn::Connection,
    pub(crate) keep_alive: KeepAlive,
    /// 0-RTT is in use: QUIC's word on the early data, when the handshake
    /// completes (it has not yet).
    pub(crate) early: Option<quinn::ZeroRttAccepted>,
    /// The server's HTTP/3 settings remembered for this name and port.
    pub(crate) remembered: Remembered,
    /// Where to remember this connection's.
    pub(crate) remember: RememberSettings,
    /// Whether the handshake resumed a session, and whether it completed
    /// (for [`Dialed::early`]'s, later than the dial).
    pub(crate) handshake: HandshakeWatch,
    /// The server's initial request stream limit, once its transport
    /// parameters are read (not yet, for a dial still in 0-RTT).
    pub(crate) streams: PeerStreams,
}

/// Told how a 0-RTT connection's handshake ended: `Some(accepted)` when it
/// completed or the connection was lost first (`ZeroRttAccepted`'s
/// word), `None` past the connect deadline. Dropped untold: a connection
/// given up before.
pub(crate) type Settled = Box<dyn FnOnce(Option<bool>) + Send>;

/// Remembers a server's HTTP/3 settings for its name and port.
pub(crate) struct RememberSettings {
    scope: Arc<Scope>,
    name: String,
}

impl RememberSettings {
    /// Keeps `settings` for the next connection to resume.
    pub(crate) fn remember(self, settings: Remembered) {
        let mut map = self
            .scope
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if map.len() >= REMEMBERED_NAMES && !map.contains_key(&self.name) {
            // Bounded: an arbitrary other name forgets (its next 0-RTT goes
            // by the defaults, which the protocol allows).
            if let Some(other) = map.keys().next().cloned() {
                map.remove(&other);
            }
        }
        map.insert(self.name, settings);
    }
}

#[derive(Clone)]
struct Bound {
    endpoint: quinn::Endpoint,
    offload: Offload,
}

impl std::fmt::Debug for QuicConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConnector").finish_non_exhaustive()
    }
}

impl QuicConnector {
    /// The client's TLS settings and `options`; binds nothing yet.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for TLS settings QUIC cannot use (no TLS 1.3,
    /// a `tls_config` without a TLS 1.3 cipher suite QUIC can use).
    pub(crate) fn new(tls: &TlsSettings, options: &QuicOptions) -> Result<QuicConnector, Error> {
        let rustls = super::tls::quic_client_config(tls)?;
        // Checked now: a configuration QUIC cannot use fails the build.
        quinn::crypto::rustls::QuicClientConfig::try_from(Arc::clone(&rustls))
            .map_err(|e| Error::new(ErrorKind::Config, format!("TLS for QUIC: {e}")))?;
        Ok(QuicConnector {
            rustls,
            tls: tls.clone(),
            scopes: Mutex::new(VecDeque::new()),
            transport: Arc::new(options.transport()?),
            options: options.clone(),
            v4: Mutex::new(None),
            v6: Mutex::new(None),
        })
    }

    /// Connects to `remote`, verifying `server_name` (a host name or an IP
    /// literal, brackets allowed), by `deadline`.
    ///
    /// # Errors
    /// [`ErrorKind::ConnectTimeout`] past the deadline (or QUIC's idle
    /// timeout, which bounds a silent peer's handshake), [`ErrorKind::Tls`]
    /// for a TLS alert (an untrusted certificate, no `h3` by ALPN),
    /// [`ErrorKind::Connect`] otherwise (no UDP socket, refused).
    pub(crate) async fn connect(
        &self,
        remote: SocketAddr,
        server_name: &str,
        deadline: Instant,
    ) -> Result<quinn::Connection, Error> {
        let dialed = self.dial(remote, server_name, deadline).await?;
        if let Some(accepted) = dialed.early {
            // Nothing is sent early here: the handshake is waited for.
            let _ = tokio::time::timeout_at(deadline, accepted).await;
        }
        Ok(dialed.conn)
    }

    /// As [`Self::connect`], with the connection's keep-alive, fitted to the
    /// idle timeout the server announced (see `quic_idle.rs`), for its
    /// driver. With `tls_early_data` and a session to resume that allows
    /// it, the connection comes back at once, its handshake still going
    /// ([`Dialed::early`]): what is sent now is 0-RTT data.
    ///
    /// # Errors
    /// As [`Self::connect`].
    pub(crate) async fn dial(
        &self,
        remote: SocketAddr,
        server_name: &str,
        deadline: Instant,
    ) -> Result<Dialed, Error> {
        let endpoint = self.endpoint(remote)?.endpoint;
        let name = server_name.trim_start_matches('[').trim_end_matches(']');
        let scope = self.scope(remote.port())?;
        let peer = PeerIdle::new();
        let streams = PeerStreams::new();
        let handshake = HandshakeWatch::default();
        let mut config = quinn::ClientConfig::new(Arc::new(Learning {
            inner: Arc::clone(&scope.crypto),
            peer: peer.clone(),
            streams: streams.clone(),
            handshake: handshake.clone(),
        }));
        config.transport_config(Arc::clone(&self.transport));
        let connecting = endpoint
            .connect_with(config, remote, name)
            .map_err(|e| Error::new(ErrorKind::Connect, format!("QUIC to {remote}: {e}")))?;
        let remembered = scope
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .unwrap_or_default();
        let remember = RememberSettings {
            scope: Arc::clone(&scope),
            name: name.to_owned(),
        };
        let keep_alive = |conn: &quinn::Connection| KeepAlive {
            conn: conn.clone(),
            ours: self.options.idle_timeout,
            peer: peer.clone(),
            window: self.options.connection_window,
        };
        let connecting = if self.options.early_data {
            match connecting.into_0rtt() {
                Ok((conn, accepted)) => {
                    tracing::debug!(%remote, "QUIC 0-RTT: resumed, sending early");
                    return Ok(Dialed {
                        keep_alive: keep_alive(&conn),
                        conn,
                        early: Some(accepted),
                        remembered,
                        remember,
                        handshake,
                        streams,
                    });
                }
                Err(connecting) => connecting,
            }
        } else {
            connecting
        };
        match tokio::time::timeout_at(deadline, connecting).await {
            Err(_) => Err(Error::msg(
                ErrorKind::ConnectTimeout,
                "QUIC handshake past the connect timeout",
            )),
            Ok(Err(e)) => Err(handshake_error(e)),
            Ok(Ok(conn)) => Ok(Dialed {
                keep_alive: keep_alive(&conn),
                conn,
                early: None,
                remembered,
                remember,
                handshake,
                streams,
            }),
        }
    }

    /// The scope of server `port`, made on first use (the least recently
    /// used one dropped past [`SCOPES`]).
    fn scope(&self, port: u16) -> Result<Arc<Scope>, Error> {
        let mut scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = scopes.iter().position(|s| s.port == port) {
            let scope = scopes.remove(i).unwrap_or_else(|| unreachable!());
            scopes.push_front(Arc::clone(&scope));
            return Ok(scope);
        }
        let rustls = super::tls::quic_scoped(&self.rustls, &self.tls, self.options.early_data)?;
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(rustls))
            .map_err(|e| Error::new(ErrorKind::Config, format!("TLS for QUIC: {e}")))?;
        let scope = Arc::new(Scope {
            port,
            crypto: Arc::new(crypto),
            settings: Mutex::new(HashMap::new()),
        });
        scopes.push_front(Arc::clone(&scope));
        scopes.truncate(SCOPES);
        Ok(scope)
    }

    /// The offload the endpoint for `family_of` got (binding it if need be).
    pub(crate) fn offload(&self, family_of: SocketAddr) -> Result<Offload, Error> {
        Ok(self.endpoint(family_of)?.offload)
    }

    /// The endpoint of `remote`'s family, bound on first use.
    fn endpoint(&self, remote: SocketAddr) -> Result<Bound, Error> {
        let (slot, local) = if remote.is_ipv4() {
            (&self.v4, SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)))
        } else {
            (&self.v6, SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)))
        };
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(bound) = slot.as_ref() {
            return Ok(bound.clone());
        }
        let bound = bind(local)?;
        *slot = Some(bound.clone());
        Ok(bound)
    }
}

/// A client endpoint on `local`, and what the kernel offers it.
fn bind(local: SocketAddr) -> Result<Bound, Error> {
    let bind_error = |e: std::io::Error| Error::new(ErrorKind::Connect, format!("UDP bind: {e}"));
    let socket = std::net::UdpSocket::bind(local).map_err(bind_error)?;
    let recv_buffer = socket_buffers(&socket);
    // quinn-udp's own probe, as the endpoint will run it on this socket.
    let state = quinn::udp::UdpSocketState::new((&socket).into()).map_err(bind_error)?;
    let offload = Offload {
        gso_segments: state.max_gso_segments(),
        gro_segments: state.gro_segments(),
        recv_buffer,
    };
    tracing::debug!(?local, ?offload, "QUIC endpoint bound");
    let runtime = quinn::default_runtime()
        .ok_or_else(|| Error::msg(ErrorKind::Connect, "QUIC needs a tokio runtime"))?;
    let endpoint =
        quinn::Endpoint::new(endpoint_config(), None, socket, runtime).map_err(bind_error)?;
    Ok(Bound { endpoint, offload })
}

/// What the endpoint's UDP socket asks the kernel to buffer each way. One
/// socket carries every QUIC connection of the client: with the default
/// (208 KiB here) 100,000 long polls on 1,000 connections overflowed it
/// while the runtime was busy (11,662 datagrams dropped at 30,000 in
/// flight; at 100,000, 1.2 % of the polls lost their connection to idle
/// timeouts and stateless resets). The kernel caps it at `rmem_max` /
/// `wmem_max`; memory is taken only as datagrams wait.
pub(crate) const SOCKET_BUFFER: usize = 8 * 1024 * 1024;

/// Raises the socket's buffers toward [`SOCKET_BUFFER`]; best effort (a
/// smaller buffer only means drops under load, which QUIC recovers from).
/// Returns the receive buffer granted.
fn socket_buffers(socket: &std::net::UdpSocket) -> usize {
    let sock = socket2::SockRef::from(socket);
    if let Err(e) = sock.set_recv_buffer_size(SOCKET_BUFFER) {
        tracing::debug!("UDP receive buffer: {e}");
    }
    if let Err(e) = sock.set_send_buffer_size(SOCKET_BUFFER) {
        tracing::debug!("UDP send buffer: {e}");
    }
    sock.recv_buffer_size().unwrap_or(0)
}

/// Whether a connection closed by `reason` failed by a TLS alert.
pub(crate) fn is_tls_close(reason: quinn::ConnectionError) -> bool {
    handshake_error(reason).kind() == ErrorKind::Tls
}

/// The kind of a failed handshake.
fn handshake_error(e: quinn::ConnectionError) -> Error {
    use quinn::ConnectionError as E;
    let kind = match &e {
        E::TimedOut => ErrorKind::ConnectTimeout,
        // 0x100..=0x1ff: a TLS alert (RFC 9001 §4.8).
        E::TransportError(t) if (0x100..=0x1ff).contains(&u64::from(t.code)) => ErrorKind::Tls,
        E::ConnectionClosed(c) if (0x100..=0x1ff).contains(&u64::from(c.error_code)) => {
            ErrorKind::Tls
        }
        _ => ErrorKind::Connect,
    };
    Error::new(kind, format!("QUIC handshake: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GSO and GRO on this machine's loopback, as quinn-udp probes them:
    /// printed for the record; on Linux both must be found (every kernel
    /// CI runs has them since 5.0).
    #[tokio::test]
    async fn offload_is_probed() {
        let connector = QuicConnector::new(&TlsSettings::default(), &QuicOptions::default())
            .expect("connector");
        let offload = connector
            .offload(SocketAddr::from(([127, 0, 0, 1], 443)))
            .expect("bind");
        println!("QUIC offload on this kernel: {offload:?}");
        if cfg!(target_os = "linux") {
            assert!(offload.gso_segments > 1, "{offload:?}");
            assert!(offload.gro_segments > 1, "{offload:?}");
        }
        // The endpoint is bound once per family.
        let again = connector
            .offload(SocketAddr::from(([10, 0, 0, 1], 443)))
            .expect("bound");
        assert_eq!(again, offload);
    }

    /// The endpoint's one socket carries every connection: its receive
    /// buffer is raised past the kernel's default (which a fresh socket
    /// gets: 212,992 bytes here, where 100,000 long polls overflowed it),
    /// as far as the kernel allows.
    #[tokio::test]
    async fn the_socket_buffer_is_raised_past_the_default() {
        let read = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
        };
        let (Some(default), Some(max)) = (read("rmem_default"), read("rmem_max")) else {
            return; // not Linux: nothing to compare with
        };
        let connector = QuicConnector::new(&TlsSettings::default(), &QuicOptions::default())
            .expect("connector");
        let offload = connector
            .offload(SocketAddr::from(([127, 0, 0, 1], 443)))
            .expect("bind");
        println!("rmem_default {default}, rmem_max {max}: {offload:?}");
        if max > default {
            assert!(offload.recv_buffer > default, "{offload:?}");
        }
    }

    #[test]
    fn quic_refuses_a_tls_ceiling_below_1_3() {
        let tls = TlsSettings {
            max_version: Some(crate::tls::Version::TLS_1_2),
            ..TlsSettings::default()
        };
        let err = QuicConnector::new(&tls, &QuicOptions::default()).expect_err("no TLS 1.3");
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[tokio::test]
    async fn connect_deadline_bounds_a_silent_peer() {
        // A bound UDP socket that never answers.
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
        let connector = QuicConnector::new(&TlsSettings::default(), &QuicOptions::default())
            .expect("connector");
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        let err = connector
            .connect(silent.local_addr().expect("addr"), "localhost", deadline)
            .await
            .expect_err("no handshake");
        assert_eq!(err.kind(), ErrorKind::ConnectTimeout);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
