//! TLS: the certificate configuration ([`TlsConfig`]) and the rustls server
//! setup built from it (TCP and QUIC).
//!
//! Why no connection here: the per-connection handshake, where ALPN settles
//! HTTP/1.1 vs HTTP/2, is part of settling a connection (`negotiate.rs`);
//! this file stays a leaf the config and [`crate::TestPki`] can build on.

use std::fmt;
use std::io;
use std::sync::Arc;

use rustls::server::{ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// ALPN protocol ids, in the server's order of preference.
pub(crate) const ALPN_H2: &[u8] = b"h2";
const ALPN_HTTP1: &[u8] = b"http/1.1";
/// ALPN of HTTP/3 over QUIC (RFC 9114), offered on the UDP socket only.
const ALPN_H3: &[u8] = b"h3";

/// TLS 1.2 sessions remembered for resumption by session id. (TLS 1.3
/// resumes through self-contained tickets instead and needs no cache.)
/// Sized for a benchmark's worth of connections; entries are small.
const SESSION_CACHE_SIZE: usize = 4096;

/// The server's certificate chain and private key.
///
/// Get one from [`TestPki`](crate::TestPki) (tests), [`TlsConfig::self_signed`] (a quick
/// HTTPS server) or [`TlsConfig::from_pem`] (your own files).
pub struct TlsConfig {
    cert_chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// CAs a client certificate must chain to; empty: no client certificate asked for.
    client_roots: Vec<CertificateDer<'static>>,
}

impl TlsConfig {
    /// A chain (leaf first) and the leaf's private key. Whether they belong
    /// together is checked by [`crate::start`].
    pub fn new(cert_chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> Self {
        Self {
            cert_chain,
            key,
            client_roots: Vec::new(),
        }
    }

    /// Requires every client to present a certificate issued by one of the CAs in `ca_pem`
    /// (mutual TLS): a handshake without one, or with another, fails.
    ///
    /// # Errors
    /// `InvalidData` when the PEM is malformed or holds no certificate.
    pub fn require_client_certs(mut self, ca_pem: &str) -> io::Result<TlsConfig> {
        let roots = CertificateDer::pem_slice_iter(ca_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| invalid_data(format!("client CA PEM: {err}")))?;
        if roots.is_empty() {
            return Err(invalid_data("no certificate in the client CA PEM".into()));
        }
        self.client_roots.extend(roots);
        Ok(self)
    }

    /// Parses a PEM certificate chain (leaf first) and a PEM private key
    /// (PKCS#8, PKCS#1 or SEC1).
    ///
    /// # Errors
    /// `InvalidData` when the PEM is malformed or holds no certificate / no
    /// key.
    pub fn from_pem(cert_chain_pem: &str, key_pem: &str) -> io::Result<TlsConfig> {
        let cert_chain = CertificateDer::pem_slice_iter(cert_chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| invalid_data(format!("certificate PEM: {err}")))?;
        if cert_chain.is_empty() {
            return Err(invalid_data("no certificate in the certificate PEM".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|err| invalid_data(format!("private key PEM: {err}")))?;
        Ok(Self::new(cert_chain, key))
    }

    /// The certificate chain, leaf first.
    pub fn cert_chain(&self) -> &[CertificateDer<'static>] {
        &self.cert_chain
    }
}

fn invalid_data(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl Clone for TlsConfig {
    fn clone(&self) -> Self {
        Self {
            cert_chain: self.cert_chain.clone(),
            key: self.key.clone_key(),
            client_roots: self.client_roots.clone(),
        }
    }
}

impl PartialEq for TlsConfig {
    fn eq(&self, other: &Self) -> bool {
        self.cert_chain == other.cert_chain
            && self.key.secret_der() == other.key.secret_der()
            && self.client_roots == other.client_roots
    }
}

impl Eq for TlsConfig {}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.debug_struct("TlsConfig")
            .field("certificates", &self.cert_chain.len())
            .field("client_roots", &self.client_roots.len())
            .finish_non_exhaustive()
    }
}

/// Builds the acceptor shared by all connections, offering by ALPN `h2`
/// then `http/1.1`, each only if enabled.
///
/// Resumption is on both ways: TLS 1.3 tickets (stateless, from a rotating
/// ticketer) and a TLS 1.2 session-id cache. The ring provider is named
/// explicitly so the process-wide default provider does not matter.
pub(crate) fn acceptor(tls: &TlsConfig, http1: bool, http2: bool) -> io::Result<TlsAcceptor> {
    let mut config = server_config(tls, rustls::DEFAULT_VERSIONS)?;
    if http2 {
        config.alpn_protocols.push(ALPN_H2.to_vec());
    }
    if http1 {
        config.alpn_protocols.push(ALPN_HTTP1.to_vec());
    }
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The rustls side of the QUIC endpoint: the same certificate, client
/// authentication and resumption as [`acceptor`], TLS 1.3 only (QUIC has no
/// other) and ALPN `h3`.
///
/// # Errors
/// `InvalidInput` as [`acceptor`].
pub(crate) fn quic_crypto(
    tls: &TlsConfig,
    zero_rtt: ZeroRtt,
) -> io::Result<quinn::crypto::rustls::QuicServerConfig> {
    let mut config = server_config(tls, &[&rustls::version::TLS13])?;
    config.alpn_protocols = vec![ALPN_H3.to_vec()];
    match zero_rtt {
        ZeroRtt::Off => {}
        // QUIC takes early data up to its flow control: rustls' limit must
        // be all or nothing (quinn refuses anything else).
        // rustls allows early data only with sessions kept on the server
        // (RFC 8446 §8.1: a stored session is used once), not with the
        // self-contained tickets TCP gets.
        ZeroRtt::Accept => {
            config.max_early_data_size = u32::MAX;
            config.ticketer = Arc::new(Stateful);
        }
        ZeroRtt::Reject => {
            config.max_early_data_size = u32::MAX;
            config.ticketer = Arc::new(Stateful);
            config.session_storage = Arc::new(Forgetful);
        }
    }
    quinn::crypto::rustls::QuicServerConfig::try_from(config)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err))
}

fn server_config(
    tls: &TlsConfig,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> io::Result<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .map_err(invalid_input)?;
    let builder = if tls.client_roots.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for root in &tls.client_roots {
            roots.add(root.clone()).map_err(invalid_input)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err))?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut config = builder
        .with_single_cert(tls.cert_chain.clone(), tls.key.clone_key())
        .map_err(invalid_input)?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_SIZE);
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(invalid_input)?;
    Ok(config)
}

fn invalid_input(err: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, err)
}

/// Issues tickets (so clients try 0-RTT) and never finds their sessions
/// again: every resumption is a full handshake and its early data rejected.
#[derive(Debug)]
struct Forgetful;

impl rustls::server::StoresServerSessions for Forgetful {
    fn put(&self, _key: Vec<u8>, _value: Vec<u8>) -> bool {
        true
    }

    fn get(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }

    fn take(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }

    fn can_cache(&self) -> bool {
        true
    }
}

/// No self-contained tickets: rustls then issues tickets naming sessions
/// in `session_storage` (which early data requires).
#[derive(Debug)]
struct Stateful;

impl rustls::server::ProducesTickets for Stateful {
    fn enabled(&self) -> bool {
        false
    }

    fn lifetime(&self) -> u32 {
        0
    }

    fn encrypt(&self, _plain: &[u8]) -> Option<Vec<u8>> {
        None
    }

    fn decrypt(&self, _cipher: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// What the QUIC side does with a client's early data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ZeroRtt {
    /// Session tickets allow no early data (the default).
    #[default]
    Off,
    /// Tickets allow early data and it is taken: a request received
    /// before the handshake completed gets an `early-data: 1` header (RFC
    /// 8470 §5.1, as a front end passes it on; a client's own is removed),
    /// which `/too-early` answers with `425 Too Early`.
    Accept,
    /// Tickets allow early data, but the server forgets every session, so
    /// each resumption fails and its early data is rejected (the client
    /// must send it again after the handshake).
    Reject,
}
