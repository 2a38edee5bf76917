//! `courier compare A.json B.json [C.json …]`: bench reports side by side, with the change of
//! every figure from the first report.
//!
//! The layout is the one HTTP client tuning discussions use: one row per figure, one column per
//! run, and a % delta column after each run but the first. Above the table, each run is named
//! with its own configuration and the settings that differ are listed (`config.rs`): a delta
//! means little without knowing what changed. Where a figure has an unambiguous direction
//! (latency, errors, throughput, CPU per request) the delta says so ("+5.20% better"); figures
//! that follow from the configuration (connections open, total CPU, memory) get the number
//! alone, and a delta from zero is left blank.

mod config;
mod html;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::bench::json::BenchReport;
use crate::bench::report::{rows, table, title, Better, Row};
use crate::bench::stats::percent_change;
use crate::bench::thresholds;
use crate::error::{CliError, Result};
use crate::threshold::{self, Checked, Threshold};

/// Compare `courier bench --json` reports side by side.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct CompareArgs {
    /// Two or more JSON reports; deltas are relative to the first.
    #[arg(value_name = "REPORT.json", num_args = 2.., required = true)]
    pub reports: Vec<PathBuf>,

    /// Exit with code 99 if this holds for a run: absolute ('p99 > 5ms') for every run, relative
    /// to the first run with a signed % ('p99 > +10%', 'rps < -5%') for the others; repeatable.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<Threshold>,

    /// Also write an HTML page with the runs' latency spectra (and throughput, p99 over time)
    /// overlaid.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Reads the reports and prints the comparison.
pub fn run(args: CompareArgs) -> Result<()> {
    if let Some(path) = &args.html {
        crate::bench::output::check_writable("--html", path)?;
    }
    let reports = args
        .reports
        .iter()
        .map(|path| BenchReport::read(path))
        .collect::<Result<Vec<_>>>()?;
    let names = column_names(&args.reports);
    let preamble = preamble(&names, &reports);
    let table = render(&names, &reports)?;
    print!("{preamble}{table}");
    if let Some(path) = &args.html {
        let page = html::page(&names, &reports, &preamble, &table);
        crate::bench::html::write_page(&page, path)?;
    }
    let checked = check(&args.fail_if, &names, &reports)?;
    for (title, results) in &checked {
        print!("{}", threshold::render(title, results));
    }
    let all: Vec<Checked> = checked.into_iter().flat_map(|(_, c)| c).collect();
    match threshold::failure(&all) {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

/// Checks the thresholds on every run: absolute ones on all, relative ones on each run after
/// the first against the first. One titled group per run that has something to check.
fn check(
    thresholds: &[Threshold],
    names: &[String],
    reports: &[BenchReport],
) -> Result<Vec<(String, Vec<Checked>)>> {
    let Some(base) = reports.first() else {
        return Ok(Vec::new());
    };
    let mut groups = Vec::new();
    for (i, (name, report)) in names.iter().zip(reports).enumerate() {
        let results = thresholds
            .iter()
            .filter(|t| i > 0 || !t.is_relative())
            .map(|t| thresholds::check(t, report, (i > 0).then_some(base)))
            .collect::<Result<Vec<_>>>()?;
        if !results.is_empty() {
            let title = if i == 0 {
                format!("thresholds for {name}")
            } else {
                format!("thresholds for {name} (relative to {})", names[0])
            };
            groups.push((title, results));
        }
    }
    Ok(groups)
}

/// Each run with its own title, then the settings that differ (or that none do).
pub fn preamble(names: &[String], reports: &[BenchReport]) -> String {
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let mut out = String::from("runs:\n");
    for (name, report) in names.iter().zip(reports) {
        out.push_str(&format!("  {name:<width$}  {}\n", title(report)));
    }
    let differences = config::differences(reports);
    if differences.is_empty() {
        out.push_str("configuration: the same in every run\n\n");
        return out;
    }
    out.push_str("configuration differs:\n");
    let width = differences
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (key, values) in differences {
        out.push_str(&format!("  {key:<width$}  {}\n", values.join(" → ")));
    }
    out.push('\n');
    out
}

/// The comparison table.
pub fn render(names: &[String], reports: &[BenchReport]) -> Result<String> {
    if reports.is_empty() {
        return Err(CliError::new(
            "nothing to compare: give two or more reports",
        ));
    }
    let per_report: Vec<Vec<Row>> = reports.iter().map(rows).collect();
    // Rows in the first report's order; rows only some reports have are appended in order.
    let mut labels: Vec<&str> = Vec::new();
    for report_rows in &per_report {
        for row in report_rows {
            if !labels.contains(&row.label.as_str()) {
                labels.push(&row.label);
            }
        }
    }
    let lookup: Vec<HashMap<&str, &Row>> = per_report
        .iter()
        .map(|rs| rs.iter().map(|r| (r.label.as_str(), r)).collect())
        .collect();

    let mut header = vec!["figure".to_owned()];
    for (i, name) in names.iter().enumerate() {
        header.push(name.clone());
        if i > 0 {
            header.push("delta".to_owned());
        }
    }
    let cells: Vec<Vec<String>> = labels
        .iter()
        .map(|label| {
            let base = lookup[0].get(label);
            let mut line = vec![(*label).to_owned()];
            for (i, rows) in lookup.iter().enumerate() {
                let row = rows.get(label);
                line.push(row.map_or_else(String::new, |r| r.value.display()));
                if i > 0 {
                    line.push(match (base, row) {
                        (Some(b), Some(r)) => delta(b.value.as_f64(), r.value.as_f64(), r.better),
                        _ => String::new(),
                    });
                }
            }
            line
        })
        .collect();
    Ok(table(&header, &cells))
}

/// `+5.20% better`, `-0.19% worse`, `0.00%`, or blank when the base is zero.
pub fn delta(base: f64, value: f64, better: Better) -> String {
    let Some(change) = percent_change(base, value) else {
        return String::new();
    };
    let text = format!("{change:+.2}%");
    // A change that rounds to zero is no change.
    if text == "+0.00%" || text == "-0.00%" {
        return "0.00%".to_owned();
    }
    let mark = match (better, change > 0.0) {
        (Better::Neither, _) => "",
        (Better::Higher, true) | (Better::Lower, false) => " better",
        (Better::Higher, false) | (Better::Lower, true) => " worse",
    };
    format!("{text}{mark}")
}

/// Column names: file names without `.json`, made unique when two files share a name.
fn column_names(paths: &[PathBuf]) -> Vec<String> {
    let stems: Vec<String> = paths.iter().map(|p| stem(p)).collect();
    stems
        .iter()
        .map(|s| {
            if stems.iter().filter(|other| *other == s).count() > 1 {
                None
            } else {
                Some(s.clone())
            }
        })
        .zip(paths)
        .map(|(unique, path)| unique.unwrap_or_else(|| path.display().to_string()))
        .collect()
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::json::tests::sample_report;

    #[test]
    fn deltas_know_which_way_is_better() {
        assert_eq!(delta(100.0, 105.2, Better::Higher), "+5.20% better");
        assert_eq!(delta(100.0, 105.2, Better::Lower), "+5.20% worse");
        assert_eq!(delta(21.13, 18.47, Better::Lower), "-12.59% better");
        assert_eq!(
            delta(1_648_740.0, 1_645_577.0, Better::Higher),
            "-0.19% worse"
        );
        assert_eq!(delta(100.0, 100.0, Better::Lower), "0.00%");
        assert_eq!(delta(100.0, 100.001, Better::Lower), "0.00%");
        assert_eq!(delta(0.0, 5.0, Better::Lower), "");
        assert_eq!(delta(10.0, 12.0, Better::Neither), "+20.00%");
    }

    #[test]
    fn side_by_side_with_a_delta_column_per_run() {
        let a = sample_report();
        let mut b = sample_report();
        b.rps = 7.5;
        b.latency_headers_ms.p99 = 1.5;
        b.errors_by_kind.insert("connect".to_owned(), 2);
        let names = ["hl5".to_owned(), "hl5-pcl5".to_owned()];
        let text = render(&names, &[a, b]).unwrap();
        let header = text.lines().next().unwrap();
        assert!(
            header.contains("hl5-pcl5") && header.contains("delta"),
            "{header}"
        );
        let rps = text.lines().find(|l| l.starts_with("Mean RPS")).unwrap();
        assert!(rps.ends_with("+25.00% better"), "{rps}");
        let p99 = text
            .lines()
            .find(|l| l.starts_with("Time to response headers (ms) - p99 "))
            .unwrap();
        assert!(p99.ends_with("-50.00% better"), "{p99}");
        // A row only the second report has: blank in the first column, no delta.
        let connect = text
            .lines()
            .find(|l| l.starts_with("Errors - connect"))
            .unwrap();
        assert!(connect.trim_end().ends_with('2'), "{connect}");
    }

    #[test]
    fn the_preamble_titles_each_run_and_names_what_differs() {
        let a = sample_report();
        let mut b = sample_report();
        b.protocol = "HTTP/2".to_owned();
        b.config.http = crate::bench::args::HttpVersion::Http2;
        let names = ["h1".to_owned(), "h2".to_owned()];
        let text = preamble(&names, &[a.clone(), b]);
        assert!(text.contains("h1  HTTP/1.1 GET 128B x 64"), "{text}");
        assert!(text.contains("h2  HTTP/2 GET 128B x 64"), "{text}");
        assert!(text.contains("configuration differs:"), "{text}");
        assert!(text.contains("http                   auto → 2"), "{text}");
        let same = preamble(&names, &[a.clone(), a]);
        assert!(same.contains("the same in every run"), "{same}");
    }

    #[test]
    fn three_reports_get_two_delta_columns() {
        let names = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let text = render(&names, &[sample_report(), sample_report(), sample_report()]).unwrap();
        assert_eq!(text.lines().next().unwrap().matches("delta").count(), 2);
    }

    #[test]
    fn relative_thresholds_check_every_run_but_the_first() {
        let base = sample_report();
        let mut slower = sample_report();
        slower.latency_last_byte_ms.p99 *= 1.2;
        let names = ["base".to_owned(), "slower".to_owned()];
        let thresholds: Vec<Threshold> = ["p99 > +10%", "errors > 50%"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        let groups = check(&thresholds, &names, &[base, slower]).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].1.len(), 1, "the base gets the absolute one only");
        assert!(!groups[0].1[0].failed);
        assert!(groups[1].0.contains("relative to base"), "{}", groups[1].0);
        assert!(groups[1].1[0].failed, "{:?}", groups[1].1);
    }

    #[test]
    fn column_names_are_file_stems_made_unique() {
        let names = column_names(&[PathBuf::from("x/a.json"), PathBuf::from("y/b.json")]);
        assert_eq!(names, ["a", "b"]);
        let names = column_names(&[PathBuf::from("x/a.json"), PathBuf::from("y/a.json")]);
        assert_eq!(names, ["x/a.json", "y/a.json"]);
    }
}
