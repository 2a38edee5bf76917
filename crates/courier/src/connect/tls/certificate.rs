//! [`Certificate`] and [`Identity`]: TLS material parsed when it is made,
//! so a bad file fails where it is read, with a [`ErrorKind::Config`]
//! error, not later at `build` or at the first handshake. The names and
//! constructors are reqwest's.

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, ErrorKind};

/// A certificate to trust as a root, for
/// [`ClientBuilder::add_root_certificate`](crate::ClientBuilder::add_root_certificate).
///
/// ```
/// # let pem = courier_server::TestPki::new().ca_pem();
/// let ca = courier::Certificate::from_pem(pem.as_bytes())?;
/// let client = courier::Client::builder()
///     .add_root_certificate(ca)
///     .build()?;
/// # Ok::<(), courier::Error>(())
/// ```
#[derive(Clone)]
pub struct Certificate {
    pub(crate) repr: CertRepr,
}

/// A certificate parsed, or PEM text given the old way (raw bytes to
/// `add_root_certificate`), parsed at `build`, where its error shows.
#[derive(Clone)]
pub(crate) enum CertRepr {
    Der(CertificateDer<'static>),
    Pem(Arc<[u8]>),
}

impl Certificate {
    /// One DER-encoded X.509 certificate. Fails ([`ErrorKind::Config`]) on
    /// an empty input; the rest of the parsing is rustls's, when it is
    /// added to the client's trust store at `build`.
    pub fn from_der(der: &[u8]) -> Result<Certificate, Error> {
        if der.is_empty() {
            return Err(Error::msg(ErrorKind::Config, "an empty DER certificate"));
        }
        Ok(Certificate {
            repr: CertRepr::Der(CertificateDer::from(der.to_vec())),
        })
    }

    /// The first PEM certificate (`-----BEGIN CERTIFICATE-----`) in `pem`.
    /// Fails ([`ErrorKind::Config`]) when there is none or it does not
    /// decode. For a file of several, see [`from_pem_bundle`](Self::from_pem_bundle).
    pub fn from_pem(pem: &[u8]) -> Result<Certificate, Error> {
        Certificate::from_pem_bundle(pem)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::msg(ErrorKind::Config, "no PEM certificate found"))
    }

    /// Every PEM certificate in `pem` (a CA bundle); other PEM sections are
    /// skipped. Fails ([`ErrorKind::Config`]) when one does not decode or
    /// there is none.
    pub fn from_pem_bundle(pem: &[u8]) -> Result<Vec<Certificate>, Error> {
        let certs = parse_pem_certs(pem)?;
        Ok(certs
            .into_iter()
            .map(|der| Certificate {
                repr: CertRepr::Der(der),
            })
            .collect())
    }

    /// The certificates this stands for (one, or a PEM string's several).
    pub(crate) fn ders(&self) -> Result<Vec<CertificateDer<'static>>, Error> {
        match &self.repr {
            CertRepr::Der(der) => Ok(vec![der.clone()]),
            CertRepr::Pem(pem) => parse_pem_certs(pem)
                .map_err(|e| Error::new(ErrorKind::Config, format!("add_root_certificate: {e}"))),
        }
    }
}

fn parse_pem_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::new(ErrorKind::Config, e))?;
    if certs.is_empty() {
        return Err(Error::msg(ErrorKind::Config, "no PEM certificate found"));
    }
    Ok(certs)
}

/// PEM text (one certificate or several), the form `add_root_certificate`
/// took before [`Certificate`] existed; still accepted so that code keeps
/// compiling. It is parsed at `build`, which fails with
/// [`ErrorKind::Config`] when it does not decode; prefer
/// [`Certificate::from_pem`], which fails where the text is read.
macro_rules! pem_forms {
    ($($t:ty),*) => {$(
        impl From<$t> for Certificate {
            fn from(pem: $t) -> Certificate {
                let bytes: &[u8] = pem.as_ref();
                Certificate { repr: CertRepr::Pem(Arc::from(bytes)) }
            }
        }
    )*};
}
pem_forms!(&str, String, &String, &[u8], Vec<u8>, &Vec<u8>);

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            CertRepr::Der(der) => write!(f, "Certificate({} bytes DER)", der.len()),
            CertRepr::Pem(pem) => write!(f, "Certificate({} bytes PEM, unparsed)", pem.len()),
        }
    }
}

/// A client certificate chain and its private key, for mutual TLS
/// ([`ClientBuilder::identity`](crate::ClientBuilder::identity)). To change
/// the certificate while the client runs (rotation), see
/// [`ClientBuilder::client_cert_resolver`](crate::ClientBuilder::client_cert_resolver).
#[derive(Clone)]
pub struct Identity {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: Arc<PrivateKeyDer<'static>>,
}

impl Identity {
    /// The certificate chain (leaf first) and the private key (PKCS#8,
    /// PKCS#1 or SEC1) from one PEM buffer, as reqwest's `from_pem`: cat
    /// the key and the chain into one file. Fails ([`ErrorKind::Config`])
    /// when either is missing or does not decode.
    pub fn from_pem(pem: &[u8]) -> Result<Identity, Error> {
        Identity::from_pem_pair(pem, pem)
    }

    /// The certificate chain from `cert_chain_pem` and the private key from
    /// `key_pem` (two files, as a certificate manager writes them). Fails
    /// ([`ErrorKind::Config`]) when either is missing or does not decode.
    pub fn from_pem_pair(cert_chain_pem: &[u8], key_pem: &[u8]) -> Result<Identity, Error> {
        let chain = parse_pem_certs(cert_chain_pem)?;
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| Error::new(ErrorKind::Config, format!("client private key: {e}")))?;
        Ok(Identity {
            chain,
            key: Arc::new(key),
        })
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key.
        f.debug_struct("Identity")
            .field("certificates", &self.chain.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOT_PEM: &[u8] = b"not a certificate";

    #[test]
    fn bad_material_is_a_config_error_where_it_is_read() {
        for err in [
            Certificate::from_pem(NOT_PEM).unwrap_err(),
            Certificate::from_pem_bundle(b"").unwrap_err(),
            Certificate::from_der(b"").unwrap_err(),
            Identity::from_pem(NOT_PEM).unwrap_err(),
        ] {
            assert_eq!(err.kind(), ErrorKind::Config, "{err}");
        }
        let legacy = Certificate::from("not a certificate");
        assert_eq!(legacy.ders().unwrap_err().kind(), ErrorKind::Config);
    }
}
