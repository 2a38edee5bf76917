//! From what the client recorded and what the replicas counted to the figures of one run:
//! success rate, attempts per request, percentiles, each replica's share per second, and for
//! timed faults how long p99 took to come back and how long a recovered replica took to get
//! its traffic back.
//!
//! Why from the server side: a replica's share and the attempts per request are what reached
//! the replicas, forks cancelled mid-way included, which the client cannot see for the
//! round-robin baseline and only partly for the cluster client.

use std::time::Duration;

use courier_server::{ReplicaFault, ReplicaSecond, ReplicaSelector};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::super::stats::new_histogram;
use super::tally::Tallies;

/// p99 counts as back when it is at most this × the p99 before the fault (the bound).
pub const P99_BOUND: f64 = 1.25;
/// A recovered replica counts as back at this share of its fair share.
pub const RECOVERED_SHARE: f64 = 0.5;

/// Latency percentiles, ms.
///
/// Not `stats::Percentiles`: the cluster's targets are at the far tail (p99.9, p99.99, which
/// that one does not have), and this is the shape of the cluster report's JSON (`p99_9`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Percentiles {
            p50: ms(0.5),
            p99: ms(0.99),
            p99_9: ms(0.999),
            p99_99: ms(0.9999),
            max: h.max() as f64 / 1000.0,
        }
    }
}

/// One replica over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaFigures {
    pub index: usize,
    /// Its faults, as written.
    pub faults: Vec<String>,
    pub attempts: u64,
    pub ok: u64,
    pub unavailable: u64,
    pub reset: u64,
    pub stalled: u64,
    /// Share of all attempts, per second of the run (0..1).
    pub share_per_second: Vec<f64>,
    /// Attempts per second.
    pub attempts_per_second: Vec<u64>,
    /// Adaptive health at the end (cluster client only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<f64>,
}

/// What happened around one timed fault.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultFigures {
    pub fault: String,
    /// p99 of the successful requests due before the fault started (ms).
    pub p99_before_ms: Option<f64>,
    /// The first second from which the p99 of the rest of the fault (every request due from
    /// then to its end, or the run's) is ≤ 1.25 × that, counted from the fault's start;
    /// `None`: not within the fault.
    pub p99_back_after_s: Option<f64>,
    /// Worst p99 of a second during the fault (ms).
    pub worst_p99_during_ms: Option<f64>,
    /// After the fault ended, when the replica first got ≥ 50 % of its fair share in a second,
    /// counted from the end; `None`: not within the run (or not one replica, or no end).
    pub recovered_after_s: Option<f64>,
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFigures {
    pub name: String,
    pub requests: u64,
    pub successes: u64,
    pub success_rate: f64,
    pub throttled: u64,
    pub failures: std::collections::BTreeMap<String, u64>,
    /// Attempts that reached a replica (server counts) per request made.
    pub attempts_per_request: f64,
    /// Attempts the cluster client started per request (its snapshot), when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_attempts_per_request: Option<f64>,
    /// Corrected for coordinated omission (from the intended start), successful requests.
    pub latency_ms: Percentiles,
    /// From the actual send.
    pub uncorrected_latency_ms: Percentiles,
    /// p99 of each second (ms; 0 for a second without success).
    pub p99_per_second_ms: Vec<f64>,
    pub late: u64,
    pub max_in_flight: u64,
    pub replicas: Vec<ReplicaFigures>,
    pub faults: Vec<FaultFigures>,
}

/// The inputs of [`figures`].
pub struct RunData<'a> {
    pub name: String,
    pub tallies: &'a Tallies,
    pub seconds: &'a [Vec<ReplicaSecond>],
    pub faults: &'a [ReplicaFault],
    pub duration: Duration,
    pub late: u64,
    pub max_in_flight: u64,
    pub client: Option<courier::cluster::ClusterSnapshot>,
}

/// Computes a run's figures.
pub fn figures(d: RunData<'_>) -> RunFigures {
    let t = d.tallies;
    let run_seconds = (d.duration.as_secs_f64().ceil() as usize).max(1);
    let replicas: Vec<ReplicaFigures> = d
        .seconds
        .iter()
        .enumerate()
        .map(|(i, secs)| replica(i, secs, d.seconds, d.faults, run_seconds))
        .collect();
    let mut replicas = replicas;
    if let Some(snapshot) = &d.client {
        for (r, s) in replicas.iter_mut().zip(&snapshot.replicas) {
            r.health = Some(s.health);
        }
    }
    let attempts: u64 = replicas.iter().map(|r| r.attempts).sum();
    let per_request = |n: u64| n as f64 / t.requests.max(1) as f64;
    let p99s: Vec<f64> = t
        .seconds
        .iter()
        .map(|s| Percentiles::of(&s.latency).p99)
        .collect();
    let faults = d
        .faults
        .iter()
        .filter(|f| !f.start.is_zero() || f.length.is_some())
        .map(|f| fault(f, t, &replicas, run_seconds))
        .collect();
    RunFigures {
        name: d.name,
        requests: t.requests,
        successes: t.successes,
        success_rate: t.successes as f64 / t.requests.max(1) as f64,
        throttled: t.throttled,
        failures: t
            .failures
            .iter()
            .map(|(failure, n)| (failure.to_string(), *n))
            .collect(),
        attempts_per_request: per_request(attempts),
        client_attempts_per_request: d
            .client
            .as_ref()
            .map(|s| per_request(s.replicas.iter().map(|r| r.requests).sum())),
        latency_ms: Percentiles::of(&t.corrected),
        uncorrected_latency_ms: Percentiles::of(&t.uncorrected),
        p99_per_second_ms: p99s,
        late: d.late,
        max_in_flight: d.max_in_flight,
        replicas,
        faults,
    }
}

fn replica(
    index: usize,
    secs: &[ReplicaSecond],
    all: &[Vec<ReplicaSecond>],
    faults: &[ReplicaFault],
    run_seconds: usize,
) -> ReplicaFigures {
    let sum = |f: fn(&ReplicaSecond) -> u64| secs.iter().map(f).sum::<u64>();
    let at = |v: &[ReplicaSecond], s: usize| v.get(s).map_or(0, |x| x.arrived);
    let attempts_per_second: Vec<u64> = (0..run_seconds).map(|s| at(secs, s)).collect();
    let share_per_second = (0..run_seconds)
        .map(|s| {
            let total: u64 = all.iter().map(|v| at(v, s)).sum();
            at(secs, s) as f64 / total.max(1) as f64
        })
        .collect();
    ReplicaFigures {
        index,
        faults: faults
            .iter()
            .filter(|f| f.replica.selects(index))
            .map(ToString::to_string)
            .collect(),
        attempts: sum(|s| s.arrived),
        ok: sum(|s| s.ok),
        unavailable: sum(|s| s.unavailable),
        reset: sum(|s| s.reset),
        stalled: sum(|s| s.stalled),
        share_per_second,
        attempts_per_second,
        health: None,
    }
}

fn fault(
    f: &ReplicaFault,
    t: &Tallies,
    replicas: &[ReplicaFigures],
    run_seconds: usize,
) -> FaultFigures {
    let start = f.start.as_secs_f64();
    let first_in = start.floor() as usize;
    let end_s = f.end().map_or(run_seconds, |e| {
        (e.as_secs_f64().ceil() as usize).min(run_seconds)
    });
    // Before: whole seconds before the fault, the first left out (connections opening) when
    // there are others.
    let before_from = usize::from(first_in > 1);
    let mut before = new_histogram();
    for s in t.seconds.iter().take(first_in).skip(before_from) {
        let _ = before.add(&s.latency);
    }
    let p99_before = (!before.is_empty()).then(|| Percentiles::of(&before).p99);
    let p99 = |s: usize| t.seconds.get(s).map(|x| Percentiles::of(&x.latency).p99);
    let worst = (first_in..end_s).filter_map(p99).reduce(f64::max);
    let p99_back_after_s = p99_before.and_then(|before| {
        let bound = before * P99_BOUND;
        // Walking back from the fault's last second: the p99 of every request due from second
        // `s` to the end of the fault. Back at the first `s` whose p99 is within the bound
        // (one second's p99 alone is too noisy to tell).
        let mut rest = new_histogram();
        let mut back = None;
        for s in (first_in..end_s).rev() {
            if let Some(second) = t.seconds.get(s) {
                let _ = rest.add(&second.latency);
            }
            if !rest.is_empty() && Percentiles::of(&rest).p99 <= bound {
                back = Some(s);
            }
        }
        back.map(|s| (s as f64 - start).max(0.0))
    });
    let recovered_after_s = match (f.replica, f.end()) {
        (ReplicaSelector::One(i), Some(end)) => replicas.get(i).and_then(|r| {
            let fair = 1.0 / replicas.len() as f64;
            let from = end.as_secs_f64().ceil() as usize;
            (from..run_seconds)
                .find(|&s| {
                    r.share_per_second.get(s).copied().unwrap_or(0.0) >= fair * RECOVERED_SHARE
                })
                .map(|s| (s + 1) as f64 - end.as_secs_f64())
        }),
        _ => None,
    };
    FaultFigures {
        fault: f.to_string(),
        p99_before_ms: p99_before,
        p99_back_after_s,
        worst_p99_during_ms: worst,
        recovered_after_s,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tally::{Outcome, Tally};
    use super::*;

    fn second(arrived: u64) -> ReplicaSecond {
        ReplicaSecond {
            arrived,
            ok: arrived,
            ..ReplicaSecond::default()
        }
    }

    #[test]
    fn p99_comes_back_and_the_replica_gets_its_share_back() {
        let tally = Tally::new();
        let ms = Duration::from_millis;
        // 10 s: 10 ms everywhere, except seconds 4 and 5 (the fault's first two) at 100 ms.
        for s in 0..10u64 {
            for i in 0..100 {
                let latency = if (4..6).contains(&s) { ms(100) } else { ms(10) };
                tally.record(ms(s * 1000 + i * 10), Outcome::Success, latency, latency);
            }
        }
        let t = tally.snapshot();
        // Two replicas; replica 1 stalls from 4 s for 3 s and gets nothing, then half again.
        let r0: Vec<_> = (0..10).map(|_| second(100)).collect();
        let r1: Vec<_> = (0..10)
            .map(|s| second(if (4..8).contains(&s) { 0 } else { 100 }))
            .collect();
        let fault: ReplicaFault = "1=stall@4s+3s".parse().unwrap();
        let run = figures(RunData {
            name: "x".into(),
            tallies: &t,
            seconds: &[r0, r1],
            faults: &[fault],
            duration: Duration::from_secs(10),
            late: 0,
            max_in_flight: 0,
            client: None,
        });
        assert_eq!(run.replicas[1].attempts, 600);
        assert_eq!(run.replicas[1].share_per_second[5], 0.0);
        let f = &run.faults[0];
        assert_eq!(f.p99_before_ms.map(|p| p.round()), Some(10.0));
        assert_eq!(f.p99_back_after_s, Some(2.0), "{f:?}");
        // The fault ends at 7 s; the first second at >= 25 % share is 8, counted to its end.
        assert_eq!(f.recovered_after_s, Some(2.0), "{f:?}");
        assert!(run.latency_ms.p99 >= 99.0 && run.success_rate == 1.0);
    }
}
