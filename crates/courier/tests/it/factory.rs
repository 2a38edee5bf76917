//! ClientFactory: named clients, handler lifetime, pool rotation, configuration.
//!
//! The handler lifetime and pool rotation are on tokio's clock: the tests
//! under load run on paused time, against the built-in server in the same
//! runtime, whose delays are timers.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::support::middleware::{headers_json, reply, scripted};
use crate::support::{eventually, server};
use courier::{ClientFactory, ErrorKind};

/// Runs `workers` concurrent request loops for `duration`, collecting the
/// server connection ids seen; every request must succeed.
async fn load(
    client: &courier::ServiceClient,
    url: String,
    workers: usize,
    duration: Duration,
) -> (BTreeSet<u64>, usize) {
    let ids = Arc::new(Mutex::new(BTreeSet::new()));
    let started = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let client = client.clone();
            let url = url.clone();
            let ids = ids.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while started.elapsed() < duration {
                    let res = client.get(&url).send().await.expect("no request fails");
                    assert_eq!(res.status(), 200);
                    let id: u64 = res.headers()["x-connection-id"]
                        .to_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    ids.lock().unwrap().insert(id);
                    res.bytes().await.unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut requests = 0;
    for t in tasks {
        requests += t.await.unwrap();
    }
    let ids = ids.lock().unwrap().clone();
    (ids, requests)
}

#[tokio::test(start_paused = true)]
async fn a_client_held_for_5s_rotates_with_a_1s_handler_lifetime() {
    let srv = server().await;
    let factory = ClientFactory::builder()
        .handler_lifetime(Some(Duration::from_secs(1)))
        .build()
        .unwrap();
    // Obtained once and held, as a long-lived service would.
    let client = factory.client("catalog");
    let workers = 4;
    let (ids, requests) = load(
        &client,
        srv.url("/delay/5"),
        workers,
        Duration::from_secs(5),
    )
    .await;
    let m = client.metrics();
    assert!(m.connections_established >= 4, "{m:?}");
    // Every worker's connection was replaced about every second.
    assert!(ids.len() >= 4 * workers, "{} connections", ids.len());
    assert_eq!(ids.len() as u64, m.connections_established);
    assert_eq!(m.requests_failed, 0);
    assert!(requests > 200, "{requests} requests");
}

#[tokio::test]
async fn handler_lifetime_sets_the_connection_lifetime_unless_set_explicitly() {
    let factory = ClientFactory::builder()
        .handler_lifetime(Some(Duration::from_secs(7)))
        .configure("pinned", |b| {
            b.pooled_connection_lifetime(Some(Duration::from_secs(30)))
        })
        .configure("forever", |b| b.pooled_connection_lifetime(None))
        .build()
        .unwrap();
    let debug = |name: &str| format!("{:?}", factory.client(name).client());
    assert!(
        debug("any").contains("pooled_connection_lifetime: Some(7s)"),
        "{}",
        debug("any")
    );
    assert!(debug("pinned").contains("pooled_connection_lifetime: Some(30s)"));
    assert!(debug("forever").contains("pooled_connection_lifetime: None"));
    // The default handler lifetime is 2 minutes.
    let default = ClientFactory::new();
    let d = format!("{:?}", default.client("x").client());
    assert!(d.contains("pooled_connection_lifetime: Some(120s)"), "{d}");
}

#[tokio::test]
async fn one_name_one_pool() {
    let srv = server().await;
    let factory = ClientFactory::new();
    let a = factory.client("billing");
    let b = factory.client("billing");
    let other = factory.client("search");
    for client in [&a, &b] {
        client
            .get(srv.url("/bytes/1"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    assert_eq!(a.metrics().requests_total, 2);
    assert_eq!(b.metrics().connections_established, 1);
    assert_eq!(other.metrics().requests_total, 0);
    assert_eq!(a.name(), Some("billing"));
}

#[tokio::test(start_paused = true)]
async fn full_pool_rotation_replaces_the_pool_and_closes_the_old_one() {
    let srv = server().await;
    // "HL only": a fresh pool every 300 ms, connections without a lifetime of their own.
    let factory = ClientFactory::builder()
        .handler_lifetime(Some(Duration::from_millis(300)))
        .options("rotating", |o| o.rotate_pool = true)
        .configure("rotating", |b| b.pooled_connection_lifetime(None))
        .build()
        .unwrap();
    let client = factory.client("rotating");
    let (ids, _) = load(&client, srv.url("/delay/2"), 2, Duration::from_millis(1600)).await;
    let m = client.metrics();
    assert!(
        ids.len() >= 6,
        "about 2 connections per pool, 5 pools: {}",
        ids.len()
    );
    assert_eq!(m.connections_established, ids.len() as u64, "{m:?}");
    assert_eq!(m.requests_failed, 0);
    assert!(client.pool_rotations() >= 4, "{}", client.pool_rotations());
    // Retired pools are closed once nothing uses them: on the server, only
    // the current pool's connections (if any) stay open.
    eventually("old pools closed", Duration::from_secs(5), || {
        srv.connections_open() <= 2
    })
    .await;
    let m = client.metrics();
    assert!(m.connections_open <= 2, "{m:?}");
}

#[tokio::test]
async fn a_config_file_sets_defaults_and_per_name_overrides() {
    let srv = server().await;
    let flaky = scripted(|req| async move {
        if req.n == 1 {
            reply(503, "busy")
        } else {
            reply(200, "ok")
        }
    })
    .await;
    let toml = format!(
        r#"
        [defaults]
        handler_lifetime = "90s"
        max_connections_per_host = 8
        retry = true

        [clients.billing]
        base_url = "{base}"
        headers = {{ user-agent = "shop/1.0", x-team = "payments" }}
        timeout = "5s"
        total_timeout = "3s"
        attempt_timeout = "1s"
        max_connections_per_host = 2

        [clients.billing.retry]
        max_attempts = 4
        base_delay = "1ms"

        [clients.billing.circuit_breaker]
        failure_ratio = 0.5
        minimum_throughput = 10

        [clients.flaky]
        base_url = "{flaky}"
        [clients.flaky.retry]
        base_delay = "1ms"

        [clients.plain]
        retry = false
        handler_lifetime = "none"
        "#,
        base = srv.url(""),
        flaky = flaky.url("/"),
    );
    let factory = ClientFactory::builder()
        .config_toml(&toml)
        .unwrap()
        // Code wins over the file for the same name.
        .configure("billing", |b| b.max_connections_per_host(3))
        .build()
        .unwrap();

    let billing = factory.client_options("billing");
    assert_eq!(billing.handler_lifetime, Some(Duration::from_secs(90)));
    let retry = billing.middleware.retry.clone().unwrap();
    assert_eq!(retry.max_attempts, 4);
    assert_eq!(retry.base_delay, Duration::from_millis(1));
    let timeout = billing.middleware.timeout.clone().unwrap();
    assert_eq!(timeout.total, Some(Duration::from_secs(3)));
    assert_eq!(timeout.per_attempt, Some(Duration::from_secs(1)));
    assert_eq!(
        billing
            .middleware
            .circuit_breaker
            .clone()
            .unwrap()
            .failure_ratio,
        0.5
    );
    let debug = format!("{:?}", factory.client("billing").client());
    assert!(debug.contains("max_connections_per_host: 3"), "{debug}");
    assert!(debug.contains("timeout: Some(5s)"), "{debug}");
    assert!(
        debug.contains("pooled_connection_lifetime: Some(90s)"),
        "{debug}"
    );

    // Defaults reach unnamed clients; `retry = false` turns it off for one name.
    assert!(factory.client_options("other").middleware.retry.is_some());
    let other = format!("{:?}", factory.client("other").client());
    assert!(other.contains("max_connections_per_host: 8"), "{other}");
    let plain = factory.client_options("plain");
    assert!(plain.middleware.retry.is_none());
    assert_eq!(plain.handler_lifetime, None);
    assert!(format!("{:?}", factory.client("plain").client())
        .contains("pooled_connection_lifetime: None"));

    // Base URL, default headers and the timeout header, end to end.
    let res = factory
        .client("billing")
        .get("headers")
        .send()
        .await
        .unwrap();
    let headers = headers_json(res).await;
    assert_eq!(headers["user-agent"], "shop/1.0");
    assert_eq!(headers["x-team"], "payments");
    let left: u64 = headers["x-request-timeout-ms"].parse().unwrap();
    assert!((900..=1000).contains(&left), "{left}");

    // The retry settings work: one 503, then success.
    let res = factory.client("flaky").get("/x").send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(flaky.hits(), 2);
}

#[tokio::test]
async fn bad_configuration_fails_when_the_factory_is_built() {
    let err = ClientFactory::builder()
        .config_toml("[clients.a]\nconect_timeout = \"1s\"\n")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(format!("{err:#}").contains("conect_timeout"), "{err}");

    let err = ClientFactory::builder()
        .config_toml("[clients.a]\nconnect_timeout = \"1 fortnight\"\n")
        .unwrap_err();
    assert!(format!("{err:#}").contains("unknown unit"), "{err}");

    let err = ClientFactory::builder()
        .configure("zero", |b| b.max_connections_per_host(0))
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);

    let err = ClientFactory::builder()
        .config_file("/nonexistent/clients.toml")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn a_config_file_on_disk_with_a_certificate_path() {
    let pki = courier_server::TestPki::new();
    let dir = std::env::temp_dir().join(format!("courier-factory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ca.pem"), pki.ca_pem()).unwrap();
    std::fs::write(
        dir.join("clients.toml"),
        "[clients.secure]\nroot_certificates = [\"ca.pem\"]\ntls_built_in_root_certs = false\n",
    )
    .unwrap();
    let srv = courier_server::start(courier_server::ServerConfig {
        tls: Some(pki.server_config(&["localhost"])),
        ..courier_server::ServerConfig::default()
    })
    .await
    .unwrap();
    let factory = ClientFactory::builder()
        .config_file(dir.join("clients.toml"))
        .unwrap()
        .build()
        .unwrap();
    let url = format!("https://localhost:{}/bytes/3", srv.local_addr().port());
    let res = factory.client("secure").get(&url).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 3);
    // Without the file's CA the server is not trusted.
    let err = factory.client("other").get(&url).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls);
    let _ = std::fs::remove_dir_all(&dir);
}

/// On the wall clock: its requests (`/bytes/10`) wait for no timer, so the
/// runtime is never idle and paused time would never reach the rotations
/// (tried: the loop spins forever).
#[tokio::test]
async fn rotated_pools_resume_the_tls_sessions_of_the_pools_before_them() {
    let pki = courier_server::TestPki::new();
    let srv = courier_server::start(courier_server::ServerConfig {
        tls: Some(pki.server_config(&["localhost"])),
        ..Default::default()
    })
    .await
    .unwrap();
    let ca = pki.ca_pem();
    let factory = ClientFactory::builder()
        .handler_lifetime(Some(Duration::from_millis(300)))
        .options("tls", |o| o.rotate_pool = true)
        .configure("tls", move |b| b.add_root_certificate(&ca))
        .build()
        .unwrap();
    let client = factory.client("tls");
    let url = format!("https://localhost:{}/bytes/10", srv.local_addr().port());
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(1300) {
        client
            .get(&url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    assert!(client.pool_rotations() >= 3, "{}", client.pool_rotations());
    let m = client.metrics();
    // The first pool does a full handshake; the pools after it resume.
    assert!(m.tls_handshakes >= 4, "{m:?}");
    assert!(m.tls_resumed >= m.tls_handshakes - 1, "{m:?}");
    assert_eq!(srv.tls_resumed(), m.tls_resumed);
}

/// Warnings logged on this thread while `f` runs.
fn warnings_during<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, SubscriberExt};

    #[derive(Clone, Default)]
    struct Warnings(Arc<Mutex<Vec<String>>>);
    struct Message<'a>(&'a mut String);
    impl Visit for Message<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                *self.0 = format!("{value:?}");
            }
        }
    }
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            if *event.metadata().level() == tracing::Level::WARN {
                let mut text = String::new();
                event.record(&mut Message(&mut text));
                self.0.lock().unwrap().push(text);
            }
        }
    }
    let warnings = Warnings::default();
    let subscriber = tracing_subscriber::registry().with(warnings.clone());
    let out = tracing::subscriber::with_default(subscriber, f);
    let seen = warnings.0.lock().unwrap().clone();
    (out, seen)
}

/// A misspelled name got the defaults in silence: a client with another
/// base URL, timeout and middleware than the one meant, found in production.
#[tokio::test]
async fn an_unknown_name_warns_once_and_strict_names_make_it_an_error() {
    let toml = "[clients.billing]\nbase_url = \"http://billing.internal/\"\n";
    let factory = ClientFactory::builder()
        .config_toml(toml)
        .unwrap()
        .configure("search", |b| b.max_connections_per_host(4))
        .build()
        .unwrap();
    let (_, warned) = warnings_during(|| factory.client("billing"));
    assert!(warned.is_empty(), "a configured name: {warned:?}");
    let (client, warned) = warnings_during(|| factory.try_client("biling"));
    assert!(client.is_ok(), "the defaults, as before");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("\"biling\"") && warned[0].contains("did you mean \"billing\""),
        "{warned:?}"
    );
    assert!(warned[0].contains("billing, search"), "{warned:?}");
    let (_, warned) = warnings_during(|| factory.client("biling"));
    assert!(warned.is_empty(), "once per name: {warned:?}");

    // Nothing configured by name: any name is the defaults, in silence.
    let open = ClientFactory::builder()
        .configure_defaults(|b| b.max_connections_per_host(4))
        .build()
        .unwrap();
    let (_, warned) = warnings_during(|| open.client("anything"));
    assert!(warned.is_empty(), "{warned:?}");

    let strict = ClientFactory::builder()
        .config_toml(toml)
        .unwrap()
        .strict_names(true)
        .build()
        .unwrap();
    assert!(strict.try_client("billing").is_ok());
    let err = strict.try_client("biling").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.is_builder());
    assert!(
        err.to_string().contains("did you mean \"billing\""),
        "{err}"
    );
    // Asked again, still an error (nothing was cached), and a cluster too.
    assert!(strict.try_client("biling").is_err());
    assert_eq!(
        strict.cluster("biling").await.unwrap_err().kind(),
        ErrorKind::Config
    );
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        strict.client("biling");
    }));
    let message = panicked.unwrap_err();
    let message = message
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(message.contains("no client named \"biling\""), "{message}");
    assert!(strict.clients().iter().all(|(n, _)| n != "biling"));
}

#[test]
fn strict_names_is_a_toml_key_the_code_overrides() {
    let toml = "strict_names = true\n[clients.billing]\nbase_url = \"http://billing.internal/\"\n";
    let from_file = ClientFactory::builder()
        .config_toml(toml)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(
        from_file.try_client("biling").unwrap_err().kind(),
        ErrorKind::Config
    );
    let overridden = ClientFactory::builder()
        .strict_names(false)
        .config_toml(toml)
        .unwrap()
        .build()
        .unwrap();
    assert!(overridden.try_client("biling").is_ok());
    let err = ClientFactory::builder()
        .config_toml("strict_names = \"yes\"\n")
        .unwrap_err();
    assert!(format!("{err:#}").contains("strict_names"), "{err:#}");
}

/// A plain `Client` follows redirects and decodes bodies by itself, so a
/// file's `redirect = false` and `decompression = false` must switch that
/// off too, not only leave the layers out (before: the factory's client
/// still followed and decoded, with no way to stop it from the file).
#[tokio::test]
async fn sections_switched_off_in_the_file_switch_the_clients_own_off() {
    let srv = server().await;
    let toml = r#"
        [clients.raw]
        redirect = false
        decompression = false

        [clients.raw_tables.redirect]
        enabled = false
        [clients.raw_tables.decompression]
        enabled = false
        "#;
    let factory = ClientFactory::builder()
        .config_toml(toml)
        .unwrap()
        .build()
        .unwrap();
    for name in ["raw", "raw_tables"] {
        let client = factory.client(name);
        let res = client.get(srv.url("/redirect/1")).send().await.unwrap();
        assert_eq!(res.status(), 302, "{name}: the 302 comes back as it came");
        let res = client
            .get(srv.url("/gzip"))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["content-encoding"], "gzip", "{name}");
        let body = res.bytes().await.unwrap();
        assert_eq!(&body[..2], &[0x1f, 0x8b], "{name}: still gzip's magic");
    }
    // No section: the defaults, as `Client::new()`.
    let client = factory.client("default_one");
    let res = client.get(srv.url("/redirect/1")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.url().path(), "/redirect/0");
    let res = client.get(srv.url("/gzip")).send().await.unwrap();
    assert!(res.headers().get("content-encoding").is_none());
    assert!(res.text().await.unwrap().contains("gzipped"));
}
