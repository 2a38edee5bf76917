//! HTTP/3 discovered from DNS HTTPS records (RFC 9460; features `http3` and
//! `dns-srv`, `ClientBuilder::http3_https_records`): an origin's HTTPS
//! record that names `h3` lets its first connection race QUIC, as a learnt
//! `Alt-Svc` would, without a request over TCP first.
//!
//! What is taken from a record is only "h3, on this port, for this long":
//! the connection still goes to the origin's own host (its addresses from
//! the client's resolver) and QUIC verifies the origin's name, so a
//! request's credentials reach only its origin, whatever the record says.
//! Of RFC 9460, then:
//! - **ServiceMode** records whose target is `.` (the owner) or the
//!   origin's host are used, lowest `SvcPriority` first; another target
//!   name is not (connecting there would need its addresses, and only a
//!   handshake could show the host holds the origin's certificate).
//! - **AliasMode**: not followed (it names another host); as the RFC asks,
//!   a set with an AliasMode record has its ServiceMode records ignored.
//! - `alpn` must list `h3`; `port` is the UDP port (absent: the origin's;
//!   `0` makes the record unusable); `ipv4hint`/`ipv6hint` are ignored (the
//!   addresses come from A/AAAA as for every connection); `ech` is ignored
//!   (courier does not do ECH), and a record that makes it, or any key this
//!   code does not know, `mandatory` is skipped (RFC 9460 §8).
//! - The record's TTL is how long it is used (at most a week, at least a
//!   second); a name with no usable record is asked again after
//!   [`RECHECK_AFTER`].
//!
//! A hostile nameserver controls the whole answer, so: an answer is one DNS
//! message (bounded by the transport: 4 KiB over UDP with EDNS, 64 KiB over
//! TCP), one that does not parse is no record, at most [`MAX_RECORDS`]
//! records and [`MAX_ALPN_IDS`] protocol ids per record are read, and the
//! lookup waits at most [`LOOKUP_WAIT`] (the connection then goes on over
//! TCP, not held by DNS).

use std::net::SocketAddr;
use std::time::Duration;

use hickory_resolver::config::{NameServerConfigGroup, ResolverConfig, ResolverOpts};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::rr::rdata::svcb::{SvcParamKey, SvcParamValue, SVCB};
use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::{Name, TokioResolver};

/// Longest a dial waits for the HTTPS record before going on without it.
pub(crate) const LOOKUP_WAIT: Duration = Duration::from_millis(500);
/// A name with no usable record (or whose lookup failed) is not asked
/// again for this long.
pub(crate) const RECHECK_AFTER: Duration = Duration::from_secs(300);
/// Records of one answer read at most.
pub(crate) const MAX_RECORDS: usize = 16;
/// ALPN ids of one record read at most.
pub(crate) const MAX_ALPN_IDS: usize = 16;
/// Longest a record is used (as `Alt-Svc`'s `ma`).
const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// What an HTTPS record offers the origin: HTTP/3 on `port`, for `ttl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct H3Record {
    pub(crate) port: u16,
    pub(crate) ttl: Duration,
}

/// Looks HTTPS records up (hickory, over UDP and TCP for a truncated
/// answer), with its own cache of answers by TTL.
pub(crate) struct HttpsRecords {
    resolver: TokioResolver,
}

impl HttpsRecords {
    /// Asks `nameserver`, or the system's (`/etc/resolv.conf`).
    pub(crate) fn new(nameserver: Option<SocketAddr>) -> std::io::Result<HttpsRecords> {
        let mut opts = ResolverOpts::default();
        opts.timeout = LOOKUP_WAIT;
        opts.attempts = 1;
        opts.cache_size = 1024;
        opts.positive_max_ttl = Some(MAX_TTL);
        opts.negative_max_ttl = Some(RECHECK_AFTER);
        let resolver = match nameserver {
            Some(addr) => {
                let servers =
                    NameServerConfigGroup::from_ips_clear(&[addr.ip()], addr.port(), true);
                let config = ResolverConfig::from_parts(None, Vec::new(), servers);
                TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
                    .with_options(opts)
                    .build()
            }
            None => TokioResolver::builder_tokio()
                .map_err(std::io::Error::other)?
                .with_options(opts)
                .build(),
        };
        Ok(HttpsRecords { resolver })
    }

    /// `host`'s usable HTTP/3 offer, if its HTTPS records make one
    /// (`None` also when the lookup failed or took longer than
    /// [`LOOKUP_WAIT`]).
    pub(crate) async fn h3(&self, host: &str, origin_port: u16) -> Option<H3Record> {
        let mut name = Name::from_utf8(host).ok()?;
        name.set_fqdn(true);
        let lookup =
            tokio::time::timeout(LOOKUP_WAIT, self.resolver.lookup(name, RecordType::HTTPS)).await;
        let lookup = match lookup {
            Ok(Ok(lookup)) => lookup,
            Ok(Err(e)) => {
                tracing::debug!(host, error = %e, "no HTTPS record");
                return None;
            }
            Err(_) => {
                tracing::debug!(host, "HTTPS record lookup: no answer in time");
                return None;
            }
        };
        let records = lookup.records().iter().take(MAX_RECORDS).filter_map(|r| {
            let RData::HTTPS(https) = r.data() else {
                return None;
            };
            Some((&https.0, Duration::from_secs(r.ttl().into())))
        });
        choose(host, origin_port, records)
    }
}

/// The offer of the best usable record of `records` for `host` (whose
/// port is `origin_port`).
pub(crate) fn choose<'a>(
    host: &str,
    origin_port: u16,
    records: impl Iterator<Item = (&'a SVCB, Duration)>,
) -> Option<H3Record> {
    let mut best: Option<(u16, H3Record)> = None;
    for (svcb, ttl) in records {
        if svcb.svc_priority() == 0 {
            // AliasMode: the whole set's ServiceMode records are ignored.
            return None;
        }
        let Some(port) = h3_port(host, origin_port, svcb) else {
            continue;
        };
        let ttl = ttl.clamp(Duration::from_secs(1), MAX_TTL);
        let offer = H3Record { port, ttl };
        if best.is_none_or(|(priority, _)| svcb.svc_priority() < priority) {
            best = Some((svcb.svc_priority(), offer));
        }
    }
    best.map(|(_, offer)| offer)
}

/// The UDP port a ServiceMode record offers `h3` on for `host`, if it is
/// usable (see the module documentation).
fn h3_port(host: &str, origin_port: u16, svcb: &SVCB) -> Option<u16> {
    let target = svcb.target_name();
    let same_host = target.is_root()
        || target
            .to_ascii()
            .trim_end_matches('.')
            .eq_ignore_ascii_case(host.trim_end_matches('.'));
    if !same_host {
        return None;
    }
    let mut h3 = false;
    let mut port = None;
    for (key, value) in svcb.svc_params() {
        match (key, value) {
            (SvcParamKey::Mandatory, SvcParamValue::Mandatory(keys)) => {
                let understood = keys.0.iter().all(|k| {
                    matches!(
                        k,
                        SvcParamKey::Alpn
                            | SvcParamKey::NoDefaultAlpn
                            | SvcParamKey::Port
                            | SvcParamKey::Ipv4Hint
                            | SvcParamKey::Ipv6Hint
                    )
                });
                if !understood {
                    return None;
                }
            }
            (SvcParamKey::Alpn, SvcParamValue::Alpn(ids)) => {
                h3 = ids.0.iter().take(MAX_ALPN_IDS).any(|id| id == "h3");
            }
            (SvcParamKey::Port, SvcParamValue::Port(p)) => port = Some(*p),
            _ => {}
        }
    }
    match port {
        Some(0) => None,
        _ if !h3 => None,
        Some(p) => Some(p),
        None => Some(origin_port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_resolver::proto::rr::rdata::svcb::{Alpn, Mandatory};

    fn svcb(priority: u16, target: &str, params: Vec<(SvcParamKey, SvcParamValue)>) -> SVCB {
        SVCB::new(priority, Name::from_ascii(target).unwrap(), params)
    }

    fn alpn(ids: &[&str]) -> (SvcParamKey, SvcParamValue) {
        (
            SvcParamKey::Alpn,
            SvcParamValue::Alpn(Alpn(ids.iter().map(|s| s.to_string()).collect())),
        )
    }

    fn port(p: u16) -> (SvcParamKey, SvcParamValue) {
        (SvcParamKey::Port, SvcParamValue::Port(p))
    }

    fn pick(records: &[SVCB]) -> Option<H3Record> {
        choose(
            "origin.test",
            443,
            records.iter().map(|r| (r, Duration::from_secs(60))),
        )
    }

    #[test]
    fn what_a_record_offers() {
        let minute = Duration::from_secs(60);
        let usable = svcb(1, ".", vec![alpn(&["h2", "h3"]), port(8443)]);
        assert_eq!(
            pick(std::slice::from_ref(&usable)),
            Some(H3Record {
                port: 8443,
                ttl: minute
            })
        );
        // Its own name as the target; no port: the origin's.
        let own = svcb(1, "Origin.Test.", vec![alpn(&["h3"])]);
        assert_eq!(pick(&[own]).map(|r| r.port), Some(443));
        // Unusable: another target, no h3, port 0, AliasMode.
        assert_eq!(pick(&[svcb(1, "cdn.example.", vec![alpn(&["h3"])])]), None);
        assert_eq!(pick(&[svcb(1, ".", vec![alpn(&["h2"])])]), None);
        assert_eq!(pick(&[svcb(1, ".", vec![alpn(&["h3"]), port(0)])]), None);
        assert_eq!(
            pick(&[svcb(0, "origin.test.", vec![]), usable.clone()]),
            None
        );
        // Mandatory keys this code knows are fine; ech or unknown is not.
        let known = svcb(
            1,
            ".",
            vec![
                (
                    SvcParamKey::Mandatory,
                    SvcParamValue::Mandatory(Mandatory(vec![SvcParamKey::Port])),
                ),
                alpn(&["h3"]),
                port(1),
            ],
        );
        assert_eq!(pick(&[known]).map(|r| r.port), Some(1));
        for key in [SvcParamKey::EchConfigList, SvcParamKey::Key(65300)] {
            let unknown = svcb(
                1,
                ".",
                vec![
                    (
                        SvcParamKey::Mandatory,
                        SvcParamValue::Mandatory(Mandatory(vec![key])),
                    ),
                    alpn(&["h3"]),
                ],
            );
            assert_eq!(pick(&[unknown]), None, "{key:?}");
        }
        // The lowest priority wins; h3 past the read ids is not seen.
        let second = svcb(2, ".", vec![alpn(&["h3"]), port(2)]);
        assert_eq!(pick(&[second, usable]).map(|r| r.port), Some(8443));
        let mut ids = vec!["x"; MAX_ALPN_IDS];
        ids.push("h3");
        assert_eq!(pick(&[svcb(1, ".", vec![alpn(&ids)])]), None);
        // TTL bounded: 0 is a second, a year a week.
        let ttl = |secs| {
            let r = svcb(1, ".", vec![alpn(&["h3"])]);
            choose(
                "origin.test",
                443,
                [(&r, Duration::from_secs(secs))].into_iter(),
            )
            .map(|r| r.ttl)
        };
        assert_eq!(ttl(0), Some(Duration::from_secs(1)));
        assert_eq!(ttl(365 * 86400), Some(MAX_TTL));
    }
}
