//! How much memory a piece of a test took at its peak (Linux): the kernel's
//! peak-RSS mark (`VmHWM`) reset by writing `5` to `/proc/self/clear_refs`
//! at the start, read at the end. The end's RSS alone misses memory freed
//! before the end (a declared length allocated, then dropped with the
//! error). Where the mark cannot be reset (an old kernel, a sandbox), the
//! end's RSS is all there is: that is said, and is a failure under CI
//! ([`super::ci`]), so a peak never silently becomes an end reading.
//! Readings are of the whole process: tests that take them run alone
//! ([`super::alone`]).

/// This process's resident set size in bytes (`/proc/self/statm`).
pub fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The peak RSS since the last reset, in bytes (`VmHWM` of `/proc/self/status`).
fn peak() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Resets the peak mark to the current RSS; false where it cannot be.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A reading taken at the start of what is measured.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    start: Option<u64>,
    peak: bool,
}

impl Mark {
    /// Resets the peak mark and reads the RSS. Where the mark cannot be
    /// reset, says so (and fails under CI): [`Mark::grown`] is then the
    /// end's RSS.
    pub fn now() -> Mark {
        let peak = reset_peak();
        if !peak && cfg!(target_os = "linux") {
            super::ci::skip_unless_ci(
                "/proc/self/clear_refs is not writable: peak RSS cannot be measured, the end's RSS is used",
            );
        }
        Mark { start: rss(), peak }
    }

    /// How far the RSS rose above the start: at its peak since [`Mark::now`]
    /// where it can be read, else at the end. `None` off Linux.
    pub fn grown(&self) -> Option<u64> {
        let now = if self.peak { peak() } else { rss() };
        Some(now?.saturating_sub(self.start?))
    }

    /// Whether [`Mark::grown`] is a peak (not the end's RSS).
    pub fn is_peak(&self) -> bool {
        self.peak
    }
}
