//! What a checkout costs does not grow with the connections an origin holds
//! (issue 30's cost curve: 1 to 10,000 connections per origin).
//!
//! A checkout and a return each take the origin's lock once, and unlocking
//! settles the gauges; a pass over every idle connection there made each of
//! them O(idle connections). Compared as a ratio of two timings in one test,
//! interleaved and taking each side's fastest batch, so a loaded machine moves
//! both sides alike; the margin is wide (O(n) at 10,000 was over 100×).

use std::time::Instant as StdInstant;

use super::*;

/// Idle connections on the large side.
const MANY: usize = 10_000;
/// Idle connections on the small side.
const FEW: usize = 10;
/// Checkout-and-return cycles per timed batch.
const CYCLES: u32 = 500;

/// How long `CYCLES` checkouts and returns on `origin` take.
async fn cycle_time(origin: &Arc<OriginPool<Fake<false>>>) -> Duration {
    let start = StdInstant::now();
    for _ in 0..CYCLES {
        let lease = origin.checkout(false, None).await.unwrap();
        lease.release();
    }
    start.elapsed()
}

#[tokio::test]
async fn a_checkout_costs_the_same_with_ten_thousand_idle_connections_as_with_ten() {
    within(async {
        let (pool, metrics) = pool::<false>(usize::MAX);
        let many = origin(&pool, "scale-many.test");
        let few = origin(&pool, "scale-few.test");
        // Open the connections: hold that many leases at once, then give them back.
        for (origin, n) in [(&many, MANY), (&few, FEW)] {
            let mut leases = Vec::with_capacity(n);
            for _ in 0..n {
                leases.push(origin.checkout(false, None).await.unwrap());
            }
            for lease in leases {
                lease.release();
            }
        }
        let by = metrics.protocol(LABEL);
        assert_eq!(by.connections_idle.get(), (MANY + FEW) as u64);

        let (mut t_many, mut t_few) = (Duration::MAX, Duration::MAX);
        for _ in 0..5 {
            t_many = t_many.min(cycle_time(&many).await);
            t_few = t_few.min(cycle_time(&few).await);
        }
        eprintln!("{CYCLES} checkouts and returns: {MANY} idle {t_many:?}, {FEW} idle {t_few:?}");
        assert!(
            t_many < t_few * 5,
            "a checkout with {MANY} idle connections took {:.1}× one with {FEW}",
            t_many.as_secs_f64() / t_few.as_secs_f64()
        );
        // The gauges still say what the state holds.
        assert_eq!(by.connections_idle.get(), (MANY + FEW) as u64);
        assert_eq!(by.connections_open.get(), (MANY + FEW) as u64);
    })
    .await;
}
