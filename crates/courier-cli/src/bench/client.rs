//! Builds the benchmark's clients from the flags.
//!
//! Only flags that were given are applied, so an absent flag means "the library's default" and
//! the benchmark measures what a user of the library gets out of the box. [`builder`] is the one
//! place that turns flags into a `ClientBuilder`. With `--handler-lifetime`, each client comes
//! from a `ClientFactory` that replaces its whole pool every handler lifetime (the seed's
//! HttpClientFactory experiment); otherwise each is a plain `Client`.

use std::future::Future;
use std::sync::Arc;

use courier::{
    Body, Client, ClientBuilder, ClientFactory, Error, MetricsSnapshot, Response, ServiceClient,
};
use http::{Request, Uri};
use tokio_util::either::Either;

use super::args::{BenchArgs, HttpVersion, Load};
use super::connect_to::{self, Pins};
use crate::error::{CliError, Result};

/// One of the run's clients.
#[derive(Clone)]
pub enum BenchClient {
    /// A `Client` used directly (no middleware).
    Plain(Client),
    /// A factory client whose pool rotates every handler lifetime.
    Factory(ServiceClient),
}

impl BenchClient {
    /// Sends one request.
    ///
    /// Not an `async fn`: that would hold the request a second time and be as large as the
    /// larger of the two futures in every slot, and each long poll in flight pays for its
    /// slot's future. The factory client's future (middleware included) is boxed instead,
    /// so a plain client's requests carry only the library's own request future.
    pub fn execute(
        &self,
        request: Request<Body>,
    ) -> impl Future<Output = std::result::Result<Response, Error>> + Send + 'static {
        match self {
            BenchClient::Plain(client) => Either::Left(client.execute(request)),
            BenchClient::Factory(client) => {
                let client = client.clone();
                Either::Right(Box::pin(async move { client.execute(request).await }))
            }
        }
    }

    /// The pool's metrics (a rotating factory client adds up all its pools).
    pub fn metrics(&self) -> MetricsSnapshot {
        match self {
            BenchClient::Plain(client) => client.metrics(),
            BenchClient::Factory(client) => client.metrics(),
        }
    }
}

/// What the clients need besides the flags, read once before the run: files are read and
/// `--connect-to` hosts resolved before anything starts, so a mistake is an error up front, and
/// every client (and every pool a factory rotates in) gets the same.
#[derive(Debug, Clone, Default)]
pub struct ClientSetup {
    /// The built-in TLS server's certificate (PEM), to trust.
    pub trust: Option<String>,
    /// `--cacert`'s PEM.
    pub cacert: Option<Vec<u8>>,
    /// `--cert`/`--key`: the client certificate chain and its key, PEM.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// `--connect-to`, evaluated against the run's URLs.
    pub pins: Pins,
}

impl ClientSetup {
    /// Reads the files the flags name and resolves the `--connect-to` routes for `uris`.
    pub fn read(args: &BenchArgs, uris: &[Uri]) -> Result<Self> {
        let net = &args.network;
        if let Some(path) = &net.unix_socket {
            if args.url.is_none() && args.targets.is_none() {
                return Err(CliError::new(
                    "--unix-socket needs a URL (or --targets): the built-in server listens on TCP",
                ));
            }
            if !path.exists() {
                return Err(CliError::new(format!(
                    "--unix-socket {}: no such socket",
                    path.display()
                )));
            }
        }
        if let Some(proxy) = &net.proxy {
            courier::Proxy::all(proxy)
                .map_err(|e| CliError::new(format!("--proxy {proxy}: {e}")))?;
        }
        let identity = match &net.cert {
            Some(cert) => {
                let cert_pem = read_pem("--cert", cert, "CERTIFICATE")?;
                let key_pem = match &net.key {
                    Some(key) => read_pem("--key", key, "PRIVATE KEY")?,
                    None => read_pem("--cert (with no --key)", cert, "PRIVATE KEY")?,
                };
                Some((cert_pem, key_pem))
            }
            None => None,
        };
        Ok(Self {
            trust: None,
            cacert: args
                .cacert
                .as_deref()
                .map(|path| read_pem("--cacert", path, "CERTIFICATE"))
                .transpose()?,
            identity,
            pins: connect_to::pins(&net.connect_to, uris)?,
        })
    }
}

/// The builder for one client of the run.
pub fn builder(args: &BenchArgs, load: &Load, setup: &ClientSetup) -> Result<ClientBuilder> {
    apply(Client::builder(), args, load, setup)
}

/// Applies the flags to `builder`.
fn apply(
    mut builder: ClientBuilder,
    args: &BenchArgs,
    load: &Load,
    setup: &ClientSetup,
) -> Result<ClientBuilder> {
    // A load generator measures the target, not a proxy the environment
    // happens to name (wrk and h2load read no proxy variables either).
    builder = builder.no_env_proxy();
    builder = match args.http {
        HttpVersion::Auto => builder,
        HttpVersion::Http1 => builder.http1_only(),
        HttpVersion::Http2 => builder.http2_prior_knowledge(),
        HttpVersion::Http3 => builder.http3_prior_knowledge(),
    };
    if args.alt_svc {
        builder = builder.http3_alt_svc(true);
    }
    if args.no_multiple_http2_connections {
        builder = builder.http2_multiple_connections(false);
    }
    if let Some(pem) = &setup.trust {
        builder = builder.add_root_certificate(pem);
    }
    if let Some(pem) = &setup.cacert {
        builder = builder.add_root_certificate(pem);
    }
    if let Some((cert, key)) = &setup.identity {
        let identity = courier::Identity::from_pem_pair(cert, key)
            .map_err(|e| CliError::new(format!("--cert/--key: {e}")))?;
        builder = builder.identity(identity);
    }
    if let Some(url) = &args.network.proxy {
        let proxy =
            courier::Proxy::all(url).map_err(|e| CliError::new(format!("--proxy {url}: {e}")))?;
        builder = builder.proxy(proxy);
    }
    if let Some(path) = &args.network.unix_socket {
        builder = builder.unix_socket(path);
    }
    for (host, addrs) in &setup.pins {
        for addr in addrs {
            builder = builder.resolve(host, *addr);
        }
    }
    if args.insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    if let Some(n) = load.max_connections_per_host {
        builder = builder.max_connections_per_host(to_usize(n, "--max-connections-per-host")?);
    }
    if let Some(bytes) = args.network.http3_stream_receive_window {
        builder = builder.http3_stream_receive_window(bytes);
    }
    if let Some(bytes) = args.network.http3_conn_receive_window {
        builder = builder.http3_conn_receive_window(bytes);
    }
    if args.network.http3_congestion_bbr {
        builder = builder.http3_congestion_bbr(true);
    }
    if args.network.tls_early_data {
        builder = builder.tls_early_data(true);
    }
    if let Some(idle) = args.pool_idle_timeout {
        builder = builder.pool_idle_timeout(idle.as_option());
    }
    if let Some(lifetime) = args.pooled_connection_lifetime {
        builder = builder.pooled_connection_lifetime(lifetime.as_option());
    }
    if let Some(jitter) = args.pooled_connection_lifetime_jitter {
        builder = builder.pooled_connection_lifetime_jitter(jitter.as_duration());
    }
    if let Some(timeout) = args.connect_timeout {
        builder = builder.connect_timeout(timeout.as_duration());
    }
    if let Some(timeout) = args.timeout {
        builder = builder.timeout(timeout.as_duration());
    }
    if let Some(timeout) = args.pool_queue_timeout {
        builder = builder.pool_queue_timeout(timeout.as_option());
    }
    if let Some(size) = args.max_response_drain_size {
        builder = builder.max_response_drain_size(size);
    }
    if let Some(timeout) = args.response_drain_timeout {
        builder = builder.response_drain_timeout(timeout.as_duration());
    }
    if let Some(size) = args.max_response_headers_size {
        builder = builder.max_response_headers_size(to_usize(size, "--max-response-headers-size")?);
    }
    if args.default_headers {
        builder = builder.default_headers(super::headers::from_flags(args)?);
    }
    Ok(builder)
}

/// The run's independent clients (`--clients`, or one per `--connections`). Built inside the
/// runtime: a client may start background tasks (idle scavenging).
pub fn build_all(args: &BenchArgs, load: &Load, setup: &ClientSetup) -> Result<Vec<BenchClient>> {
    if let Some(lifetime) = args.handler_lifetime {
        return build_factory_clients(args, load, setup, lifetime.as_duration());
    }
    (0..load.clients)
        .map(|_| {
            builder(args, load, setup)?
                .build()
                .map(BenchClient::Plain)
                .map_err(|e| CliError::new(format!("cannot build the HTTP client: {e:#}")))
        })
        .collect()
}

/// `--handler-lifetime`: one named client per run client, each rotating its whole pool every
/// `lifetime`. Without `--pooled-connection-lifetime` the pool's connections live until their
/// pool is retired (the seed's "HL only"); with it, both apply ("HL + PCL").
fn build_factory_clients(
    args: &BenchArgs,
    load: &Load,
    setup: &ClientSetup,
    lifetime: std::time::Duration,
) -> Result<Vec<BenchClient>> {
    // Validate once here; the factory re-applies the same flags to each pool it builds.
    apply(Client::builder(), args, load, setup)?
        .build()
        .map_err(|e| CliError::new(format!("cannot build the HTTP client: {e:#}")))?;
    let shared = Arc::new((args.clone(), *load, setup.clone()));
    let hl_only = args.pooled_connection_lifetime.is_none();
    let factory = ClientFactory::builder()
        .handler_lifetime(Some(lifetime))
        .options_defaults(|o| o.rotate_pool = true)
        .configure_defaults(move |b| {
            let (args, load, setup) = &*shared;
            let b = apply(b, args, load, setup).expect("flags validated above");
            if hl_only {
                b.pooled_connection_lifetime(None)
            } else {
                b
            }
        })
        .build()
        .map_err(|e| CliError::new(format!("cannot build the client factory: {e:#}")))?;
    Ok((0..load.clients)
        .map(|i| BenchClient::Factory(factory.client(&format!("bench-{i}"))))
        .collect())
}

/// Reads a PEM file that must hold a `what` block (`CERTIFICATE`, `PRIVATE KEY`): the library
/// fails `build()` on PEM that does not parse, but a file without the block at all could pass
/// silently (trusting nothing new, presenting no certificate).
fn read_pem(flag: &str, path: &std::path::Path, what: &str) -> Result<Vec<u8>> {
    let pem = std::fs::read(path)
        .map_err(|e| CliError::new(format!("{flag} {}: {e}", path.display())))?;
    // `PRIVATE KEY` also matches `RSA PRIVATE KEY` and `EC PRIVATE KEY`.
    let found = String::from_utf8_lossy(&pem)
        .lines()
        .any(|line| line.starts_with("-----BEGIN ") && line.contains(what));
    if !found {
        return Err(CliError::new(format!(
            "{flag} {}: no PEM {} (-----BEGIN {what}-----) in the file",
            path.display(),
            what.to_ascii_lowercase()
        )));
    }
    Ok(pem)
}

/// Converts a count flag to `usize`, which only fails on targets narrower than 64 bits.
pub fn to_usize(n: u64, flag: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| CliError::new(format!("{flag} {n} is too large")))
}
