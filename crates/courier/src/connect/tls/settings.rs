//! The TLS knobs a [`ClientBuilder`](crate::ClientBuilder) collects, kept
//! here beside the code that reads them so `connect` needs nothing from the
//! client's configuration above it.

use std::sync::Arc;

use super::{Certificate, Identity, Version};

/// TLS settings, turned into a rustls `ClientConfig` when the client is built.
#[derive(Clone)]
pub(crate) struct TlsSettings {
    pub(crate) built_in_roots: bool,
    pub(crate) native_roots: bool,
    pub(crate) extra_roots: Vec<Certificate>,
    pub(crate) accept_invalid_certs: bool,
    pub(crate) identity: Option<Identity>,
    pub(crate) session_resumption: bool,
    pub(crate) min_version: Option<Version>,
    pub(crate) max_version: Option<Version>,
    /// A client certificate chosen at every full handshake (rotation).
    pub(crate) cert_resolver: Option<Arc<dyn rustls::client::ResolvesClientCert>>,
    /// The caller's whole configuration (`tls_config`): then none of the
    /// knobs above may be changed.
    pub(crate) preconfigured: Option<Arc<rustls::ClientConfig>>,
}

impl TlsSettings {
    /// The first knob set away from its default, by its builder name: it
    /// would be silently ignored beside `tls_config`.
    pub(crate) fn changed_knob(&self) -> Option<&'static str> {
        [
            (!self.built_in_roots, "tls_built_in_root_certs"),
            (self.native_roots, "tls_native_roots"),
            (!self.extra_roots.is_empty(), "add_root_certificate"),
            (self.accept_invalid_certs, "danger_accept_invalid_certs"),
            (self.identity.is_some(), "identity"),
            (!self.session_resumption, "tls_session_resumption"),
            (self.min_version.is_some(), "min_tls_version"),
            (self.max_version.is_some(), "max_tls_version"),
            (self.cert_resolver.is_some(), "client_cert_resolver"),
        ]
        .into_iter()
        .find_map(|(changed, name)| changed.then_some(name))
    }
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            built_in_roots: true,
            native_roots: false,
            extra_roots: Vec::new(),
            accept_invalid_certs: false,
            identity: None,
            session_resumption: true,
            min_version: None,
            max_version: None,
            cert_resolver: None,
            preconfigured: None,
        }
    }
}
