//! HTTP/3 learnt from the origin's DNS HTTPS record (features `http3` and
//! `dns-srv`, `ClientBuilder::http3_https_records`), before its dial:
//! what the record offers goes into the same store as `Alt-Svc` (`alt.rs`),
//! so the dial races QUIC exactly as for a learnt `Alt-Svc`, and the same
//! broken-alternative backoff applies. `connect/https_record.rs` reads the
//! records and says what is taken from them (only `h3` and a port: the
//! connection goes to the origin's host, and QUIC verifies its name).
//!
//! One lookup per origin at a time, and none while an alternative is known
//! or until the last answer's TTL (or `RECHECK_AFTER` for no record) has
//! passed: dials of a wave do not each ask, and a nameserver that does not
//! answer costs one dial at most `LOOKUP_WAIT` every `RECHECK_AFTER`.
//! A newer word replaces an older one either way: `Alt-Svc: clear` forgets
//! what a record taught (until the record is asked for again).

use std::sync::{Arc, OnceLock, PoisonError};

use tokio::time::Instant;

use super::alt::usable;
use super::dial::Origin;
use crate::connect::alt_svc::Alternative;
use crate::connect::https_record::{HttpsRecords, RECHECK_AFTER};

/// The client's HTTPS record lookups, made on first use (`None`: the
/// system's DNS configuration could not be read).
pub(crate) type Lookups = OnceLock<Option<Arc<HttpsRecords>>>;

impl Origin {
    /// Asks for this origin's HTTPS record if one is due, and keeps what
    /// it offers as an alternative.
    pub(super) async fn look_up_https_record(&self) {
        let http3 = &self.settings.config.http3;
        if !http3.https_records || !self.discovers_http3() || self.is_ip_literal() {
            return;
        }
        let now = Instant::now();
        {
            let mut next = self
                .https_next
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if next.is_some_and(|at| at > now) {
                return;
            }
            if usable(&mut self.settings.alt.lock(), &self.key(), now).is_some() {
                return;
            }
            // Claimed: other dials go on meanwhile, without a lookup.
            *next = Some(now + RECHECK_AFTER);
        }
        let nameserver = http3.https_records_nameserver;
        let lookups = self.settings.https.get_or_init(|| {
            HttpsRecords::new(nameserver)
                .inspect_err(|e| tracing::warn!(error = %e, "HTTPS records: no DNS configuration"))
                .ok()
                .map(Arc::new)
        });
        let Some(lookups) = lookups else {
            return;
        };
        let Some(record) = lookups.h3(&self.host, self.port).await else {
            return;
        };
        let now = Instant::now();
        *self
            .https_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(now + record.ttl);
        let alternative = Alternative {
            protocol: "h3".to_owned(),
            host: None,
            port: record.port,
            max_age: record.ttl,
            persist: false,
        };
        tracing::debug!(origin = %self.authority, port = record.port, ttl = ?record.ttl, "HTTP/3 from an HTTPS record");
        let key = self.key();
        self.settings
            .alt
            .lock()
            .known
            .keep(&key, vec![(alternative, now + record.ttl)], now);
    }

    fn is_ip_literal(&self) -> bool {
        self.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok()
    }
}
