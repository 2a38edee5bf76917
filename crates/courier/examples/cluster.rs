//! One client for a service of several replicas: `courier::cluster`.
//!
//! Run two built-in servers, then the example, which is told of three
//! replicas (the third, port 8082, is down): requests are forked past it,
//! its health falls, and it is soon left alone.
//!
//! ```sh
//! cargo run -p courier-cli -- serve -p 8080 &
//! cargo run -p courier-cli -- serve -p 8081 &
//! cargo run -p courier-http --example cluster    # COURIER_REPLICAS=http://a:1,http://b:2 to point elsewhere
//! ```

use std::time::Duration;

use courier::cluster::{ClusterClient, ReplicaOrdering, Strategy};

#[tokio::main]
async fn main() -> Result<(), courier::Error> {
    let replicas = std::env::var("COURIER_REPLICAS").unwrap_or_else(|_| {
        "http://127.0.0.1:8080,http://127.0.0.1:8081,http://127.0.0.1:8082".to_owned()
    });
    let client = courier::Client::builder()
        .connect_timeout(Duration::from_millis(200))
        .build()?;
    let cluster = ClusterClient::builder("example")
        .replicas(replicas.split(','))
        .strategy(Strategy::forking(3)) // a new replica every 2 s / 3, or at once on a failure
        .ordering(ReplicaOrdering::WeightedHealth)
        .timeout(Duration::from_secs(2))
        .build(client)?;

    for i in 0..20 {
        match cluster.get("/bytes/64").send().await {
            Ok(res) => println!(
                "request {i:2}: {} from {:?}",
                res.status(),
                res.remote_addr()
            ),
            Err(e) => println!("request {i:2}: failed ({}): {e:#}", e.kind()),
        }
    }
    let snapshot = cluster.snapshot();
    println!(
        "\n{} requests, {} throttled",
        snapshot.requests, snapshot.throttled
    );
    for r in snapshot.replicas {
        println!(
            "{:28} requests {:3}  failures {:3}  health {:.3}  latency {:?}",
            r.replica.to_string(),
            r.requests,
            r.failures,
            r.health,
            r.latency_ewma
        );
    }
    Ok(())
}
