//! The benchmark process's own CPU time and memory, read from `/proc/self`.
//!
//! Benchmark tables report the load generator's max CPU and working set because a client that
//! saturates its CPU measures itself, not the server. `/proc/self/stat` gives user + system CPU
//! time in clock ticks; `/proc/self/status` gives the resident set (`VmRSS`, the working set) and
//! its anonymous part (`RssAnon`, close to .NET's "private memory"). Elsewhere than Linux the
//! figures are simply absent.

use std::time::Duration;

/// One reading of the process's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcSample {
    /// User + system CPU time used so far.
    pub cpu: Duration,
    /// Resident set size in bytes.
    pub rss_bytes: u64,
    /// Resident anonymous memory (heap, stacks) in bytes.
    pub private_bytes: u64,
}

/// Reads the counters now; `None` where `/proc` is not available.
pub fn sample() -> Option<ProcSample> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let ticks = parse_stat_cpu_ticks(&stat)?;
    let (rss_kb, anon_kb) = parse_status_memory(&status)?;
    let hz = clock_ticks_per_second();
    Some(ProcSample {
        cpu: Duration::from_secs_f64(ticks as f64 / hz as f64),
        rss_bytes: rss_kb * 1024,
        private_bytes: anon_kb.unwrap_or(rss_kb) * 1024,
    })
}

/// Resident set size now, in bytes.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status_memory(&status).map(|(rss_kb, _)| rss_kb * 1024)
}

/// The highest resident set so far (`VmHWM`), in bytes.
pub fn rss_high_water_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_field(&status, "VmHWM").map(|kb| kb * 1024)
}

/// CPU use between two samples as a percentage of all cores (100 = every core busy), the way
/// benchmark dashboards normalize it.
pub fn cpu_percent(before: &ProcSample, after: &ProcSample, wall: Duration, cores: u64) -> f64 {
    let wall = wall.as_secs_f64() * cores.max(1) as f64;
    if wall <= 0.0 {
        return 0.0;
    }
    let used = after.cpu.saturating_sub(before.cpu).as_secs_f64();
    (used / wall * 100.0).clamp(0.0, 100.0)
}

/// utime + stime (fields 14 and 15) of `/proc/<pid>/stat`. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its closing parenthesis.
fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // After the name: field 3 (state) is index 0, so utime (14) is index 11.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS` and `RssAnon` (kB) of `/proc/<pid>/status`.
fn parse_status_memory(status: &str) -> Option<(u64, Option<u64>)> {
    Some((
        status_field(status, "VmRSS")?,
        status_field(status, "RssAnon"),
    ))
}

/// A `name:   N kB` line of `/proc/<pid>/status`.
fn status_field(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse::<u64>().ok()
    })
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&hz| hz > 0).unwrap_or(100)
}

/// Hands memory the allocator holds but no longer uses back to the kernel (glibc keeps freed
/// memory mapped): after a phase that allocated and freed a lot, so that resident-set figures
/// taken later reflect what is alive, not what the phase left behind. No-op elsewhere.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_ticks_even_with_odd_command_names() {
        let stat = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 75 0 0 20 0 3 0 123456 100000000 2000 18446744073709551615";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(325));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn parses_resident_memory() {
        let status =
            "Name:\tcourier\nVmPeak:\t  999 kB\nVmRSS:\t   12345 kB\nRssAnon:\t    8000 kB\n";
        assert_eq!(parse_status_memory(status), Some((12345, Some(8000))));
        assert_eq!(parse_status_memory("VmRSS:\t 7 kB\n"), Some((7, None)));
        assert_eq!(parse_status_memory("Name: x\n"), None);
        assert_eq!(status_field(status, "VmPeak"), Some(999));
    }

    #[test]
    fn cpu_percent_is_normalized_to_all_cores() {
        let before = ProcSample::default();
        let after = ProcSample {
            cpu: Duration::from_millis(1000),
            ..before
        };
        assert_eq!(
            cpu_percent(&before, &after, Duration::from_secs(1), 2),
            50.0
        );
        assert_eq!(cpu_percent(&before, &after, Duration::ZERO, 2), 0.0);
        assert_eq!(
            cpu_percent(&before, &after, Duration::from_millis(100), 1),
            100.0
        );
    }

    #[test]
    fn reads_this_process() {
        if cfg!(target_os = "linux") {
            let s = sample().expect("/proc/self is readable on Linux");
            assert!(s.rss_bytes > 0);
            assert!(rss_bytes().unwrap_or(0) > 0);
        }
    }
}
