//! The line a server prints when it starts, a leaf of its own: `serve` and
//! `serve_replicas` both print one, and neither imports the other for it.

/// Prints what a server says when it starts. It is already serving: a reader
/// that stopped reading (a pipe closed after the first line) must not make
/// `println!` panic and take the server down, as it did once under CI load.
pub fn print_banner(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
