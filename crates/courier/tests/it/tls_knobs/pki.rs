//! Certificates for the TLS knob tests, made at run time with rcgen: a CA
//! issuing server certificates (`localhost`) and client certificates
//! (clientAuth), each with its key, as DER and PEM.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate and its key.
pub struct Leaf {
    pub der: CertificateDer<'static>,
    pub cert_pem: String,
    pub key_pem: String,
    key_der: Vec<u8>,
}

impl Leaf {
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server certificate for `localhost` and 127.0.0.1.
    pub fn server(&self) -> Leaf {
        self.leaf(
            &["localhost", "127.0.0.1"],
            "localhost",
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate named `cn`.
    pub fn client(&self, cn: &str) -> Leaf {
        self.leaf(&[], cn, ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn leaf(&self, sans: &[&str], cn: &str, usage: ExtendedKeyUsagePurpose) -> Leaf {
        let sans = sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &*self.issuer).unwrap();
        Leaf {
            der: cert.der().clone(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            key_der: key.serialize_der(),
        }
    }
}
