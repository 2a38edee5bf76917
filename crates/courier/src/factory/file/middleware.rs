//! The middleware sections of a client's table (`retry`, `hedging`,
//! `circuit_breaker`, `redirect`, `decompression`, `trace`, the timeouts and
//! the concurrency limit) and how they become a [`Stack`].
//!
//! Why a file of its own: a middleware section is a switch or a table over
//! a config struct with defaults (`retry = true`, `[x.retry] enabled =
//! false`), a shape the pool knobs do not have, and these sections are most
//! of what the file can say.

use std::str::FromStr;

use http::HeaderName;
use serde::Deserialize;

use super::values::{is_none, Dur, IntoValue, OptNum};
use super::{config_error, Settings};
use crate::error::Error;
use crate::middleware::{
    BudgetConfig, CircuitBreakerConfig, DecompressionConfig, HedgeConfig, RedirectConfig,
    RetryConfig, Stack, TimeoutConfig, TraceConfig,
};

/// `name = true|false`, or a table of settings.
#[derive(Debug, Clone)]
pub(super) enum Section<T> {
    Flag(bool),
    Table(T),
}

/// By hand rather than `#[serde(untagged)]`: an untagged enum replaces the
/// table's own error (`unknown field "max_attemps"`) with "data did not
/// match any variant", which names neither the key nor the fix.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Section<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = Section<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false or a table")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Section<T>, E> {
                Ok(Section::Flag(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Section<T>, A::Error> {
                let table = serde::de::value::MapAccessDeserializer::new(map);
                T::deserialize(table).map(Section::Table)
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetSettings {
    enabled: Option<bool>,
    ratio: Option<f64>,
    min_per_second: Option<u32>,
    window: Option<Dur>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetrySettings {
    enabled: Option<bool>,
    max_attempts: Option<u32>,
    base_delay: Option<Dur>,
    max_delay: Option<Dur>,
    jitter: Option<bool>,
    honor_retry_after: Option<bool>,
    max_retry_after: Option<Dur>,
    retry_non_idempotent: Option<bool>,
    statuses: Option<Vec<u16>>,
    budget: Option<Section<BudgetSettings>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HedgeSettings {
    enabled: Option<bool>,
    delay: Option<Dur>,
    max_attempts: Option<u32>,
    hedge_non_idempotent: Option<bool>,
    failure_statuses: Option<Vec<u16>>,
    budget: Option<Section<BudgetSettings>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CircuitSettings {
    enabled: Option<bool>,
    failure_ratio: Option<f64>,
    minimum_throughput: Option<u32>,
    sampling_window: Option<Dur>,
    break_duration: Option<Dur>,
    half_open_probes: Option<u32>,
    failure_statuses: Option<Vec<u16>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RedirectSettings {
    enabled: Option<bool>,
    max_redirects: Option<usize>,
    allow_https_to_http: Option<bool>,
    sensitive_headers: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecompressionSettings {
    enabled: Option<bool>,
    gzip: Option<bool>,
    deflate: Option<bool>,
    brotli: Option<bool>,
    zstd: Option<bool>,
    max_size: Option<OptNum>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TraceSettings {
    enabled: Option<bool>,
    propagate: Option<bool>,
    log_requests: Option<bool>,
    log_level: Option<String>,
    show_headers: Option<Vec<String>>,
}

/// Applies a section onto an optional config: `false` (or `enabled = false`)
/// removes it, anything else creates it with defaults and applies the table.
pub(super) fn section<T: Default, S>(
    target: &mut Option<T>,
    section: Option<Section<S>>,
    enabled: impl Fn(&S) -> Option<bool>,
    apply: impl FnOnce(&mut T, S),
) {
    match section {
        None => {}
        Some(Section::Flag(false)) => *target = None,
        Some(Section::Flag(true)) => {
            target.get_or_insert_with(T::default);
        }
        Some(Section::Table(t)) if enabled(&t) == Some(false) => *target = None,
        Some(Section::Table(t)) => apply(target.get_or_insert_with(T::default), t),
    }
}

/// Whether a section is switched off in the file (`x = false`, or
/// `enabled = false` in its table): for what a plain `Client` does by itself
/// (following redirects, decoding bodies), off must reach the client too,
/// not only leave its layer out.
fn switched_off<S>(section: &Option<Section<S>>, enabled: impl Fn(&S) -> Option<bool>) -> bool {
    match section {
        Some(Section::Flag(on)) => !on,
        Some(Section::Table(t)) => enabled(t) == Some(false),
        None => false,
    }
}

/// `redirect = false`: the client follows none either.
pub(super) fn redirect_switched_off(s: &Option<Section<RedirectSettings>>) -> bool {
    switched_off(s, |s| s.enabled)
}

/// `decompression = false`: the client decodes nothing either.
pub(super) fn decompression_switched_off(s: &Option<Section<DecompressionSettings>>) -> bool {
    switched_off(s, |s| s.enabled)
}

fn apply_budget(target: &mut Option<BudgetConfig>, budget: Option<Section<BudgetSettings>>) {
    section(
        target,
        budget,
        |s| s.enabled,
        |c, s| {
            set!(c, s; ratio, min_per_second, window);
        },
    );
}

fn header_names(ctx: &str, names: Vec<String>) -> Result<Vec<HeaderName>, Error> {
    names
        .into_iter()
        .map(|n| {
            HeaderName::from_str(&n)
                .map_err(|e| config_error(format!("{ctx}: invalid header name {n:?}: {e}")))
        })
        .collect()
}

/// Middleware values checked when the file was read.
pub(super) struct Parsed {
    timeout_header: Option<Option<HeaderName>>,
    redirect_headers: Option<Vec<HeaderName>>,
    trace_show: Option<Vec<HeaderName>>,
    trace_level: Option<tracing::Level>,
}

impl Parsed {
    /// Checks the header names and the log level of `s`'s middleware.
    pub(super) fn new(s: &Settings, ctx: &str) -> Result<Parsed, Error> {
        let timeout_header = match &s.timeout_header {
            Some(h) if is_none(h) => Some(None),
            Some(h) => {
                Some(Some(HeaderName::from_str(h).map_err(|e| {
                    config_error(format!("{ctx}.timeout_header: {e}"))
                })?))
            }
            None => None,
        };
        let redirect_headers = match &s.redirect {
            Some(Section::Table(RedirectSettings {
                sensitive_headers: Some(names),
                ..
            })) => Some(header_names(&format!("{ctx}.redirect"), names.clone())?),
            _ => None,
        };
        let trace_show = match &s.trace {
            Some(Section::Table(TraceSettings {
                show_headers: Some(names),
                ..
            })) => Some(header_names(&format!("{ctx}.trace"), names.clone())?),
            _ => None,
        };
        let trace_level = match &s.trace {
            Some(Section::Table(TraceSettings {
                log_level: Some(level),
                ..
            })) => Some(tracing::Level::from_str(level).map_err(|_| {
                config_error(format!(
                    "{ctx}.trace.log_level: {level:?} is not one of trace, debug, info, warn, error"
                ))
            })?),
            _ => None,
        };
        Ok(Parsed {
            timeout_header,
            redirect_headers,
            trace_show,
            trace_level,
        })
    }
}

/// Applies `s`'s middleware sections onto `m`.
pub(super) fn apply(s: &Settings, m: &mut Stack, parsed: &Parsed) {
    if s.total_timeout.is_some() || s.attempt_timeout.is_some() || parsed.timeout_header.is_some() {
        let t = m.timeout.get_or_insert_with(TimeoutConfig::default);
        if let Some(v) = s.total_timeout {
            t.total = v.0;
        }
        if let Some(v) = s.attempt_timeout {
            t.per_attempt = v.0;
        }
        if let Some(h) = &parsed.timeout_header {
            t.header = h.clone();
        }
    }
    if let Some(v) = s.concurrency_limit {
        m.concurrency_limit = v.0.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    }
    section(
        &mut m.trace,
        s.trace.clone(),
        |s| s.enabled,
        |c: &mut TraceConfig, s| {
            set!(c, s; propagate, log_requests);
            if let Some(l) = parsed.trace_level {
                c.log_level = l;
            }
            if let Some(h) = &parsed.trace_show {
                c.show_headers = h.clone();
            }
        },
    );
    section(
        &mut m.decompression,
        s.decompression.clone(),
        |s| s.enabled,
        |c: &mut DecompressionConfig, s| {
            set!(c, s; gzip, deflate, brotli, zstd, max_size);
        },
    );
    section(
        &mut m.redirect,
        s.redirect.clone(),
        |s| s.enabled,
        |c: &mut RedirectConfig, s| {
            set!(c, s; max_redirects, allow_https_to_http);
            if let Some(h) = &parsed.redirect_headers {
                c.sensitive_headers = h.clone();
            }
        },
    );
    section(
        &mut m.retry,
        s.retry.clone(),
        |s| s.enabled,
        |c: &mut RetryConfig, s| {
            set!(c, s; max_attempts, base_delay, max_delay, jitter, honor_retry_after,
                 max_retry_after, retry_non_idempotent, statuses);
            apply_budget(&mut c.budget, s.budget);
        },
    );
    section(
        &mut m.hedging,
        s.hedging.clone(),
        |s| s.enabled,
        |c: &mut HedgeConfig, s| {
            set!(c, s; delay, max_attempts, hedge_non_idempotent, failure_statuses);
            apply_budget(&mut c.budget, s.budget);
        },
    );
    section(
        &mut m.circuit_breaker,
        s.circuit_breaker.clone(),
        |s| s.enabled,
        |c: &mut CircuitBreakerConfig, s| {
            set!(c, s; failure_ratio, minimum_throughput, sampling_window, break_duration,
                     half_open_probes, failure_statuses);
        },
    );
}
