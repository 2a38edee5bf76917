//! One certificate for every TLS case (self-signed for `localhost`,
//! 127.0.0.1 and `origin.test`, the name the hostile nameserver's cases
//! give the origin: hickory answers `localhost` itself), trusted by the cases' clients as a root), and the acceptor
//! that offers by ALPN the protocol a case is about.

use std::sync::{Arc, OnceLock};

use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// The corpus's certificate and key (the hostile HTTP/3 class's QUIC
/// server uses it too).
pub struct Identity {
    pub pem: String,
    pub cert: CertificateDer<'static>,
    pub key: Vec<u8>,
}

pub fn identity() -> &'static Identity {
    static ID: OnceLock<Identity> = OnceLock::new();
    ID.get_or_init(|| {
        let names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "origin.test".to_string(),
        ];
        let certified = rcgen::generate_simple_self_signed(names).expect("certificate");
        Identity {
            pem: certified.cert.pem(),
            cert: certified.cert.der().clone(),
            key: certified.signing_key.serialize_der(),
        }
    })
}

/// The PEM a client trusts.
pub fn root_pem() -> &'static str {
    &identity().pem
}

/// An acceptor offering exactly `alpn` (`h2` or `http/1.1`).
pub fn acceptor(alpn: &[u8]) -> TlsAcceptor {
    let id = identity();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(id.key.clone()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![id.cert.clone()], key)
        .expect("server certificate");
    config.alpn_protocols = vec![alpn.to_vec()];
    TlsAcceptor::from(Arc::new(config))
}
