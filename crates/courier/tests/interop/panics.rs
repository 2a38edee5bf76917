//! Panics anywhere in the process during a run (courier's own tasks
//! included, whose panics tokio would otherwise only print) are recorded,
//! so that a run with one fails even if every request got an answer.

use std::sync::{Mutex, OnceLock};

fn recorded() -> &'static Mutex<Vec<String>> {
    static PANICS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    PANICS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Records every panic from now on (the default hook still prints it).
pub fn record() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned();
        if let Ok(mut panics) = recorded().lock() {
            panics.push(format!("panic on thread {thread}: {info}"));
        }
        default(info);
    }));
}

/// The panics recorded so far.
pub fn taken() -> Vec<String> {
    recorded().lock().map(|p| p.clone()).unwrap_or_default()
}
