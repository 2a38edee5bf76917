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

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

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
pub(super) type Key = (Box<str>, u16);

/// What a client learnt from `Alt-Svc`, across its origins.
pub(crate) struct AltStore {
    inner: Mutex<Inner>,
    /// Dropped with the store (with the client's last clone): the re-arm
    /// timers watch it and end then, not when their backoff would.
    dropped: tokio::sync::watch::Sender<()>,
}

pub(super) struct Inner {
    pub(super) known: AltSvcCache<Key>,
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
            dropped: tokio::sync::watch::Sender::new(()),
        }
    }
}

impl AltStore {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Origin {
    /// This origin may learn and use alternatives.
    pub(super) fn discovers_http3(&self) -> bool {
        let http3 = &self.settings.config.http3;
        http3.discovers()
            && !http3.prior_knowledge
            && self.tls
            && matches!(self.route, Route::Direct | Route::Pinned)
    }

    pub(super) fn key(&self) -> Key {
        (self.host.to_ascii_lowercase().into(), self.port)
    }

    /// Takes in the `Alt-Svc` of a response this origin sent (the pool's
    /// connection to it carried the response, so a redirect's or another
    /// origin's header is never taken for this one). No header changes
    /// nothing; a value too long, or unreadable, changes nothing.
    pub(crate) fn learn_alt_svc(&self, headers: &HeaderMap) {
        if !self.discovers_http3() || !self.settings.config.http3.alt_svc {
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
        let withdrawn = store.known.get(&key, now).is_none();
        let usable = usable(&mut store, &key, now).is_some();
        drop(store);
        self.give_way.set(usable);
        if withdrawn {
            // `clear`, or an offer without an alternative we may use: the
            // QUIC connections the old one made drain.
            self.alt_offer.withdraw();
        }
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
        self.rearm_at(until);
    }

    /// When the backoff ends, the alternative is tried again if it is still
    /// known: the origin's TCP connections give way once more, so its next
    /// dial races. Without this an origin served by one long-lived HTTP/2
    /// connection would never dial again, and would stay on TCP until a
    /// response repeated the offer. The timer holds no strong reference to
    /// the client (a dropped client's timer does nothing) and is one per
    /// failure: a race marks the alternative once. It ends when the client
    /// is dropped: a client made per job must not leave a task per broken
    /// alternative behind for minutes.
    fn rearm_at(&self, until: Instant) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let settings = Arc::downgrade(&self.settings);
        let mut dropped = self.settings.alt.dropped.subscribe();
        let give_way = self.give_way.clone();
        let key = self.key();
        runtime.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep_until(until) => {}
                // Only ever an error: nothing is sent, the sender is dropped.
                _ = dropped.changed() => return,
            }
            let Some(settings) = settings.upgrade() else {
                return;
            };
            if usable(&mut settings.alt.lock(), &key, Instant::now()).is_some() {
                give_way.set(true);
            }
        });
    }

    /// QUIC to `port` won: its past failures are forgotten.
    pub(super) fn alternative_works(&self, port: u16) {
        self.settings.alt.lock().broken.confirm(&(self.key(), port));
    }
}

/// An origin's `Alt-Svc` offers as a count of withdrawals: a QUIC
/// connection an offer made keeps the count it was dialed under
/// ([`OfferMark`]), and takes no new request once the origin has withdrawn
/// its offer since (`clear`, or a new value with no usable `h3`): as after
/// a GOAWAY, its requests in flight finish and the pool closes it when it
/// is idle, while new requests go over TCP. One relaxed load per checkout
/// of such a connection; connections by prior knowledge have no mark.
#[derive(Debug, Clone, Default)]
pub(crate) struct AltOffer(Arc<AtomicU64>);

impl AltOffer {
    fn withdraw(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    /// The offer as it stands, for a connection dialed now.
    pub(super) fn mark(&self) -> OfferMark {
        OfferMark {
            offer: self.clone(),
            at: self.0.load(Relaxed),
        }
    }
}

/// The offer a QUIC connection was dialed under (see [`AltOffer`]).
#[derive(Debug)]
pub(crate) struct OfferMark {
    offer: AltOffer,
    at: u64,
}

impl OfferMark {
    /// Not withdrawn since the dial.
    pub(super) fn stands(&self) -> bool {
        self.offer.0.load(Relaxed) == self.at
    }
}

/// `key`'s fresh alternative's port, unless it is broken.
pub(super) fn usable(store: &mut Inner, key: &Key, now: Instant) -> Option<u16> {
    let port = store.known.get(key, now)?.port;
    (!store.broken.is_broken(&(key.clone(), port), now)).then_some(port)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::uri::{Authority, Scheme};
    use http::{HeaderMap, HeaderValue};

    use super::*;
    use crate::config::Config;
    use crate::connect::alt_svc::BROKEN_BASE;
    use crate::metrics::Metrics;

    fn origin() -> (super::super::Pool, Origin) {
        let mut config = Config::default();
        config.http3.alt_svc = true;
        let pool = super::super::Pool::for_client(config, Arc::new(Metrics::default()), None);
        let authority = Authority::from_static("localhost:8443");
        let origin = Origin::new(pool.client(), &Scheme::HTTPS, &authority).expect("origin");
        (pool, origin)
    }

    fn offer(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ALT_SVC, HeaderValue::from_static(value));
        headers
    }

    /// A broken alternative is tried again when its backoff ends, without
    /// a response repeating the offer: the TCP connections give way again
    /// (so the next dial races), unless the offer was withdrawn meanwhile.
    #[tokio::test(start_paused = true)]
    async fn a_broken_alternative_is_rearmed_when_its_backoff_ends() {
        let (_pool, origin) = origin();
        origin.learn_alt_svc(&offer("h3=\":8443\"; ma=86400"));
        assert!(origin.give_way.get(), "an offer: TCP gives way");
        origin.alternative_broken(8443);
        assert!(!origin.give_way.get(), "broken: TCP stays");
        assert_eq!(origin.alternative(), None);
        tokio::time::sleep(BROKEN_BASE - Duration::from_secs(1)).await;
        assert!(!origin.give_way.get(), "not before the backoff ends");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(origin.give_way.get(), "re-armed when it ends");
        assert_eq!(origin.alternative(), Some(8443), "the next dial races");

        // Broken again (twice as long), then withdrawn: nothing re-arms.
        origin.alternative_broken(8443);
        origin.learn_alt_svc(&offer("clear"));
        tokio::time::sleep(2 * BROKEN_BASE + Duration::from_secs(1)).await;
        assert!(!origin.give_way.get(), "a withdrawn offer is not re-armed");
        assert_eq!(origin.alternative(), None);
    }

    /// A dropped client's re-arm timer ends with it, not when the backoff
    /// would have (minutes): a client made per job would otherwise leave a
    /// task behind for every alternative it found broken.
    #[tokio::test(start_paused = true)]
    async fn a_dropped_clients_rearm_timer_ends_with_it() {
        let metrics = tokio::runtime::Handle::current().metrics();
        let base = metrics.num_alive_tasks();
        let (pool, origin) = origin();
        origin.learn_alt_svc(&offer("h3=\":8443\"; ma=86400"));
        origin.alternative_broken(8443);
        assert!(metrics.num_alive_tasks() > base, "the timer runs");
        drop(origin);
        drop(pool);
        assert_eq!(
            crate::test_support::alive_tasks_once_settled(&metrics, base).await,
            base,
            "a task outlived its client"
        );
    }
}
