//! What a case may cost the process, and how it is read: CPU time and RSS
//! from `/proc/self` (Linux; elsewhere the readings are absent and only
//! outcome, time and leaks are checked). The scripted servers run in this
//! process too, so a budget bounds client and server together: a generous
//! bound for the client, which is what a flood or a bomb would blow through.

use std::time::Duration;

use crate::support::memory::Mark;

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

/// A reading at the start of a case.
pub struct Reading {
    cpu: Option<Duration>,
    memory: Mark,
}

/// What a case cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    pub cpu: Duration,
    pub rss: u64,
    pub wall: Duration,
}

impl Cost {
    /// What of this cost broke `budget` for a case whose request deadline
    /// was `timeout`, one line each (the same checks for every class).
    pub fn over(&self, budget: &Budget, timeout: Duration) -> Vec<String> {
        let mut failures = Vec::new();
        if self.wall > timeout + budget.margin {
            failures.push(format!("took {:?} (timeout {timeout:?})", self.wall));
        }
        if self.cpu > budget.cpu {
            failures.push(format!(
                "CPU {:?} over its budget {:?}",
                self.cpu, budget.cpu
            ));
        }
        if self.rss > budget.rss {
            failures.push(format!(
                "RSS grew {} KiB, budget {} KiB",
                self.rss >> 10,
                budget.rss >> 10
            ));
        }
        failures
    }
}

impl Cost {
    /// This cost and `more`'s, run one after the other: the times add up,
    /// the RSS growth is the larger.
    pub fn and(self, more: Cost) -> Cost {
        Cost {
            cpu: self.cpu + more.cpu,
            rss: self.rss.max(more.rss),
            wall: self.wall + more.wall,
        }
    }
}

impl Reading {
    /// Resets the peak-RSS mark (see [`Mark`]: where it cannot be, that is
    /// said and fails under CI, and the end's RSS is used).
    pub fn now() -> Reading {
        Reading {
            cpu: cpu(),
            memory: Mark::now(),
        }
    }

    /// The cost since this reading, `wall` measured by the caller; `rss` is
    /// the rise to the peak.
    pub fn cost(&self, wall: Duration) -> Cost {
        Cost {
            cpu: match (self.cpu, cpu()) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => Duration::ZERO,
            },
            rss: self.memory.grown().unwrap_or(0),
            wall,
        }
    }
}
