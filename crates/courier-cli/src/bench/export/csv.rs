//! `--csv FILE`: the summary as one CSV row under a header line.
//!
//! A file that already starts with the same header gets one more row instead of being
//! replaced, so `for c in 1 8 64; do courier bench -c $c --csv runs.csv; done` leaves one table
//! of three runs. Quoting follows RFC 4180.

use std::io::Write as _;
use std::path::Path;

use crate::bench::json::BenchReport;
use crate::error::{CliError, Result};

/// How a column's value is read from the report.
type Value = fn(&BenchReport) -> String;

/// The columns, in order: name and how to get the value. Latencies are to the last body byte,
/// in milliseconds, as the table's.
const COLUMNS: &[(&str, Value)] = &[
    ("url", |r| r.url.clone()),
    ("method", |r| r.method.clone()),
    ("protocol", |r| r.protocol.clone()),
    ("scenario", |r| r.scenario.clone()),
    ("model", |r| r.load.model.clone()),
    ("clients", |r| r.load.clients.to_string()),
    ("concurrency", |r| r.load.concurrency.to_string()),
    ("rate", |r| r.load.rate.map_or_else(String::new, num)),
    ("duration_s", |r| num(r.duration_s)),
    ("requests", |r| r.requests.to_string()),
    ("responses", |r| r.responses.to_string()),
    ("errors", |r| r.errors.to_string()),
    ("error_rate", |r| num(r.error_rate)),
    ("rps", |r| num(r.rps)),
    ("bytes_per_s", |r| num(r.bytes_per_s)),
    ("latency_mean_ms", |r| num(r.latency_last_byte_ms.mean)),
    ("latency_p50_ms", |r| num(r.latency_last_byte_ms.p50)),
    ("latency_p90_ms", |r| num(r.latency_last_byte_ms.p90)),
    ("latency_p99_ms", |r| num(r.latency_last_byte_ms.p99)),
    ("latency_p999_ms", |r| num(r.latency_last_byte_ms.p999)),
    ("latency_max_ms", |r| num(r.latency_last_byte_ms.max)),
    ("headers_p50_ms", |r| num(r.latency_headers_ms.p50)),
    ("headers_p99_ms", |r| num(r.latency_headers_ms.p99)),
    ("connections_established", |r| {
        r.connections_established.to_string()
    }),
    ("connections_open_max", |r| {
        r.connections_open_max.to_string()
    }),
    ("connect_failures", |r| r.connect_failures.to_string()),
    ("tls_handshakes", |r| r.tls_handshakes.to_string()),
    ("cpu_mean_pct", |r| num(r.process.cpu_mean_pct)),
    ("rss_max_mb", |r| num(r.process.rss_max_mb)),
];

fn num(value: f64) -> String {
    // Rounded to what a figure can mean; `{}` would print 15 digits of float noise.
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() || text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// One CSV field, quoted when it must be.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The header line, without its line end.
pub fn header() -> String {
    COLUMNS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(",")
}

/// The report's row, without its line end.
pub fn row(report: &BenchReport) -> String {
    COLUMNS
        .iter()
        .map(|(_, value)| field(&value(report)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Appends the row to `path` if it starts with this header, else writes header and row.
pub fn write(report: &BenchReport, path: &Path) -> Result<()> {
    let fail = |e: std::io::Error| {
        CliError::new(format!(
            "cannot write the CSV report to {}: {e}",
            path.display()
        ))
    };
    let header = header();
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let append = existing.lines().next() == Some(header.as_str());
    let text = if append {
        let separator = if existing.ends_with('\n') { "" } else { "\n" };
        format!("{separator}{}\n", row(report))
    } else {
        format!("{header}\n{}\n", row(report))
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::json::tests::sample_report;

    #[test]
    fn a_row_per_run_under_one_header() {
        let dir = std::env::temp_dir().join(format!("courier-cli-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("runs.csv");
        std::fs::write(&path, "something else\n").unwrap();
        let mut report = sample_report();
        write(&report, &path).unwrap();
        report.requests = 7;
        report.url = "http://h/a,\"b\"".to_owned();
        write(&report, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], header());
        let columns = header().split(',').count();
        assert_eq!(lines[1].split(',').count(), columns, "{text}");
        assert!(lines[2].starts_with("\"http://h/a,\"\"b\"\"\","), "{text}");
        let requests = COLUMNS.iter().position(|(n, _)| *n == "requests").unwrap();
        // The quoted URL holds one comma: the column is one further.
        assert_eq!(lines[2].split(',').nth(requests + 1), Some("7"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numbers_lose_float_noise_only() {
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(12.0), "12");
        assert_eq!(num(0.00012), "0.0001");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1234.56789), "1234.5679");
    }
}
