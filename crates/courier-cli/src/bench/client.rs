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
use http::Request;
use tokio_util::either::Either;

use super::args::{BenchArgs, HttpVersion, Load};
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

/// The builder for one client of the run; `trust` is the built-in TLS server's certificate.
pub fn builder(args: &BenchArgs, load: &Load, trust: Option<&str>) -> Result<ClientBuilder> {
    apply(Client::builder(), args, load, trust)
}

/// Applies the flags to `builder`.
fn apply(
    mut builder: ClientBuilder,
    args: &BenchArgs,
    load: &Load,
    trust: Option<&str>,
) -> Result<ClientBuilder> {
    // A load generator measures the target, not a proxy the environment
    // happens to name (wrk and h2load read no proxy variables either).
    builder = builder.no_env_proxy();
    builder = match args.http {
        HttpVersion::Auto => builder,
        HttpVersion::Http1 => builder.http1_only(),
        HttpVersion::Http2 => builder.http2_prior_knowledge(),
    };
    if args.no_multiple_http2_connections {
        builder = builder.http2_multiple_connections(false);
    }
    if let Some(pem) = trust {
        builder = builder.add_root_certificate(pem);
    }
    if let Some(path) = &args.cacert {
        builder = builder.add_root_certificate(read_cacert(path)?);
    }
    if args.insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    if let Some(n) = load.max_connections_per_host {
        builder = builder.max_connections_per_host(to_usize(n, "--max-connections-per-host")?);
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
        builder = builder.default_headers(super::request::headers(args)?);
    }
    Ok(builder)
}

/// The run's independent clients (`--clients`, or one per `--connections`). Built inside the
/// runtime: a client may start background tasks (idle scavenging).
pub fn build_all(args: &BenchArgs, load: &Load, trust: Option<&str>) -> Result<Vec<BenchClient>> {
    if let Some(lifetime) = args.handler_lifetime {
        return build_factory_clients(args, load, trust, lifetime.as_duration());
    }
    (0..load.clients)
        .map(|_| {
            builder(args, load, trust)?
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
    trust: Option<&str>,
    lifetime: std::time::Duration,
) -> Result<Vec<BenchClient>> {
    // Validate once here; the factory re-applies the same flags to each pool it builds.
    apply(Client::builder(), args, load, trust)?
        .build()
        .map_err(|e| CliError::new(format!("cannot build the HTTP client: {e:#}")))?;
    let shared = Arc::new((args.clone(), *load, trust.map(str::to_owned)));
    let hl_only = args.pooled_connection_lifetime.is_none();
    let factory = ClientFactory::builder()
        .handler_lifetime(Some(lifetime))
        .options_defaults(|o| o.rotate_pool = true)
        .configure_defaults(move |b| {
            let (args, load, trust) = &*shared;
            let b = apply(b, args, load, trust.as_deref()).expect("flags validated above");
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

/// Reads `--cacert`: the library takes PEM and fails `build()` on PEM that does not parse, but
/// a file with no certificate at all would pass silently, trusting nothing new.
fn read_cacert(path: &std::path::Path) -> Result<Vec<u8>> {
    let pem = std::fs::read(path)
        .map_err(|e| CliError::new(format!("--cacert {}: {e}", path.display())))?;
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(CliError::new(format!(
            "--cacert {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file",
            path.display()
        )));
    }
    Ok(pem)
}

/// Converts a count flag to `usize`, which only fails on targets narrower than 64 bits.
pub fn to_usize(n: u64, flag: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| CliError::new(format!("{flag} {n} is too large")))
}
