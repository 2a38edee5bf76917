//! Where a report goes: the files it was asked to write, checked before a run starts, and
//! the report printed and written once it is known (`courier bench` and `courier merge` alike).
//!
//! Finding out that `--json` points into a missing directory after a ten-minute run loses the
//! run. So each output path is tried first: an existing file must open for writing (it is not
//! truncated yet), a new one must be creatable in its directory (it is created and removed).

use std::fs::OpenOptions;
use std::path::Path;

use super::json::BenchReport;
use super::{chart, export, html, report, thresholds};
use crate::error::{CliError, Result};
use crate::threshold::{self, Threshold};

/// What to do with a finished report.
pub struct Outputs<'a> {
    /// `--fail-if`: judged against the report and printed after it.
    pub fail_if: &'a [Threshold],
    /// `--chart`: the timeline drawn below the table.
    pub chart: bool,
    pub json: Option<&'a Path>,
    pub html: Option<&'a Path>,
    pub csv: Option<&'a Path>,
    pub openmetrics: Option<&'a Path>,
}

/// Judges the thresholds into `report`, prints it (table, chart, thresholds) and writes its
/// files. What the outcome means (an exit code) is the caller's.
pub fn publish(report: &mut BenchReport, to: Outputs<'_>) -> Result<()> {
    report.thresholds = to
        .fail_if
        .iter()
        .map(|t| thresholds::check(t, report, None))
        .collect::<Result<_>>()?;
    print!("{}", report::render(report));
    if to.chart {
        print!("\n{}", chart::render(report));
    }
    print!("{}", threshold::render("thresholds", &report.thresholds));
    if let Some(path) = to.json {
        report.write(path)?;
    }
    if let Some(path) = to.html {
        html::write(report, path)?;
    }
    if let Some(path) = to.csv {
        export::csv::write(report, path)?;
    }
    if let Some(path) = to.openmetrics {
        export::openmetrics::write(report, path)?;
    }
    Ok(())
}

/// Fails with a message naming `flag` and `path` if the report could not be written there.
pub fn check_writable(flag: &str, path: &Path) -> Result<()> {
    let fail = |why: String| CliError::new(format!("{flag} {}: {why}", path.display()));
    if path.is_dir() {
        return Err(fail("is a directory; give a file name".to_owned()));
    }
    if path.exists() {
        return OpenOptions::new()
            .write(true)
            .open(path)
            .map(drop)
            .map_err(|e| fail(format!("cannot write: {e}")));
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| fail(format!("cannot create: {e}")))?;
    std::fs::remove_file(path).map_err(|e| fail(format!("cannot remove the test file: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directories_and_directories_are_refused_new_files_left_absent() {
        let dir = std::env::temp_dir().join(format!("courier-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = check_writable("--json", &dir.join("missing/r.json")).unwrap_err();
        assert!(err.to_string().starts_with("--json "), "{err}");
        assert!(err.to_string().contains("missing/r.json"), "{err}");
        assert!(check_writable("--html", &dir).is_err());
        let fresh = dir.join("r.json");
        check_writable("--json", &fresh).unwrap();
        assert!(!fresh.exists(), "the check leaves no file behind");
        std::fs::write(&fresh, "kept").unwrap();
        check_writable("--json", &fresh).unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
