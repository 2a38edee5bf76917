//! A client's `[clients.NAME.cluster]` table: the replicas (a list, a DNS
//! name or a file) and the cluster's settings, read into [`ClusterOptions`].
//!
//! ```toml
//! [clients.billing.cluster]
//! replicas = ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]
//! # or: dns = "billing.internal:8080"  refresh = "30s"
//! # or: file = "billing.replicas"      refresh = "5s"
//! # or: srv = "_http._tcp.billing.svc"  refresh = "30s"  nameserver = "127.0.0.1:8600"  (dns-srv)
//! strategy = "forking3"         # single | sequentialN | forkingN | parallelN
//! fork_delay = "p95"            # equal (budget ÷ n) | pNN (a quantile of recent answers)
//! ordering = "p2c"              # weighted | p2c | p2c-pending
//! active_request_bias = 2.0     # weighted: weight ÷ (in flight + 1)^bias; 0 = Vostok's
//! timeout = "2s"
//! relative_weights = true       # Vostok's 10 s rounds (off by default: they herd under load)
//!
//! [clients.billing.cluster.recent_latency]  # or recent_latency = false
//! threshold = 2.0               # slow past 2 × the median + slack
//! slack = "5ms"
//!
//! [clients.billing.cluster.throttle]  # or throttle = false
//! k = 2.0
//! window = "2m"
//!
//! [clients.billing.cluster.criteria]
//! reject_statuses = [500, 502, 503, 504]
//! dont_retry_header = "none"
//! ```
//!
//! Why a file of its own: a cluster is a concept of its own (issue 18),
//! with its own sections (throttle, replica budget, criteria, outlier
//! ejection, health, relative weights, recent latency), all checked here when the file is
//! read, so a bad one fails the factory's build, not its first request.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use http::{HeaderName, StatusCode, Uri};
use serde::Deserialize;

use super::middleware::{section, Section};
use super::values::{is_none, Dur, IntoValue, OptDur};
use crate::cluster::{
    ForkDelay, HealthConfig, OutlierConfig, RecentLatencyConfig, RelativeWeightConfig, Replica,
    ReplicaBudgetConfig, ReplicaOrdering, Strategy, ThrottleConfig,
};
use crate::error::Error;
use crate::factory::{
    config_error, ClusterOptions, ReplicaSource, DEFAULT_DNS_REFRESH, DEFAULT_FILE_REFRESH,
};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClusterSettings {
    replicas: Option<Vec<String>>,
    dns: Option<String>,
    file: Option<PathBuf>,
    srv: Option<String>,
    nameserver: Option<String>,
    refresh: Option<Dur>,
    strategy: Option<String>,
    fork_delay: Option<String>,
    ordering: Option<String>,
    active_request_bias: Option<f64>,
    timeout: Option<OptDur>,
    seed: Option<u64>,
    replay_non_idempotent: Option<bool>,
    gray_list: Option<OptDur>,
    throttle: Option<Section<ThrottleSettings>>,
    replica_budget: Option<Section<BudgetSettings>>,
    criteria: Option<CriteriaSettings>,
    outlier: Option<Section<OutlierSettings>>,
    health: Option<HealthSettings>,
    relative_weights: Option<Section<RelativeSettings>>,
    recent_latency: Option<Section<RecentSettings>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThrottleSettings {
    enabled: Option<bool>,
    k: Option<f64>,
    window: Option<Dur>,
    buckets: Option<u32>,
    max_probability: Option<f64>,
    min_requests: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetSettings {
    enabled: Option<bool>,
    max_ratio: Option<f64>,
    window: Option<Dur>,
    buckets: Option<u32>,
    min_requests: Option<u64>,
    max_in_flight_share: Option<f64>,
    min_in_flight: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CriteriaSettings {
    reject_statuses: Option<Vec<u16>>,
    dont_retry_header: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutlierSettings {
    enabled: Option<bool>,
    consecutive_rejects: Option<u32>,
    base_ejection_time: Option<Dur>,
    max_ejection_time: Option<Dur>,
    max_ejection_percent: Option<f64>,
    panic_threshold: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HealthSettings {
    up: Option<f64>,
    down: Option<f64>,
    min: Option<f64>,
    recovery: Option<OptDur>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RelativeSettings {
    enabled: Option<bool>,
    update_period: Option<Dur>,
    sensitivity: Option<f64>,
    min_weight: Option<f64>,
    penalty_multiplier: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecentSettings {
    enabled: Option<bool>,
    time_constant: Option<Dur>,
    fade: Option<Dur>,
    threshold: Option<f64>,
    slack: Option<Dur>,
    sensitivity: Option<f64>,
    min_weight: Option<f64>,
}

impl ClusterSettings {
    /// Checks the table (`ctx` is `clients.NAME.cluster`); relative file
    /// paths are relative to `base_dir`.
    pub(super) fn into_options(self, ctx: &str, base_dir: &Path) -> Result<ClusterOptions, Error> {
        let err = |key: &str, e: &dyn std::fmt::Display| config_error(format!("{ctx}.{key}: {e}"));
        if self.nameserver.is_some() && self.srv.is_none() {
            return Err(err("nameserver", &"only with srv"));
        }
        let source = match (self.replicas, self.dns, self.file, self.srv) {
            (Some(urls), None, None, None) => {
                if self.refresh.is_some() {
                    return Err(err("refresh", &"only with dns or file"));
                }
                let list = urls
                    .iter()
                    .map(|u| {
                        Replica::new(u.as_str())
                            .map_err(|e| err("replicas", &format!("{u:?}: {e}")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if list.is_empty() {
                    return Err(err("replicas", &"the list is empty"));
                }
                ReplicaSource::Static(list)
            }
            (None, Some(name), None, None) => {
                let text = if name.contains("://") {
                    name
                } else {
                    format!("http://{name}")
                };
                let url =
                    Uri::from_str(&text).map_err(|e| err("dns", &format!("{text:?}: {e}")))?;
                if url.host().is_none() || !matches!(url.scheme_str(), Some("http" | "https")) {
                    return Err(err(
                        "dns",
                        &format!("{text:?}: expected host:port or http(s)://host:port"),
                    ));
                }
                let refresh = self.refresh.map_or(DEFAULT_DNS_REFRESH, |d| d.0);
                ReplicaSource::Dns { url, refresh }
            }
            (None, None, Some(path), None) => ReplicaSource::File {
                path: base_dir.join(path),
                refresh: self.refresh.map_or(DEFAULT_FILE_REFRESH, |d| d.0),
            },
            (None, None, None, Some(name)) => {
                let nameserver = self
                    .nameserver
                    .map(|text| {
                        SocketAddr::from_str(&text).map_err(|e| {
                            err(
                                "nameserver",
                                &format!("{text:?}: {e} (an IP address and a port)"),
                            )
                        })
                    })
                    .transpose()?;
                ReplicaSource::Srv {
                    name,
                    nameserver,
                    refresh: self.refresh.map_or(DEFAULT_DNS_REFRESH, |d| d.0),
                }
            }
            _ => {
                return Err(config_error(format!(
                    "{ctx}: exactly one of replicas, dns, srv or file says where the replicas are"
                )))
            }
        };
        let mut options = ClusterOptions::new(source);
        let c = &mut options.config;
        if let Some(s) = &self.strategy {
            c.strategy = Strategy::from_str(s).map_err(|e| err("strategy", &e))?;
        }
        if let Some(s) = &self.fork_delay {
            c.fork_delay = ForkDelay::from_str(s).map_err(|e| err("fork_delay", &e))?;
        }
        if let Some(s) = &self.ordering {
            c.ordering = ReplicaOrdering::from_str(s).map_err(|e| err("ordering", &e))?;
        }
        if let Some(bias) = self.active_request_bias {
            c.active_request_bias = bias.max(0.0);
        }
        if let Some(t) = self.timeout {
            c.timeout = t.0;
        }
        if let Some(seed) = self.seed {
            c.seed = Some(seed);
        }
        if let Some(v) = self.replay_non_idempotent {
            c.replay_non_idempotent = v;
        }
        if let Some(g) = self.gray_list {
            c.gray_period = g.0;
        }
        section(
            &mut c.throttle,
            self.throttle,
            |s| s.enabled,
            |t: &mut ThrottleConfig, s| {
                set!(t, s; k, window, buckets, max_probability, min_requests);
            },
        );
        section(
            &mut c.replica_budget,
            self.replica_budget,
            |s| s.enabled,
            |b: &mut ReplicaBudgetConfig, s| {
                set!(b, s; max_ratio, window, buckets, min_requests, max_in_flight_share,
                 min_in_flight);
            },
        );
        section(
            &mut c.outlier,
            self.outlier,
            |s| s.enabled,
            |o: &mut OutlierConfig, s| {
                set!(o, s; consecutive_rejects, base_ejection_time, max_ejection_time,
                 max_ejection_percent, panic_threshold);
            },
        );
        section(
            &mut c.relative_weights,
            self.relative_weights,
            |s| s.enabled,
            |r: &mut RelativeWeightConfig, s| {
                set!(r, s; update_period, sensitivity, min_weight, penalty_multiplier);
            },
        );
        section(
            &mut c.recent_latency,
            self.recent_latency,
            |s| s.enabled,
            |r: &mut RecentLatencyConfig, s| {
                set!(r, s; time_constant, fade, threshold, slack, sensitivity, min_weight);
            },
        );
        if let Some(h) = self.health {
            let health: &mut HealthConfig = &mut c.health;
            set!(health, h; up, down, min);
            if let Some(r) = h.recovery {
                health.recovery = r.0;
            }
        }
        if let Some(criteria) = self.criteria {
            if let Some(list) = criteria.reject_statuses {
                c.criteria.reject_statuses = list
                    .into_iter()
                    .map(|s| {
                        StatusCode::from_u16(s)
                            .map_err(|e| err("criteria.reject_statuses", &format!("{s}: {e}")))
                    })
                    .collect::<Result<_, _>>()?;
            }
            if let Some(h) = criteria.dont_retry_header {
                c.criteria.dont_retry_header = if is_none(&h) {
                    None
                } else {
                    Some(
                        HeaderName::from_str(&h)
                            .map_err(|e| err("criteria.dont_retry_header", &e))?,
                    )
                };
            }
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, FileParsed};
    use crate::error::ErrorKind;

    fn error(text: &str) -> String {
        let err = parse(text, None).err().expect("an error");
        assert_eq!(err.kind(), ErrorKind::Config);
        err.to_string()
    }

    #[test]
    fn bad_cluster_tables_name_their_key() {
        let e =
            error("[clients.b.cluster]\nreplicas = [\"http://a:1\"]\nstrategy = \"hedging3\"\n");
        assert!(
            e.contains("clients.b.cluster.strategy") && e.contains("hedging3"),
            "{e}"
        );
        let e =
            error("[clients.b.cluster]\nreplicas = [\"http://a:1\"]\nordering = \"round-robin\"\n");
        assert!(e.contains("clients.b.cluster.ordering"), "{e}");
        let e = error("[clients.b.cluster]\nreplicas = [\"http://a:1\"]\ndns = \"b:80\"\n");
        assert!(
            e.contains("exactly one of replicas, dns, srv or file"),
            "{e}"
        );
        let e = error("[clients.b.cluster]\nstrategy = \"single\"\n");
        assert!(e.contains("exactly one of"), "{e}");
        let e = error("[clients.b.cluster]\nreplicas = [\"a:1\"]\n");
        assert!(e.contains("clients.b.cluster.replicas"), "{e}");
        let e = error("[clients.b.cluster]\nreplicas = [\"http://a:1\"]\nrefresh = \"1s\"\n");
        assert!(e.contains("clients.b.cluster.refresh"), "{e}");
        let e = error("[clients.b.cluster.criteria]\nreject_statuses = [1000]\n");
        assert!(
            e.contains("exactly one of"),
            "the topology is checked first: {e}"
        );
        let e = error("[clients.b.cluster]\nreplicas = [\"http://a:1\"]\n[clients.b.cluster.throttle]\nkk = 2\n");
        assert!(e.contains("kk"), "{e}");
        let e = error("[defaults.cluster]\nreplicas = [\"http://a:1\"]\n");
        assert!(e.contains("defaults.cluster"), "{e}");
    }

    #[test]
    fn a_dns_name_without_a_scheme_is_http() {
        let FileParsed { named, .. } = parse(
            "[clients.b.cluster]\ndns = \"billing.internal:8080\"\nrefresh = \"10s\"\n",
            None,
        )
        .unwrap();
        let mut o = crate::factory::ClientOptions::default();
        for f in &named["b"].options {
            f(&mut o);
        }
        let cluster = o.cluster.unwrap();
        assert_eq!(
            cluster.replicas,
            crate::factory::ReplicaSource::Dns {
                url: "http://billing.internal:8080".parse().unwrap(),
                refresh: std::time::Duration::from_secs(10),
            }
        );
    }

    #[test]
    fn an_srv_name_with_its_nameserver_reads_and_a_stray_nameserver_is_refused() {
        let FileParsed { named, .. } = parse(
            "[clients.b.cluster]\nsrv = \"_http._tcp.billing.svc\"\nnameserver = \"127.0.0.1:8600\"\n",
            None,
        )
        .unwrap();
        let mut o = crate::factory::ClientOptions::default();
        for f in &named["b"].options {
            f(&mut o);
        }
        assert_eq!(
            o.cluster.unwrap().replicas,
            crate::factory::ReplicaSource::Srv {
                name: "_http._tcp.billing.svc".to_owned(),
                nameserver: Some("127.0.0.1:8600".parse().unwrap()),
                refresh: crate::factory::DEFAULT_DNS_REFRESH,
            }
        );
        let e = error(
            "[clients.b.cluster]\nreplicas = [\"http://a:1\"]\nnameserver = \"127.0.0.1:53\"\n",
        );
        assert!(
            e.contains("clients.b.cluster.nameserver") && e.contains("only with srv"),
            "{e}"
        );
        let e = error("[clients.b.cluster]\nsrv = \"_http._tcp.b\"\nnameserver = \"dns.local\"\n");
        assert!(
            e.contains("clients.b.cluster.nameserver") && e.contains("dns.local"),
            "{e}"
        );
        let e = error("[clients.b.cluster]\nsrv = \"_http._tcp.b\"\ndns = \"b:80\"\n");
        assert!(e.contains("exactly one of"), "{e}");
    }

    /// The README's example, as written there.
    #[test]
    fn the_readme_example_reads() {
        let text = r#"
[clients.inventory]                   # its middleware wraps the cluster's requests and attempts
total_timeout = "3s"                  # the whole request, every replica included
decompression = true                  # each replica's answer
[clients.inventory.cluster]
replicas = ["http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"]
strategy = "sequential3"              # single | sequentialN | forkingN | parallelN (as courier bench)
fork_delay = "equal"                  # equal (budget ÷ n) | pNN, e.g. p95: a quantile of recent answers
ordering = "weighted"                 # weighted | p2c | p2c-pending
timeout = "2s"
throttle = { k = 2.0, window = "2m" } # or throttle = false
replica_budget = { max_ratio = 1.2 }  # or replica_budget = false
criteria = { reject_statuses = [500, 502, 503, 504], dont_retry_header = "none" }
"#;
        let FileParsed { named, .. } = parse(text, None).unwrap();
        let mut o = crate::factory::ClientOptions::default();
        for f in &named["inventory"].options {
            f(&mut o);
        }
        assert!(o.middleware.decompression.is_some());
        let c = o.cluster.unwrap().config;
        assert_eq!(c.strategy, crate::cluster::Strategy::sequential(3));
        assert_eq!(c.timeout, Some(std::time::Duration::from_secs(2)));
        assert_eq!(
            c.throttle.unwrap().window,
            std::time::Duration::from_secs(120)
        );
        assert_eq!(c.criteria.reject_statuses.len(), 4);
        assert_eq!(c.criteria.dont_retry_header, None);
        let FileParsed { named, .. } = parse(
            "[clients.i.cluster]\nreplicas = [\"http://a:1\"]\nthrottle = false\nreplica_budget = false\noutlier = false\n",
            None,
        )
        .unwrap();
        let mut o = crate::factory::ClientOptions::default();
        for f in &named["i"].options {
            f(&mut o);
        }
        let c = o.cluster.unwrap().config;
        assert!(c.throttle.is_none() && c.replica_budget.is_none() && c.outlier.is_none());
    }

    #[test]
    fn latency_weights_read_from_toml() {
        let config = |extra: &str| {
            let text = format!("[clients.i.cluster]\nreplicas = [\"http://a:1\"]\n{extra}");
            let FileParsed { named, .. } = parse(&text, None).unwrap();
            let mut o = crate::factory::ClientOptions::default();
            for f in &named["i"].options {
                f(&mut o);
            }
            o.cluster.unwrap().config
        };
        let c = config("");
        assert!(c.relative_weights.is_none() && c.recent_latency.is_some());
        let c = config("relative_weights = true\nrecent_latency = false\n");
        assert!(c.relative_weights.is_some() && c.recent_latency.is_none());
        let c = config("recent_latency = { threshold = 3.0, slack = \"1ms\", fade = \"20s\" }\n");
        let r = c.recent_latency.unwrap();
        assert_eq!(r.threshold, 3.0);
        assert_eq!(r.slack, std::time::Duration::from_millis(1));
        assert_eq!(r.fade, std::time::Duration::from_secs(20));
        let e = error(
            "[clients.i.cluster]\nreplicas = [\"http://a:1\"]\nrecent_latency = { treshold = 3 }\n",
        );
        assert!(e.contains("treshold"), "{e}");
    }
}
