//! TLS with rustls: certificate verification on by default (webpki roots plus
//! any added roots), SNI, ALPN, client-side session resumption, client
//! certificates (fixed, or from a resolver for rotation), version bounds,
//! the crypto provider by feature, or a whole `rustls::ClientConfig` given
//! by the caller. Verification is off only through
//! `danger_accept_invalid_certs`, by name.

mod certificate;
mod provider;
mod sessions;
mod settings;
mod version;

pub use certificate::{Certificate, Identity};
pub(crate) use settings::TlsSettings;
pub use version::Version;

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;

use crate::error::{Error, ErrorKind};

/// What the handshake settled.
pub(crate) struct Negotiated {
    /// The server picked `h2` via ALPN.
    pub(crate) h2: bool,
    /// The session was resumed (no full handshake).
    pub(crate) resumed: bool,
}

/// The kind of an I/O error on an established connection: [`ErrorKind::Tls`]
/// when TLS failed (an alert from the peer, as a TLS 1.3 server sends when
/// it refuses the client's certificate after the client's side of the
/// handshake has ended; a record that does not decrypt), else `otherwise`.
pub(crate) fn io_error_kind(e: &std::io::Error, otherwise: ErrorKind) -> ErrorKind {
    match e.get_ref() {
        Some(inner) if inner.is::<rustls::Error>() => ErrorKind::Tls,
        _ => otherwise,
    }
}

/// Builds rustls' client configuration once per client.
///
/// ALPN is courier's whatever the configuration came with, a caller's
/// `tls_config` included: courier offers exactly the protocols it will
/// speak on the connection (`h2`, `http/1.1`, per `http1_only` and
/// `http2_prior_knowledge`). Merging a caller's list would let a server
/// pick a protocol courier cannot speak (it reads only "h2 or not"), and
/// keeping it would contradict the builder's version choice.
pub(crate) fn client_config(
    settings: &TlsSettings,
    alpn: Vec<Vec<u8>>,
) -> Result<Arc<ClientConfig>, Error> {
    let mut config = match &settings.preconfigured {
        Some(user) => {
            if let Some(knob) = settings.changed_knob() {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "{knob} cannot be combined with tls_config: set it on the rustls::ClientConfig"
                    ),
                ));
            }
            (**user).clone()
        }
        None => built(settings)?,
    };
    config.alpn_protocols = alpn;
    Ok(Arc::new(config))
}

/// The configuration for QUIC (HTTP/3): the same trust, identity and
/// resumption as TCP's, TLS 1.3 only (QUIC has no other: a `max_tls_version`
/// below 1.3 is a configuration error here), ALPN `h3`.
#[cfg(feature = "http3")]
pub(crate) fn quic_client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, Error> {
    let mut config = match &settings.preconfigured {
        Some(user) => (**user).clone(),
        None => {
            if settings
                .max_version
                .is_some_and(|max| max < Version::TLS_1_3)
            {
                return Err(Error::msg(
                    ErrorKind::Config,
                    "HTTP/3 needs TLS 1.3, which max_tls_version rules out",
                ));
            }
            built_with(settings, vec![&rustls::version::TLS13])?
        }
    };
    config.alpn_protocols = vec![b"h3".to_vec()];
    Ok(Arc::new(config))
}

/// A configuration from the builder's TLS knobs.
fn built(settings: &TlsSettings) -> Result<ClientConfig, Error> {
    let protocol_versions = version::protocol_versions(settings.min_version, settings.max_version);
    built_with(settings, protocol_versions)
}

/// [`built`] for the given versions.
fn built_with(
    settings: &TlsSettings,
    protocol_versions: Vec<&'static rustls::SupportedProtocolVersion>,
) -> Result<ClientConfig, Error> {
    let provider = provider::provider()?;
    if protocol_versions.is_empty() {
        return Err(Error::msg(
            ErrorKind::Config,
            "min_tls_version/max_tls_version leave no TLS version courier speaks (1.2, 1.3)",
        ));
    }
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&protocol_versions)
        .map_err(|e| Error::new(ErrorKind::Config, e))?;
    let builder = if settings.accept_invalid_certs {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider.clone())))
    } else {
        builder.with_root_certificates(roots(settings)?)
    };
    let mut config = match (&settings.identity, &settings.cert_resolver) {
        (Some(_), Some(_)) => {
            return Err(Error::msg(
                ErrorKind::Config,
                "identity and client_cert_resolver both set: give one",
            ))
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(identity), None) => builder
            .with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
            .map_err(|e| Error::new(ErrorKind::Config, format!("identity: {e}")))?,
        (None, Some(resolver)) => builder.with_client_cert_resolver(Arc::clone(resolver)),
    };
    config.resumption = resumption(settings, &provider);
    Ok(config)
}

/// A session store of its own for the builder's knobs: the default keeps
/// 256 sessions in memory, so a rotated connection resumes instead of doing
/// a full handshake. Under a resolver, sessions are kept per client
/// certificate (sessions.rs).
fn resumption(settings: &TlsSettings, provider: &CryptoProvider) -> Resumption {
    match (&settings.cert_resolver, settings.session_resumption) {
        (_, false) => Resumption::disabled(),
        (None, true) => Resumption::default(),
        (Some(resolver), true) => {
            let schemes = provider
                .signature_verification_algorithms
                .supported_schemes();
            Resumption::store(Arc::new(sessions::IdentityBound::new(
                Arc::clone(resolver),
                schemes,
            )))
        }
    }
}

/// `config` (from [`quic_client_config`]) with a session store of its own
/// and early data as asked: QUIC keeps one per server port, so a ticket
/// (and the 0-RTT it allows) is used only for the origin that issued it,
/// not for another port of the same name (rustls keys sessions by name
/// alone). A caller's `tls_config` keeps its own store.
#[cfg(feature = "http3")]
pub(crate) fn quic_scoped(
    config: &ClientConfig,
    settings: &TlsSettings,
    early_data: bool,
) -> Result<ClientConfig, Error> {
    let mut scoped = config.clone();
    if settings.preconfigured.is_none() {
        scoped.resumption = resumption(settings, &*provider::provider()?);
    }
    scoped.enable_early_data = early_data;
    Ok(scoped)
}

/// The configuration for TLS to an `https://` proxy: the client's trust
/// and versions, HTTP/1.1 by ALPN (a proxy is spoken to in HTTP/1.1), and
/// no client certificate: one configured for origins is theirs.
pub(crate) fn for_proxy(config: &ClientConfig) -> Arc<ClientConfig> {
    let mut proxy = config.clone();
    proxy.alpn_protocols = vec![b"http/1.1".to_vec()];
    proxy.client_auth_cert_resolver = Arc::new(NoClientCert);
    Arc::new(proxy)
}

/// Presents no certificate when a server asks for one.
#[derive(Debug)]
struct NoClientCert;

impl rustls::client::ResolvesClientCert for NoClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

fn roots(settings: &TlsSettings) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if settings.built_in_roots {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    if settings.native_roots {
        native_roots(&mut roots)?;
    }
    for cert in &settings.extra_roots {
        for der in cert.ders()? {
            roots
                .add(der)
                .map_err(|e| Error::new(ErrorKind::Config, format!("add_root_certificate: {e}")))?;
        }
    }
    Ok(roots)
}

/// Adds the operating system's trusted roots. Certificates the store holds
/// but rustls cannot parse are skipped (a system store carries some); a
/// store with none usable is a configuration error.
#[cfg(feature = "native-roots")]
fn native_roots(roots: &mut RootCertStore) -> Result<(), Error> {
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::debug!(error = %e, "skipping part of the system trust store");
    }
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(Error::msg(
            ErrorKind::Config,
            "tls_native_roots: no usable certificate in the system trust store",
        ));
    }
    Ok(())
}

#[cfg(not(feature = "native-roots"))]
fn native_roots(_: &mut RootCertStore) -> Result<(), Error> {
    Err(Error::msg(
        ErrorKind::Config,
        "tls_native_roots needs courier's `native-roots` feature",
    ))
}

/// Runs the TLS handshake over `io` for `host` (SNI, and the name verified).
pub(crate) async fn handshake<IO: AsyncRead + AsyncWrite + Unpin>(
    config: &Arc<ClientConfig>,
    io: IO,
    host: &str,
) -> Result<(TlsStream<IO>, Negotiated), Error> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name =
        ServerName::try_from(bare.to_owned()).map_err(|e| Error::new(ErrorKind::InvalidUrl, e))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
    let stream = connector
        .connect(name, io)
        .await
        .map_err(|e| Error::new(ErrorKind::Tls, e))?;
    let (_, session) = stream.get_ref();
    let negotiated = Negotiated {
        h2: session.alpn_protocol() == Some(b"h2"),
        resumed: session.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
    };
    Ok((stream, negotiated))
}

/// `danger_accept_invalid_certs`: any certificate chain and name is accepted,
/// but handshake signatures are still checked so the session is at least
/// bound to the presented key.
#[derive(Debug)]
struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
