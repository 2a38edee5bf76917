//! Panics on the run's threads during a run (courier's own tasks included,
//! whose panics tokio would otherwise only print) are recorded, so that a
//! run with one fails even if every request got an answer. Only the run's
//! threads (its runtime's, named [`THREADS`]): the other tests of the binary
//! share the process, and a panic of theirs is theirs.

use std::sync::{Mutex, OnceLock};

fn recorded() -> &'static Mutex<Vec<String>> {
    static PANICS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    PANICS.get_or_init(|| Mutex::new(Vec::new()))
}

/// The name of the run's runtime threads, workers and blocking ones.
pub const THREADS: &str = "interop-run";

/// Records every panic on a thread named [`THREADS`] from now on (the
/// previous hook still prints it, and sees every panic as before).
pub fn record() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        if thread.name() == Some(THREADS) {
            if let Ok(mut panics) = recorded().lock() {
                panics.push(format!("panic on thread {THREADS}: {info}"));
            }
        }
        previous(info);
    }));
}

/// The panics recorded so far.
pub fn taken() -> Vec<String> {
    recorded().lock().map(|p| p.clone()).unwrap_or_default()
}
