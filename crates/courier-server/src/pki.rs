//! A throwaway certificate authority for tests: [`TestPki`].
//!
//! Client tests need certificates that fail in specific ways (expired,
//! wrong name) next to ones that verify, all chaining to a root the test
//! trusts explicitly. Generating them at run time with rcgen keeps keys out
//! of the repository and makes every test run use fresh ones.

use std::fmt;

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertifiedIssuer, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::tls::TlsConfig;

/// A self-signed CA generated at run time, issuing server certificates.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// let pki = courier_server::TestPki::new();
/// let config = courier_server::ServerConfig {
///     tls: Some(pki.server_config(&["localhost", "127.0.0.1"])),
///     ..Default::default()
/// };
/// let server = courier_server::start(config).await?;
/// // A client trusting `pki.ca_pem()` verifies `server.url("/")`.
/// # Ok(())
/// # }
/// ```
///
/// Keys are ECDSA P-256 (fast to generate). Names that parse as IP
/// addresses become IP-address SANs, everything else DNS-name SANs, so both
/// `https://localhost:PORT` and `https://127.0.0.1:PORT` can verify.
pub struct TestPki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl TestPki {
    /// Generates a new CA (key and self-signed certificate).
    ///
    /// # Panics
    /// Panics if key generation or signing fails, which only happens when
    /// the system's random number generator is unavailable.
    pub fn new() -> TestPki {
        let key = KeyPair::generate().expect("generate CA key");
        // A name unique to this CA: with a shared name, a client trusting
        // another TestPki would look for the issuer by name, find the wrong
        // CA and report a bad signature instead of an unknown issuer.
        let id: String = key
            .public_key_raw()
            .iter()
            .skip(1)
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("courier test CA {id}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(params, key).expect("self-sign CA certificate");
        TestPki { ca }
    }

    /// The CA certificate as PEM: what a client adds as its trusted root.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// The CA certificate as DER, for clients that take DER directly.
    pub fn ca_der(&self) -> CertificateDer<'static> {
        self.ca.der().clone()
    }

    /// A server certificate for `names`, valid from 1975 to 4096, signed by
    /// this CA; the chain served is the leaf alone (clients hold the root).
    ///
    /// # Panics
    /// Panics if a name is neither an IP address nor a valid DNS name, or if
    /// key generation fails.
    pub fn server_config(&self, names: &[&str]) -> TlsConfig {
        self.issue(names, None)
    }

    /// Like [`TestPki::server_config`], but the certificate's validity ended
    /// long ago (it covers 2000-01-01 to 2000-01-02), so verification fails
    /// with an "expired" error and not some other one.
    ///
    /// # Panics
    /// As [`TestPki::server_config`].
    pub fn expired_server_config(&self, names: &[&str]) -> TlsConfig {
        self.issue(names, Some((2000, 2000)))
    }

    /// A client certificate for mutual TLS, signed by this CA, as PEM: the certificate and
    /// its private key (PKCS#8). `name` is its common name. A server built with
    /// `TlsConfig::require_client_certs(&pki.ca_pem())` accepts it.
    ///
    /// # Panics
    /// If key generation or signing fails (no randomness).
    pub fn client_identity(&self, name: &str) -> (String, String) {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("generate client key");
        let cert = params
            .signed_by(&key, &*self.ca)
            .expect("sign client certificate");
        (cert.pem(), key.serialize_pem())
    }

    fn issue(&self, names: &[&str], years: Option<(i32, i32)>) -> TlsConfig {
        let sans: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(sans)
            .unwrap_or_else(|err| panic!("invalid certificate name in {names:?}: {err}"));
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, *first);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        if let Some((from, until)) = years {
            params.not_before = date_time_ymd(from, 1, 1);
            params.not_after = date_time_ymd(until, 1, 2);
        }
        let key = KeyPair::generate().expect("generate server key");
        let cert = params
            .signed_by(&key, &*self.ca)
            .expect("sign server certificate");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        TlsConfig::new(vec![cert.der().clone()], key)
    }
}

impl Default for TestPki {
    /// Same as [`TestPki::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TestPki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestPki").finish_non_exhaustive()
    }
}

/// Defined here, beside the CA it uses, so that `tls.rs` needs no PKI.
impl TlsConfig {
    /// A fresh certificate for `names` (e.g. `["localhost", "127.0.0.1"]`)
    /// issued by a fresh private CA, plus that CA's certificate as PEM: the
    /// root a client must trust to connect.
    ///
    /// # Panics
    /// As [`TestPki::server_config`] (invalid name, no randomness).
    pub fn self_signed(names: &[&str]) -> (TlsConfig, String) {
        let pki = TestPki::new();
        (pki.server_config(names), pki.ca_pem())
    }
}
