//! [`ClientBuilder`]'s knobs for HTTP/3 learnt from DNS HTTPS records
//! (features `http3` and `dns-srv`; `connect/https_record.rs`).

use crate::client::ClientBuilder;

impl ClientBuilder {
    /// Also learn HTTP/3 from DNS: before an `https` origin's connection is
    /// dialed, its HTTPS record (RFC 9460) is looked up, and one that
    /// offers `h3` makes the dial race QUIC as a learnt `Alt-Svc` would
    /// (see [`http3_alt_svc`](Self::http3_alt_svc): same head start, same
    /// backoff, same origins), so even the first request can go over
    /// HTTP/3. Works with or without `http3_alt_svc`.
    ///
    /// Only `h3` and the port are taken from a record: the connection goes
    /// to the origin's own addresses and QUIC verifies its name, so a
    /// record naming another target, and AliasMode, are not used;
    /// `ipv4hint`/`ipv6hint` and `ech` are ignored, and a record that makes
    /// a key courier does not act on mandatory is skipped. A record is used
    /// for its TTL (at most a week); a name without one is asked again
    /// after 5 minutes. A dial waits at most 500 ms for the answer, then
    /// goes on over TCP.
    ///
    /// Default: off. The lookups go to the system's nameservers
    /// (`/etc/resolv.conf`, or [`http3_https_records_nameserver`](Self::http3_https_records_nameserver)),
    /// not through [`dns_resolver`](Self::dns_resolver), and cost a query
    /// per origin per TTL: a service client should ask for them, and
    /// turning on the `dns-srv` feature elsewhere in a build must not
    /// change its traffic. Needs the cargo features `http3` and `dns-srv`.
    pub fn http3_https_records(mut self, enabled: bool) -> Self {
        self.config.http3.https_records = enabled;
        self
    }

    /// The nameserver [`http3_https_records`](Self::http3_https_records)
    /// asks (UDP, and TCP for a truncated answer) instead of the system's:
    /// a sidecar resolver, a test's. Needs the cargo features `http3` and
    /// `dns-srv`.
    pub fn http3_https_records_nameserver(mut self, addr: std::net::SocketAddr) -> Self {
        self.config.http3.https_records_nameserver = Some(addr);
        self
    }
}
