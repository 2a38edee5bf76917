//! [`ClientBuilder`]'s TLS knobs: trust (roots), the client's identity
//! (fixed or rotating), protocol versions, session resumption, and a whole
//! `rustls::ClientConfig` for what the knobs do not cover.

use std::sync::{Arc, OnceLock};

use crate::client::ClientBuilder;
use crate::connect::tls::{Certificate, Identity, Version};

impl ClientBuilder {
    /// Trusts `cert` as a root, in addition to the built-in web PKI roots
    /// (see [`tls_built_in_root_certs`](Self::tls_built_in_root_certs)).
    /// Call it once per certificate; [`Certificate::from_pem_bundle`] reads
    /// a file of several.
    ///
    /// PEM text (`&str`, `String`, `&[u8]`, `Vec<u8>`), the form this took
    /// before [`Certificate`], is still accepted and may hold several
    /// certificates; it is parsed at [`build`](Self::build), which fails
    /// with [`ErrorKind::Config`](crate::ErrorKind::Config) if it does not
    /// decode. [`Certificate::from_pem`] fails where the file is read.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let pem = std::fs::read("ca.pem")?;
    /// let client = courier::Client::builder()
    ///     .add_root_certificate(courier::Certificate::from_pem(&pem)?)
    ///     .tls_built_in_root_certs(false)
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_root_certificate(mut self, cert: impl Into<Certificate>) -> Self {
        self.config.tls.extra_roots.push(cert.into());
        self
    }

    /// Whether to trust the built-in web PKI roots (webpki-roots). Turn off to
    /// trust only certificates added with
    /// [`add_root_certificate`](Self::add_root_certificate) (and the
    /// system's, with [`tls_native_roots`](Self::tls_native_roots)). Default: on.
    pub fn tls_built_in_root_certs(mut self, enabled: bool) -> Self {
        self.config.tls.built_in_roots = enabled;
        self
    }

    /// Trusts the operating system's certificate store too (with the
    /// `native-roots` feature; without it `build` fails with
    /// [`ErrorKind::Config`](crate::ErrorKind::Config)). Combine with
    /// `tls_built_in_root_certs(false)` to trust the system's store alone,
    /// as an enterprise CA setup wants. Default: off.
    pub fn tls_native_roots(mut self, enabled: bool) -> Self {
        self.config.tls.native_roots = enabled;
        self
    }

    /// Presents `identity` (a client certificate chain and its key) to
    /// servers that ask for one: mutual TLS. For a certificate that changes
    /// while the client runs, use
    /// [`client_cert_resolver`](Self::client_cert_resolver) instead (not
    /// both: `build` fails). A key that does not match the certificate
    /// fails `build` with [`ErrorKind::Config`](crate::ErrorKind::Config).
    ///
    /// Before [`Identity`] this took the chain and the key as two PEM
    /// buffers; [`Identity::from_pem_pair`] takes the same two.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let identity = courier::Identity::from_pem_pair(
    ///     &std::fs::read("client.crt")?,
    ///     &std::fs::read("client.key")?,
    /// )?;
    /// let client = courier::Client::builder().identity(identity).build()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn identity(mut self, identity: Identity) -> Self {
        self.config.tls.identity = Some(identity);
        self
    }

    /// Asks `resolver` for the client certificate at every full TLS
    /// handshake, so a certificate rotated on disk (SPIFFE/SPIRE, cert-manager,
    /// a short-lived CA) is presented by every connection opened after the
    /// rotation, while connections already open keep the one they were
    /// opened with (their requests are not disturbed; rotate them with
    /// [`pooled_connection_lifetime`](Self::pooled_connection_lifetime)).
    ///
    /// TLS sessions are remembered per certificate: when the resolver's
    /// answer changes, the sessions of the old one are forgotten, since a
    /// resumed session would carry the old identity without a certificate
    /// being sent.
    ///
    /// A rotating resolver keeps the current key behind a lock; whatever
    /// watches the files swaps it:
    ///
    /// ```
    /// use std::sync::{Arc, RwLock};
    /// use rustls::client::ResolvesClientCert;
    /// use rustls::sign::CertifiedKey;
    ///
    /// #[derive(Debug)]
    /// struct Rotating(RwLock<Option<Arc<CertifiedKey>>>);
    ///
    /// impl ResolvesClientCert for Rotating {
    ///     fn resolve(&self, _: &[&[u8]], _: &[rustls::SignatureScheme]) -> Option<Arc<CertifiedKey>> {
    ///         self.0.read().unwrap().clone()
    ///     }
    ///     fn has_certs(&self) -> bool {
    ///         true
    ///     }
    /// }
    ///
    /// let current = Arc::new(Rotating(RwLock::new(None))); // set from the files
    /// let client = courier::Client::builder()
    ///     .client_cert_resolver(current.clone())
    ///     .build()?;
    /// # Ok::<(), courier::Error>(())
    /// ```
    pub fn client_cert_resolver(
        mut self,
        resolver: Arc<dyn rustls::client::ResolvesClientCert>,
    ) -> Self {
        self.config.tls.cert_resolver = Some(resolver);
        self
    }

    /// The oldest TLS version to accept: a server that offers only older
    /// ones fails the handshake with [`ErrorKind::Tls`](crate::ErrorKind::Tls).
    /// courier speaks TLS 1.2 and 1.3. Default: TLS 1.2.
    ///
    /// ```
    /// use courier::tls::Version;
    /// let client = courier::Client::builder()
    ///     .min_tls_version(Version::TLS_1_3)
    ///     .build()?;
    /// # Ok::<(), courier::Error>(())
    /// ```
    pub fn min_tls_version(mut self, version: Version) -> Self {
        self.config.tls.min_version = Some(version);
        self
    }

    /// The newest TLS version to offer. Below TLS 1.2, or below the
    /// minimum, no version is left and `build` fails with
    /// [`ErrorKind::Config`](crate::ErrorKind::Config). Default: TLS 1.3.
    pub fn max_tls_version(mut self, version: Version) -> Self {
        self.config.tls.max_version = Some(version);
        self
    }

    /// Resume earlier TLS sessions so rotated connections skip the full
    /// handshake. Default: on.
    pub fn tls_session_resumption(mut self, enabled: bool) -> Self {
        self.config.tls.session_resumption = enabled;
        self
    }

    /// **Turns off certificate verification**: any certificate, for any name,
    /// is accepted. Only for tests against self-signed servers. Default: off.
    pub fn danger_accept_invalid_certs(mut self, accept: bool) -> Self {
        self.config.tls.accept_invalid_certs = accept;
        self
    }

    /// Uses `config` for TLS as given (its verifier, trust, client
    /// certificate or resolver, versions, provider, key log, session
    /// store), for what the other knobs do not cover: a SPIFFE verifier, a
    /// pinned key, a FIPS provider. reqwest calls this
    /// `use_preconfigured_tls`.
    ///
    /// Its ALPN list is replaced by courier's (`h2` and `http/1.1`, or one
    /// of them under [`http1_only`](Self::http1_only) and
    /// [`http2_prior_knowledge`](Self::http2_prior_knowledge)): courier
    /// offers exactly what it will speak, since a server that picked
    /// another protocol from a merged list would get HTTP it does not
    /// expect. The other TLS knobs (roots, identity, versions, resolver,
    /// resumption, `danger_accept_invalid_certs`) cannot be combined with
    /// it: `build` fails with [`ErrorKind::Config`](crate::ErrorKind::Config)
    /// naming the knob, instead of ignoring it.
    ///
    /// ```
    /// let mut roots = rustls::RootCertStore::empty();
    /// roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    /// let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    /// let tls = rustls::ClientConfig::builder_with_provider(provider)
    ///     .with_safe_default_protocol_versions()
    ///     .unwrap()
    ///     .with_root_certificates(roots)
    ///     .with_no_client_auth();
    /// let client = courier::Client::builder().tls_config(tls).build()?;
    /// # Ok::<(), courier::Error>(())
    /// ```
    pub fn tls_config(mut self, config: rustls::ClientConfig) -> Self {
        self.config.tls.preconfigured = Some(Arc::new(config));
        self
    }

    /// Shares the TLS configuration (and with it the session cache) with
    /// every client built with the same `cell`: a factory gives each name one,
    /// so a rotated pool resumes the sessions of the pool before it. rustls
    /// resumes only under the configuration that verified the session, so
    /// sharing the session store alone would not do.
    pub(crate) fn shared_tls(mut self, cell: Arc<OnceLock<Arc<rustls::ClientConfig>>>) -> Self {
        self.shared_tls = Some(cell);
        self
    }
}
