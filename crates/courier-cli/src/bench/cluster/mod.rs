//! `courier bench --scenario cluster`: a service of N replicas in this process, some of them
//! faulty, under open-loop load through `courier::ClusterClient`, and optionally the same load
//! through the baselines (healthy replicas; round robin and P2C peak EWMA without retries).
//!
//! Why a scenario of its own: the cluster client's worth is in how it spreads traffic over
//! replicas that misbehave, which needs replicas with known faults (`courier_server::ReplicaSet`),
//! counters of what reached each replica, and figures the other scenarios do not have
//! (attempts per request, share per replica over time, time for p99 to come back). The parts:
//! `super::args::cluster` (the flags), `sender` (cluster client or round robin), `load` (the open loop), `tally`
//! (what the requests recorded), `watch` (`--progress`), `analysis` (the figures), `render`
//! (the text report); the JSON report is the figures serialized.

mod analysis;
mod load;
mod render;
mod sender;
mod tally;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use courier_server::{ReplicaSet, ReplicasConfig};
use serde::Serialize;

use self::analysis::{RunData, RunFigures};
use self::sender::{Balancer, Sender, Shape};
use self::tally::Tally;
use self::watch::Watch;
use super::args::cluster::{self as cluster_args, ClusterOrdering};
use super::args::{BenchArgs, HttpVersion, Load, Model, Stop};
use super::progress::Progress;
use crate::error::{CliError, Result};

/// In-flight cap of the open loop when `-c` is not given.
const DEFAULT_CAP: u64 = 10_000;

/// What every run of the invocation shares.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioSetup {
    pub replicas: usize,
    pub service_time: Duration,
    pub workers: usize,
    /// Requests per second the healthy replicas serve.
    pub capacity: f64,
    pub faults: Vec<String>,
    pub rate: f64,
    pub duration: Duration,
    pub budget: Duration,
    pub protocol: String,
    /// Every request's method, path, headers and body (`GET /`).
    pub request: String,
}

/// The JSON report.
#[derive(Serialize)]
struct Report<'a> {
    scenario: &'static str,
    version: &'static str,
    config: &'a BenchArgs,
    setup: &'a ScenarioSetup,
    runs: &'a [RunFigures],
}

/// One run to make.
struct Run {
    name: String,
    balancer: Balancer,
    faulty: bool,
}

/// Runs the scenario and prints its report.
pub fn run(args: &BenchArgs) -> Result<()> {
    refuse_other_flags(args)?;
    let shape = Arc::new(Shape::from_args(args)?);
    let c = &args.cluster;
    let faults = c.fault_list();
    let defaults = courier_server::ServerConfig::default();
    let config = ReplicasConfig {
        replicas: c.replica_count(),
        service_time: c.service(),
        workers: c.workers(),
        faults: faults.clone(),
        server: courier_server::ServerConfig {
            max_concurrent_streams: args
                .server_max_concurrent_streams
                .or(defaults.max_concurrent_streams),
            ..defaults
        },
    };
    for f in &faults {
        if let courier_server::ReplicaSelector::One(i) = f.replica {
            if i >= config.replicas {
                return Err(CliError::new(format!(
                    "--fault {f}: there are {} replicas, numbered 0 to {}",
                    config.replicas,
                    config.replicas - 1
                )));
            }
        }
    }
    let capacity = config.healthy_capacity();
    let setup = ScenarioSetup {
        replicas: config.replicas,
        service_time: config.service_time,
        workers: config.workers,
        capacity,
        faults: faults.iter().map(ToString::to_string).collect(),
        rate: args
            .rate
            .unwrap_or(capacity * cluster_args::DEFAULT_LOAD_SHARE),
        duration: args
            .duration
            .map_or(super::args::DEFAULT_DURATION, |d| d.as_duration()),
        budget: args
            .timeout
            .map_or(cluster_args::DEFAULT_BUDGET, |t| t.as_duration()),
        protocol: match args.http {
            HttpVersion::Http2 => "h2c".to_owned(),
            HttpVersion::Http3 => "HTTP/3".to_owned(),
            _ => "HTTP/1.1".to_owned(),
        },
        request: shape.describe(args),
    };
    if !shape.replayable() && !matches!(c.ordering(), ClusterOrdering::RoundRobin) {
        eprintln!(
            "courier bench: note: {} is not idempotent: the cluster sends each request to one \
             replica (-H 'idempotency-key: …' lets it try others)",
            args.method
        );
    }
    if let Some(path) = &args.json {
        super::output::check_writable("--json", path)?;
    }
    open_file_limit(args, &setup);
    let runs = plan(args, !faults.is_empty());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = |n: Option<u64>| n.map_or(cores, |n| n as usize).max(1);
    let runtime = |name: &str, n: usize| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .thread_name(name)
            .enable_all()
            .build()
            .map_err(|e| CliError::new(format!("cannot start a runtime: {e}")))
    };
    let server_rt = runtime("courier-replicas", threads(args.server_threads))?;
    let client_rt = runtime("courier-bench", threads(args.threads))?;
    let progress = Progress::new(args.progress);
    let mut figures = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        eprintln!(
            "courier bench: cluster run {}/{}: {}, {:.0} req/s for {} s ...",
            n + 1,
            runs.len(),
            run.name,
            setup.rate,
            setup.duration.as_secs_f64()
        );
        let mut replicas_config = config.clone();
        if !run.faulty {
            replicas_config.faults.clear();
        }
        let set = server_rt
            .block_on(ReplicaSet::start(replicas_config))
            .map_err(|e| CliError::new(format!("cannot start the replicas: {e}")))?;
        let result = client_rt.block_on(one_run(
            args,
            &setup,
            run,
            &set,
            Arc::clone(&shape),
            &progress,
        ));
        progress.clear();
        server_rt.block_on(set.shutdown());
        figures.push(result?);
    }
    client_rt.shutdown_timeout(Duration::from_millis(500));
    server_rt.shutdown_timeout(Duration::from_millis(500));
    print!("{}", render::render(&setup, &figures));
    if let Some(path) = &args.json {
        let report = Report {
            scenario: "cluster",
            version: env!("CARGO_PKG_VERSION"),
            config: args,
            setup: &setup,
            runs: &figures,
        };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::new(format!("cannot serialize the report: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::new(format!("--json {}: {e}", path.display())))?;
    }
    if figures.first().is_some_and(|f| f.successes == 0) {
        return Err(CliError::new("no request of the cluster run succeeded"));
    }
    Ok(())
}

/// Raises the open-file limit as the other scenarios do (`limits::discover`): the replicas run
/// in this process, so each HTTP/1.1 attempt in flight costs two descriptors, and a stalled
/// replica holds its attempts for their share of the budget. Left at a low soft limit, the run
/// failed attempts with "too many open files" (connect errors) and blamed the balancer. Says
/// so when even the raised limit is short of what the load can hold in flight: the requests
/// started within one budget, each with as many attempts at once as the strategy makes.
/// (Not `Limits::check`'s notes: they suggest `--server process`, which this scenario does
/// not have, and local ports are no limit here, each replica having its own port.)
fn open_file_limit(args: &BenchArgs, setup: &ScenarioSetup) {
    let limits = super::limits::discover();
    let attempts = match args.cluster.ordering() {
        ClusterOrdering::RoundRobin => 1,
        _ => cluster_args::attempts_at_most(args.cluster.strategy()),
    };
    let due_within_budget = (setup.rate * setup.budget.as_secs_f64()).ceil() as u64;
    let cap = args.concurrency.unwrap_or(DEFAULT_CAP);
    let in_flight = cap.min(due_within_budget).saturating_mul(attempts);
    let group = |n: u64| super::format::group_thousands(&n.to_string());
    if let (Some(files), Some(max)) = (limits.open_files, limits.max_connections(true)) {
        if setup.protocol != "h2c" && in_flight > max {
            eprintln!(
                "courier bench: note: open-file limit {}: client and replicas share this \
                 process, so HTTP/1.1 holds at most ~{} attempts in flight (this load may \
                 need ~{}; --http 2 needs one connection per replica)",
                group(files),
                group(max),
                group(in_flight)
            );
        }
    }
}

/// The runs: the one asked for, then with `--compare-baselines` the same on healthy
/// replicas (if any are faulty), round robin and P2C without retries (unless asked for).
fn plan(args: &BenchArgs, faulty: bool) -> Vec<Run> {
    let c = &args.cluster;
    let main = match c.ordering() {
        ClusterOrdering::RoundRobin => Balancer::RoundRobin,
        ordering => Balancer::Cluster {
            strategy: c.strategy(),
            fork_delay: c.fork_delay(),
            ordering: ordering.library().unwrap_or_default(),
            throttle: !c.no_cluster_throttle,
        },
    };
    let mut runs = vec![Run {
        name: main.name(),
        balancer: main,
        faulty,
    }];
    if c.compare_baselines {
        if faulty {
            runs.push(Run {
                name: format!("{}, healthy replicas", main.name()),
                balancer: main,
                faulty: false,
            });
        }
        for baseline in [Balancer::RoundRobin, Balancer::p2c_no_retries()] {
            if baseline != main {
                runs.push(Run {
                    name: baseline.name(),
                    balancer: baseline,
                    faulty,
                });
            }
        }
    }
    runs
}

async fn one_run(
    args: &BenchArgs,
    setup: &ScenarioSetup,
    run: &Run,
    set: &ReplicaSet,
    shape: Arc<Shape>,
    progress: &Progress,
) -> Result<RunFigures> {
    let cap = args.concurrency.unwrap_or(DEFAULT_CAP);
    let load = Load {
        model: Model::Open { rate: setup.rate },
        clients: 1,
        concurrency: cap,
        max_connections_per_host: args.max_connections_per_host,
        stop: Stop::Duration(setup.duration),
        warmup: Duration::ZERO,
    };
    let client = super::client::builder(args, &load, &super::client::ClientSetup::default())?
        .build()
        .map_err(|e| CliError::new(format!("cannot build the HTTP client: {e:#}")))?;
    let sender = Sender::new(
        run.balancer,
        client.clone(),
        &set.urls(),
        shape,
        setup.budget,
    )
    .map_err(|e| CliError::new(format!("cannot build the cluster client: {e:#}")))?;
    let tally = Arc::new(Tally::new());
    let schedule = load::Schedule {
        rate: setup.rate,
        duration: setup.duration,
        budget: setup.budget,
        cap,
    };
    let watch = Watch {
        progress,
        tally: &tally,
        client: &client,
        rate: setup.rate,
        duration: setup.duration,
    };
    let sent = tokio::select! {
        sent = load::run(&sender, schedule, &tally, || set.begin()) => sent,
        never = watch.run() => match never {},
    };
    let tallies = tally.snapshot();
    let seconds = set.seconds();
    let faults = if run.faulty {
        args.cluster.fault_list()
    } else {
        Vec::new()
    };
    Ok(analysis::figures(RunData {
        name: run.name.clone(),
        tallies: &tallies,
        seconds: &seconds,
        faults: &faults,
        duration: setup.duration,
        late: sent.late,
        max_in_flight: sent.max_in_flight,
        client: sender.snapshot(),
    }))
}

/// Flags of the other scenarios that mean nothing here: refused rather than ignored.
fn refuse_other_flags(args: &BenchArgs) -> Result<()> {
    let replicas_answer = "the replicas answer every request with the same 2-byte body";
    let in_process = "the replicas listen on loopback in this process";
    let why: [(&str, bool, &str); 12] = [
        ("--read-bytes", args.read_bytes.is_some(), replicas_answer),
        (
            "--response-size",
            args.response_size != super::args::DEFAULT_RESPONSE_SIZE,
            replicas_answer,
        ),
        (
            "--server",
            args.server != super::args::ServerMode::Auto,
            "the replicas run in this process, on a runtime of their own (--server-threads)",
        ),
        (
            "--count-allocations",
            args.count_allocations,
            "allocations per request are counted by the other scenarios",
        ),
        (
            "--insecure",
            args.insecure,
            "the replicas speak plain HTTP/1.1, or h2c with --http 2",
        ),
        (
            "--cacert",
            args.cacert.is_some(),
            "the replicas speak plain HTTP/1.1, or h2c with --http 2",
        ),
        (
            "--cert",
            args.network.cert.is_some(),
            "the replicas speak plain HTTP/1.1, or h2c with --http 2",
        ),
        ("--proxy", args.network.proxy.is_some(), in_process),
        (
            "--unix-socket",
            args.network.unix_socket.is_some(),
            in_process,
        ),
        (
            "--connect-to",
            !args.network.connect_to.is_empty(),
            in_process,
        ),
        (
            "--body-file",
            args.body_file.is_some(),
            "the cluster scenario sends GET requests",
        ),
        (
            "--csv/--openmetrics",
            args.csv.is_some() || args.openmetrics.is_some(),
            "its report is its own table (--json writes it)",
        ),
    ];
    if let Some((flag, _, why)) = why.iter().find(|(_, given, _)| *given) {
        return Err(CliError::new(format!(
            "{flag} does not apply to --scenario cluster: {why}"
        )));
    }
    let set: [(&str, bool); 14] = [
        ("a URL", args.url.is_some()),
        ("--targets", args.targets.is_some()),
        ("--stages", args.stages.is_some()),
        ("-n/--requests", args.requests.is_some()),
        ("--warmup", args.warmup.is_some()),
        ("--delay", args.delay.is_some()),
        ("--clients", args.clients.is_some()),
        ("--connections", args.connections.is_some()),
        ("--html", args.html.is_some()),
        ("--fail-if", !args.fail_if.is_empty()),
        ("--start-at", args.start_at.is_some()),
        ("--handler-lifetime", args.handler_lifetime.is_some()),
        ("--tls", args.tls),
        ("--chart", args.chart),
    ];
    match first_given(&set) {
        Some(flag) => Err(CliError::new(format!(
            "{flag} does not apply to --scenario cluster (it runs its own replicas, open loop, \
             for -d seconds; see --help)"
        ))),
        None => Ok(()),
    }
}

/// Cluster flags given to another scenario: refused rather than ignored.
pub fn refuse_cluster_flags(args: &BenchArgs) -> Result<()> {
    let c = &args.cluster;
    let set = [
        ("--replicas", c.replicas.is_some()),
        ("--service-time", c.service_time.is_some()),
        ("--replica-workers", c.replica_workers.is_some()),
        ("--fault", !c.faults.is_empty()),
        ("--cluster-strategy", c.cluster_strategy.is_some()),
        ("--fork-delay", c.fork_delay.is_some()),
        ("--cluster-ordering", c.cluster_ordering.is_some()),
        ("--no-cluster-throttle", c.no_cluster_throttle),
        ("--compare-baselines", c.compare_baselines),
    ];
    match first_given(&set) {
        Some(flag) => Err(CliError::new(format!(
            "{flag} applies to --scenario cluster only"
        ))),
        None => Ok(()),
    }
}

/// The first flag of `(name, given)` pairs that was given.
fn first_given(flags: &[(&'static str, bool)]) -> Option<&'static str> {
    flags
        .iter()
        .find(|(_, given)| *given)
        .map(|(flag, _)| *flag)
}
