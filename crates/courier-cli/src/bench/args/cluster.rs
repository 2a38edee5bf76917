//! The flags of `courier bench --scenario cluster`, flattened into `BenchArgs` (so they
//! appear in `--help` and in the JSON report's `config` with the rest).
//!
//! Why their own struct: they mean nothing to the other scenarios, and their parsing (fault
//! profiles, `forking3`) is theirs alone. Why here, beside the other flags, and not in
//! `bench/cluster`: `BenchArgs` holds them, and the scenario reads the flags, not the reverse.

use std::time::Duration;

use clap::Args;
use courier::cluster::{ForkDelay, ReplicaOrdering, Strategy};
use courier_server::ReplicaFault;
use serde::{Deserialize, Serialize};

/// Default replicas of the built-in cluster.
pub const DEFAULT_REPLICAS: u64 = 10;
/// Default service time of a healthy replica.
pub const DEFAULT_SERVICE_TIME: Duration = Duration::from_millis(5);
/// Default open-loop rate: this share of the healthy replicas' capacity.
pub const DEFAULT_LOAD_SHARE: f64 = 0.7;
/// Default budget of one cluster request (all its replicas) when `--timeout` is not given.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(1);

/// Flags of `--scenario cluster`.
#[derive(Debug, Clone, PartialEq, Default, Args, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterArgs {
    /// replicas the built-in server runs in this process, each on its own
    /// loopback port [default: 10].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000), help_heading = "--scenario cluster", hide_short_help = true)]
    pub replicas: Option<u64>,

    /// a healthy replica's service time per request, e.g. 5ms [default: 5ms].
    #[arg(long, value_name = "DURATION", value_parser = parse_service_time, help_heading = "--scenario cluster", hide_short_help = true)]
    pub service_time: Option<String>,

    /// requests each replica serves at once; more wait in its FIFO queue
    /// [default: 1, so a replica serves 1/service-time requests per second].
    #[arg(long, value_name = "W", value_parser = clap::value_parser!(u64).range(1..=10000), help_heading = "--scenario cluster", hide_short_help = true)]
    pub replica_workers: Option<u64>,

    /// a replica's fault, REPLICA=KIND[@START][+LENGTH]; repeatable.
    /// REPLICA: 0-based index or * (all). KIND: slow:K (service time x K), 503 (answer 503 at
    /// once), reset (reset the connection), flap:PERIOD (503 for PERIOD, healthy for PERIOD,
    /// ...), stall (never answer), stall:D (answer after D). @START: from START after the load
    /// starts; +LENGTH: for LENGTH. E.g. 3=slow:10, 7=503, 5=stall:2s@10s+30s.
    #[arg(long = "fault", value_name = "SPEC", value_parser = parse_fault, help_heading = "--scenario cluster", hide_short_help = true)]
    pub faults: Vec<String>,

    /// forkingN (a new replica every budget/N or on a reject, first
    /// accepted answer wins), sequentialN (one after another), parallelN (N at once), or single
    /// [default: forking3].
    #[arg(long, value_name = "STRATEGY", value_parser = parse_strategy, help_heading = "--scenario cluster", hide_short_help = true)]
    pub cluster_strategy: Option<String>,

    /// when forking starts the next replica: equal (every budget/N, as
    /// Vostok) or pNN (once the attempt has run longer than NN % of the cluster's recent
    /// accepted answers took, e.g. p95; within 1 ms and budget/N) [default: equal].
    #[arg(long, value_name = "DELAY", value_parser = parse_fork_delay, help_heading = "--scenario cluster", hide_short_help = true)]
    pub fork_delay: Option<String>,

    /// replica order: weighted (random by adaptive health), p2c (power of two
    /// choices on peak EWMA latency x in flight), p2c-pending (power of two choices on attempts
    /// in flight) or round-robin (the bench picks the replica in turn and sends one attempt with
    /// a plain client: a baseline, no retries) [default: weighted].
    #[arg(long, value_name = "ORDERING", value_parser = parse_ordering, help_heading = "--scenario cluster", hide_short_help = true)]
    pub cluster_ordering: Option<String>,

    /// turn off adaptive throttling (on by default: K = 2).
    #[arg(long, help_heading = "--scenario cluster", hide_short_help = true)]
    pub no_cluster_throttle: bool,

    /// after the run, run the same load again with healthy replicas (no
    /// faults), with round robin and with P2C peak EWMA (both without retries), and compare.
    #[arg(long, help_heading = "--scenario cluster", hide_short_help = true)]
    pub compare_baselines: bool,
}

/// Replica ordering flag: one of the library's, or the bench's own baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterOrdering {
    /// The library's (`weighted`, `p2c`, ...: its `FromStr`).
    Library(ReplicaOrdering),
    /// In turn, one attempt, plain client (a baseline): `round-robin`.
    RoundRobin,
}

impl std::str::FromStr for ClusterOrdering {
    type Err = String;

    fn from_str(text: &str) -> Result<ClusterOrdering, String> {
        match text {
            "round-robin" => Ok(ClusterOrdering::RoundRobin),
            // The library's error names its orderings; round-robin is ours.
            _ => text
                .parse()
                .map(ClusterOrdering::Library)
                .map_err(|e: String| format!("{e} (or round-robin, the bench's baseline)")),
        }
    }
}

impl ClusterArgs {
    /// Replicas to run.
    pub fn replica_count(&self) -> usize {
        self.replicas.unwrap_or(DEFAULT_REPLICAS) as usize
    }

    /// A healthy replica's service time.
    pub fn service(&self) -> Duration {
        self.service_time
            .as_deref()
            .and_then(|s| parse_duration(s).ok())
            .unwrap_or(DEFAULT_SERVICE_TIME)
    }

    /// Workers per replica.
    pub fn workers(&self) -> usize {
        self.replica_workers.unwrap_or(1) as usize
    }

    /// The faults, parsed (validated when the flags were).
    pub fn fault_list(&self) -> Vec<ReplicaFault> {
        self.faults
            .iter()
            .map(|f| f.parse().expect("checked by parse_fault"))
            .collect()
    }

    /// The strategy asked for.
    pub fn strategy(&self) -> Strategy {
        self.cluster_strategy
            .as_deref()
            .and_then(|s| strategy(s).ok())
            .unwrap_or_default()
    }

    /// The fork delay asked for.
    pub fn fork_delay(&self) -> ForkDelay {
        self.fork_delay
            .as_deref()
            .and_then(|s| s.parse().ok())
            .unwrap_or_default()
    }

    /// The ordering asked for.
    pub fn ordering(&self) -> ClusterOrdering {
        self.cluster_ordering
            .as_deref()
            .and_then(|s| s.parse().ok())
            .unwrap_or(ClusterOrdering::Library(ReplicaOrdering::default()))
    }
}

impl ClusterOrdering {
    /// The library's ordering (round robin has none: the bench does it).
    pub fn library(self) -> Option<ReplicaOrdering> {
        match self {
            ClusterOrdering::Library(ordering) => Some(ordering),
            ClusterOrdering::RoundRobin => None,
        }
    }
}

/// `forking3`, `sequential2`, `parallel2`, `single`: the library's spelling
/// (the factory's TOML reads the same).
pub fn strategy(text: &str) -> Result<Strategy, String> {
    text.parse()
}

/// The most attempts one request can have in flight at once under `strategy`.
pub fn attempts_at_most(strategy: Strategy) -> u64 {
    match strategy {
        Strategy::Forking { replicas } | Strategy::Parallel { replicas } => replicas as u64,
        // One at a time (sequential: the next starts when the last ended).
        _ => 1,
    }
}

fn parse_strategy(text: &str) -> Result<String, String> {
    strategy(text).map(|_| text.to_owned())
}

fn parse_ordering(text: &str) -> Result<String, String> {
    text.parse::<ClusterOrdering>().map(|_| text.to_owned())
}

fn parse_fork_delay(text: &str) -> Result<String, String> {
    text.parse::<ForkDelay>().map(|_| text.to_owned())
}

/// Checks a fault and keeps it as written: parsed again for the run, it is
/// the same fault.
fn parse_fault(text: &str) -> Result<String, String> {
    text.parse::<ReplicaFault>().map(|_| text.to_owned())
}

fn parse_service_time(text: &str) -> Result<String, String> {
    match parse_duration(text)? {
        d if d.is_zero() => Err("the service time must be more than 0".to_owned()),
        _ => Ok(text.to_owned()),
    }
}

/// The CLI's one duration syntax: `5ms`, `0.5s`, `2` (seconds).
fn parse_duration(text: &str) -> Result<Duration, String> {
    text.parse::<crate::secs::Secs>()
        .map(crate::secs::Secs::as_duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse() {
        assert_eq!(strategy("forking3"), Ok(Strategy::forking(3)));
        assert_eq!(strategy("sequential2"), Ok(Strategy::sequential(2)));
        assert_eq!(strategy("single"), Ok(Strategy::single_replica()));
        assert!(strategy("forking").is_err());
        assert_eq!(strategy("parallel3"), Ok(Strategy::parallel(3)));
        assert_eq!(Strategy::parallel(2).to_string(), "parallel2");
        assert_eq!(Strategy::forking(3).to_string(), "forking3");
    }

    #[test]
    fn orderings_parse_as_the_library_names_them() {
        assert_eq!("round-robin".parse(), Ok(ClusterOrdering::RoundRobin));
        for o in ReplicaOrdering::all() {
            assert_eq!(o.to_string().parse(), Ok(ClusterOrdering::Library(o)));
        }
        let e = "p3c".parse::<ClusterOrdering>().unwrap_err();
        assert!(
            e.contains("weighted, p2c, p2c-pending") && e.contains("round-robin"),
            "{e}"
        );
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5ms"), Ok(Duration::from_millis(5)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_service_time("0ms").is_err());
        assert!(parse_duration("fast").is_err());
    }
}
