//! Connection management: a map from origin to [`OriginPool`], plus what all
//! origins share (configuration, metrics, the connector, the scavenger).
//!
//! The request path takes a read lock on the origin map (uncontended in the
//! steady state) and then works only with its origin's own small state.

mod common;
mod expiry;
#[cfg(test)]
mod fake_tests;
mod origin;

pub(crate) use common::protocol;
pub(crate) use common::PoolConfig;
use common::Shared;
pub(crate) use origin::Lease;
pub(crate) use origin::OriginPool;
pub(crate) use origin::Sending;
pub(crate) use protocol::Protocol;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

use http::uri::{Authority, Scheme};
use http::Uri;
use tokio::time::Instant;

use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;

/// Identifies an origin: scheme + host + port (as written in the URL's authority).
#[derive(Clone, Eq)]
struct OriginKey {
    https: bool,
    // `Authority` compares and hashes case-insensitively, and cloning it only
    // bumps a reference count, so building a key costs no allocation.
    authority: Authority,
}

impl PartialEq for OriginKey {
    fn eq(&self, other: &Self) -> bool {
        // Byte for byte first: the same URL is what a client sends again and
        // again, and a plain compare is a fraction of a case-insensitive one.
        self.https == other.https
            && (self.authority.as_str() == other.authority.as_str()
                || self.authority == other.authority)
    }
}

impl Hash for OriginKey {
    /// Case-insensitive, as `Authority`'s own `Hash` (and so consistent with
    /// its `Eq`), but a chunk at a time: `Authority` feeds the hasher one byte
    /// per call, and with SipHash that was 930 instructions, 6 % of an
    /// HTTP/1.1 request, to find the origin of every request.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.https.hash(state);
        let mut lower = [0u8; 64];
        for chunk in self.authority.as_str().as_bytes().chunks(lower.len()) {
            let lower = &mut lower[..chunk.len()];
            lower.copy_from_slice(chunk);
            lower.make_ascii_lowercase();
            state.write(lower);
        }
    }
}

/// The origins a pool knows, and the one made last.
struct Origins<P: Protocol> {
    /// Hashed with foldhash (seeded per process), which costs a fraction of
    /// SipHash on a short key.
    map: HashMap<OriginKey, Arc<OriginPool<P>>, foldhash::quality::RandomState>,
    /// The origin made last, also in `map`: a client that talks to one
    /// origin (most service clients, the bench) finds it with a compare of
    /// the authority's bytes instead of a hash and a probe (about 300
    /// instructions of an HTTP/1.1 request). Set when an origin is made,
    /// cleared before the scavenger forgets origins, so it never keeps one
    /// alive nor hands out one the map no longer holds.
    last: Option<(OriginKey, Arc<OriginPool<P>>)>,
}

impl<P: Protocol> Origins<P> {
    /// The last origin made, if it is `https` + `authority` byte for byte.
    #[inline]
    fn last(&self, https: bool, authority: &Authority) -> Option<&Arc<OriginPool<P>>> {
        match &self.last {
            Some((key, origin))
                if key.https == https && key.authority.as_str() == authority.as_str() =>
            {
                Some(origin)
            }
            _ => None,
        }
    }
}

/// The client's connection pool, generic over the protocols its
/// connections speak (see [`protocol`]).
pub(crate) struct Pool<P: Protocol> {
    inner: Arc<PoolInner<P>>,
}

pub(crate) struct PoolInner<P: Protocol> {
    /// Looked up on every request.
    origins: RwLock<Origins<P>>,
    shared: Arc<Shared>,
    /// What the protocols share across origins.
    client: Arc<P::Client>,
    scavenger_started: AtomicBool,
    /// Ends the scavenger when the pool goes.
    scavenger_stop: Arc<tokio::sync::Notify>,
}

impl<P: Protocol> Drop for PoolInner<P> {
    fn drop(&mut self) {
        // A permit is stored if the scavenger is not waiting right now.
        self.scavenger_stop.notify_one();
    }
}

impl<P: Protocol> Pool<P> {
    /// A pool counting into `metrics`, whose protocols share `client`.
    pub(crate) fn new(
        config: PoolConfig,
        metrics: Arc<Metrics>,
        client: Arc<P::Client>,
    ) -> Pool<P> {
        Pool {
            inner: Arc::new(PoolInner {
                origins: RwLock::new(Origins {
                    map: HashMap::default(),
                    last: None,
                }),
                client,
                shared: Arc::new(Shared::new(config, metrics)),
                scavenger_started: AtomicBool::new(false),
                scavenger_stop: Arc::new(tokio::sync::Notify::new()),
            }),
        }
    }

    /// The pool for `uri`'s origin, created on first use.
    pub(crate) fn origin(&self, uri: &Uri) -> Result<Arc<OriginPool<P>>, Error> {
        let https = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => false,
            Some(s) if *s == Scheme::HTTPS => true,
            Some(_) => return Err(Error::msg(ErrorKind::InvalidUrl, "unsupported URL scheme")),
            None => return Err(Error::msg(ErrorKind::InvalidUrl, "URL has no scheme")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| Error::msg(ErrorKind::InvalidUrl, "URL has no host"))?;
        {
            let origins = read(&self.inner.origins);
            // Only checked authorities are in the map.
            if let Some(origin) = origins.last(https, authority) {
                return Ok(Arc::clone(origin));
            }
            let key = OriginKey {
                https,
                authority: authority.clone(),
            };
            if let Some(origin) = origins.map.get(&key) {
                return Ok(Arc::clone(origin));
            }
        }
        if authority.host().is_empty() {
            return Err(Error::msg(ErrorKind::InvalidUrl, "URL has no host"));
        }
        if authority.as_str().contains('@') {
            return Err(Error::msg(
                ErrorKind::InvalidUrl,
                "credentials in the URL are not supported; set an Authorization header",
            ));
        }
        self.start_scavenger();
        let scheme = if https { Scheme::HTTPS } else { Scheme::HTTP };
        let protocol = P::origin(&self.inner.client, &scheme, authority)?;
        let mut origins = self
            .inner
            .origins
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let key = OriginKey {
            https,
            authority: authority.clone(),
        };
        let origin = origins.map.entry(key.clone()).or_insert_with(|| {
            Arc::new(OriginPool::new(
                scheme,
                authority.clone(),
                protocol,
                Arc::clone(&self.inner.shared),
            ))
        });
        let origin = Arc::clone(origin);
        origins.last = Some((key, Arc::clone(&origin)));
        Ok(origin)
    }

    /// What the protocols share across origins.
    pub(crate) fn client(&self) -> &Arc<P::Client> {
        &self.inner.client
    }

    fn start_scavenger(&self) {
        if self.inner.scavenger_started.swap(true, Relaxed) {
            return;
        }
        let period = expiry::scavenge_period(&self.inner.shared.config);
        let stop = Arc::clone(&self.inner.scavenger_stop);
        expiry::spawn_scavenger(Arc::downgrade(&self.inner), stop, period);
    }
}

impl<P: Protocol> PoolInner<P> {
    /// One scavenger pass over every origin; forgets origins that hold nothing
    /// and that no request is using.
    pub(crate) fn scavenge(&self, now: Instant) {
        let idle_timeout = self.shared.config.idle_timeout;
        let origins: Vec<Arc<OriginPool<P>>> = read(&self.origins).map.values().cloned().collect();
        let mut empty = false;
        for origin in &origins {
            empty |= origin.scavenge(now, idle_timeout);
        }
        drop(origins);
        if empty {
            let mut origins = self.origins.write().unwrap_or_else(|p| p.into_inner());
            // The last one made is found again through the map (and kept
            // again when it is made anew).
            origins.last = None;
            // strong_count == 1: only the map holds it, so no request can be
            // using it and removing it cannot split an origin in two. The
            // emptiness is checked again: a request may have come meanwhile.
            origins
                .map
                .retain(|_, o| Arc::strong_count(o) > 1 || !o.holds_nothing());
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(key: &OriginKey) -> u64 {
        use std::hash::BuildHasher;
        // Fixed keys: the same hasher for both sides.
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(key)
    }

    fn key(https: bool, authority: &str) -> OriginKey {
        OriginKey {
            https,
            authority: authority.parse().unwrap(),
        }
    }

    #[test]
    fn origin_keys_ignore_case_in_hash_and_eq() {
        let long = format!("{}.example.com:8443", "Sub".repeat(40));
        for (a, b) in [
            ("Example.COM:8080", "example.com:8080"),
            (long.as_str(), long.to_ascii_lowercase().as_str()),
        ] {
            assert!(key(false, a) == key(false, b));
            assert_eq!(hash(&key(false, a)), hash(&key(false, b)));
        }
        assert!(key(false, "a.example:1") != key(true, "a.example:1"));
        assert_ne!(
            hash(&key(false, "a.example:1")),
            hash(&key(false, "b.example:1"))
        );
    }
}
