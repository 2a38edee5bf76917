//! Writing a report to its file and reading it back (`courier compare`, `courier merge`).
//!
//! Why apart from the schema: the schema is the file format; this is where a failure names the
//! file it was about.

use std::fs;
use std::path::Path;

use super::BenchReport;
use crate::error::{CliError, Result};

impl BenchReport {
    /// Writes the report as pretty-printed JSON; the message names the file on failure.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| CliError::new(format!("cannot encode the JSON report: {e}")))?;
        fs::write(path, text + "\n").map_err(|e| {
            CliError::new(format!(
                "cannot write the JSON report to {}: {e}",
                path.display()
            ))
        })
    }

    /// Reads a report written by [`BenchReport::write`]; the message names the file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path)
            .map_err(|e| CliError::new(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            CliError::new(format!(
                "{} is not a courier bench JSON report: {e}",
                path.display()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample_report;
    use super::*;

    #[test]
    fn write_and_read_name_the_path_on_failure() {
        let dir = std::env::temp_dir().join(format!("courier-cli-json-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.json");
        sample_report().write(&path).unwrap();
        assert_eq!(BenchReport::read(&path).unwrap(), sample_report());

        let bad = dir.join("missing-dir").join("report.json");
        let err = sample_report().write(&bad).unwrap_err();
        assert!(err.to_string().contains("missing-dir"), "{err}");
        let err = BenchReport::read(&bad).unwrap_err();
        assert!(err.to_string().contains("missing-dir"), "{err}");

        let junk = dir.join("junk.json");
        fs::write(&junk, "{\"requests\": 1}").unwrap();
        let err = BenchReport::read(&junk).unwrap_err();
        assert!(
            err.to_string().contains("not a courier bench JSON report"),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
