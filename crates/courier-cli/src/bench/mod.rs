//! `courier bench`: drive load at a URL (or at the built-in server) and report what happened.
//!
//! This module wires the parts together, in order: resolve the flags into a load (`args`),
//! read a workload file if one is given (`targets_file`), raise the open-file limit and check
//! the run fits (`limits`), start the target (`target`), then on the client runtime build the
//! clients (`client`), start the sampler (`sampler`, showing each second via `progress`) and
//! run the load model (`closed`, `open` paced by `pacer`, with `longpoll` watching memory), and
//! finally turn the measurements into the report (`summary`) and print or write it (`report`,
//! `chart`, `json`, `html`). Each part lives in its own file.

pub mod args;
mod cause;
mod chart;
mod client;
mod closed;
pub mod cluster;
mod connect_to;
pub mod export;
mod first;
pub mod format;
mod headers;
pub mod histograms;
pub mod html;
mod interrupt;
pub mod json;
mod limits;
mod longpoll;
mod open;
pub mod output;
mod pacer;
mod plan;
mod pool;
mod procfs;
pub mod progress;
mod recorder;
pub mod report;
mod request;
mod sampler;
mod sender;
mod start_at;
pub mod stats;
mod summary;
mod target;
pub mod targets_file;
pub mod thresholds;
pub mod verdict;

use std::sync::Arc;
use std::time::Duration;

use self::client::{BenchClient, ClientSetup};
use tokio::time::Instant;

use self::args::{BenchArgs, HttpVersion, Load, Model, Stop};
use self::limits::Demand;
use self::plan::Plan;
use self::pool::PoolReading;
use self::progress::Progress;
use self::recorder::Recorder;
use self::request::Template;
use self::sampler::{Sampler, SamplerConfig};
use self::summary::{RunOutcome, RunSetup};
use self::target::Target;
use self::targets_file::Targets;
use crate::alloc;
use crate::error::{CliError, Result, EXIT_INTERRUPTED};
use crate::threshold;

/// After the load stops, how long to wait at most for background drains to finish, so that
/// the drain counters in the report include the last requests' bodies.
const SETTLE_LIMIT: Duration = Duration::from_secs(2);

/// Runs the benchmark described by `args`, prints the table, and writes the files asked for.
pub fn run(args: BenchArgs) -> Result<()> {
    if args.scenario == args::Scenario::Cluster {
        return cluster::run(&args);
    }
    cluster::refuse_cluster_flags(&args)?;
    let load = args.load()?;
    threshold::absolute_only(&args.fail_if)?;
    // Before anything starts: a mistake in the file is reported with its line, not as errors.
    let targets = args.targets.as_deref().map(Targets::read).transpose()?;
    if targets.is_some() && matches!(load.model, Model::LongPoll { .. }) {
        return Err(CliError::new(
            "--targets does not apply to --scenario longpoll (long polls go to /delay/{ms})",
        ));
    }
    let start_at = match &args.start_at {
        Some(text) => {
            let at = start_at::parse(text).map_err(CliError::new)?;
            if start_at::until(at).is_none() {
                return Err(CliError::new(format!(
                    "--start-at {text} has already passed: give a time in the future"
                )));
            }
            Some(at)
        }
        None => None,
    };
    if let Some(path) = &args.json {
        output::check_writable("--json", path)?;
    }
    if let Some(path) = &args.html {
        output::check_writable("--html", path)?;
    }
    if let Some(path) = &args.csv {
        output::check_writable("--csv", path)?;
    }
    if let Some(path) = &args.openmetrics {
        output::check_writable("--openmetrics", path)?;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = match args.threads {
        Some(n) => client::to_usize(n, "--threads")?,
        None => cores,
    };
    let mut limits = limits::discover();
    let connections = connections_needed(&load, streams_per_connection(&args));
    let addresses = if args.url.is_none() && matches!(load.model, Model::LongPoll { .. }) {
        limits::addresses_needed(connections, limits.local_ports)
    } else {
        1
    };
    let setup = ClientSetup::read(
        &args,
        &match &targets {
            Some(targets) => targets.uris(),
            None => args.url.iter().filter_map(|u| u.parse().ok()).collect(),
        },
    )?;
    let target = match &targets {
        Some(targets) => Target::external(targets.uris()),
        None => Target::start(&args, load.model, addresses, cores)?,
    };
    limits.check(Demand {
        connections,
        server_in_process: target.in_process(),
        server_addresses: target.uris.len() as u64,
        built_in_server: args.url.is_none(),
    });
    for note in &limits.notes {
        eprintln!("courier bench: note: {note}");
    }
    let template = match targets {
        Some(targets) => Template::with_targets(&args, targets)?,
        None => Template::new(&args, target.uris.clone())?,
    };
    let setup = ClientSetup {
        trust: target.ca_pem.clone(),
        ..setup
    };
    let workload = template.targets().map(|t| (t.methods(), t.report()));
    let request_construction = args
        .count_allocations
        .then(|| alloc::measure(1000, || template.request(0)));
    eprintln!("courier bench: {}", describe(&args, &load, &template));

    let runtime = client_runtime(threads)?;
    let outcome = runtime.block_on(execute(
        &args,
        load,
        template.clone(),
        cores as u64,
        &setup,
        start_at,
    ));
    // Abandoned requests may still hold tasks; do not wait for them.
    runtime.shutdown_timeout(Duration::from_millis(500));
    let server = target.kind();
    let urls = target.uris.iter().map(ToString::to_string).collect();
    target.stop();
    let outcome = outcome?;

    let mut report = summary::report(
        RunSetup {
            args: &args,
            load,
            urls,
            server,
            threads: threads as u64,
            cores: cores as u64,
            limits,
            // Sent with each request, from the request or from the client's defaults.
            request_headers: headers::from_flags(&args)?.len() as u64,
            request_construction,
            targets: workload,
        },
        &outcome,
    );
    output::publish(
        &mut report,
        output::Outputs {
            fail_if: &args.fail_if,
            chart: args.chart,
            json: args.json.as_deref(),
            html: args.html.as_deref(),
            csv: args.csv.as_deref(),
            openmetrics: args.openmetrics.as_deref(),
        },
    )?;
    if report.interrupted {
        return Err(CliError::with_code(
            EXIT_INTERRUPTED,
            format!(
                "interrupted by Ctrl-C: the report covers the first {:.1} s",
                report.duration_s
            ),
        ));
    }
    if verdict::all_failed(&report) {
        return Err(CliError::new(
            "no request got a response (the causes are listed above the table)",
        ));
    }
    match threshold::failure(&report.thresholds) {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

/// Connections the run may open at once: over HTTP/1.1 one per request in flight, over HTTP/2
/// one per `streams` requests, up to the connection caps.
fn connections_needed(load: &Load, streams: u64) -> u64 {
    let per_client = match load.max_connections_per_host {
        Some(cap) => cap.min(load.concurrency.div_ceil(streams.max(1))),
        None => load.concurrency.div_ceil(streams.max(1)),
    };
    per_client.saturating_mul(load.clients)
}

/// Streams one connection carries: the built-in server's limit over HTTP/2, else 1.
fn streams_per_connection(args: &BenchArgs) -> u64 {
    let http2 = match args.http {
        HttpVersion::Http2 | HttpVersion::Http3 => true,
        HttpVersion::Http1 => false,
        // ALPN picks HTTP/2 with the built-in TLS server.
        HttpVersion::Auto => args.tls && args.url.is_none(),
    };
    if http2 {
        u64::from(args.server_max_concurrent_streams.unwrap_or(100))
    } else {
        1
    }
}

/// The line that says what is about to run.
fn describe(args: &BenchArgs, load: &Load, template: &Template) -> String {
    let model = match load.model {
        Model::Closed => format!(
            "{} client(s) x {} in flight",
            load.clients, load.concurrency
        ),
        Model::Open { rate } => format!(
            "{}, at most {} in flight over {} client(s)",
            match &args.stages {
                Some(stages) => format!("stages {stages} (peak {rate} req/s)"),
                None => format!("{rate} req/s"),
            },
            load.in_flight(),
            load.clients
        ),
        Model::LongPoll { delay } => format!(
            "{} long polls of {} s over {} client(s)",
            load.in_flight(),
            delay.as_secs_f64(),
            load.clients
        ),
    };
    let stop = match load.stop {
        Stop::Requests(n) => format!("{n} requests"),
        Stop::Duration(d) => format!("{} s", d.as_secs_f64()),
        Stop::OneRound => "one request per slot".to_owned(),
    };
    let urls: Vec<String> = template.uris().iter().map(ToString::to_string).collect();
    let (method, urls) = match template.targets() {
        Some(t) => (
            t.methods(),
            format!(
                "{} ({} entries of {})",
                urls.join(" "),
                t.entries.len(),
                t.path.display()
            ),
        ),
        None => (args.method.clone(), urls.join(" ")),
    };
    format!(
        "{method} {urls}, {model}, {stop}{} ...",
        if load.warmup.is_zero() {
            String::new()
        } else {
            format!(" after {} s warmup", load.warmup.as_secs_f64())
        }
    )
}

/// The client's runtime: `threads` worker threads, or with one thread, a current-thread
/// runtime on this thread.
///
/// Why: a multi-thread runtime with one worker runs the requests on the worker and the run's
/// own future on the calling thread, and pays the work-stealing scheduler's atomics and
/// cross-thread wake-ups on every task switch. `--threads 1` is the generator's one-core
/// mode (as `wrk -t1`, `h2load -t1`): one thread does everything, as theirs do.
fn client_runtime(threads: usize) -> Result<tokio::runtime::Runtime> {
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads).thread_name("courier-bench");
        builder
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))
}

/// Runs the load on the current (client) runtime and gathers the measurements.
async fn execute(
    args: &BenchArgs,
    load: Load,
    template: Template,
    cores: u64,
    setup: &ClientSetup,
    start_at: Option<std::time::SystemTime>,
) -> Result<RunOutcome> {
    let clients = client::build_all(args, &load, setup)?;
    if let Some(wait) = start_at.and_then(start_at::until) {
        eprintln!(
            "courier bench: ready; waiting {:.1} s for --start-at",
            wait.as_secs_f64()
        );
        tokio::time::sleep(wait).await;
    }
    // Connections count from here, before the long polls' opening phase and the warmup: they
    // are the run's connections (the measured requests use them). Requests count from the
    // sampler's baseline, after the warmup.
    let clients_built = PoolReading::read(&clients);
    let longpoll = matches!(load.model, Model::LongPoll { .. });
    let server_addresses = template.uris().len() as u64;
    let memory_base = if longpoll {
        longpoll::prepare(&template, &clients, load.concurrency).await?
    } else {
        longpoll::MemoryBase::default()
    };
    let recorder = Recorder::new();
    let plan = Arc::new(Plan::new(template, Arc::clone(&recorder), &load));
    interrupt::watch(plan.stop.clone());
    let clock = plan.clock;
    let goal = match load.stop {
        Stop::Requests(n) => format!("{n} req"),
        Stop::Duration(d) => format!("{} s", d.as_secs_f64()),
        Stop::OneRound => format!("{} long polls", load.in_flight()),
    };
    let pacer = args.pacer()?;
    let sampler = Sampler::start(SamplerConfig {
        pacer: pacer.clone(),
        clients: clients.clone(),
        recorder,
        clock,
        cores,
        count_allocations: args.count_allocations,
        progress: Progress::new(args.progress),
        goal,
    });
    let monitor = longpoll
        .then(|| longpoll::Monitor::start(Arc::clone(&plan), server_addresses, memory_base));

    let schedule = match load.model {
        Model::Closed => {
            closed::run(&plan, &clients, load.concurrency).await?;
            None
        }
        Model::LongPoll { .. } => {
            closed::run_held(&plan, &clients, load.concurrency).await?;
            None
        }
        Model::Open { rate } => {
            let pacer = pacer.unwrap_or_else(|| pacer::Pacer::constant(rate));
            Some(
                open::run(
                    &plan,
                    &clients,
                    &pacer,
                    load.in_flight(),
                    load.stop,
                    args.tick()?,
                )
                .await?,
            )
        }
    };
    let interrupted = plan.stop.is_cancelled();
    // Interrupted: the measurement ends when the last request counted ended (within the grace).
    let end = match clock.deadline {
        Some(deadline) if interrupted => deadline.min(Instant::now()),
        Some(deadline) => deadline,
        None => Instant::now(),
    };
    let sampled = sampler.finish(end).await?;
    let peak = match monitor {
        Some(monitor) => Some(monitor.finish().await),
        None => None,
    };
    settle(&clients).await;
    Ok(RunOutcome {
        sampled,
        settled: PoolReading::read(&clients),
        clients_built,
        schedule,
        peak,
        interrupted,
        first: plan.first.as_ref().map(first::FirstRequests::report),
    })
}

/// Waits (bounded) until no request or connection is busy, i.e. background drains are done.
async fn settle(clients: &[BenchClient]) {
    let give_up = Instant::now() + SETTLE_LIMIT;
    while Instant::now() < give_up {
        let busy = clients.iter().any(|c| {
            let m = c.metrics();
            m.requests_active > 0 || m.connections_active > 0
        });
        if !busy {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
