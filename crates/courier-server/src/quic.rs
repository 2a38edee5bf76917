//! The QUIC endpoint (quinn): its settings and transport limits, binding it,
//! and the `alt-svc` value that advertises it.
//!
//! The endpoint binds UDP on the TCP listener's port number, so one
//! `alt-svc: h3=":PORT"` on the TCP responses is all a client needs to find
//! it. Why apart from the HTTP/3 driver (`http3.rs`): the server-wide state
//! is built with these settings before any connection exists, and must not
//! import the driver that runs connections on it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;
use quinn::{IdleTimeout, VarInt};

use crate::config::ServerConfig;
use crate::quic_start::DatagramStartConfig;
use crate::tls::{self, TlsConfig};

/// Flow-control windows granted to clients, as on HTTP/2 (`state.rs`):
/// a 1 MiB `/echo` upload fits one stream's window.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;

/// Unacknowledged response bytes a connection may have in flight: one
/// response's throughput is at most this per round trip (quinn's default,
/// 10 MB, capped a 64 MiB download at 200 MB/s at 50 ms; this matches the
/// client's 32 MiB connection window). Memory is taken only by data
/// written and not yet acknowledged.
const SEND_WINDOW: u64 = 32 * 1024 * 1024;

/// Unidirectional streams a client may have open: HTTP/3 needs three (control,
/// QPACK encoder and decoder); the rest leaves room for grease streams.
const MAX_UNI_STREAMS: u32 = 16;

/// Most concurrent request streams granted, for `max_concurrent_streams:
/// None` and anything above: quinn allocates an entry for every stream the
/// peer may open, up front, so "no limit" (2^32) never finishes setting a
/// connection up. 65,536 entries are a few MiB per connection.
const MAX_BIDI_STREAMS: u32 = 65_536;

/// QUIC's own idle timeout (no packet either way), the backstop for a client
/// that vanished. [`ServerConfig::idle_timeout`] (no request in progress) is
/// applied separately, as on TCP.
/// [`ServerConfig::quic_idle_timeout`] overrides it.
const QUIC_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The QUIC server settings: the certificate of the TLS listener, ALPN `h3`,
/// and the transport limits.
///
/// # Errors
/// `InvalidInput` for an unusable certificate (as the TLS listener).
pub(crate) fn server_config(
    tls: &TlsConfig,
    config: &ServerConfig,
) -> io::Result<quinn::ServerConfig> {
    let crypto = tls::quic_crypto(tls, config.quic_0rtt)?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let idle = IdleTimeout::try_from(config.quic_idle_timeout.unwrap_or(QUIC_IDLE_TIMEOUT))
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("QUIC idle timeout: {e}"),
            )
        })?;
    let mut transport = quinn::TransportConfig::default();
    let streams = config
        .max_concurrent_streams
        .map_or(MAX_BIDI_STREAMS, |n| n.min(MAX_BIDI_STREAMS));
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(streams))
        .max_concurrent_uni_streams(VarInt::from_u32(MAX_UNI_STREAMS))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONNECTION_WINDOW))
        .send_window(SEND_WINDOW)
        .max_idle_timeout(Some(idle))
        .mtu_discovery_config(Some(jumbo_discovery()));
    if config.quic_congestion_bbr {
        transport.congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
    } else {
        transport.congestion_controller_factory(Arc::new(DatagramStartConfig::default()));
    }
    server.transport_config(Arc::new(transport));
    Ok(server)
}

/// Binds the UDP socket at `tcp_addr`'s IP and port number.
///
/// # Errors
/// The bind error (e.g. the UDP port is taken by someone else).
pub(crate) fn bind(
    config: quinn::ServerConfig,
    tcp_addr: SocketAddr,
) -> io::Result<quinn::Endpoint> {
    let socket = std::net::UdpSocket::bind(tcp_addr)?;
    // One socket takes every client's datagrams: the default buffer (208 KiB
    // here) overflowed under 100,000 long polls (`courier bench --scenario
    // longpoll --http 3`). Best effort; the kernel caps it at rmem_max.
    let sock = socket2::SockRef::from(&socket);
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
    let runtime =
        quinn::default_runtime().ok_or_else(|| io::Error::other("QUIC needs a tokio runtime"))?;
    let mut endpoint = quinn::EndpointConfig::default();
    endpoint
        .max_udp_payload_size(JUMBO_ACCEPTED)
        .map_err(|e| io::Error::other(e.to_string()))?;
    quinn::Endpoint::new(endpoint, Some(config), socket, runtime)
}

/// MTU discovery up to 6,550 bytes (quinn's default stops at Ethernet's
/// 1,452: a sixth of the packet size TCP sends on a 9,000-byte link). Not
/// the jumbo frame's 8,952: quinn batches up to 10 datagrams in one GSO
/// send, the kernel refuses one over 65,507 bytes, and quinn-udp drops the
/// batch silently; 10 × 6,550 fits (as the client's `JUMBO_PAYLOAD`).
/// quinn probes up and falls back on loss, so a 1,500-byte path costs only
/// the probes.
fn jumbo_discovery() -> quinn::MtuDiscoveryConfig {
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(JUMBO_ACCEPTED);
    mtu
}

/// Largest UDP payload accepted (announced to clients, whose discovery
/// stops there): the same 6,550, since quinn sizes the endpoint's receive
/// buffer from it (32 receives of 64 GRO segments).
const JUMBO_ACCEPTED: u16 = 65_507 / 10;

/// What the UDP socket asks the kernel to buffer each way.
const SOCKET_BUFFER: usize = 8 * 1024 * 1024;

/// `alt-svc` naming HTTP/3 on `port` of the same host, for a day (RFC 7838).
pub(crate) fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::from(AltSvc(port))
}

/// Only digits go into the value, so building it cannot fail.
struct AltSvc(u16);

impl From<AltSvc> for HeaderValue {
    fn from(AltSvc(port): AltSvc) -> Self {
        let text = format!("h3=\":{port}\"; ma=86400");
        HeaderValue::from_maybe_shared(Bytes::from(text))
            .unwrap_or_else(|_| HeaderValue::from_static("clear"))
    }
}
