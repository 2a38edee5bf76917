//! Named clients from a TOML configuration: base URL, timeouts, retries and a
//! circuit breaker per name, and code that only says which name it wants.
//!
//! Run the built-in server, then the example:
//!
//! ```sh
//! cargo run -p courier-cli -- serve               # listens on 127.0.0.1:8080
//! cargo run -p courier-http --example factory_toml     # COURIER_URL=http://host:port to point elsewhere
//! ```
//!
//! In a service the TOML lives in a file: `ClientFactoryBuilder::config_file("clients.toml")`.

const CONFIG: &str = r#"
[defaults]
handler_lifetime = "2m"          # connections move to fresh ones (and fresh DNS) every 2 minutes
max_connections_per_host = 32
retry = true                     # the retry middleware with its defaults

[clients.catalog]
base_url = "{base}/"               # paths below start with `/`
headers = { user-agent = "courier-example/1.0" }
total_timeout = "2s"             # all attempts, body included
attempt_timeout = "500ms"        # one attempt, to the response head

[clients.catalog.retry]
max_attempts = 3
base_delay = "20ms"

[clients.catalog.circuit_breaker]
failure_ratio = 0.5
minimum_throughput = 10
break_duration = "5s"
"#;

#[tokio::main]
async fn main() -> Result<(), courier::Error> {
    let base = std::env::var("COURIER_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let config = CONFIG.replace("{base}", &base);
    let factory = courier::ClientFactory::builder()
        .config_toml(&config)?
        .build()?;

    // One pool and one middleware state per name, shared by every caller.
    let catalog = factory.client("catalog");
    let res = catalog.get("/json/32").send().await?.error_for_status()?;
    println!(
        "catalog GET /json/32: {} {}",
        res.status(),
        res.text().await?
    );

    // A 503 is retried (idempotent GET) before it reaches us.
    let res = catalog.get("/status/503").send().await?;
    println!("catalog GET /status/503: {} after retries", res.status());

    let m = catalog.metrics();
    println!(
        "catalog: {} requests on {} connection(s)",
        m.requests_total, m.connections_established
    );
    Ok(())
}
