//! Where a cluster's replicas come from.
//!
//! The cluster asks its [`Topology`] for the list on every request, so a
//! topology that changes (DNS, a file, Consul, Kubernetes) is followed at
//! once: a replica removed gets no new request, while requests already in
//! flight on it run to their end (they hold their own reference to it).
//! Implementations keep the list current on their own (a task of theirs)
//! and hand out a shared copy, so asking is cheap.

pub(crate) mod dns;
pub(crate) mod file;
pub(crate) mod refresh;
#[cfg(feature = "dns-srv")]
pub(crate) mod srv;
pub(crate) mod watched;

use std::sync::{Arc, RwLock};

use super::replica::Replica;

/// A source of replicas. Implement it for any service discovery.
pub trait Topology: Send + Sync + 'static {
    /// The replicas now. Called once per request: return a shared list
    /// kept current elsewhere (the cluster notices a new list by pointer, so
    /// return the same `Arc` while nothing changed).
    fn replicas(&self) -> Arc<[Replica]>;
}

/// A fixed list of replicas.
#[derive(Debug, Clone)]
pub struct StaticTopology {
    replicas: Arc<[Replica]>,
}

impl StaticTopology {
    /// The replicas, once and for all.
    pub fn new(replicas: impl IntoIterator<Item = Replica>) -> StaticTopology {
        StaticTopology {
            replicas: replicas.into_iter().collect(),
        }
    }
}

impl Topology for StaticTopology {
    fn replicas(&self) -> Arc<[Replica]> {
        Arc::clone(&self.replicas)
    }
}

/// A list that its owner replaces at will: the building block for a
/// topology fed by anything (a watched file, a discovery client's
/// callback). Clones share the list.
#[derive(Debug, Clone, Default)]
pub struct SharedTopology {
    replicas: Arc<RwLock<Arc<[Replica]>>>,
}

impl SharedTopology {
    /// Starts with `replicas`.
    pub fn new(replicas: impl IntoIterator<Item = Replica>) -> SharedTopology {
        let topology = SharedTopology::default();
        topology.set(replicas);
        topology
    }

    /// Replaces the list (requests in flight are not affected).
    pub fn set(&self, replicas: impl IntoIterator<Item = Replica>) {
        let list: Arc<[Replica]> = replicas.into_iter().collect();
        *self.replicas.write().unwrap_or_else(|e| e.into_inner()) = list;
    }
}

impl Topology for SharedTopology {
    fn replicas(&self) -> Arc<[Replica]> {
        Arc::clone(&self.replicas.read().unwrap_or_else(|e| e.into_inner()))
    }
}
