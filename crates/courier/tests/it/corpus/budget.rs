//! What a case may cost the process, and how it is read: CPU time and RSS
//! from `/proc/self` (Linux; elsewhere the readings are absent and only
//! outcome, time and leaks are checked). The scripted servers run in this
//! process too, so a budget bounds client and server together: a generous
//! bound for the client, which is what a flood or a bomb would blow through.

use std::time::Duration;

/// The most a case may cost.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// CPU time (user + system, all threads) while the hostile request runs.
    pub cpu: Duration,
    /// Peak resident set while the hostile request runs, over the
    /// resident set when it began.
    pub rss: u64,
    /// Wall time past the case's request timeout.
    pub margin: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            cpu: Duration::from_millis(400),
            rss: 16 << 20,
            margin: Duration::from_millis(500),
        }
    }
}

/// This process's CPU time so far (utime + stime of `/proc/self/stat`).
pub fn cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // Clock ticks; USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// This process's resident set size in bytes (`/proc/self/statm`).
pub fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS, so the
/// peak read at the end of a case is the case's own; false where
/// `/proc/self/clear_refs` cannot be written (then the end's RSS is used,
/// which misses memory freed before the end).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The peak RSS since the last reset, in bytes (`VmHWM` of `/proc/self/status`).
fn peak() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A reading at the start of a case.
pub struct Reading {
    cpu: Option<Duration>,
    rss: Option<u64>,
    peak: bool,
}

/// What a case cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    pub cpu: Duration,
    pub rss: u64,
    pub wall: Duration,
}

impl Reading {
    pub fn now() -> Reading {
        let peak = reset_peak();
        Reading {
            cpu: cpu(),
            rss: rss(),
            peak,
        }
    }

    /// The cost since this reading, `wall` measured by the caller.
    pub fn cost(&self, wall: Duration) -> Cost {
        let now = Reading {
            cpu: cpu(),
            rss: if self.peak { peak() } else { rss() },
            peak: false,
        };
        Cost {
            cpu: match (self.cpu, now.cpu) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => Duration::ZERO,
            },
            rss: match (self.rss, now.rss) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            },
            wall,
        }
    }
}
