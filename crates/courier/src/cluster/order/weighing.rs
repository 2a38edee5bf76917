//! [`Weighing`]: the part of a cluster's settings its per-replica state and
//! its orderings read.
//!
//! Why its own type: `ClusterConfig` (the cluster's root) names every part
//! of the cluster, strategies included; the order folder reads these six
//! settings only, and taking them as a value of its own keeps it from
//! importing the root that imports it.

use std::time::Duration;

use super::health::HealthConfig;
use super::recent::RecentLatencyConfig;
use super::relative::RelativeWeightConfig;
use crate::cluster::admission::outlier::OutlierConfig;

/// See the fields of the same names on `ClusterConfig`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Weighing {
    pub(crate) active_request_bias: f64,
    pub(crate) health: HealthConfig,
    pub(crate) relative_weights: Option<RelativeWeightConfig>,
    pub(crate) recent_latency: Option<RecentLatencyConfig>,
    pub(crate) gray_period: Option<Duration>,
    pub(crate) outlier: Option<OutlierConfig>,
}

#[cfg(test)]
impl Default for Weighing {
    /// `ClusterConfig::default()`'s.
    fn default() -> Self {
        crate::cluster::ClusterConfig::default().weighing()
    }
}
