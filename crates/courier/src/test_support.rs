//! Helpers shared by the library's unit tests.

use std::time::Duration;

use tokio::runtime::RuntimeMetrics;

/// How many tasks are alive once it is `want`, or after half a second
/// (in 1 ms steps) if it never is. A background task told to end (a
/// `Notify`, a dropped owner) needs a few scheduler rounds to go; one
/// waiting for its next tick (seconds to minutes away) does not go at all,
/// which is what the tests that call this look for.
pub(crate) async fn alive_tasks_once_settled(metrics: &RuntimeMetrics, want: usize) -> usize {
    for _ in 0..500 {
        if metrics.num_alive_tasks() == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    metrics.num_alive_tasks()
}

/// A xorshift generator from `seed` (not 0): the same numbers every run, no
/// dependency. For tests that feed random bytes where a peer's would go.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
