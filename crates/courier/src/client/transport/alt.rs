//! HTTP/3 discovery wired into the binding (feature `http3`,
//! `ClientBuilder::http3_alt_svc`): what `Alt-Svc` taught, kept with the
//! client's settings (one store per client, shared by its clones, not in
//! the pool: the pool forgets an origin once it holds nothing), and the
//! alternatives whose QUIC failed (`connect/alt_svc.rs` parses, bounds and
//! backs off; this file decides what is learnt and when it is used).
//!
//! Only the origin's own host is used as an alternative (another port is
//! fine): QUIC then verifies the origin's name, and a request's
//! credentials never go to a host its URL did not name (RFC 7838 §2.1
//! allows other hosts only with a certificate for the origin; keeping to
//! one host makes that hold by construction). Only `https` origins that
//! connect directly (no proxy, Unix socket or custom connector) learn.

use std::sync::{Mutex, PoisonError};

use http::header::ALT_SVC;
use http::HeaderMap;
use tokio::time::Instant;

use super::dial::Origin;
use crate::connect::alt_svc::{self, AltSvcCache, BrokenAlternatives};
use crate::connect::Route;

/// Origins whose alternatives are remembered, and broken alternatives
/// (each map's bound: past it the entry that expires first goes).
const MAX_ORIGINS: usize = 1024;

/// An origin, as learnt: its host (lower case) and port.
type Key = (Box<str>, u16);

/// What a client learnt from `Alt-Svc`, across its origins.
pub(crate) struct AltStore {
    inner: Mutex<Inner>,
}

struct Inner {
    known: AltSvcCache<Key>,
    /// An origin and its alternative's port.
    broken: BrokenAlternatives<(Key, u16)>,
}

impl Default for AltStore {
    fn default() -> Self {
        AltStore {
            inner: Mutex::new(Inner {
                known: AltSvcCache::new(MAX_ORIGINS),
                broken: BrokenAlternatives::new(MAX_ORIGINS),
            }),
        }
    }
}

impl AltStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Origin {
    /// This origin may learn and use alternatives.
    pub(super) fn discovers_http3(&self) -> bool {
        let http3 = &self.settings.config.http3;
        http3.alt_svc
            && !http3.prior_knowledge
            && self.tls
            && matches!(self.route, Route::Direct | Route::Pinned)
    }

    fn key(&self) -> Key {
        (self.host.to_ascii_lowercase().into(), self.port)
    }

    /// Takes in the `Alt-Svc` of a response this origin sent (the pool's
    /// connection to it carried the response, so a redirect's or another
    /// origin's header is never taken for this one). No header changes
    /// nothing; a value too long, or unreadable, changes nothing.
    pub(crate) fn learn_alt_svc(&self, headers: &HeaderMap) {
        if !self.discovers_http3() {
            return;
        }
        let mut values = headers.get_all(ALT_SVC).iter();
        let Some(first) = values.next() else {
            return;
        };
        // Several field lines are one list; joined, within the parser's
        // bound (a longer one is ignored whole, as one long line is).
        let mut joined = first.as_bytes().to_vec();
        for more in values {
            if joined.len() + 2 + more.len() > alt_svc::MAX_VALUE_LEN {
                return;
            }
            joined.extend_from_slice(b", ");
            joined.extend_from_slice(more.as_bytes());
        }
        let key = self.key();
        let now = Instant::now();
        let mut store = self.settings.alt.lock();
        store
            .known
            .learn_where(&key, &joined, now, |alt| self.same_host(alt));
        let usable = usable(&mut store, &key, now).is_some();
        drop(store);
        self.give_way.set(usable);
    }

    /// The alternative is on this origin's host.
    fn same_host(&self, alt: &alt_svc::Alternative) -> bool {
        alt.host
            .as_deref()
            .is_none_or(|h| h.eq_ignore_ascii_case(&self.host))
    }

    /// The port of the alternative to race, if one is fresh and not broken.
    pub(super) fn alternative(&self) -> Option<u16> {
        if !self.discovers_http3() {
            return None;
        }
        let key = self.key();
        let port = usable(&mut self.settings.alt.lock(), &key, Instant::now());
        self.give_way.set(port.is_some());
        port
    }

    /// QUIC to `port` failed or lost the race: TCP for the backoff.
    pub(super) fn alternative_broken(&self, port: u16) {
        let until = self
            .settings
            .alt
            .lock()
            .broken
            .mark_broken(&(self.key(), port), Instant::now());
        self.give_way.set(false);
        tracing::debug!(
            origin = %self.authority,
            port,
            for_secs = until.saturating_duration_since(Instant::now()).as_secs(),
            "HTTP/3 alternative marked broken"
        );
    }

    /// QUIC to `port` won: its past failures are forgotten.
    pub(super) fn alternative_works(&self, port: u16) {
        self.settings.alt.lock().broken.confirm(&(self.key(), port));
    }
}

/// `key`'s fresh alternative's port, unless it is broken.
fn usable(store: &mut Inner, key: &Key, now: Instant) -> Option<u16> {
    let port = store.known.get(key, now)?.port;
    (!store.broken.is_broken(&(key.clone(), port), now)).then_some(port)
}
