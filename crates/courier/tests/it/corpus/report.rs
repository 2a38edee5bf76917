//! What the corpus prints: a line per run, and a table per class of the
//! cases, runs, passes, and the most CPU, RSS growth and wall time a run
//! of the class took.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use super::case::{Case, Class, Transport};
use super::harness::Run;

pub fn line(case: &Case, run: &Run) -> String {
    format!(
        "{:<5} {:<14} {:<40} {:<6} wall {:>5} ms  cpu {:>4} ms  rss +{:>6} KiB{}",
        if run.failures.is_empty() {
            "ok"
        } else {
            "FAIL"
        },
        format!("{:?}", case.class),
        run.name,
        format!("{:?}", run.transport),
        run.cost.wall.as_millis(),
        run.cost.cpu.as_millis(),
        run.cost.rss >> 10,
        if run.failures.is_empty() {
            String::new()
        } else {
            format!("\n      {}", run.failures.join("\n      "))
        }
    )
}

#[derive(Default)]
struct Row {
    cases: usize,
    runs: usize,
    passed: usize,
    by_transport: BTreeMap<Transport, usize>,
    cpu: Duration,
    rss: u64,
    wall: Duration,
}

pub fn table(all: &[Case], runs: &[(Class, Run)], took: Duration) -> String {
    let mut rows: BTreeMap<Class, Row> = BTreeMap::new();
    for case in all {
        let row = rows.entry(case.class).or_default();
        row.cases += 1;
    }
    for (class, run) in runs {
        let row = rows.entry(*class).or_default();
        row.runs += 1;
        row.passed += usize::from(run.failures.is_empty());
        *row.by_transport.entry(run.transport).or_default() += 1;
        row.cpu = row.cpu.max(run.cost.cpu);
        row.rss = row.rss.max(run.cost.rss);
        row.wall = row.wall.max(run.cost.wall);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<14} {:>5} {:>5} {:>6}  {:<34} {:>7} {:>9} {:>8}",
        "class", "cases", "runs", "passed", "runs by transport", "max cpu", "max rss", "max wall"
    );
    let (mut cases, mut total, mut passed) = (0, 0, 0);
    for (class, row) in &rows {
        let transports: Vec<String> = row
            .by_transport
            .iter()
            .map(|(t, n)| format!("{t:?} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "{:<14} {:>5} {:>5} {:>6}  {:<34} {:>4} ms {:>5} KiB {:>5} ms",
            format!("{class:?}"),
            row.cases,
            row.runs,
            row.passed,
            transports.join(", "),
            row.cpu.as_millis(),
            row.rss >> 10,
            row.wall.as_millis()
        );
        cases += row.cases;
        total += row.runs;
        passed += row.passed;
    }
    let _ = writeln!(
        out,
        "{cases} cases, {passed}/{total} runs passed in {took:.1?}"
    );
    out
}
