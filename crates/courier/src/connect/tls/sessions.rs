//! TLS sessions kept under the client certificate they were made with.
//!
//! A resumed session (a TLS 1.3 ticket, a TLS 1.2 session id) carries the
//! client identity of the full handshake that made it: the server takes
//! the certificate from the session and asks for none. With a rotating
//! [`client_cert_resolver`](crate::ClientBuilder::client_cert_resolver),
//! every new connection after a rotation would resume and keep presenting
//! the old certificate until the sessions ran out, which with a busy
//! server is never. So the store remembers which certificate the resolver
//! gave when its sessions were saved, asks it again before handing one
//! out, and forgets them all when the answer changed: the next connection
//! makes a full handshake with the new certificate. Connections already
//! open keep theirs (TLS has no way to change it mid-connection).

use std::fmt;
use std::sync::{Arc, Mutex};

use rustls::client::{
    ClientSessionMemoryCache, ClientSessionStore, ResolvesClientCert, Tls12ClientSessionValue,
    Tls13ClientSessionValue,
};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{NamedGroup, SignatureScheme};

/// As rustls's default store.
const SESSIONS: usize = 256;

pub(crate) struct IdentityBound {
    resolver: Arc<dyn ResolvesClientCert>,
    /// What the resolver is asked with: every scheme the provider verifies
    /// (the server's list is not known before the handshake).
    schemes: Vec<SignatureScheme>,
    /// The leaf certificate the sessions in `sessions` were saved under.
    state: Mutex<(
        Option<CertificateDer<'static>>,
        Arc<ClientSessionMemoryCache>,
    )>,
}

impl IdentityBound {
    pub(crate) fn new(
        resolver: Arc<dyn ResolvesClientCert>,
        schemes: Vec<SignatureScheme>,
    ) -> Self {
        IdentityBound {
            resolver,
            schemes,
            state: Mutex::new((None, Arc::new(ClientSessionMemoryCache::new(SESSIONS)))),
        }
    }

    /// The sessions saved under the resolver's current certificate (a new,
    /// empty store when it changed).
    fn current(&self) -> Arc<ClientSessionMemoryCache> {
        // The resolver is called outside the lock: it is the caller's code.
        let leaf = self
            .resolver
            .resolve(&[], &self.schemes)
            .and_then(|key| key.cert.first().cloned());
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.0 != leaf {
            if state.0.is_some() {
                tracing::debug!("client certificate changed: TLS sessions of the old one dropped");
            }
            *state = (leaf, Arc::new(ClientSessionMemoryCache::new(SESSIONS)));
        }
        Arc::clone(&state.1)
    }
}

impl fmt::Debug for IdentityBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityBound").finish_non_exhaustive()
    }
}

impl ClientSessionStore for IdentityBound {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.current().set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.current().kx_hint(server_name)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.current().set_tls12_session(server_name, value);
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.current().tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.current().remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.current().insert_tls13_ticket(server_name, value);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.current().take_tls13_ticket(server_name)
    }
}
