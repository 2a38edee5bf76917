//! A list of replicas kept current by a task of its own (a DNS lookup, a
//! watched file), and the signal that ends the task.
//!
//! Why a signal: the task holds the list weakly, so it would notice its
//! owners gone only when its next interval came round (an hour, for a
//! long one): a task and a timer left behind for every topology dropped
//! (the class of 67aa94b's Alt-Svc re-arm timer and the rotation's
//! reaper). The list's drop wakes the task instead, wherever it waits.

use std::future::Future;
use std::sync::{Arc, Weak};

use tokio::sync::Notify;

use super::{SharedTopology, Topology};
use crate::cluster::replica::Replica;

/// The owners' side: the list, shared by the topology's clones.
#[derive(Debug)]
pub(super) struct Watched {
    list: SharedTopology,
    stop: Arc<Notify>,
}

/// The task's side: the list while an owner lives, and its drop's signal.
#[derive(Debug)]
pub(super) struct Watcher {
    list: Weak<Watched>,
    stop: Arc<Notify>,
}

impl Watched {
    /// Starts with `replicas`; the watcher goes to the task.
    pub(super) fn new(replicas: impl IntoIterator<Item = Replica>) -> (Arc<Watched>, Watcher) {
        let stop = Arc::new(Notify::new());
        let watched = Arc::new(Watched {
            list: SharedTopology::new(replicas),
            stop: Arc::clone(&stop),
        });
        let watcher = Watcher {
            list: Arc::downgrade(&watched),
            stop,
        };
        (watched, watcher)
    }

    pub(super) fn replicas(&self) -> Arc<[Replica]> {
        self.list.replicas()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Stored as a permit if the task is not waiting right now.
        self.stop.notify_one();
    }
}

impl Watcher {
    /// `work`'s output, or `None` once the list's owners are all gone
    /// (then the task ends).
    pub(super) async fn unless_dropped<F: Future>(&self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.stop.notified() => None,
            out = work => Some(out),
        }
    }

    /// Replaces the list if it changed (the cluster notices a new list by
    /// pointer, so an unchanged one is left alone): whether it did, or
    /// `None` once the owners are gone.
    pub(super) fn offer(&self, replicas: Vec<Replica>) -> Option<bool> {
        let watched = self.list.upgrade()?;
        if *watched.list.replicas() == *replicas {
            return Some(false);
        }
        watched.list.set(replicas);
        Some(true)
    }
}
