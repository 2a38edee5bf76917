//! The result matrix: server × profile × protocol × check, printed at the
//! end of a run and written as markdown for the README.

use super::checks::Outcome;

/// One server, profile and protocol: the outcome of every check.
pub struct Row {
    pub server: String,
    pub profile: &'static str,
    pub proto: &'static str,
    pub cells: Vec<(&'static str, Outcome)>,
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

fn cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok(_) => "ok".into(),
        Outcome::Fail { kind, .. } => format!("FAIL({kind})"),
        Outcome::Na(_) => "n/a".into(),
    }
}

impl Matrix {
    /// Every failed cell: `server profile proto check: kind: detail`.
    pub fn failures(&self) -> Vec<String> {
        let mut out = self.errors.clone();
        for row in &self.rows {
            for (check, outcome) in &row.cells {
                if let Outcome::Fail { kind, detail } = outcome {
                    out.push(format!(
                        "{} {} {} {check}: {kind}: {detail}",
                        row.server, row.profile, row.proto
                    ));
                }
            }
        }
        out
    }

    /// Notes of passed checks that measured something (load runs) and the
    /// reasons for n/a.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            for (check, outcome) in &row.cells {
                let note = match outcome {
                    Outcome::Ok(note) if *check == "load" || *check == "bench" => note.clone(),
                    Outcome::Na(why) => format!("n/a: {why}"),
                    _ => continue,
                };
                out.push(format!(
                    "{} {} {} {check}: {note}",
                    row.server, row.profile, row.proto
                ));
            }
        }
        out
    }

    /// The counts `.ci/run`'s closing summary prints (see
    /// `support::ci::write_summary` for the file's format): cells run, each
    /// outcome's count, servers run and skipped, problems outside cells.
    pub fn summary(&self) -> Vec<(&'static str, String)> {
        let cells = self.rows.iter().flat_map(|r| &r.cells);
        let count = |f: fn(&Outcome) -> bool| cells.clone().filter(|(_, o)| f(o)).count();
        vec![
            ("cells", cells.clone().count().to_string()),
            ("ok", count(|o| matches!(o, Outcome::Ok(_))).to_string()),
            (
                "failed",
                count(|o| matches!(o, Outcome::Fail { .. })).to_string(),
            ),
            ("na", count(|o| matches!(o, Outcome::Na(_))).to_string()),
            ("servers", self.versions.len().to_string()),
            ("skipped", self.skipped.len().to_string()),
            ("errors", self.errors.len().to_string()),
        ]
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
        let failures = self.failures();
        if !failures.is_empty() {
            out.push_str("\nFailures:\n\n");
            for f in failures {
                out.push_str(&format!("- {f}\n"));
            }
        }
        out
    }
}
