//! An origin with 10,000 idle connections (issue 30's cost curve: 1 to
//! 10,000 connections per origin): checkouts and returns keep the gauges
//! right without a pass over the idle stack.
//!
//! A checkout and a return each take the origin's lock once, and unlocking
//! settles the gauges; a pass over every idle connection there made each of
//! them O(idle connections) (500 cycles took 2,688× as long at 10,000 idle
//! as at 10). The stack now keeps its counts (`origin/idle.rs`), and its only
//! walk is the scavenger's, which this test counts. What a checkout costs
//! at 10 and at 10,000 idle connections is timed by the criterion bench
//! `pool/checkout_release_idle` (`cargo bench -p courier-http --bench pool`).

use super::*;

/// Idle connections on the large side.
const MANY: usize = 10_000;
/// Idle connections on the small side.
const FEW: usize = 10;
/// Checkout-and-return cycles per timed batch.
const CYCLES: u32 = 500;

/// `CYCLES` checkouts and returns on `origin`.
async fn cycles(origin: &Arc<OriginPool<Fake<false>>>) {
    for _ in 0..CYCLES {
        let lease = origin.checkout(false, None).await.unwrap();
        lease.release();
    }
}

#[tokio::test]
async fn checkouts_among_ten_thousand_idle_connections_walk_none_of_them() {
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

        let walked = many.idle_walked() + few.idle_walked();
        cycles(&many).await;
        cycles(&few).await;
        assert_eq!(
            many.idle_walked() + few.idle_walked(),
            walked,
            "{CYCLES} checkouts and returns walked the idle stack"
        );
        // The gauges still say what the state holds.
        assert_eq!(by.connections_idle.get(), (MANY + FEW) as u64);
        assert_eq!(by.connections_open.get(), (MANY + FEW) as u64);
    })
    .await;
}
