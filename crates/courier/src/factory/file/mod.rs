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
//!
//! [clients.inventory.cluster]     # a service of replicas (see cluster.rs)
//! replicas = ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]
//! strategy = "forking3"
//! ```
//!
//! Durations are strings with a unit (`"250ms"`, `"1.5s"`, `"2m"`, `"1h"`);
//! optional limits also take `"none"`. A middleware is `name = true|false` or a
//! table (`enabled = false` in a table turns it off). Unknown keys are errors.
//!
//! Every public `ClientBuilder` knob has a key (`coverage_tests.rs` checks
//! it), named as the method, but for `add_root_certificate`
//! (`root_certificates`), `http1_only` and `http2_prior_knowledge`
//! (`http_version`), `no_timeout` (`timeout = "none"`), `no_env_proxy`
//! (`env_proxy = false`) and `unix_socket_for` (`unix_sockets`); code-only
//! knobs (a connector, a resolver) have none.
//!
//! This file is the file's outline and the pool knobs; `values.rs` holds
//! durations and `"none"`, `middleware.rs` the middleware sections,
//! `network.rs` proxies, `resolve` and Unix sockets, and `cluster.rs` a
//! client's `[cluster]` table.

/// Sets `$target.$field` from `$src.$field` when present.
macro_rules! set {
    ($target:expr, $src:expr; $($field:ident),* $(,)?) => {
        $( if let Some(v) = $src.$field { $target.$field = v.into_value(); } )*
    };
}

mod cluster;
#[cfg(test)]
mod coverage_tests;
mod middleware;
mod network;
#[cfg(test)]
mod order_tests;
mod values;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use serde::Deserialize;

use super::{config_error, ClientOptions, Steps};
use crate::client::builder::ClientBuilder;
use crate::error::Error;
use crate::tls::{Certificate, Identity, Version};
use middleware::{
    CircuitSettings, DecompressionSettings, HedgeSettings, RedirectSettings, RetrySettings,
    Section, TraceSettings,
};
use values::{Dur, OptDur, OptNum};

/// A file's configuration: its top-level settings, its defaults' steps and
/// one set of steps per name.
pub(super) struct FileParsed {
    /// `strict_names`, if the file sets it.
    pub strict_names: Option<bool>,
    pub defaults: Steps,
    pub named: BTreeMap<String, Steps>,
}

/// Parses the file into configuration steps: the defaults, and one per name.
pub(super) fn parse(text: &str, base_dir: Option<&Path>) -> Result<FileParsed, Error> {
    let file: FileConfig =
        toml::from_str(text).map_err(|e| config_error(format!("client configuration: {e}")))?;
    let base_dir = base_dir.unwrap_or(Path::new(""));
    let defaults = file.defaults.into_steps("defaults", base_dir)?;
    let mut named = BTreeMap::new();
    for (name, settings) in file.clients {
        let steps = settings.into_steps(&format!("clients.{name}"), base_dir)?;
        named.insert(name, steps);
    }
    Ok(FileParsed {
        strict_names: file.strict_names,
        defaults,
        named,
    })
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    /// See `ClientFactoryBuilder::strict_names`.
    strict_names: Option<bool>,
    #[serde(default)]
    defaults: Settings,
    #[serde(default)]
    clients: BTreeMap<String, Settings>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum HttpVersion {
    Auto,
    Http1,
    Http2,
    /// `ClientBuilder::http3_prior_knowledge` (without feature `http3`,
    /// "http3" is an unknown value, refused when the file is read).
    #[cfg(feature = "http3")]
    Http3,
}

/// `min_tls_version = "1.3"`: `"1.0"`, `"1.1"`, `"1.2"` or `"1.3"`.
#[derive(Debug, Clone, Copy)]
struct TlsVersion(Version);

impl<'de> Deserialize<'de> for TlsVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Version::parse(&text).map(TlsVersion).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "TLS version {text:?}: one of \"1.0\", \"1.1\", \"1.2\", \"1.3\""
            ))
        })
    }
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
    #[cfg(feature = "http3")]
    http3_alt_svc: Option<bool>,
    #[cfg(feature = "http3")]
    http3_head_start: Option<Dur>,
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    http3_https_records: Option<bool>,
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    http3_https_records_nameserver: Option<std::net::SocketAddr>,
    #[cfg(feature = "http3")]
    http3_stream_receive_window: Option<u32>,
    #[cfg(feature = "http3")]
    http3_conn_receive_window: Option<u32>,
    #[cfg(feature = "http3")]
    http3_send_window: Option<u64>,
    #[cfg(feature = "http3")]
    http3_congestion_bbr: Option<bool>,
    #[cfg(feature = "http3")]
    tls_early_data: Option<bool>,
    #[cfg(feature = "http3")]
    http3_max_idle_timeout: Option<Dur>,
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
    tls_native_roots: Option<bool>,
    danger_accept_invalid_certs: Option<bool>,
    expect_continue: Option<OptNum>,
    expect_continue_timeout: Option<Dur>,
    tcp_keepalive: Option<OptDur>,
    local_address: Option<IpAddr>,
    happy_eyeballs_delay: Option<Dur>,
    connect_timeout_per_address: Option<OptDur>,
    http2_max_refused_retries: Option<u8>,
    // Routes (`network.rs`).
    proxy: Option<network::OneOrMany<network::ProxySettings>>,
    env_proxy: Option<bool>,
    resolve: Option<network::ResolveMap>,
    unix_socket: Option<PathBuf>,
    unix_sockets: Option<BTreeMap<String, PathBuf>>,
    min_tls_version: Option<TlsVersion>,
    max_tls_version: Option<TlsVersion>,
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
    // A cluster of replicas (`cluster.rs`).
    cluster: Option<cluster::ClusterSettings>,
}

fn read_pem(ctx: &str, base_dir: &Path, path: &Path) -> Result<Vec<u8>, Error> {
    let full = base_dir.join(path);
    std::fs::read(&full)
        .map_err(|e| config_error(format!("{ctx}: cannot read {}: {e}", full.display())))
}

impl Settings {
    /// Checks everything that can be wrong (URLs, header names, files) now,
    /// and returns steps that can no longer fail.
    fn into_steps(mut self, ctx: &str, base_dir: &Path) -> Result<Steps, Error> {
        let cluster =
            match self.cluster.take() {
                Some(_) if ctx == "defaults" => return Err(config_error(
                    "defaults.cluster: a cluster belongs to one client ([clients.NAME.cluster])"
                        .to_owned(),
                )),
                Some(c) => Some(c.into_options(&format!("{ctx}.cluster"), base_dir)?),
                None => None,
            };
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
        // TLS material is parsed here, so a bad file fails with its name.
        let bad = |what: &str, path: &Path, e: Error| {
            config_error(format!(
                "{ctx}.{what}: {}: {e}",
                base_dir.join(path).display()
            ))
        };
        let roots = match &self.root_certificates {
            Some(paths) => {
                let mut certs = Vec::new();
                for p in paths {
                    let pem = read_pem(ctx, base_dir, p)?;
                    certs.extend(
                        Certificate::from_pem_bundle(&pem)
                            .map_err(|e| bad("root_certificates", p, e))?,
                    );
                }
                Some(certs)
            }
            None => None,
        };
        let identity = match &self.identity {
            Some(id) => Some(
                Identity::from_pem_pair(
                    &read_pem(ctx, base_dir, &id.cert)?,
                    &read_pem(ctx, base_dir, &id.key)?,
                )
                .map_err(|e| bad("identity", &id.cert, e))?,
            ),
            None => None,
        };
        let network = network::Network::parse(&self, ctx, base_dir)?;
        let middleware = middleware::Parsed::new(&self, ctx)?;
        // The steps run for every client built (and every pool rotation), so
        // they share the settings rather than consume them.
        let s = Arc::new(self);
        let pool = {
            let s = Arc::clone(&s);
            Arc::new(move |b: ClientBuilder| {
                network.apply(s.apply_pool(b, roots.as_deref(), identity.as_ref()))
            }) as super::PoolFn
        };
        let parsed = Parsed {
            base_url,
            headers,
            middleware,
            cluster,
        };
        let options =
            Arc::new(move |o: &mut ClientOptions| s.apply_options(o, &parsed)) as super::OptionsFn;
        Ok(Steps {
            pool: vec![pool],
            options: vec![options],
        })
    }

    /// The QUIC transport keys (`ClientBuilder::http3_*`).
    #[cfg(feature = "http3")]
    fn apply_http3_transport(&self, mut b: ClientBuilder) -> ClientBuilder {
        if let Some(v) = self.http3_stream_receive_window {
            b = b.http3_stream_receive_window(v);
        }
        if let Some(v) = self.http3_conn_receive_window {
            b = b.http3_conn_receive_window(v);
        }
        if let Some(v) = self.http3_send_window {
            b = b.http3_send_window(v);
        }
        if let Some(v) = self.http3_congestion_bbr {
            b = b.http3_congestion_bbr(v);
        }
        if let Some(v) = self.tls_early_data {
            b = b.tls_early_data(v);
        }
        if let Some(v) = self.http3_max_idle_timeout {
            b = b.http3_max_idle_timeout(v.0);
        }
        b
    }

    fn apply_pool(
        &self,
        mut b: ClientBuilder,
        roots: Option<&[Certificate]>,
        identity: Option<&Identity>,
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
            #[cfg(feature = "http3")]
            Some(HttpVersion::Http3) => b = b.http3_prior_knowledge(),
            Some(HttpVersion::Auto) | None => {}
        }
        #[cfg(feature = "http3")]
        if let Some(v) = self.http3_alt_svc {
            b = b.http3_alt_svc(v);
        }
        #[cfg(feature = "http3")]
        if let Some(v) = self.http3_head_start {
            b = b.http3_head_start(v.0);
        }
        #[cfg(all(feature = "http3", feature = "dns-srv"))]
        if let Some(v) = self.http3_https_records {
            b = b.http3_https_records(v);
        }
        #[cfg(all(feature = "http3", feature = "dns-srv"))]
        if let Some(v) = self.http3_https_records_nameserver {
            b = b.http3_https_records_nameserver(v);
        }
        #[cfg(feature = "http3")]
        {
            b = self.apply_http3_transport(b);
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
        for cert in roots.unwrap_or_default() {
            b = b.add_root_certificate(cert.clone());
        }
        if let Some(v) = self.tls_built_in_root_certs {
            b = b.tls_built_in_root_certs(v);
        }
        if let Some(identity) = identity {
            b = b.identity(identity.clone());
        }
        if let Some(v) = self.tls_session_resumption {
            b = b.tls_session_resumption(v);
        }
        if let Some(v) = self.danger_accept_invalid_certs {
            b = b.danger_accept_invalid_certs(v);
        }
        if let Some(v) = self.tls_native_roots {
            b = b.tls_native_roots(v);
        }
        if let Some(v) = self.expect_continue {
            b = b.expect_continue(v.0);
        }
        if let Some(v) = self.expect_continue_timeout {
            b = b.expect_continue_timeout(v.0);
        }
        if let Some(v) = self.tcp_keepalive {
            b = b.tcp_keepalive(v.0);
        }
        if let Some(v) = self.local_address {
            b = b.local_address(Some(v));
        }
        if let Some(v) = self.happy_eyeballs_delay {
            b = b.happy_eyeballs_delay(v.0);
        }
        if let Some(v) = self.connect_timeout_per_address {
            b = b.connect_timeout_per_address(v.0);
        }
        if let Some(v) = self.http2_max_refused_retries {
            b = b.http2_max_refused_retries(v);
        }
        if self.env_proxy == Some(false) {
            b = b.no_env_proxy();
        }
        if middleware::redirect_switched_off(&self.redirect) {
            b = b.redirect(crate::redirect::Policy::none());
        }
        if middleware::decompression_switched_off(&self.decompression) {
            b = b.no_gzip().no_brotli().no_zstd().no_deflate();
        }
        if let Some(v) = self.min_tls_version {
            b = b.min_tls_version(v.0);
        }
        if let Some(v) = self.max_tls_version {
            b = b.max_tls_version(v.0);
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
        middleware::apply(self, &mut o.middleware, &parsed.middleware);
        if let Some(c) = &parsed.cluster {
            o.cluster = Some(c.clone());
        }
    }
}

/// Values checked when the file was read.
struct Parsed {
    base_url: Option<Uri>,
    headers: Option<HeaderMap>,
    middleware: middleware::Parsed,
    cluster: Option<crate::factory::ClusterOptions>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn unknown_keys_are_errors() {
        let err = parse("[defaults]\nmax_conections_per_host = 3\n", None)
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("max_conections_per_host"), "{err}");
        // Inside a section that may also be `true`/`false`, too.
        let err = parse("[clients.a.retry]\nmax_attemps = 3\n", None)
            .err()
            .unwrap();
        assert!(err.to_string().contains("max_attemps"), "{err}");
        assert!(parse("[clients.a]\nretry = false\n", None).is_ok());
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
