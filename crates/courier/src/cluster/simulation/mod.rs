//! A simulated cluster on paused time, for the targets that take minutes:
//! the ordering, verdicts, relative weights, health recovery and ejection
//! as a `ClusterClient` wires them (see `send.rs`), without sockets, so a
//! minute of 1,000 requests per second runs in a moment and the figures
//! are exact for a seed.
//!
//! Why here and not against servers: issue 18's "a recovered replica back
//! to ≥ 50 % of its fair share within 60 s" is about time constants (60 s
//! health recovery, 30 s ejection, 10 s weight rounds, 1 min raise
//! smoothing); real time would make the test a minute long.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

mod convergence;
mod queued;

use super::admission::criteria::Verdict;
use super::config::ClusterConfig;
use super::order::ordering::{candidates, snapshots, ReplicaOrdering};
use super::order::relative::{RelativeWeightConfig, Updater};
use super::order::state::ReplicaState;
use super::order::weighing::Weighing;
use super::replica::Replica;

struct Sim {
    config: ClusterConfig,
    weighing: Weighing,
    states: Vec<Arc<ReplicaState>>,
    updater: Updater,
    rng: fastrand::Rng,
}

impl Sim {
    fn new(n: usize, config: ClusterConfig) -> Sim {
        let states = (0..n)
            .map(|i| {
                let url = format!("http://10.0.0.{i}:80");
                Arc::new(ReplicaState::new(Replica::new(url.as_str()).unwrap()))
            })
            .collect();
        Sim {
            weighing: config.weighing(),
            config,
            states,
            updater: Updater::new(),
            rng: fastrand::Rng::with_seed(18),
        }
    }

    /// One request, sequential over up to 3 replicas; `fails(i)` says
    /// whether replica `i` rejects. Returns the replica tried first.
    fn request(&mut self, fails: &dyn Fn(usize) -> bool) -> usize {
        let now = Instant::now();
        if let Some(c) = &self.config.relative_weights {
            if self.updater.due(c, now) {
                self.updater
                    .update(c, now, &self.states, |s, f| s.with_relative(f));
            }
        }
        let (c, _) = candidates(&self.states, &self.weighing, now);
        let order = ReplicaOrdering::WeightedHealth.order(&c, &mut self.rng, 3);
        let index = |s: &Arc<ReplicaState>| self.states.iter().position(|x| Arc::ptr_eq(x, s));
        let first = index(&order[0]).unwrap();
        for s in &order {
            let i = index(s).unwrap();
            let rtt = Duration::from_micros(4000 + self.rng.u64(..2000));
            let verdict = if fails(i) {
                Verdict::Reject
            } else {
                Verdict::Accept
            };
            let due = s.judged(verdict, rtt, &self.weighing);
            let cap = self
                .config
                .outlier
                .as_ref()
                .map_or(0, |o| o.max_ejected(10));
            let ejected = self.states.iter().filter(|x| x.is_ejected(now)).count();
            if due && ejected < cap {
                s.eject(&self.weighing);
            }
            if verdict == Verdict::Accept {
                break;
            }
        }
        first
    }

    /// `seconds` at 1,000 requests per second; replica 0's share of first
    /// attempts in each 10 s.
    async fn run(&mut self, seconds: u64, fails: &dyn Fn(usize) -> bool) -> Vec<f64> {
        let mut shares = Vec::new();
        let (mut mine, mut all) = (0u64, 0u64);
        for ms in 0..seconds * 1000 {
            all += 1;
            mine += u64::from(self.request(fails) == 0);
            tokio::time::advance(Duration::from_millis(1)).await;
            if (ms + 1) % 10_000 == 0 {
                shares.push(mine as f64 / all as f64);
                (mine, all) = (0, 0);
            }
        }
        shares
    }
}

#[tokio::test(start_paused = true)]
async fn a_recovered_replica_is_back_to_half_its_share_within_a_minute() {
    let mut sim = Sim::new(10, ClusterConfig::default());
    let warm = sim.run(20, &|_| false).await;
    assert!(warm[1] > 0.07, "an even share first: {warm:?}");
    // Replica 0 fails everything for a minute: ejected, then rare.
    let faulty = sim.run(60, &|i| i == 0).await;
    assert!(faulty.iter().all(|&s| s < 0.01), "{faulty:?}");
    assert!(snapshots(&sim.states, &sim.weighing, Instant::now())[0].ejections >= 1);
    // Recovered: within 60 s it is back to at least half its fair 10 %.
    let recovered = sim.run(60, &|_| false).await;
    assert!(recovered[5] >= 0.05, "{recovered:?}");
}

#[tokio::test(start_paused = true)]
async fn a_slow_replica_loses_its_traffic_to_relative_weights() {
    let vostok = ClusterConfig::default()
        .relative_weights(Some(RelativeWeightConfig::default()))
        .recent_latency(None);
    let mut sim = Sim::new(10, vostok);
    sim.run(10, &|_| false).await;
    // Replica 0 answers, accepted, but 10× slower: health stays at 1.
    let slow = Duration::from_millis(50);
    let mut firsts = 0;
    for ms in 0..30_000u64 {
        let now = Instant::now();
        if let Some(c) = &sim.config.relative_weights {
            if sim.updater.due(c, now) {
                sim.updater
                    .update(c, now, &sim.states, |s, f| s.with_relative(f));
            }
        }
        let (c, _) = candidates(&sim.states, &sim.weighing, now);
        let first = ReplicaOrdering::WeightedHealth.order(&c, &mut sim.rng, 1)[0].clone();
        let rtt = if Arc::ptr_eq(&first, &sim.states[0]) {
            if ms >= 20_000 {
                firsts += 1;
            }
            slow
        } else {
            Duration::from_millis(5)
        };
        first.judged(Verdict::Accept, rtt, &sim.weighing);
        tokio::time::advance(Duration::from_millis(1)).await;
    }
    let snap = snapshots(&sim.states, &sim.weighing, Instant::now()).remove(0);
    assert!(snap.health > 0.99, "{snap:?}");
    assert!(snap.relative_weight < 0.05, "{snap:?}");
    assert!(firsts < 100, "{firsts} of 10,000 in the last 10 s");
}
