//! The TOML configuration of a [`ClientFactory`](super::ClientFactory).
//!
//! ```toml
//! [defaults]                      # every client
//! handler_lifetime = "2m"
//! max_connections_per_host = 64
//! retry = true                    # a middleware with its defaults
//!
//! [clients.billing]               # one named client; overrides the defaults
//! base_url = "http://billing.internal:8080/api/"
//! headers = { user-agent = "shop/1.0" }
//! timeout = "10s"
//! total_timeout = "3s"
//! attempt_timeout = "800ms"
//!
//! [clients.billing.retry]
//! max_attempts = 4
//! base_delay = "50ms"
//!
//! [clients.billing.circuit_breaker]
//! failure_ratio = 0.5
//! minimum_throughput = 20
//! ```
//!
//! Durations are strings with a unit (`"250ms"`, `"1.5s"`, `"2m"`, `"1h"`);
//! optional limits also take `"none"`. A middleware is `name = true|false` or a
//! table (`enabled = false` in a table turns it off). Unknown keys are errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use serde::{Deserialize, Deserializer};

use super::{ClientOptions, Steps};
use crate::client::builder::ClientBuilder;
use crate::error::{Error, ErrorKind};
use crate::middleware::{
    BudgetConfig, CircuitBreakerConfig, DecompressionConfig, HedgeConfig, RedirectConfig,
    RetryConfig, TimeoutConfig, TraceConfig,
};

#[derive(Debug)]
struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

pub(crate) fn config_error(message: String) -> Error {
    Error::new(ErrorKind::Config, ConfigError(message))
}

/// Parses the file into configuration steps: the defaults, and one per name.
pub(super) fn parse(
    text: &str,
    base_dir: Option<&Path>,
) -> Result<(Steps, BTreeMap<String, Steps>), Error> {
    let file: FileConfig =
        toml::from_str(text).map_err(|e| config_error(format!("client configuration: {e}")))?;
    let base_dir = base_dir.unwrap_or(Path::new(""));
    let defaults = file.defaults.into_steps("defaults", base_dir)?;
    let mut named = BTreeMap::new();
    for (name, settings) in file.clients {
        let steps = settings.into_steps(&format!("clients.{name}"), base_dir)?;
        named.insert(name, steps);
    }
    Ok((defaults, named))
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    defaults: Settings,
    #[serde(default)]
    clients: BTreeMap<String, Settings>,
}

/// A duration with a unit.
#[derive(Debug, Clone, Copy)]
struct Dur(Duration);

/// A duration, or `"none"`.
#[derive(Debug, Clone, Copy)]
struct OptDur(Option<Duration>);

/// A number, or `"none"`.
#[derive(Debug, Clone, Copy)]
struct OptNum(Option<u64>);

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{s:?} needs a unit (ms, s, m, h)"))?;
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration"))?;
    let scale = match unit.trim() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        other => return Err(format!("unknown unit {other:?} in {s:?} (ms, s, m, h)")),
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("{s:?} is out of range"))
}

fn is_none(s: &str) -> bool {
    matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "none" | "off" | "never" | "infinite" | "unlimited"
    )
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for OptDur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if is_none(&s) {
            return Ok(OptDur(None));
        }
        parse_duration(&s)
            .map(|v| OptDur(Some(v)))
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for OptNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => Ok(OptNum(Some(n))),
            Raw::Str(s) if is_none(&s) => Ok(OptNum(None)),
            Raw::Str(s) => Err(serde::de::Error::custom(format!(
                "expected a number or \"none\", found {s:?}"
            ))),
        }
    }
}

/// `name = true|false`, or a table of settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Section<T> {
    Flag(bool),
    Table(T),
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum HttpVersion {
    Auto,
    Http1,
    Http2,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentitySettings {
    cert: PathBuf,
    key: PathBuf,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    // Factory options.
    handler_lifetime: Option<OptDur>,
    rotate_pool: Option<bool>,
    base_url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    // Pool (ClientBuilder) knobs.
    max_connections_per_host: Option<OptNum>,
    pool_idle_timeout: Option<OptDur>,
    pooled_connection_lifetime: Option<OptDur>,
    pooled_connection_lifetime_jitter: Option<Dur>,
    connect_timeout: Option<Dur>,
    timeout: Option<OptDur>,
    pool_queue_timeout: Option<OptDur>,
    max_response_drain_size: Option<u64>,
    response_drain_timeout: Option<Dur>,
    max_response_headers_size: Option<usize>,
    max_response_body_size: Option<OptNum>,
    tcp_nodelay: Option<bool>,
    retry_stale_connections: Option<bool>,
    http_version: Option<HttpVersion>,
    http2_multiple_connections: Option<bool>,
    http2_keep_alive_interval: Option<OptDur>,
    http2_keep_alive_timeout: Option<Dur>,
    http2_keep_alive_while_idle: Option<bool>,
    http2_initial_stream_window_size: Option<u32>,
    http2_initial_connection_window_size: Option<u32>,
    http2_adaptive_window: Option<bool>,
    http2_max_stream_window_size: Option<u32>,
    http2_max_connection_window_size: Option<u32>,
    root_certificates: Option<Vec<PathBuf>>,
    tls_built_in_root_certs: Option<bool>,
    identity: Option<IdentitySettings>,
    tls_session_resumption: Option<bool>,
    danger_accept_invalid_certs: Option<bool>,
    // Middleware.
    total_timeout: Option<OptDur>,
    attempt_timeout: Option<OptDur>,
    timeout_header: Option<String>,
    concurrency_limit: Option<OptNum>,
    trace: Option<Section<TraceSettings>>,
    decompression: Option<Section<DecompressionSettings>>,
    redirect: Option<Section<RedirectSettings>>,
    retry: Option<Section<RetrySettings>>,
    hedging: Option<Section<HedgeSettings>>,
    circuit_breaker: Option<Section<CircuitSettings>>,
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
struct RetrySettings {
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
struct HedgeSettings {
    enabled: Option<bool>,
    delay: Option<Dur>,
    max_attempts: Option<u32>,
    hedge_non_idempotent: Option<bool>,
    failure_statuses: Option<Vec<u16>>,
    budget: Option<Section<BudgetSettings>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CircuitSettings {
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
struct RedirectSettings {
    enabled: Option<bool>,
    max_redirects: Option<usize>,
    allow_https_to_http: Option<bool>,
    sensitive_headers: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecompressionSettings {
    enabled: Option<bool>,
    gzip: Option<bool>,
    deflate: Option<bool>,
    brotli: Option<bool>,
    zstd: Option<bool>,
    max_size: Option<OptNum>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceSettings {
    enabled: Option<bool>,
    propagate: Option<bool>,
    log_requests: Option<bool>,
    log_level: Option<String>,
    show_headers: Option<Vec<String>>,
}

/// Sets `$target.$field` from `$src.$field` when present.
macro_rules! set {
    ($target:expr, $src:expr; $($field:ident),* $(,)?) => {
        $( if let Some(v) = $src.$field { $target.$field = v.into_value(); } )*
    };
}

/// Converts a file value into the config field's type.
trait IntoValue<T> {
    fn into_value(self) -> T;
}

impl<T> IntoValue<T> for T {
    fn into_value(self) -> T {
        self
    }
}

impl IntoValue<Duration> for Dur {
    fn into_value(self) -> Duration {
        self.0
    }
}

impl IntoValue<Option<u64>> for OptNum {
    fn into_value(self) -> Option<u64> {
        self.0
    }
}

/// Applies a section onto an optional config: `false` (or `enabled = false`)
/// removes it, anything else creates it with defaults and applies the table.
fn section<T: Default, S>(
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

fn read_pem(ctx: &str, base_dir: &Path, path: &Path) -> Result<Vec<u8>, Error> {
    let full = base_dir.join(path);
    std::fs::read(&full)
        .map_err(|e| config_error(format!("{ctx}: cannot read {}: {e}", full.display())))
}

impl Settings {
    /// Checks everything that can be wrong (URLs, header names, files) now,
    /// and returns steps that can no longer fail.
    fn into_steps(self, ctx: &str, base_dir: &Path) -> Result<Steps, Error> {
        let base_url = match &self.base_url {
            Some(u) => {
                let uri =
                    Uri::from_str(u).map_err(|e| config_error(format!("{ctx}.base_url: {e}")))?;
                if uri.scheme().is_none() || uri.authority().is_none() {
                    return Err(config_error(format!(
                        "{ctx}.base_url: {u:?} must be absolute (scheme and host)"
                    )));
                }
                Some(uri)
            }
            None => None,
        };
        let headers = match &self.headers {
            Some(map) => {
                let mut h = HeaderMap::new();
                for (k, v) in map {
                    let name = HeaderName::from_str(k).map_err(|e| {
                        config_error(format!("{ctx}.headers: invalid name {k:?}: {e}"))
                    })?;
                    let value = HeaderValue::from_str(v).map_err(|e| {
                        config_error(format!("{ctx}.headers.{k}: invalid value: {e}"))
                    })?;
                    h.insert(name, value);
                }
                Some(h)
            }
            None => None,
        };
        let timeout_header = match &self.timeout_header {
            Some(h) if is_none(h) => Some(None),
            Some(h) => {
                Some(Some(HeaderName::from_str(h).map_err(|e| {
                    config_error(format!("{ctx}.timeout_header: {e}"))
                })?))
            }
            None => None,
        };
        let roots = match &self.root_certificates {
            Some(paths) => Some(
                paths
                    .iter()
                    .map(|p| read_pem(ctx, base_dir, p))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let identity = match &self.identity {
            Some(id) => Some((
                read_pem(ctx, base_dir, &id.cert)?,
                read_pem(ctx, base_dir, &id.key)?,
            )),
            None => None,
        };
        let redirect_headers = match &self.redirect {
            Some(Section::Table(RedirectSettings {
                sensitive_headers: Some(names),
                ..
            })) => Some(header_names(&format!("{ctx}.redirect"), names.clone())?),
            _ => None,
        };
        let trace_show = match &self.trace {
            Some(Section::Table(TraceSettings {
                show_headers: Some(names),
                ..
            })) => Some(header_names(&format!("{ctx}.trace"), names.clone())?),
            _ => None,
        };
        let trace_level = match &self.trace {
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
        // The steps run for every client built (and every pool rotation), so
        // they share the settings rather than consume them.
        let s = Arc::new(self);
        let pool = {
            let s = Arc::clone(&s);
            Arc::new(move |b: ClientBuilder| s.apply_pool(b, roots.as_deref(), identity.as_ref()))
                as super::PoolFn
        };
        let options = {
            Arc::new(move |o: &mut ClientOptions| {
                s.apply_options(
                    o,
                    &Parsed {
                        base_url: base_url.clone(),
                        headers: headers.clone(),
                        timeout_header: timeout_header.clone(),
                        redirect_headers: redirect_headers.clone(),
                        trace_show: trace_show.clone(),
                        trace_level,
                    },
                );
            }) as super::OptionsFn
        };
        Ok(Steps {
            pool: vec![pool],
            options: vec![options],
        })
    }

    fn apply_pool(
        &self,
        mut b: ClientBuilder,
        roots: Option<&[Vec<u8>]>,
        identity: Option<&(Vec<u8>, Vec<u8>)>,
    ) -> ClientBuilder {
        if let Some(v) = self.max_connections_per_host {
            b = b.max_connections_per_host(
                v.0.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            );
        }
        if let Some(v) = self.pool_idle_timeout {
            b = b.pool_idle_timeout(v.0);
        }
        if let Some(v) = self.pooled_connection_lifetime {
            b = b.pooled_connection_lifetime(v.0);
        }
        if let Some(v) = self.pooled_connection_lifetime_jitter {
            b = b.pooled_connection_lifetime_jitter(v.0);
        }
        if let Some(v) = self.connect_timeout {
            b = b.connect_timeout(v.0);
        }
        match self.timeout {
            Some(OptDur(Some(t))) => b = b.timeout(t),
            Some(OptDur(None)) => b = b.no_timeout(),
            None => {}
        }
        if let Some(v) = self.pool_queue_timeout {
            b = b.pool_queue_timeout(v.0);
        }
        if let Some(v) = self.max_response_drain_size {
            b = b.max_response_drain_size(v);
        }
        if let Some(v) = self.response_drain_timeout {
            b = b.response_drain_timeout(v.0);
        }
        if let Some(v) = self.max_response_headers_size {
            b = b.max_response_headers_size(v);
        }
        if let Some(v) = self.max_response_body_size {
            b = b.max_response_body_size(v.0);
        }
        if let Some(v) = self.tcp_nodelay {
            b = b.tcp_nodelay(v);
        }
        if let Some(v) = self.retry_stale_connections {
            b = b.retry_stale_connections(v);
        }
        match self.http_version {
            Some(HttpVersion::Http1) => b = b.http1_only(),
            Some(HttpVersion::Http2) => b = b.http2_prior_knowledge(),
            Some(HttpVersion::Auto) | None => {}
        }
        if let Some(v) = self.http2_multiple_connections {
            b = b.http2_multiple_connections(v);
        }
        if let Some(v) = self.http2_keep_alive_interval {
            b = b.http2_keep_alive_interval(v.0);
        }
        if let Some(v) = self.http2_keep_alive_timeout {
            b = b.http2_keep_alive_timeout(v.0);
        }
        if let Some(v) = self.http2_keep_alive_while_idle {
            b = b.http2_keep_alive_while_idle(v);
        }
        if let Some(v) = self.http2_initial_stream_window_size {
            b = b.http2_initial_stream_window_size(v);
        }
        if let Some(v) = self.http2_initial_connection_window_size {
            b = b.http2_initial_connection_window_size(v);
        }
        if let Some(v) = self.http2_adaptive_window {
            b = b.http2_adaptive_window(v);
        }
        if let Some(v) = self.http2_max_stream_window_size {
            b = b.http2_max_stream_window_size(v);
        }
        if let Some(v) = self.http2_max_connection_window_size {
            b = b.http2_max_connection_window_size(v);
        }
        for pem in roots.unwrap_or_default() {
            b = b.add_root_certificate(pem);
        }
        if let Some(v) = self.tls_built_in_root_certs {
            b = b.tls_built_in_root_certs(v);
        }
        if let Some((cert, key)) = identity {
            b = b.identity(cert, key);
        }
        if let Some(v) = self.tls_session_resumption {
            b = b.tls_session_resumption(v);
        }
        if let Some(v) = self.danger_accept_invalid_certs {
            b = b.danger_accept_invalid_certs(v);
        }
        b
    }

    fn apply_options(&self, o: &mut ClientOptions, parsed: &Parsed) {
        if let Some(v) = self.handler_lifetime {
            o.handler_lifetime = v.0;
        }
        if let Some(v) = self.rotate_pool {
            o.rotate_pool = v;
        }
        if let Some(u) = &parsed.base_url {
            o.base_url = Some(u.clone());
        }
        if let Some(h) = &parsed.headers {
            for (k, v) in h {
                o.default_headers.insert(k.clone(), v.clone());
            }
        }
        let m = &mut o.middleware;
        if self.total_timeout.is_some()
            || self.attempt_timeout.is_some()
            || parsed.timeout_header.is_some()
        {
            let t = m.timeout.get_or_insert_with(TimeoutConfig::default);
            if let Some(v) = self.total_timeout {
                t.total = v.0;
            }
            if let Some(v) = self.attempt_timeout {
                t.per_attempt = v.0;
            }
            if let Some(h) = &parsed.timeout_header {
                t.header = h.clone();
            }
        }
        if let Some(v) = self.concurrency_limit {
            m.concurrency_limit = v.0.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        }
        section(
            &mut m.trace,
            self.trace.clone(),
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
            self.decompression.clone(),
            |s| s.enabled,
            |c: &mut DecompressionConfig, s| {
                set!(c, s; gzip, deflate, brotli, zstd, max_size);
            },
        );
        section(
            &mut m.redirect,
            self.redirect.clone(),
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
            self.retry.clone(),
            |s| s.enabled,
            |c: &mut RetryConfig, s| {
                set!(c, s; max_attempts, base_delay, max_delay, jitter, honor_retry_after,
                 max_retry_after, retry_non_idempotent, statuses);
                apply_budget(&mut c.budget, s.budget);
            },
        );
        section(
            &mut m.hedging,
            self.hedging.clone(),
            |s| s.enabled,
            |c: &mut HedgeConfig, s| {
                set!(c, s; delay, max_attempts, hedge_non_idempotent, failure_statuses);
                apply_budget(&mut c.budget, s.budget);
            },
        );
        section(
            &mut m.circuit_breaker,
            self.circuit_breaker.clone(),
            |s| s.enabled,
            |c: &mut CircuitBreakerConfig, s| {
                set!(c, s; failure_ratio, minimum_throughput, sampling_window, break_duration,
                     half_open_probes, failure_statuses);
            },
        );
    }
}

/// Values checked when the file was read.
struct Parsed {
    base_url: Option<Uri>,
    headers: Option<HeaderMap>,
    timeout_header: Option<Option<HeaderName>>,
    redirect_headers: Option<Vec<HeaderName>>,
    trace_show: Option<Vec<HeaderName>>,
    trace_level: Option<tracing::Level>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1 h").unwrap(), Duration::from_secs(3600));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("10 parsecs").is_err());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = parse("[defaults]\nmax_conections_per_host = 3\n", None)
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("max_conections_per_host"), "{err}");
    }

    #[test]
    fn bad_values_name_their_place() {
        let err = parse("[clients.a]\nbase_url = \"/relative\"\n", None)
            .err()
            .unwrap();
        assert!(err.to_string().contains("clients.a.base_url"), "{err}");
        let err = parse("[clients.a.trace]\nlog_level = \"loud\"\n", None)
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("clients.a.trace.log_level"),
            "{err}"
        );
    }
}
