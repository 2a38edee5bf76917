//! Builds the benchmark's `courier::Client`s from the flags.
//!
//! Only flags that were given are applied, so an absent flag means "the library's default" and
//! the benchmark measures what a user of the library gets out of the box. [`builder`] is the one
//! place that turns flags into a `ClientBuilder`: protocol flags (`--http`, `--tls`,
//! `--insecure`, multiple HTTP/2 connections) are applied here, and a client factory
//! (`--handler-lifetime`) would replace [`build_all`].

use courier::{Client, ClientBuilder};

use super::args::{BenchArgs, HttpVersion, Load};
use crate::error::{CliError, Result};

/// The builder for one client of the run; `trust` is the built-in TLS server's certificate.
pub fn builder(args: &BenchArgs, load: &Load, trust: Option<&str>) -> Result<ClientBuilder> {
    let mut builder = Client::builder();
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
    Ok(builder)
}

/// The run's independent clients (`--clients`, or one per `--connections`). Built inside the
/// runtime: a client may start background tasks (idle scavenging).
pub fn build_all(args: &BenchArgs, load: &Load, trust: Option<&str>) -> Result<Vec<Client>> {
    (0..load.clients)
        .map(|_| {
            builder(args, load, trust)?
                .build()
                .map_err(|e| CliError::new(format!("cannot build the HTTP client: {e}")))
        })
        .collect()
}

/// Converts a count flag to `usize`, which only fails on targets narrower than 64 bits.
pub fn to_usize(n: u64, flag: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| CliError::new(format!("{flag} {n} is too large")))
}
