//! What every origin of one client shares: the pool's configuration, the
//! metrics, and the source of connection ids.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::PoolConfig;
use crate::metrics::Metrics;

/// What every origin of one client shares.
pub(crate) struct Shared {
    pub(crate) config: PoolConfig,
    pub(crate) metrics: Arc<Metrics>,
    conn_ids: AtomicU64,
}

impl Shared {
    /// Counting connections from 1.
    pub(crate) fn new(config: PoolConfig, metrics: Arc<Metrics>) -> Shared {
        Shared {
            config,
            metrics,
            conn_ids: AtomicU64::new(0),
        }
    }

    pub(crate) fn next_conn_id(&self) -> u64 {
        self.conn_ids.fetch_add(1, Relaxed) + 1
    }
}
