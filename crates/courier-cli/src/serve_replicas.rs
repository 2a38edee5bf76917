//! `courier serve --replicas N`: the cluster scenario's replicas as a standalone process, so a
//! cluster client elsewhere (another process, another machine's courier) can be tried against
//! replicas with known faults. The fault clock starts when the replicas are listening.
//!
//! Why its own file: `serve.rs` runs one server with endpoints; this runs N replicas that
//! answer every path alike, with the same `--fault` syntax as `courier bench --scenario cluster`.

use std::time::Duration;

use courier_server::{ReplicaFault, ReplicaSet, ReplicasConfig};

use crate::error::{CliError, Result};

/// What `courier serve --replicas` needs.
pub struct Replicas {
    pub count: usize,
    pub service_time: Duration,
    pub workers: usize,
    pub faults: Vec<ReplicaFault>,
    pub server: courier_server::ServerConfig,
}

/// Starts the replicas, prints their URLs, and serves until Ctrl-C.
pub async fn serve(r: Replicas) -> Result<()> {
    let config = ReplicasConfig {
        replicas: r.count,
        service_time: r.service_time,
        workers: r.workers,
        faults: r.faults,
        server: r.server,
    };
    let capacity = config.healthy_capacity();
    let faults: Vec<String> = config.faults.iter().map(ToString::to_string).collect();
    let set = ReplicaSet::start(config)
        .await
        .map_err(|e| CliError::new(format!("cannot start the replicas: {e}")))?;
    set.begin();
    let mut banner = format!(
        "courier serve: {} replicas, {} ms service time, {} worker(s) each ({capacity:.0} req/s healthy capacity), faults: {}\n",
        r.count,
        r.service_time.as_secs_f64() * 1000.0,
        r.workers,
        if faults.is_empty() { "none".to_owned() } else { faults.join(" ") }
    );
    for (i, url) in set.urls().iter().enumerate() {
        banner += &format!("replica {i}: {url}/\n");
    }
    banner += "every path answers \"ok\" after the service time (or the replica's fault); press Ctrl-C to stop\n";
    crate::banner::print_banner(&banner);
    let signal = tokio::signal::ctrl_c().await;
    set.shutdown().await;
    signal.map_err(|e| CliError::new(format!("cannot wait for Ctrl-C: {e}")))
}
