//! The three readers of the middleware order agree: the plain stack, the
//! cluster's front/attempt split and the TOML sections all follow the one
//! table in middleware/order.rs.

use std::time::Duration;

use crate::factory::ClientOptions;
use crate::middleware::{
    CircuitBreakerConfig, DecompressionConfig, HedgeConfig, RedirectConfig, RetryConfig, Side,
    Slot, Stack, TimeoutConfig, TraceConfig,
};

fn timeouts() -> TimeoutConfig {
    TimeoutConfig {
        total: Some(Duration::from_secs(3)),
        per_attempt: Some(Duration::from_secs(1)),
        ..TimeoutConfig::default()
    }
}

/// Every layer the TOML can switch on, from code.
fn every_layer() -> Stack {
    Stack::new()
        .trace(TraceConfig::default())
        .decompression(DecompressionConfig::default())
        .timeout(timeouts())
        .concurrency_limit(8)
        .redirect(RedirectConfig::default())
        .retry(RetryConfig::default())
        .hedging(HedgeConfig::default())
        .circuit_breaker(CircuitBreakerConfig::default())
}

const EVERY_SECTION: &str = r#"
[clients.a]
trace = true
decompression = true
total_timeout = "3s"
attempt_timeout = "1s"
timeout_header = "x-request-timeout-ms"
concurrency_limit = 8
redirect = true
retry = true
hedging = true
circuit_breaker = true
"#;

/// `sub` keeps `all`'s order.
fn in_order(sub: &[Slot], all: &[Slot]) -> bool {
    let mut rest = all.iter();
    sub.iter().all(|s| rest.any(|a| a == s))
}

#[test]
fn the_plain_stack_the_cluster_split_and_the_toml_follow_the_one_table() {
    let code = every_layer().layers().slots();
    // Plain: every layer the table has, in its order (cookies need a jar).
    let table: Vec<Slot> = crate::middleware::order_table()
        .iter()
        .copied()
        .filter(|s| s.name() != "cookies")
        .collect();
    assert_eq!(code, table);

    // TOML: the same layers, in the same order.
    let parsed = super::parse(EVERY_SECTION, None).unwrap();
    let mut options = ClientOptions::default();
    for step in &parsed.named["a"].options {
        step(&mut options);
    }
    assert_eq!(options.middleware.layers().slots(), code);

    // Cluster: the request side outside the attempt side, each in the
    // table's order, hedging refused, nothing else left out.
    let side =
        |want: Side| -> Vec<Slot> { code.iter().copied().filter(|s| s.side() == want).collect() };
    let (front, attempt) = (side(Side::Request), side(Side::Attempt));
    assert!(in_order(&front, &table) && in_order(&attempt, &table));
    assert_eq!(side(Side::Refused), [Slot::Hedge]);
    assert_eq!(front.len() + attempt.len() + 1, code.len());
    let err = crate::cluster::check_middleware("a", &every_layer().layers()).unwrap_err();
    assert!(err.to_string().contains("hedging with a cluster"), "{err}");
    let mut no_hedge = every_layer();
    no_hedge.hedging = None;
    assert!(crate::cluster::check_middleware("a", &no_hedge.layers()).is_ok());
}
