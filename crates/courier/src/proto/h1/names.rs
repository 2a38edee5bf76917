//! The header names of the last responses on one connection, and the map
//! a head with the same names is made from (see [`Names`]).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::decode::Role;
use super::repeated::Layout;
use crate::error::{Error, ErrorKind};

/// Header name positions remembered per connection.
const NAMES: usize = 16;

/// The header names of the last responses on one connection, by position. A
/// server sends the same names in the same order on every response, and
/// comparing a name's bytes with the last one's costs less than parsing and
/// validating it again; the same bytes always make the same name. Bounded:
/// the first [`NAMES`] positions, each keeping its bytes' buffer (a miss
/// reuses it, so a server that varies its names costs no allocation per head).
#[derive(Debug, Default)]
pub(crate) struct Names {
    seen: Vec<(Vec<u8>, HeaderName, Role)>,
    /// The last head's names, in order, when they were all remembered and
    /// distinct, each with a value a head had there (empty at first): a
    /// head with the same names clones it and fills in the values that
    /// differ (see [`Names::template`]); a head whose values are all its
    /// values shares it (see [`Names::shared`]). Renewing its values while
    /// a response holds it copies it first (`Arc::make_mut`).
    template: Option<Arc<HeaderMap>>,
    /// Heads read from the template since its values were last renewed.
    since_renewed: u32,
    /// A fingerprint of the values the last head had that the template's
    /// differ from (0: none did): the same values twice in a row renew the
    /// template at once (see [`RENEW_EVERY`]).
    last_changed: u64,
    /// The last head's layout, kept while the template holds its names: a
    /// head laid out alike is read without `httparse` (`repeated.rs`).
    pub(super) layout: Layout,
}

/// A template's values are renewed (copied into one buffer of its own) when
/// a head's values differ from them, at most once per this many heads
/// unless two heads in a row differ from it the same way: a server whose
/// `Date` moves on every second renews about once a second, on the second
/// head with the new date, however few heads a second the connection
/// carries (waiting for 64 heads made a connection with 10 requests a
/// second copy and check its changed values on most heads); one that sends
/// a new request id on every response costs one allocation per this many
/// heads, and its changing values are checked as if there were no
/// template. The copy is the template's own, so that no response's arena
/// is kept from being reused.
const RENEW_EVERY: u32 = 64;

/// Heads between two renewals at least, however the values repeat: a server
/// whose values collide in [`Changed`]'s fingerprint on purpose renews at
/// most once per this many heads.
const RENEW_MIN: u32 = 2;

/// The fingerprint of the values of one head that differ from the template's.
pub(super) struct Changed(foldhash::fast::FoldHasher);

impl Changed {
    pub(super) fn new() -> Changed {
        use std::hash::BuildHasher;
        Changed(foldhash::fast::FixedState::with_seed(0).build_hasher())
    }

    /// The header at position `at` has `value`, not the template's.
    pub(super) fn add(&mut self, at: usize, value: &[u8]) {
        use std::hash::Hasher;
        self.0.write_usize(at);
        self.0.write(value);
    }

    fn finish(&self) -> u64 {
        // 0 is "nothing changed".
        std::hash::Hasher::finish(&self.0).max(1)
    }
}

impl Names {
    /// The name for the bytes `raw` of the header at position `at`.
    pub(super) fn name(&mut self, at: usize, raw: &[u8]) -> Result<HeaderName, Error> {
        if let Some((bytes, name, _)) = self.seen.get(at) {
            if bytes.as_slice() == raw {
                return Ok(name.clone());
            }
        }
        let name = HeaderName::from_bytes(raw).map_err(|e| Error::new(ErrorKind::Protocol, e))?;
        // The template's names are the remembered ones: it goes with them.
        self.template = None;
        self.layout.forget();
        let role = Role::of(&name);
        if let Some((bytes, cached, cached_role)) = self.seen.get_mut(at) {
            bytes.clear();
            bytes.extend_from_slice(raw);
            *cached = name.clone();
            *cached_role = role;
        } else if at == self.seen.len() && at < NAMES {
            self.seen.push((raw.to_vec(), name.clone(), role));
        }
        Ok(name)
    }

    /// The role of the remembered name at position `at`, if its bytes are `raw`.
    pub(super) fn remembered(&self, at: usize, raw: &[u8]) -> Option<Role> {
        match self.seen.get(at) {
            Some((bytes, _, role)) if bytes.as_slice() == raw => Some(*role),
            _ => None,
        }
    }

    /// The role of the remembered name at position `at` (`Other` if none).
    pub(super) fn role(&self, at: usize) -> Role {
        self.seen.get(at).map_or(Role::Other, |(_, _, role)| *role)
    }

    /// A copy of the last head's map with empty values, if it had `count`
    /// headers: its values, in order, are the headers' by position
    /// (`HeaderMap::values_mut` goes in insertion order when no name repeats).
    pub(super) fn template(&self, count: usize) -> Option<HeaderMap> {
        self.template
            .as_deref()
            .filter(|t| t.len() == count)
            .cloned()
    }

    /// The template itself, shared, if it has `count` headers: the map of
    /// a head whose values are the template's (a reference count, where
    /// a copy cost two allocations and a count per value).
    pub(super) fn shared(&self, count: usize) -> Option<Arc<HeaderMap>> {
        self.template
            .as_ref()
            .filter(|t| t.len() == count)
            .map(Arc::clone)
    }

    /// Whether there is a template of `count` headers.
    pub(super) fn has_template(&self, count: usize) -> bool {
        self.template.as_ref().is_some_and(|t| t.len() == count)
    }

    /// Keeps `map`'s names as the template, if there are `count` of them, all
    /// remembered and distinct.
    pub(super) fn keep_template(&mut self, map: &HeaderMap, count: usize) {
        if count == 0 || count > self.seen.len() || map.keys_len() != count {
            self.template = None;
            self.layout.forget();
            return;
        }
        let mut template = HeaderMap::with_capacity(count);
        for (_, name, _) in &self.seen[..count] {
            template.append(name.clone(), HeaderValue::from_static(""));
        }
        self.template = Some(Arc::new(template));
        // The next head with other values renews them.
        self.since_renewed = RENEW_EVERY;
    }

    /// The template made `map` (`changed`: the values that are not the
    /// template's, if any): renews the template's values from `map`'s when
    /// they differ, at most once per [`RENEW_EVERY`] heads, or once the last
    /// two heads differed alike (and [`RENEW_MIN`] heads have passed).
    /// Returns whether the template's values are `map`'s now.
    pub(super) fn template_used(&mut self, map: &HeaderMap, changed: Option<&Changed>) -> bool {
        self.since_renewed = self.since_renewed.saturating_add(1);
        let Some(changed) = changed else {
            self.last_changed = 0;
            return true;
        };
        let fingerprint = changed.finish();
        let repeated = std::mem::replace(&mut self.last_changed, fingerprint) == fingerprint;
        let due =
            self.since_renewed >= RENEW_EVERY || (repeated && self.since_renewed >= RENEW_MIN);
        if !due {
            return false;
        }
        self.last_changed = 0;
        let Some(template) = self.template.as_mut() else {
            return false;
        };
        // A response may still hold the template: it keeps its values.
        let template = Arc::make_mut(template);
        self.since_renewed = 0;
        let mut own = Vec::with_capacity(map.values().map(|v| v.len()).sum());
        for v in map.values() {
            own.extend_from_slice(v.as_bytes());
        }
        let own = Bytes::from(own);
        let mut at = 0;
        let mut all = true;
        for (kept, v) in template.values_mut().zip(map.values()) {
            let end = at + v.len();
            // Bytes of a valid value: valid again (and on the impossible
            // failure the old value stays, which only costs a check).
            match HeaderValue::from_maybe_shared(own.slice(at..end)) {
                Ok(copy) => *kept = copy,
                Err(_) => all = false,
            }
            at = end;
        }
        all
    }
}
