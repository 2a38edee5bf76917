//! A simulated cluster with queues, on paused time: replicas that serve one
//! request at a time from a FIFO queue (work a client gave up on still takes
//! its turn, as `courier bench --scenario cluster`'s replicas do), open-loop
//! load, and the client's real parts as `send.rs` wires them: candidates and
//! ordering, the strategy with its forks and cancellations, the replica
//! budget, verdicts, relative-weight rounds and ejection.
//!
//! Why: how soon the weighted ordering learns that a replica is slow, and
//! whether it herds while it does, is a matter of queues and feedback. The
//! simulation in `mod.rs` has fixed latencies and no queue; the bench has
//! both but runs in real time on a noisy machine. Here 10 s of 1,400
//! requests per second run in a moment, the same for a seed. Not simulated:
//! throttling (it refuses nothing while most requests succeed), the network
//! (answers take the service time and the queue, nothing else).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::super::admission::budget::{ExtraInFlight, NoRoom, ReplicaBudget};
use super::super::admission::criteria::Verdict;
use super::super::attempt::strategy::{self, Outcome, Start};
use super::super::config::ClusterConfig;
use super::super::order::ordering::candidates;
use super::super::order::relative::Updater;
use super::super::order::state::ReplicaState;
use super::super::order::weighing::Weighing;
use super::super::replica::Replica;
use crate::error::{Error, ErrorKind};

/// What a simulated replica does with a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fault {
    /// Serves it in the service time, through its queue.
    None,
    /// Serves it in this many service times, through its queue.
    Slow(u64),
    /// Rejects it at once (a fast 503).
    Fail,
    /// Answers after this long, outside its queue (Finagle's stuck replica).
    Stall(Duration),
}

/// A replica: a FIFO queue and one worker.
struct Server {
    jobs: mpsc::UnboundedSender<oneshot::Sender<()>>,
    fault: Mutex<Fault>,
}

impl Server {
    fn start(service: Duration) -> Arc<Server> {
        let (jobs, mut queue) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
        let server = Arc::new(Server {
            jobs,
            fault: Mutex::new(Fault::None),
        });
        let worker = Arc::downgrade(&server);
        tokio::spawn(async move {
            while let Some(answer) = queue.recv().await {
                let Some(server) = worker.upgrade() else {
                    return;
                };
                let times = match server.fault() {
                    Fault::Slow(k) => k as u32,
                    _ => 1,
                };
                drop(server);
                tokio::time::sleep(service * times).await;
                let _ = answer.send(());
            }
        });
        server
    }

    fn fault(&self) -> Fault {
        *self.fault.lock().unwrap()
    }

    async fn answer(&self, head_timeout: Duration) -> Verdict {
        let wait = match self.fault() {
            Fault::Fail => return Verdict::Reject,
            Fault::Stall(after) => {
                tokio::time::sleep(after.min(head_timeout)).await;
                return if after <= head_timeout {
                    Verdict::Accept
                } else {
                    Verdict::Reject
                };
            }
            Fault::None | Fault::Slow(_) => {
                let (answer, answered) = oneshot::channel();
                let _ = self.jobs.send(answer);
                tokio::time::timeout(head_timeout, answered)
            }
        };
        match wait.await {
            Ok(Ok(())) => Verdict::Accept,
            _ => Verdict::Reject,
        }
    }
}

/// One request as the simulation saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    /// When it was due, from the start of the run.
    pub(crate) due: Duration,
    /// From when it was due to its verdict.
    pub(crate) latency: Duration,
    /// The replica of its first attempt.
    pub(crate) first: usize,
    pub(crate) accepted: bool,
    pub(crate) attempts: u64,
}

/// A cluster client over simulated replicas.
pub(crate) struct QueuedSim {
    config: ClusterConfig,
    weighing: Weighing,
    pub(crate) states: Vec<Arc<ReplicaState>>,
    servers: Vec<Arc<Server>>,
    updater: Mutex<Updater>,
    budget: Option<Arc<ReplicaBudget>>,
    rng: Mutex<fastrand::Rng>,
    timeout: Duration,
}

impl QueuedSim {
    /// `n` replicas serving in `service` each; requests with a 1 s budget.
    pub(crate) fn new(n: usize, service: Duration, config: ClusterConfig) -> Arc<QueuedSim> {
        let states = (0..n)
            .map(|i| {
                let url = format!("http://10.0.0.{i}:80");
                Arc::new(ReplicaState::new(Replica::new(url.as_str()).unwrap()))
            })
            .collect();
        Arc::new(QueuedSim {
            budget: config
                .replica_budget
                .clone()
                .map(|c| Arc::new(ReplicaBudget::new(c))),
            rng: Mutex::new(fastrand::Rng::with_seed(config.seed.unwrap_or(18))),
            weighing: config.weighing(),
            config,
            states,
            servers: (0..n).map(|_| Server::start(service)).collect(),
            updater: Mutex::new(Updater::new()),
            timeout: Duration::from_secs(1),
        })
    }

    /// Sets replica `i`'s fault from now on.
    pub(crate) fn set(&self, i: usize, fault: Fault) {
        *self.servers[i].fault.lock().unwrap() = fault;
    }

    /// `rate` requests per second for `length`, each spawned when due;
    /// `at(t)` is called at every 5 ms step before its requests (to start
    /// and end faults). Returns every request once all have ended.
    pub(crate) async fn run(
        self: &Arc<Self>,
        rate: u64,
        length: Duration,
        at: impl FnMut(Duration, &QueuedSim),
    ) -> Vec<Record> {
        self.run_in_steps(rate, length, Duration::from_millis(5), at)
            .await
    }

    /// As [`run`](Self::run), the requests of each `step` sent at once at
    /// its start (a client that falls behind and catches up).
    pub(crate) async fn run_in_steps(
        self: &Arc<Self>,
        rate: u64,
        length: Duration,
        step: Duration,
        mut at: impl FnMut(Duration, &QueuedSim),
    ) -> Vec<Record> {
        let per_step = (rate as f64 * step.as_secs_f64()).round() as u64;
        let start = Instant::now();
        let mut tick = tokio::time::interval(step);
        let mut requests = Vec::new();
        while start.elapsed() < length {
            tick.tick().await;
            at(start.elapsed(), self);
            for _ in 0..per_step {
                let sim = Arc::clone(self);
                requests.push(tokio::spawn(sim.request(start)));
            }
        }
        let mut out = Vec::with_capacity(requests.len());
        for r in requests {
            out.push(r.await.unwrap());
        }
        out
    }

    /// One request, as `send.rs` makes it.
    async fn request(self: Arc<Self>, run_start: Instant) -> Record {
        let due = Instant::now();
        if let Some(c) = &self.config.relative_weights {
            let mut updater = self.updater.lock().unwrap();
            if updater.due(c, due) {
                updater.update(c, due, &self.states, |s, f| s.with_relative(f));
            }
        }
        let mut max = self.config.strategy.max_replicas();
        if max > 1 && self.budget.as_ref().is_some_and(|b| b.over_ratio()) {
            max = 1;
        }
        let _request = self.budget.as_ref().map(|b| b.begin());
        let order: Vec<usize> = {
            let (c, _) = candidates(&self.states, &self.weighing, due);
            let mut rng = self.rng.lock().unwrap();
            let order = self.config.ordering.order(&c, &mut rng, max);
            order.iter().map(|s| self.index(s)).collect()
        };
        let fork_after = self
            .config
            .fork_delay
            .after(self.timeout, order.len(), None);
        let attempts = AtomicU64::new(0);
        let start = |i: usize, head_timeout: Duration| -> Start {
            let extra = match &self.budget {
                Some(b) if i > 0 => match b.try_extra() {
                    Ok(extra) => Some(extra),
                    Err(NoRoom::InFlight) => return Start::Busy,
                    Err(NoRoom::Ratio) => return Start::Refused,
                },
                _ => None,
            };
            attempts.fetch_add(1, Relaxed);
            let attempt = Arc::clone(&self).attempt(order[i], head_timeout, extra);
            Start::Attempt(Box::pin(attempt))
        };
        let (verdict, _) = strategy::run(
            self.config.strategy,
            order.len(),
            self.timeout,
            fork_after,
            start,
        )
        .await;
        Record {
            due: due - run_start,
            latency: due.elapsed(),
            first: order[0],
            accepted: verdict == Verdict::Accept,
            attempts: attempts.load(Relaxed),
        }
    }

    async fn attempt(
        self: Arc<Self>,
        i: usize,
        head_timeout: Duration,
        _extra: Option<ExtraInFlight>,
    ) -> Outcome {
        let state = &self.states[i];
        let mut in_flight = state.start(&self.weighing);
        let started = Instant::now();
        let verdict = self.servers[i].answer(head_timeout).await;
        if in_flight.judged(verdict, started.elapsed(), &self.weighing) {
            let cap = self
                .config
                .outlier
                .as_ref()
                .map_or(0, |o| o.max_ejected(self.states.len()));
            let now = Instant::now();
            if self.states.iter().filter(|s| s.is_ejected(now)).count() < cap {
                state.eject(&self.weighing);
            }
        }
        (verdict, Err(Error::msg(ErrorKind::Connect, "simulated")))
    }

    fn index(&self, s: &Arc<ReplicaState>) -> usize {
        self.states.iter().position(|x| Arc::ptr_eq(x, s)).unwrap()
    }
}

/// The `q` quantile of the latencies of `records`.
pub(crate) fn quantile<'a>(records: impl Iterator<Item = &'a Record>, q: f64) -> Duration {
    let mut l: Vec<Duration> = records.map(|r| r.latency).collect();
    l.sort_unstable();
    l.get(((l.len() as f64 * q) as usize).min(l.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

/// The share of `records` whose first attempt went to replica `i`.
pub(crate) fn first_share<'a>(records: impl Iterator<Item = &'a Record>, i: usize) -> f64 {
    let (mut mine, mut all) = (0u64, 0u64);
    for r in records {
        all += 1;
        mine += u64::from(r.first == i);
    }
    mine as f64 / all.max(1) as f64
}
