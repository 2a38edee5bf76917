//! `http.client.request.duration` per OpenTelemetry attribute set, recorded
//! by the attempt layer ([`TraceAttemptLayer`](super::TraceAttemptLayer)).
//!
//! Why here and not in the pool: the attributes (method, status, error type)
//! belong to a request, and the pool stays free of per-request bookkeeping.
//!
//! Why a fixed table of `OnceLock` slots: recording must stay lock-free on
//! the hot path. A series is found by open addressing over a fixed array;
//! finding one is atomic loads, recording is the atomic adds of an
//! [`AtomicHistogram`]. Only the first request of a new attribute set
//! initialises a slot (a `OnceLock`, so a racing reader of that one slot
//! waits for it once). Past [`CAPACITY`] attribute sets, values go to one
//! overflow series, as the OpenTelemetry SDK's cardinality limit does
//! (`otel.metric.overflow = true`).

// Without an exporter (the `metrics` feature) only recording is used.
#![cfg_attr(not(feature = "metrics"), allow(dead_code))]

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::OnceLock;
use std::time::Duration;

use http::Method;

use crate::metrics::{AtomicHistogram, HistogramSnapshot};

/// Most attribute sets kept apart; the rest share the overflow series.
pub(crate) const CAPACITY: usize = 512;

/// The OpenTelemetry attributes of one `http.client.request.duration` series.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RequestAttrs {
    /// `http.request.method`: a known method, or `_OTHER`.
    pub(crate) method: &'static str,
    /// `http.response.status_code`, when a response arrived.
    pub(crate) status: Option<u16>,
    /// `server.address`.
    pub(crate) address: Box<str>,
    /// `server.port`.
    pub(crate) port: u16,
    /// `network.protocol.version`, when a response arrived.
    pub(crate) protocol: Option<&'static str>,
    /// `error.type` of a failed request (a courier error kind); a status
    /// ≥ 400 is reported as the status code instead (see [`Self::error_type`]).
    pub(crate) error: Option<&'static str>,
}

impl RequestAttrs {
    /// `error.type`: the error kind, or the status code when it is ≥ 400.
    pub(crate) fn error_type(&self) -> Option<String> {
        match (self.error, self.status) {
            (Some(kind), _) => Some(kind.to_owned()),
            (None, Some(s)) if s >= 400 => Some(s.to_string()),
            _ => None,
        }
    }

    /// The attributes as (key, value) pairs in OpenTelemetry names, with
    /// the absent ones left out.
    pub(crate) fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("http.request.method", self.method.to_owned()),
            ("server.address", self.address.to_string()),
            ("server.port", self.port.to_string()),
        ];
        if let Some(s) = self.status {
            v.push(("http.response.status_code", s.to_string()));
        }
        if let Some(p) = self.protocol {
            v.push(("network.protocol.version", p.to_owned()));
        }
        if let Some(e) = self.error_type() {
            v.push(("error.type", e));
        }
        v
    }
}

/// `http.request.method` as the conventions ask: the known methods by name,
/// anything else as `_OTHER` (an unbounded set would explode cardinality).
pub(crate) fn method_name(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "_OTHER",
    }
}

struct Series {
    attrs: RequestAttrs,
    duration: AtomicHistogram,
}

/// One series of a [`RequestMetrics`] snapshot.
#[derive(Debug, Clone)]
pub(crate) struct SeriesSnapshot {
    /// The slot, stable for the table's life (exporters key deltas by it).
    pub(crate) slot: usize,
    /// `None` for the overflow series.
    pub(crate) attrs: Option<RequestAttrs>,
    pub(crate) duration: HistogramSnapshot,
}

/// Request durations by attribute set; see the module docs.
pub(crate) struct RequestMetrics {
    slots: Box<[OnceLock<Box<Series>>]>,
    overflow: AtomicHistogram,
    hasher: foldhash::fast::FixedState,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics {
            slots: (0..CAPACITY).map(|_| OnceLock::new()).collect(),
            overflow: AtomicHistogram::default(),
            hasher: foldhash::fast::FixedState::default(),
        }
    }
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.slots.iter().filter(|s| s.get().is_some()).count();
        f.debug_struct("RequestMetrics")
            .field("series", &used)
            .finish_non_exhaustive()
    }
}

impl RequestMetrics {
    /// Records one request's duration under its attributes; the host is
    /// copied only the first time a set is seen.
    pub(crate) fn record(&self, key: AttrsRef<'_>, d: Duration) {
        let mut h = self.hasher.build_hasher();
        key.hash(&mut h);
        let start = h.finish() as usize % CAPACITY;
        for i in 0..CAPACITY {
            let slot = &self.slots[(start + i) % CAPACITY];
            let series = match slot.get() {
                Some(s) => s,
                // The first empty slot: the set is not in the table (sets
                // are never removed), so claim it; a racing insert of another
                // set may win, and then probing goes on.
                None => slot.get_or_init(|| {
                    Box::new(Series {
                        attrs: key.owned(),
                        duration: AtomicHistogram::default(),
                    })
                }),
            };
            if key.matches(&series.attrs) {
                series.duration.record(d);
                return;
            }
        }
        self.overflow.record(d);
    }

    /// Every series recorded so far, the overflow last (when it has values).
    pub(crate) fn snapshot(&self) -> Vec<SeriesSnapshot> {
        let mut out: Vec<SeriesSnapshot> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(slot, s)| {
                s.get().map(|s| SeriesSnapshot {
                    slot,
                    attrs: Some(s.attrs.clone()),
                    duration: s.duration.snapshot(),
                })
            })
            .collect();
        let overflow = self.overflow.snapshot();
        if overflow.count() > 0 {
            out.push(SeriesSnapshot {
                slot: CAPACITY,
                attrs: None,
                duration: overflow,
            });
        }
        out
    }
}

/// A borrowed [`RequestAttrs`], so finding a known series allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttrsRef<'a> {
    pub(crate) method: &'static str,
    pub(crate) status: Option<u16>,
    pub(crate) address: &'a str,
    pub(crate) port: u16,
    pub(crate) protocol: Option<&'static str>,
    pub(crate) error: Option<&'static str>,
}

impl AttrsRef<'_> {
    fn hash(&self, h: &mut impl Hasher) {
        (
            self.method,
            self.status,
            self.address,
            self.port,
            self.protocol,
            self.error,
        )
            .hash(h);
    }

    fn matches(&self, a: &RequestAttrs) -> bool {
        self.method == a.method
            && self.status == a.status
            && self.address == &*a.address
            && self.port == a.port
            && self.protocol == a.protocol
            && self.error == a.error
    }

    /// The owned attributes.
    pub(crate) fn owned(self) -> RequestAttrs {
        RequestAttrs {
            method: self.method,
            status: self.status,
            address: self.address.into(),
            port: self.port,
            protocol: self.protocol,
            error: self.error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16, status: u16) -> AttrsRef<'static> {
        AttrsRef {
            method: "GET",
            status: Some(status),
            address: "example.test",
            port,
            protocol: Some("1.1"),
            error: None,
        }
    }

    #[test]
    fn one_series_per_attribute_set() {
        let m = RequestMetrics::default();
        for status in [200, 200, 503] {
            let k = key(80, status);
            m.record(k, Duration::from_millis(3));
        }
        let snap = m.snapshot();
        assert_eq!(snap.len(), 2);
        let ok = snap
            .iter()
            .find(|s| s.attrs.as_ref().unwrap().status == Some(200))
            .unwrap();
        assert_eq!(ok.duration.count(), 2);
        let failed = snap
            .iter()
            .find(|s| s.attrs.as_ref().unwrap().status == Some(503))
            .unwrap();
        assert_eq!(
            failed.attrs.as_ref().unwrap().error_type().as_deref(),
            Some("503")
        );
    }

    #[test]
    fn past_capacity_values_go_to_the_overflow_series() {
        let m = RequestMetrics::default();
        for port in 0..(CAPACITY as u16 + 10) {
            let k = key(port, 200);
            m.record(k, Duration::from_millis(1));
        }
        let snap = m.snapshot();
        assert_eq!(snap.len(), CAPACITY + 1);
        let overflow = snap.last().unwrap();
        assert!(overflow.attrs.is_none());
        assert_eq!(overflow.duration.count(), 10);
        // Known sets are still found once the table is full.
        let k = key(7, 200);
        m.record(k, Duration::from_millis(1));
        let seven = m
            .snapshot()
            .into_iter()
            .find(|s| s.attrs.as_ref().is_some_and(|a| a.port == 7))
            .unwrap();
        assert_eq!(seven.duration.count(), 2);
    }

    #[test]
    fn unknown_methods_are_other() {
        assert_eq!(method_name(&Method::GET), "GET");
        assert_eq!(
            method_name(&Method::from_bytes(b"PURGE").unwrap()),
            "_OTHER"
        );
    }
}
