//! The result matrix: server × profile × protocol × check, printed at the
//! end of a run and written as markdown for the README, with the run's
//! counts, its flaky cells and each tolerance's count against its bounds.
//! What fails the run is decided here, from the cells ([`Matrix::failures`]).

use super::checks::Outcome;
use super::tolerance::{Tolerance, MAX_FLAKY};

/// One server, profile and protocol: the outcome of every check.
pub struct Row {
    pub server: String,
    pub profile: &'static str,
    pub proto: &'static str,
    pub cells: Vec<(&'static str, Outcome)>,
    /// Restarts of the row's own server process (hypercorn's HTTP/3 after
    /// its listener died; `servers::Restartable`).
    pub restarts: u32,
}

#[derive(Default)]
pub struct Matrix {
    pub checks: Vec<&'static str>,
    pub rows: Vec<Row>,
    /// Server name and version banner.
    pub versions: Vec<(String, String)>,
    /// Servers not run, and why.
    pub skipped: Vec<(String, String)>,
    /// Problems outside any cell (a server missing in CI, a start failure).
    pub errors: Vec<String>,
}

/// Cells by state.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub ok: usize,
    pub flaky: usize,
    pub tolerated: usize,
    pub na: usize,
    pub failed: usize,
}

/// What one tolerance absorbed in a run.
#[derive(Debug)]
pub struct Absorbed {
    pub tolerance: Tolerance,
    /// Cells it applied to.
    pub cells: Vec<String>,
    /// Faults absorbed, over all cells.
    pub count: u64,
    /// The most absorbed in one cell.
    pub most_in_a_cell: u64,
}

fn cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok(_) => "ok".into(),
        Outcome::Flaky { .. } => "flaky".into(),
        Outcome::Tolerated { count, .. } => format!("tol({count})"),
        Outcome::Fail { kind, .. } => format!("FAIL({kind})"),
        Outcome::Na(_) => "n/a".into(),
    }
}

/// A tolerated outcome, where a cell has one (a flaky cell's second run may).
fn tolerated(outcome: &Outcome) -> Option<(Tolerance, u64)> {
    match outcome {
        Outcome::Tolerated {
            tolerance, count, ..
        } => Some((*tolerance, *count)),
        Outcome::Flaky { then, .. } => tolerated(then),
        _ => None,
    }
}

impl Matrix {
    /// Every cell with its name: `server profile proto check`.
    fn cells(&self) -> impl Iterator<Item = (String, &'static str, &Outcome)> {
        self.rows.iter().flat_map(|row| {
            row.cells.iter().map(move |(check, outcome)| {
                let name = format!("{} {} {} {check}", row.server, row.profile, row.proto);
                (name, *check, outcome)
            })
        })
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for (_, _, outcome) in self.cells() {
            match outcome {
                Outcome::Ok(_) => c.ok += 1,
                Outcome::Flaky { .. } => c.flaky += 1,
                Outcome::Tolerated { .. } => c.tolerated += 1,
                Outcome::Na(_) => c.na += 1,
                Outcome::Fail { .. } => c.failed += 1,
            }
        }
        c
    }

    /// Each tolerance, with what it absorbed (zero where it did not strike).
    pub fn absorbed(&self) -> Vec<Absorbed> {
        let mut out: Vec<Absorbed> = Tolerance::ALL
            .into_iter()
            .map(|tolerance| Absorbed {
                tolerance,
                cells: Vec::new(),
                count: 0,
                most_in_a_cell: 0,
            })
            .collect();
        for (name, _, outcome) in self.cells() {
            if let Some((tolerance, count)) = tolerated(outcome) {
                let a = out
                    .iter_mut()
                    .find(|a| a.tolerance == tolerance)
                    .expect("every tolerance is in Tolerance::ALL");
                a.cells.push(format!("{name} ({count})"));
                a.count += count;
                a.most_in_a_cell = a.most_in_a_cell.max(count);
            }
        }
        out
    }

    /// The flaky cells: what failed first, and what the second run gave.
    pub fn flaky(&self) -> Vec<String> {
        self.cells()
            .filter_map(|(name, _, outcome)| match outcome {
                Outcome::Flaky { first, then } => {
                    Some(format!("{name}: first {first}; second run {}", cell(then)))
                }
                _ => None,
            })
            .collect()
    }

    /// Everything that fails the run: errors outside cells, failed cells,
    /// more flaky cells than [`MAX_FLAKY`], and a tolerance over a bound.
    pub fn failures(&self) -> Vec<String> {
        let mut out = self.errors.clone();
        for (name, _, outcome) in self.cells() {
            if let Outcome::Fail { kind, detail } = outcome {
                out.push(format!("{name}: {kind}: {detail}"));
            }
        }
        let flaky = self.flaky();
        if flaky.len() > MAX_FLAKY {
            out.push(format!(
                "{} flaky cells, more than the bound of {MAX_FLAKY}: {}",
                flaky.len(),
                flaky.join("; ")
            ));
        }
        for a in self.absorbed() {
            let t = a.tolerance;
            if a.count > t.per_run() {
                out.push(format!(
                    "tolerance {} absorbed {} in this run, more than its bound of {}: {}",
                    t.name(),
                    a.count,
                    t.per_run(),
                    a.cells.join(", ")
                ));
            }
            if a.most_in_a_cell > t.per_check() {
                out.push(format!(
                    "tolerance {} absorbed {} in one check, more than its bound of {}: {}",
                    t.name(),
                    a.most_in_a_cell,
                    t.per_check(),
                    a.cells.join(", ")
                ));
            }
        }
        out
    }

    /// Notes of passed checks that measured something (load runs), what
    /// each tolerance absorbed, the flaky cells' first failures and the
    /// reasons for n/a.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, check, outcome) in self.cells() {
            let note = match outcome {
                Outcome::Ok(note) if check == "load" || check == "bench" => note.clone(),
                Outcome::Tolerated {
                    tolerance, note, ..
                } => format!("{}: {note}", tolerance.name()),
                Outcome::Flaky { first, then } => {
                    format!("flaky: first {first}; second run {}", cell(then))
                }
                Outcome::Na(why) => format!("n/a: {why}"),
                _ => continue,
            };
            out.push(format!("{name}: {note}"));
        }
        out
    }

    /// The counts, flaky cells, tolerances and failures: what a CI log
    /// must show of every run, passed or not.
    pub fn summary(&self) -> String {
        let c = self.counts();
        let mut out = format!(
            "interop: {} cells: {} ok, {} flaky, {} tolerated, {} n/a, {} failed\n",
            c.ok + c.flaky + c.tolerated + c.na + c.failed,
            c.ok,
            c.flaky,
            c.tolerated,
            c.na,
            c.failed
        );
        out.push_str(&format!("flaky (bound {MAX_FLAKY} per run):\n"));
        let flaky = self.flaky();
        if flaky.is_empty() {
            out.push_str("- none\n");
        }
        for f in flaky {
            out.push_str(&format!("- {f}\n"));
        }
        let restarts: Vec<String> = self
            .rows
            .iter()
            .filter(|r| r.restarts > 0)
            .map(|r| format!("{} {} {}: {}", r.server, r.profile, r.proto, r.restarts))
            .collect();
        out.push_str(&format!(
            "server restarts (bound {} per row): {}\n",
            super::servers::MAX_RESTARTS,
            if restarts.is_empty() {
                "none".to_owned()
            } else {
                restarts.join(", ")
            }
        ));
        out.push_str("\nTolerances:\n\n");
        out.push_str("| tolerance | scope | cells | count | bound per check | bound per run |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for a in self.absorbed() {
            let t = a.tolerance;
            let cells = if a.cells.is_empty() {
                "none".to_owned()
            } else {
                a.cells.join(", ")
            };
            out.push_str(&format!(
                "| {} | {} | {cells} | {} | {} | {} |\n",
                t.name(),
                t.scope(),
                a.count,
                t.per_check(),
                t.per_run()
            ));
        }
        let failures = self.failures();
        if !failures.is_empty() {
            out.push_str("\nFailures:\n\n");
            for f in failures {
                out.push_str(&format!("- {f}\n"));
            }
        }
        out
    }

    /// The counts `.ci/run`'s closing summary prints (see
    /// `support::ci::write_summary` for the file's format): cells run, each
    /// outcome's count, what each tolerance absorbed, servers run and
    /// skipped, problems outside cells, server processes restarted.
    pub fn ci_counts(&self) -> Vec<(String, String)> {
        let c = self.counts();
        let mut out: Vec<(String, String)> = [
            ("cells", c.ok + c.flaky + c.tolerated + c.na + c.failed),
            ("ok", c.ok),
            ("flaky", c.flaky),
            ("tolerated", c.tolerated),
            ("failed", c.failed),
            ("na", c.na),
            ("servers", self.versions.len()),
            ("skipped", self.skipped.len()),
            ("errors", self.errors.len()),
            (
                "restarts",
                self.rows.iter().map(|r| r.restarts as usize).sum(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_string()))
        .collect();
        for a in self.absorbed() {
            out.push((a.tolerance.name().to_owned(), a.count.to_string()));
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str("| server | profile | protocol |");
        for check in &self.checks {
            out.push_str(&format!(" {check} |"));
        }
        out.push_str("\n|---|---|---|");
        for _ in &self.checks {
            out.push_str("---|");
        }
        out.push('\n');
        for row in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} |",
                row.server, row.profile, row.proto
            ));
            for (_, outcome) in &row.cells {
                out.push_str(&format!(" {} |", cell(outcome)));
            }
            out.push('\n');
        }
        out.push_str("\nVersions:\n\n");
        for (server, version) in &self.versions {
            out.push_str(&format!("- {server}: {version}\n"));
        }
        for (server, why) in &self.skipped {
            out.push_str(&format!("- {server}: not run ({why})\n"));
        }
        out.push('\n');
        out.push_str(&self.summary());
        out
    }
}
