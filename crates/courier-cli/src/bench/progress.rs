//! What a run shows while it runs, on stderr (stdout stays the report alone).
//!
//! Watching a load test is how one notices that it went wrong at second 3, not at the end.
//! On a terminal (stdout and stderr both) a small panel is redrawn in place every second:
//! throughput (and the target rate of an open loop), errors, p50/p99 of the last second,
//! connections, requests in flight and queued. Where the panel would be noise it falls back:
//! with stdout redirected to a file, the single line rewritten with `\r`; with stderr not a
//! terminal (CI logs, pipes), nothing, unless `--progress lines` asks for one plain line per
//! second, which logs keep readably. Whether a stream is a terminal is `std::io::IsTerminal`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::format::group_thousands;

/// `--progress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgressMode {
    /// The panel on a terminal, one rewritten line if stdout is redirected, else nothing.
    #[default]
    Auto,
    /// The multi-line panel, redrawn every second.
    Live,
    /// One line rewritten every second.
    Line,
    /// One new line per second (for logs).
    Lines,
    /// Nothing.
    None,
}

/// One second's view of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub elapsed_s: f64,
    /// e.g. `10 s`, `2,000 req`.
    pub goal: String,
    /// Successful responses per second, in the last second.
    pub rps: f64,
    /// The open loop's target for the last second.
    pub target_rps: Option<f64>,
    pub errors_last: u64,
    pub requests_last: u64,
    pub errors_total: u64,
    pub requests_total: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub connections: u64,
    pub in_flight: u64,
    pub queued: u64,
}

/// Draws frames on stderr in the chosen mode.
#[derive(Debug)]
pub struct Progress {
    mode: ProgressMode,
    /// Lines of the panel on screen now (to move back over them).
    drawn: AtomicUsize,
}

impl Progress {
    /// Resolves `auto` from what stdout and stderr are.
    pub fn new(mode: ProgressMode) -> Self {
        let mode = match mode {
            ProgressMode::Auto => resolve(
                std::io::stdout().is_terminal(),
                std::io::stderr().is_terminal(),
            ),
            other => other,
        };
        Self {
            mode,
            drawn: AtomicUsize::new(0),
        }
    }

    /// A warmup line (a one-line panel).
    pub fn show(&self, text: &str) {
        self.draw(&[text.to_owned()]);
    }

    /// The frame of a measured second.
    pub fn frame(&self, frame: &Frame) {
        match self.mode {
            ProgressMode::Live => self.draw(&panel(frame)),
            ProgressMode::Line | ProgressMode::Lines => self.draw(&[line(frame)]),
            ProgressMode::Auto | ProgressMode::None => {}
        }
    }

    fn draw(&self, lines: &[String]) {
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a closed stderr must not fail the run.
        let _ = match self.mode {
            ProgressMode::Live => {
                let up = self.drawn.swap(lines.len(), Ordering::Relaxed);
                let mut text = back_over(up);
                for line in lines {
                    text.push_str(line);
                    text.push_str("\x1b[K\n");
                }
                // A shorter frame than the last: clear what is left below.
                text.push_str("\x1b[J");
                err.write_all(text.as_bytes())
            }
            ProgressMode::Line => write!(err, "\r{}\x1b[K", lines.join("  ")),
            ProgressMode::Lines => writeln!(err, "{}", lines.join("  ")),
            ProgressMode::Auto | ProgressMode::None => Ok(()),
        };
        let _ = err.flush();
    }

    /// Erases the panel or line, before the report is printed.
    pub fn clear(&self) {
        let mut err = std::io::stderr().lock();
        let _ = match self.mode {
            ProgressMode::Live => {
                let up = self.drawn.swap(0, Ordering::Relaxed);
                write!(err, "{}\x1b[J", back_over(up))
            }
            ProgressMode::Line => write!(err, "\r\x1b[K"),
            _ => Ok(()),
        };
        let _ = err.flush();
    }
}

/// `auto`: the panel where both streams are a terminal, the single line where only stderr is.
fn resolve(stdout_terminal: bool, stderr_terminal: bool) -> ProgressMode {
    match (stdout_terminal, stderr_terminal) {
        (true, true) => ProgressMode::Live,
        (false, true) => ProgressMode::Line,
        (_, false) => ProgressMode::None,
    }
}

/// Moves the cursor to the start of a block `lines` high that ends on the current line.
fn back_over(lines: usize) -> String {
    if lines == 0 {
        "\r".to_owned()
    } else {
        format!("\r\x1b[{lines}A")
    }
}

fn n(value: f64) -> String {
    group_thousands(&format!("{value:.0}"))
}

fn error_pct(errors: u64, requests: u64) -> f64 {
    if requests == 0 {
        0.0
    } else {
        100.0 * errors as f64 / requests as f64
    }
}

/// The panel's lines.
pub fn panel(f: &Frame) -> Vec<String> {
    let target = f
        .target_rps
        .map(|t| format!("   target {:>9}/s", n(t)))
        .unwrap_or_default();
    vec![
        format!("courier bench  {:>6.1} s / {}", f.elapsed_s, f.goal),
        format!("  throughput  {:>10} req/s ok{target}", n(f.rps)),
        format!(
            "  errors      {:>10} last second ({:.2}%)   {} total ({:.2}%)",
            n(f.errors_last as f64),
            error_pct(f.errors_last, f.requests_last),
            n(f.errors_total as f64),
            error_pct(f.errors_total, f.requests_total)
        ),
        format!(
            "  latency     p50 {:>8.2} ms   p99 {:>8.2} ms   (last second)",
            f.p50_ms, f.p99_ms
        ),
        format!(
            "  pool        {:>6} connections   {:>6} in flight   {:>6} queued",
            f.connections, f.in_flight, f.queued
        ),
    ]
}

/// The one-line form.
pub fn line(f: &Frame) -> String {
    let target = f
        .target_rps
        .map(|t| format!(" (target {})", n(t)))
        .unwrap_or_default();
    format!(
        "{:>6.1} / {}  {:>10} req/s{target}  p50 {:.2} ms  p99 {:.2} ms  {:>6} connections  {:>6} in flight  {} errors",
        f.elapsed_s,
        f.goal,
        n(f.rps),
        f.p50_ms,
        f.p99_ms,
        f.connections,
        f.in_flight,
        n(f.errors_total as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        Frame {
            elapsed_s: 3.0,
            goal: "10 s".to_owned(),
            rps: 48_210.0,
            target_rps: Some(50_000.0),
            errors_last: 12,
            requests_last: 48_222,
            errors_total: 30,
            requests_total: 150_000,
            p50_ms: 0.81,
            p99_ms: 2.35,
            connections: 64,
            in_flight: 63,
            queued: 1,
        }
    }

    #[test]
    fn the_panel_shows_rate_errors_latency_and_pool() {
        let lines = panel(&frame());
        assert_eq!(lines.len(), 5);
        let text = lines.join("\n");
        for needle in [
            "3.0 s / 10 s",
            "48,210 req/s ok",
            "target    50,000/s",
            "12 last second (0.02%)",
            "30 total (0.02%)",
            "p50     0.81 ms",
            "p99     2.35 ms",
            "64 connections",
            "63 in flight",
            "1 queued",
        ] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
        let closed = Frame {
            target_rps: None,
            ..frame()
        };
        assert!(!panel(&closed).join("\n").contains("target"));
    }

    #[test]
    fn one_line_has_the_same_figures() {
        let text = line(&frame());
        for needle in [
            "48,210 req/s (target 50,000)",
            "p99 2.35 ms",
            "63 in flight",
            "30 errors",
        ] {
            assert!(text.contains(needle), "{needle} in {text}");
        }
    }

    #[test]
    fn auto_picks_by_terminal() {
        assert_eq!(resolve(true, true), ProgressMode::Live);
        assert_eq!(resolve(false, true), ProgressMode::Line);
        assert_eq!(resolve(true, false), ProgressMode::None);
        assert_eq!(back_over(0), "\r");
        assert_eq!(back_over(5), "\r\x1b[5A");
    }
}
