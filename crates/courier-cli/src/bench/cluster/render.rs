//! The cluster scenario's text report: what ran, a table of the runs side by side, each
//! replica's share of the attempts over time, and the fault figures.
//!
//! Why one table for the runs: the targets are ratios between runs of the same load
//! (against a healthy run, against P2C without retries), so they sit in one table with the
//! ratios beside them.

use std::fmt::Write as _;

use super::analysis::{RunFigures, P99_BOUND, RECOVERED_SHARE};
use super::ScenarioSetup;

/// Columns of the share table at most: the run's seconds are grouped to fit.
const SHARE_COLUMNS: usize = 15;

/// The whole report.
pub fn render(setup: &ScenarioSetup, runs: &[RunFigures]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "courier {} bench --scenario cluster",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        out,
        "{} replicas, {} ms service time, {} worker(s) each: {:.0} req/s healthy capacity",
        setup.replicas,
        fmt_ms(setup.service_time.as_secs_f64() * 1000.0),
        setup.workers,
        setup.capacity
    );
    let faults = if setup.faults.is_empty() {
        "none".to_owned()
    } else {
        setup.faults.join(" ")
    };
    let _ = writeln!(out, "faults: {faults}");
    let _ = writeln!(out, "requests: {}", setup.request);
    let _ = writeln!(
        out,
        "open loop {:.0} req/s ({:.0} % of capacity) for {} s, {}, budget {} ms per request",
        setup.rate,
        setup.rate / setup.capacity * 100.0,
        setup.duration.as_secs_f64(),
        setup.protocol,
        fmt_ms(setup.budget.as_secs_f64() * 1000.0)
    );
    out.push('\n');
    out.push_str(&table(runs));
    if let Some(main) = runs.first() {
        out.push('\n');
        out.push_str(&replicas(main, setup));
        if !main.faults.is_empty() {
            out.push('\n');
            out.push_str(&faults_section(main));
        }
        if !main.failures.is_empty() {
            let causes: Vec<String> = main
                .failures
                .iter()
                .map(|(k, v)| format!("{v} x {k}"))
                .collect();
            let _ = writeln!(out, "\nfailures ({}): {}", main.name, causes.join(", "));
        }
    }
    out
}

fn table(runs: &[RunFigures]) -> String {
    let mut out = String::new();
    let width = runs.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        out,
        "{:width$}  {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8}",
        "run",
        "success",
        "attempts",
        "throttled",
        "p50 ms",
        "p99 ms",
        "p99.9",
        "p99.99",
        "max",
        "late"
    );
    for r in runs {
        let l = r.latency_ms;
        let _ = writeln!(
            out,
            "{:width$}  {:>8.3}% {:>9.3} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8}",
            r.name,
            r.success_rate * 100.0,
            r.attempts_per_request,
            r.throttled,
            fmt_ms(l.p50),
            fmt_ms(l.p99),
            fmt_ms(l.p99_9),
            fmt_ms(l.p99_99),
            fmt_ms(l.max),
            r.late
        );
    }
    let _ = writeln!(
        out,
        "(latency from each request's intended start to its last byte, successful requests; \
         attempts = attempts that reached a replica per request)"
    );
    if let Some(main) = runs.first() {
        for other in &runs[1..] {
            let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
            let _ = writeln!(
                out,
                "{} vs {}: p99 x{:.2}, p99.9 x{:.2}, p99.99 x{:.2}",
                main.name,
                other.name,
                ratio(main.latency_ms.p99, other.latency_ms.p99),
                ratio(main.latency_ms.p99_9, other.latency_ms.p99_9),
                ratio(main.latency_ms.p99_99, other.latency_ms.p99_99),
            );
        }
    }
    out
}

fn replicas(run: &RunFigures, setup: &ScenarioSetup) -> String {
    let mut out = String::new();
    let seconds = run.replicas.first().map_or(0, |r| r.share_per_second.len());
    let group = seconds.div_ceil(SHARE_COLUMNS).max(1);
    let _ = writeln!(
        out,
        "replica share of attempts ({}), % per {} s (fair share {:.1} %), from the replicas' counts",
        run.name,
        group,
        100.0 / setup.replicas as f64
    );
    let _ = write!(out, "{:>7}", "t (s)");
    for c in (0..seconds).step_by(group) {
        let _ = write!(out, " {c:>5}");
    }
    let _ = writeln!(
        out,
        "  {:>8} {:>8} {:>6} {:>6} {:>7} {:>6}",
        "attempts", "ok", "503", "reset", "stalled", "health"
    );
    for r in &run.replicas {
        let _ = write!(out, "{:>7}", format!("r{}", r.index));
        for c in (0..seconds).step_by(group) {
            let end = (c + group).min(seconds);
            let mine: u64 = r.attempts_per_second[c..end].iter().sum();
            let all: u64 = run
                .replicas
                .iter()
                .map(|x| x.attempts_per_second[c..end].iter().sum::<u64>())
                .sum();
            let _ = write!(out, " {:>5.1}", mine as f64 * 100.0 / all.max(1) as f64);
        }
        let health = r.health.map_or("-".to_owned(), |h| format!("{h:.3}"));
        let _ = write!(
            out,
            "  {:>8} {:>8} {:>6} {:>6} {:>7} {:>6}",
            r.attempts, r.ok, r.unavailable, r.reset, r.stalled, health
        );
        if !r.faults.is_empty() {
            let _ = write!(out, "  {}", r.faults.join(" "));
        }
        out.push('\n');
    }
    out
}

fn faults_section(run: &RunFigures) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "timed faults ({}):", run.name);
    for f in &run.faults {
        let before = f.p99_before_ms.map_or("-".to_owned(), fmt_ms);
        let back = match (f.p99_before_ms, f.p99_back_after_s) {
            (None, _) => "no requests before the fault to compare with".to_owned(),
            (Some(_), Some(s)) => {
                format!(
                    "p99 of the rest of the fault within {P99_BOUND} x of before from {s:.0} s on"
                )
            }
            (Some(_), None) => format!("p99 not back within {P99_BOUND} x during the fault"),
        };
        let worst = f.worst_p99_during_ms.map_or("-".to_owned(), fmt_ms);
        let _ = write!(
            out,
            "  {}: p99 before {before} ms, worst second during {worst} ms, {back}",
            f.fault
        );
        if let Some(s) = f.recovered_after_s {
            let _ = write!(
                out,
                "; replica at >= {:.0} % of its fair share {s:.0} s after the end",
                RECOVERED_SHARE * 100.0
            );
        }
        out.push('\n');
    }
    let p99s: Vec<String> = run.p99_per_second_ms.iter().map(|p| fmt_ms(*p)).collect();
    let _ = writeln!(out, "  p99 per second (ms): {}", p99s.join(" "));
    out
}

/// Milliseconds with the digits that matter.
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}
