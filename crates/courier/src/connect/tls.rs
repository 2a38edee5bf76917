//! TLS with rustls: certificate verification on by default (webpki roots plus
//! any added roots), SNI, ALPN, client-side session resumption, client
//! certificates. Verification is off only through
//! `danger_accept_invalid_certs`, by name.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;

use crate::config::{TlsSettings, Versions};
use crate::error::{Error, ErrorKind};

/// What the handshake settled.
pub(crate) struct Negotiated {
    /// The server picked `h2` via ALPN.
    pub(crate) h2: bool,
    /// The session was resumed (no full handshake).
    pub(crate) resumed: bool,
}

/// Builds rustls' client configuration once per client.
pub(crate) fn client_config(
    settings: &TlsSettings,
    versions: Versions,
) -> Result<Arc<ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::new(ErrorKind::Tls, e))?;
    let builder = if settings.accept_invalid_certs {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
    } else {
        builder.with_root_certificates(roots(settings)?)
    };
    let mut config = match &settings.identity_pem {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => {
            let chain = CertificateDer::pem_slice_iter(chain)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Error::new(ErrorKind::Config, e))?;
            let key =
                PrivateKeyDer::from_pem_slice(key).map_err(|e| Error::new(ErrorKind::Config, e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| Error::new(ErrorKind::Config, e))?
        }
    };
    config.alpn_protocols = match versions {
        Versions::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Versions::Http1Only => vec![b"http/1.1".to_vec()],
        Versions::Http2Only => vec![b"h2".to_vec()],
    };
    // The default keeps 256 sessions in memory: a rotated connection resumes
    // instead of doing a full handshake.
    config.resumption = if settings.session_resumption {
        Resumption::default()
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

fn roots(settings: &TlsSettings) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if settings.built_in_roots {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    if settings.native_roots {
        native_roots(&mut roots)?;
    }
    for pem in &settings.extra_roots_pem {
        let mut found = false;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| Error::new(ErrorKind::Config, e))?;
            roots
                .add(cert)
                .map_err(|e| Error::new(ErrorKind::Config, e))?;
            found = true;
        }
        if !found {
            return Err(Error::msg(
                ErrorKind::Config,
                "add_root_certificate: no PEM certificate found",
            ));
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
