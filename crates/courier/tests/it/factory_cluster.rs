//! A cluster configured in the factory's TOML (`[clients.NAME.cluster]`)
//! and handed out by [`ClientFactory::cluster`], against scripted replicas
//! on loopback (`cluster::Scripted`) and the built-in server.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use crate::cluster::{replica_of, Scripted};
use crate::support::middleware::headers_json;
use courier::{ClientFactory, ErrorKind};

fn factory(toml: &str) -> ClientFactory {
    ClientFactory::builder()
        .config_toml(toml)
        .unwrap()
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_static_cluster_from_toml_spreads_requests_over_its_replicas_in_one_pool() {
    let a = Scripted::start("a", 200, 0).await;
    let b = Scripted::start("b", 200, 0).await;
    let c = Scripted::start("c", 200, 0).await;
    let factory = factory(&format!(
        r#"
        [clients.billing]
        max_connections_per_host = 4
        handler_lifetime = "7s"
        [clients.billing.cluster]
        replicas = ["{}", "{}", "{}"]
        strategy = "single"
        seed = 7
        throttle = false
        "#,
        a.url, b.url, c.url
    ));
    let cluster = factory.cluster("billing").await.unwrap();
    assert_eq!(cluster.name(), "billing");
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for _ in 0..60 {
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
        *seen.entry(replica_of(&res)).or_default() += 1;
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.values().all(|&n| n >= 8), "{seen:?}");
    // One cluster per name: a second caller shares its numbers.
    let again = factory.cluster("billing").await.unwrap();
    assert_eq!(again.snapshot().requests, 60);
    assert!(again.snapshot().throttle_probability == 0.0);
    // Each replica is an origin of the named client's pool.
    let m = factory.client("billing").metrics();
    assert_eq!(m.requests_total, 60, "{m:?}");
    assert_eq!(m.connections_established, 3, "{m:?}");
    assert_eq!(factory.clusters().len(), 1);
    // The handler lifetime renews the cluster's connections as any client's.
    let pool = format!("{:?}", cluster.client());
    assert!(
        pool.contains("pooled_connection_lifetime: Some(7s)"),
        "{pool}"
    );
}

#[tokio::test]
async fn the_strategy_from_toml_takes_effect() {
    let bad = Scripted::start("bad", 503, 0).await;
    let good1 = Scripted::start("good1", 200, 0).await;
    let good2 = Scripted::start("good2", 200, 0).await;
    let toml = |strategy: &str| {
        format!(
            r#"
            [clients.svc.cluster]
            replicas = ["{}", "{}", "{}"]
            strategy = "{strategy}"
            seed = 42
            throttle = false
            replica_budget = false
            "#,
            bad.url, good1.url, good2.url
        )
    };
    // sequential3: a 503 is rejected and the next replica answers.
    let sequential = factory(&toml("sequential3")).cluster("svc").await.unwrap();
    for _ in 0..40 {
        let res = sequential.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_ne!(replica_of(&res), "bad");
    }
    let tried = bad.requests();
    assert!(tried >= 1, "the bad replica was tried and skipped");
    // single: the same replicas, and the 503 comes back to the caller.
    let single = factory(&toml("single")).cluster("svc").await.unwrap();
    let mut statuses = Vec::new();
    for _ in 0..40 {
        statuses.push(single.get("/x").send().await.unwrap().status().as_u16());
    }
    assert!(statuses.contains(&503), "{statuses:?}");
    assert!(bad.requests() > tried);
}

#[tokio::test]
async fn parallel_from_toml_asks_both_replicas_at_once() {
    let slow = Scripted::start("slow", 200, 60_000).await;
    let fast = Scripted::start("fast", 200, 0).await;
    let factory = factory(&format!(
        r#"
        [clients.svc]
        timeout = "30s"
        [clients.svc.cluster]
        replicas = ["{}", "{}"]
        strategy = "parallel2"
        "#,
        slow.url, fast.url
    ));
    let cluster = factory.cluster("svc").await.unwrap();
    let res = cluster.get("/x").send().await.unwrap();
    assert_eq!(replica_of(&res), "fast");
    // The slow replica got the request at the same time, and lost.
    crate::support::eventually(
        "the slow attempt is cancelled",
        Duration::from_secs(5),
        || slow.cancelled.load(SeqCst) == 1,
    )
    .await;
    assert_eq!(slow.requests(), 1);
}

#[tokio::test]
async fn criteria_and_default_headers_from_toml_reach_the_cluster() {
    let srv = crate::support::server().await;
    let unavailable = Scripted::start("unavailable", 503, 0).await;
    let factory = factory(&format!(
        r#"
        [clients.echo]
        headers = {{ x-team = "payments" }}
        [clients.echo.cluster]
        replicas = ["{echo}"]

        [clients.lenient.cluster]
        dns = "{addr}"
        strategy = "single"
        throttle = false
        [clients.lenient.cluster.criteria]
        reject_statuses = [500]

        [clients.strict.cluster]
        dns = "{addr}"
        strategy = "single"
        throttle = false
        "#,
        echo = srv.url(""),
        addr = unavailable.url.trim_start_matches("http://"),
    ));
    let echo = factory.cluster("echo").await.unwrap();
    let headers = headers_json(echo.get("/headers").send().await.unwrap()).await;
    assert_eq!(headers["x-team"], "payments");
    // The same 503 replica (an IP: no resolver needed), judged by each
    // cluster's criteria.
    for (name, accepted, failures) in [("lenient", 1, 0), ("strict", 0, 1)] {
        let cluster = factory.cluster(name).await.unwrap();
        let res = cluster.get("/x").send().await.unwrap();
        assert_eq!(res.status(), 503);
        let snap = cluster.snapshot();
        assert_eq!(snap.replicas.len(), 1);
        let r = &snap.replicas[0];
        assert_eq!(
            (r.accepted, r.failures),
            (accepted, failures),
            "{name}: {r:?}"
        );
    }
}

#[tokio::test]
async fn a_file_topology_path_is_relative_to_the_config_file() {
    let a = Scripted::start("a", 200, 0).await;
    let dir = std::env::temp_dir().join(format!("courier-factory-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("svc.replicas"), format!("# replicas\n{}\n", a.url)).unwrap();
    std::fs::write(
        dir.join("clients.toml"),
        "[clients.svc.cluster]\nfile = \"svc.replicas\"\nrefresh = \"1s\"\n",
    )
    .unwrap();
    let factory = ClientFactory::builder()
        .config_file(dir.join("clients.toml"))
        .unwrap()
        .build()
        .unwrap();
    let cluster = factory.cluster("svc").await.unwrap();
    let res = cluster.get("/x").send().await.unwrap();
    assert_eq!(replica_of(&res), "a");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_cluster_configurations_fail_when_the_factory_is_built() {
    let build = |toml: &str| {
        ClientFactory::builder()
            .config_toml(toml)
            .and_then(|b| b.build())
            .unwrap_err()
    };
    let err = build(
        r#"
        [clients.billing.cluster]
        replicas = ["http://127.0.0.1:1"]
        stratgy = "single"
        "#,
    );
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(format!("{err:#}").contains("stratgy"), "{err}");
    let err = build(
        r#"
        [clients.billing]
        base_url = "http://billing.internal/api/"
        [clients.billing.cluster]
        replicas = ["http://127.0.0.1:1"]
        "#,
    );
    assert_eq!(err.kind(), ErrorKind::Config);
    let text = format!("{err:#}");
    assert!(
        text.contains("billing") && text.contains("base_url") && text.contains("cluster"),
        "{text}"
    );
    let err = build(
        r#"
        [defaults]
        rotate_pool = true
        [clients.billing.cluster]
        replicas = ["http://127.0.0.1:1"]
        "#,
    );
    assert!(format!("{err:#}").contains("rotate_pool"), "{err}");
}

#[tokio::test]
async fn a_client_without_a_cluster_is_not_one() {
    let factory = factory("[clients.plain]\ntimeout = \"1s\"\n");
    let err = factory.cluster("plain").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(format!("{err:#}").contains("not a cluster"), "{err}");
}

/// Issue 27: a cluster's default headers are written by its pool, below
/// the redirect layer; a default credential must not follow a redirect to
/// another origin (and must still go to the replica's own).
#[tokio::test]
async fn a_clusters_default_credentials_stay_with_the_replica_on_redirects() {
    let replica = crate::support::server().await;
    let elsewhere = crate::support::server().await;
    let factory = factory(&format!(
        r#"
        [clients.svc]
        headers = {{ authorization = "Bearer cluster-token", x-team = "payments" }}
        [clients.svc.redirect]
        max_redirects = 5
        [clients.svc.cluster]
        replicas = ["{replica}"]
        "#,
        replica = replica.url(""),
    ));
    let cluster = factory.cluster("svc").await.unwrap();
    let away = format!("/redirect-to/302?{}", elsewhere.url("/headers"));
    let seen = headers_json(cluster.get(&away).send().await.unwrap()).await;
    assert_eq!(seen.get("authorization"), None, "{seen:?}");
    assert_eq!(seen["x-team"], "payments");
    let seen = headers_json(
        cluster
            .get("/redirect-to/302?/headers")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(seen["authorization"], "Bearer cluster-token");
}
