//! `courier serve`: the built-in test server as a standalone process.
//!
//! Useful to benchmark against a server in another process (so client and server do not share
//! a runtime) or to poke at the test endpoints with curl. With `--tls` it generates a private CA
//! and a certificate at start and writes the CA certificate to a file, so a client can trust
//! this one run's server without any setup (`curl --cacert courier-serve-cert.pem https://...`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;

use crate::error::{CliError, Result};
use crate::secs::Secs;

/// Runs the built-in HTTP server until Ctrl-C.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub addr: IpAddr,

    /// Port to listen on (0 picks a free one).
    #[arg(short = 'p', long, default_value_t = 8080)]
    pub port: u16,

    /// Threads serving requests [default: the CPUs this process may run on]. With one, the
    /// server runs on the current thread (see `server_runtime`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: Option<u64>,

    /// Close connections idle this long, e.g. 30s [default: never].
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<Secs>,

    /// Close each connection after one response instead of keeping it alive
    /// (HTTP/2: GOAWAY after the first request).
    #[arg(long)]
    pub no_keep_alive: bool,

    /// Serve HTTPS with a certificate generated at start (for localhost, 127.0.0.1, ::1 and
    /// --addr); the protocol is then chosen by ALPN.
    #[arg(long)]
    pub tls: bool,

    /// Where --tls writes the CA certificate (PEM) that clients must trust.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "courier-serve-cert.pem",
        requires = "tls"
    )]
    pub cert_out: PathBuf,

    /// With --tls: require a client certificate (mutual TLS) issued by this run's CA, and write
    /// one (certificate and key in one PEM file) to --client-cert-out for clients to present
    /// (`courier bench --cert FILE`, `curl --cert FILE`).
    #[arg(long, requires = "tls")]
    pub client_auth: bool,

    /// Where --client-auth writes the client certificate and its key (PEM).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "courier-serve-client.pem",
        requires = "client_auth"
    )]
    pub client_cert_out: PathBuf,

    /// With --tls: require a client certificate issued by a CA in this PEM file (with
    /// --client-auth, either CA will do).
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub client_ca: Option<PathBuf>,

    /// With --tls: serve HTTP/3 too, on UDP at the same port number, advertised by
    /// `alt-svc: h3=":PORT"` on every TCP response.
    #[arg(long, requires = "tls")]
    pub http3: bool,

    /// With --http3: BBR congestion control for responses over QUIC instead of Cubic.
    #[arg(long, requires = "http3", hide_short_help = true)]
    pub quic_bbr: bool,

    /// With --http3: take 0-RTT early data on resumed QUIC sessions. Requests
    /// received early carry `early-data: 1` and `/too-early` answers them 425.
    #[arg(long = "quic-0rtt", requires = "http3", hide_short_help = true)]
    pub quic_0rtt: bool,

    /// Concurrent requests a client may have on one connection: HTTP/2's
    /// SETTINGS_MAX_CONCURRENT_STREAMS, HTTP/3's MAX_STREAMS (at most 65536) [default: 100].
    #[arg(long, value_name = "N")]
    pub max_concurrent_streams: Option<u32>,

    /// Serve HTTP/1.1 only (no HTTP/2, no h2c detection).
    #[arg(long, conflicts_with = "http2_only")]
    pub http1_only: bool,

    /// Serve HTTP/2 only (h2 by ALPN with --tls, h2c prior knowledge without).
    #[arg(long)]
    pub http2_only: bool,

    /// Run N replicas of one service instead (each on its own free port of --addr; every path
    /// answers "ok" after --service-time, or as the replica's --fault says), as
    /// `courier bench --scenario cluster` does.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000),
          conflicts_with = "tls")]
    pub replicas: Option<u64>,

    /// With --replicas: a healthy replica's service time [default: 5ms].
    #[arg(long, value_name = "DURATION", requires = "replicas",
          value_parser = |t: &str| t.parse::<Secs>().map(Secs::as_duration))]
    pub service_time: Option<std::time::Duration>,

    /// With --replicas: requests each replica serves at once (more wait in line) [default: 1].
    #[arg(long, value_name = "W", requires = "replicas",
          value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub replica_workers: Option<u64>,

    /// With --replicas: a replica's fault, REPLICA=KIND[@START][+LENGTH] (as in
    /// `courier bench --scenario cluster`, e.g. 3=slow:10, 7=503, 5=stall:2s@10s+30s);
    /// repeatable. Times count from the start.
    #[arg(long = "fault", value_name = "SPEC", requires = "replicas")]
    pub faults: Vec<courier_server::ReplicaFault>,
}

/// Starts the server, prints its URL, and serves until Ctrl-C.
pub fn run(args: ServeArgs) -> Result<()> {
    let threads = match args.threads {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    server_runtime(threads)?.block_on(serve(args))
}

/// The server's runtime: `threads` workers, or the current thread alone for one.
///
/// Why not a multi-thread runtime with one worker (what tokio's default gives a process pinned
/// to one CPU): its worker runs the task a response wakes (QUIC's connection driver) straight
/// after that response, so an HTTP/3 connection sent a datagram per two responses; the
/// current-thread runtime runs the woken driver after the ready responses, and it sends them
/// together (docs/src/http3.md, "Where the HTTP/3 client's CPU goes").
fn server_runtime(threads: usize) -> Result<tokio::runtime::Runtime> {
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))
}

async fn serve(args: ServeArgs) -> Result<()> {
    let addr = SocketAddr::new(args.addr, args.port);
    let tls = if args.tls {
        Some(self_signed(&args)?)
    } else {
        None
    };
    let mut config = courier_server::ServerConfig {
        addr,
        keep_alive: !args.no_keep_alive,
        idle_timeout: args.idle_timeout.map(Secs::as_duration),
        tls,
        http1: !args.http2_only,
        http2: !args.http1_only,
        http3: args.http3,
        quic_congestion_bbr: args.quic_bbr,
        quic_0rtt: if args.quic_0rtt {
            courier_server::ZeroRtt::Accept
        } else {
            courier_server::ZeroRtt::Off
        },
        ..Default::default()
    };
    if let Some(max) = args.max_concurrent_streams {
        config.max_concurrent_streams = Some(max);
    }
    if let Some(count) = args.replicas {
        return crate::serve_replicas::serve(crate::serve_replicas::Replicas {
            count: count as usize,
            service_time: args
                .service_time
                .unwrap_or(std::time::Duration::from_millis(5)),
            workers: args.replica_workers.unwrap_or(1) as usize,
            faults: args.faults,
            server: config,
        })
        .await;
    }
    let protocols = match (config.http1, config.http2) {
        (true, true) if args.tls => "HTTP/1.1 and HTTP/2 (ALPN)",
        (true, true) => "HTTP/1.1 and HTTP/2 (h2c prior knowledge)",
        (true, false) => "HTTP/1.1",
        _ => "HTTP/2",
    };
    let server = courier_server::start(config)
        .await
        .map_err(|e| CliError::new(format!("cannot listen on {addr}: {e}")))?;
    let mut banner = format!(
        "courier serve: listening on {} ({protocols})\n",
        server.url("/")
    );
    if let Some(udp) = server.http3_addr() {
        banner += &format!("HTTP/3: QUIC on UDP {udp}, advertised by alt-svc on TCP responses\n");
    }
    if args.tls {
        banner += &format!(
            "TLS: trust the CA certificate in {} (e.g. curl --cacert {} {})\n",
            args.cert_out.display(),
            args.cert_out.display(),
            server.url("/bytes/16"),
        );
    }
    if args.client_auth {
        banner += &format!(
            "mutual TLS: present the client certificate in {} (curl --cert {0})\n",
            args.client_cert_out.display(),
        );
    } else if let Some(path) = &args.client_ca {
        banner += &format!(
            "mutual TLS: clients need a certificate issued by a CA in {}\n",
            path.display()
        );
    }
    banner += "endpoints: /bytes/{n} /json/{n} /delay/{ms} /echo /status/{code} /headers /close /fault/...\n";
    banner += "press Ctrl-C to stop\n";
    crate::banner::print_banner(&banner);
    let signal = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    signal.map_err(|e| CliError::new(format!("cannot wait for Ctrl-C: {e}")))
}

/// Generates this run's certificate and writes the CA that signed it to `--cert-out`.
///
/// The names cover the usual ways to reach a local server, plus `--addr` when it is a specific
/// address (an unspecified one, `0.0.0.0`, says nothing about which address clients will use).
fn self_signed(args: &ServeArgs) -> Result<courier_server::TlsConfig> {
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let addr = args.addr.to_string();
    if !args.addr.is_unspecified() && !names.contains(&addr) {
        names.push(addr);
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let pki = courier_server::TestPki::new();
    let mut tls = pki.server_config(&names);
    let write = |path: &std::path::Path, text: &str| {
        std::fs::write(path, text).map_err(|e| {
            CliError::new(format!(
                "cannot write the certificate to {}: {e}",
                path.display()
            ))
        })
    };
    write(&args.cert_out, &pki.ca_pem())?;
    if args.client_auth {
        let (cert, key) = pki.client_identity("courier serve client");
        write(&args.client_cert_out, &format!("{cert}{key}"))?;
        tls = tls
            .require_client_certs(&pki.ca_pem())
            .map_err(|e| CliError::new(format!("--client-auth: {e}")))?;
    }
    if let Some(path) = &args.client_ca {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| CliError::new(format!("--client-ca {}: {e}", path.display())))?;
        tls = tls
            .require_client_certs(&pem)
            .map_err(|e| CliError::new(format!("--client-ca {}: {e}", path.display())))?;
    }
    Ok(tls)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> std::result::Result<ServeArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied())).map(|c| c.serve)
    }

    /// One thread is the current-thread runtime, not a multi-thread one with one worker (which
    /// sends an HTTP/3 response at a time); more are workers.
    #[test]
    fn one_thread_serves_on_the_current_thread() {
        assert_eq!(parse(&["--threads", "1"]).unwrap().threads, Some(1));
        assert_eq!(parse(&[]).unwrap().threads, None);
        assert!(parse(&["--threads", "0"]).is_err());
        let flavor = |threads| {
            server_runtime(threads)
                .unwrap()
                .block_on(async { tokio::runtime::Handle::current().runtime_flavor() })
        };
        assert_eq!(flavor(1), tokio::runtime::RuntimeFlavor::CurrentThread);
        assert_eq!(flavor(2), tokio::runtime::RuntimeFlavor::MultiThread);
    }

    #[test]
    fn defaults_serve_both_protocols_without_tls() {
        let args = parse(&[]).expect("parse");
        assert!(!args.tls);
        assert!(!args.http1_only && !args.http2_only);
        assert_eq!(args.max_concurrent_streams, None);
        assert_eq!(args.cert_out, PathBuf::from("courier-serve-cert.pem"));
    }

    #[test]
    fn protocol_flags_exclude_each_other() {
        assert!(parse(&["--http1-only", "--http2-only"]).is_err());
        let args = parse(&["--http2-only", "--max-concurrent-streams", "8"]).expect("parse");
        assert!(args.http2_only);
        assert_eq!(args.max_concurrent_streams, Some(8));
    }

    #[test]
    fn replica_flags_need_replicas() {
        assert!(parse(&["--fault", "3=503"]).is_err());
        let args = parse(&[
            "--replicas",
            "3",
            "--fault",
            "1=slow:10",
            "--service-time",
            "2ms",
        ])
        .expect("parse");
        assert_eq!(args.replicas, Some(3));
        assert_eq!(args.faults.len(), 1);
        assert_eq!(args.service_time, Some(std::time::Duration::from_millis(2)));
        assert!(parse(&["--replicas", "3", "--fault", "1=teapot"]).is_err());
    }

    #[test]
    fn http3_needs_tls() {
        assert!(parse(&["--http3"]).is_err());
        assert!(parse(&["--tls", "--http3"]).expect("parse").http3);
        assert!(!parse(&["--tls"]).expect("parse").http3);
    }

    #[test]
    fn cert_out_needs_tls() {
        assert!(parse(&["--cert-out", "x.pem"]).is_err());
        let args = parse(&["--tls", "--cert-out", "x.pem"]).expect("parse");
        assert_eq!(args.cert_out, PathBuf::from("x.pem"));
        assert!(parse(&["--client-auth"]).is_err());
        assert!(parse(&["--client-ca", "ca.pem"]).is_err());
        assert!(parse(&["--tls", "--client-cert-out", "c.pem"]).is_err());
        let args = parse(&["--tls", "--client-auth", "--client-cert-out", "c.pem"]).expect("parse");
        assert!(args.client_auth);
        assert_eq!(args.client_cert_out, PathBuf::from("c.pem"));
    }
}
