//! [`ReplicaSet`]: N replicas of one service in one process, each its own
//! loopback listener, each with its own fault profile.
//!
//! Why: the cluster client (`courier::cluster`) is judged by what it does
//! when one replica of many is slow, failing or stuck, and that needs
//! replicas whose misbehaviour is known exactly and whose counters say how
//! much traffic each got, second by second. Each replica answers every path
//! the same way (a 200 "ok" after its service time, or its fault), so the
//! client side can send anything.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::time::Duration;
//! use courier_server::{ReplicaSet, ReplicasConfig};
//! let set = ReplicaSet::start(ReplicasConfig {
//!     replicas: 10,
//!     service_time: Duration::from_millis(5),
//!     faults: vec!["3=slow:10".parse().unwrap(), "7=503".parse().unwrap()],
//!     ..Default::default()
//! })
//! .await?;
//! set.begin(); // the fault clock and the per-second counters start now
//! // ... drive load at set.urls() ...
//! let per_second = set.seconds();
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::ServerConfig;
use crate::handle::ServerHandle;
use crate::replica::ReplicaBehaviour;
pub use crate::replica::ReplicaSecond;
use crate::replica_fault::{ReplicaFault, ReplicaSelector};
use crate::server::start_replica;

/// Settings of a [`ReplicaSet`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicasConfig {
    /// How many replicas (default 10).
    pub replicas: usize,
    /// A healthy replica's service time per request (default 5 ms).
    pub service_time: Duration,
    /// Requests each replica serves at once; more wait in its FIFO queue
    /// (default 1: a capacity of 1 / service time requests per second).
    pub workers: usize,
    /// The faults; a fault naming a replica past the last is an error.
    pub faults: Vec<ReplicaFault>,
    /// Each listener's settings (the address's port is ignored: each
    /// replica gets a free one).
    pub server: ServerConfig,
}

impl Default for ReplicasConfig {
    fn default() -> Self {
        Self {
            replicas: 10,
            service_time: Duration::from_millis(5),
            workers: 1,
            faults: Vec::new(),
            server: ServerConfig::default(),
        }
    }
}

impl ReplicasConfig {
    /// Requests per second the replicas serve when all are healthy.
    pub fn healthy_capacity(&self) -> f64 {
        let per_worker = 1.0 / self.service_time.as_secs_f64().max(1e-9);
        per_worker * (self.workers.max(1) * self.replicas) as f64
    }
}

/// Running replicas; dropping the set stops them.
pub struct ReplicaSet {
    handles: Vec<ServerHandle>,
    behaviours: Vec<Arc<ReplicaBehaviour>>,
}

impl std::fmt::Debug for ReplicaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaSet")
            .field("replicas", &self.handles.len())
            .finish_non_exhaustive()
    }
}

impl ReplicaSet {
    /// Binds every replica's listener and starts serving on the current
    /// tokio runtime.
    ///
    /// # Errors
    /// A bind error, `InvalidInput` for zero replicas or a fault naming a
    /// replica that does not exist.
    pub async fn start(config: ReplicasConfig) -> std::io::Result<ReplicaSet> {
        let invalid = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, msg);
        if config.replicas == 0 {
            return Err(invalid("a replica set needs at least one replica".into()));
        }
        for fault in &config.faults {
            if let ReplicaSelector::One(i) = fault.replica {
                if i >= config.replicas {
                    return Err(invalid(format!(
                        "fault {fault} names replica {i}, but the replicas are 0..={}",
                        config.replicas - 1
                    )));
                }
            }
        }
        let mut set = ReplicaSet {
            handles: Vec::with_capacity(config.replicas),
            behaviours: Vec::with_capacity(config.replicas),
        };
        for i in 0..config.replicas {
            let faults = config
                .faults
                .iter()
                .filter(|f| f.replica.selects(i))
                .copied()
                .collect();
            let behaviour = Arc::new(ReplicaBehaviour::new(
                config.service_time,
                config.workers,
                faults,
            ));
            let mut server = config.server.clone();
            server.addr.set_port(0);
            let handle = start_replica(server, Arc::clone(&behaviour)).await?;
            set.handles.push(handle);
            set.behaviours.push(behaviour);
        }
        Ok(set)
    }

    /// Each replica's base URL (`http://127.0.0.1:PORT`), in index order.
    pub fn urls(&self) -> Vec<String> {
        self.handles
            .iter()
            .map(|h| h.url("").trim_end_matches('/').to_owned())
            .collect()
    }

    /// Starts the fault clock and the per-second counters now. Before it,
    /// faults that start at 0 are on, timed ones off, and requests are
    /// not counted. Only the first call counts.
    pub fn begin(&self) {
        let now = Instant::now();
        for b in &self.behaviours {
            b.begin(now);
        }
    }

    /// Per replica, what it did in each second since [`begin`](Self::begin).
    pub fn seconds(&self) -> Vec<Vec<ReplicaSecond>> {
        self.behaviours.iter().map(|b| b.seconds()).collect()
    }

    /// Stops every replica and waits for their connections to close.
    pub async fn shutdown(self) {
        for handle in self.handles {
            handle.shutdown().await;
        }
    }
}
