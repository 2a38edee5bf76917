//! Ctrl-C during a run: stop starting requests, let those in flight finish for a moment, then
//! report what was measured and write every file asked for. A second Ctrl-C quits at once.
//!
//! Losing a ten-minute run to one keypress is what made people stop pressing it; a partial
//! report, marked as such, is worth more than none. The first signal cancels the run's token,
//! which the load models check before each request (`Plan::admit`) and while they wait;
//! requests still running after [`GRACE`] are abandoned, as at a deadline. Installing the
//! handler replaces the default "terminate" action, hence the explicit exit on the second one.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::EXIT_INTERRUPTED;

/// How long requests in flight at Ctrl-C may take to finish and be counted.
pub const GRACE: Duration = Duration::from_secs(1);

/// Watches for Ctrl-C on the current runtime and cancels `token` on the first one; exits the
/// process on the second. The task ends with the runtime.
pub fn watch(token: CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return; // no signal handling on this platform: Ctrl-C keeps its default action
        }
        eprintln!(
            "\ncourier bench: Ctrl-C: stopping; requests in flight get {} s to finish (Ctrl-C again quits at once)",
            GRACE.as_secs_f64()
        );
        token.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("courier bench: Ctrl-C again: quitting without a report");
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
}

/// Waits until `deadline` (if any) or until the run is cancelled; `true` when cancelled.
pub async fn cancelled_before(token: &CancellationToken, deadline: Option<Instant>) -> bool {
    match deadline {
        Some(deadline) => tokio::select! {
            () = token.cancelled() => true,
            () = tokio::time::sleep_until(deadline) => false,
        },
        None => {
            token.cancelled().await;
            true
        }
    }
}
