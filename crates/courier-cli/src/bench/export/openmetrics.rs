//! `--openmetrics FILE`: the summary in the OpenMetrics text format, for Prometheus (the
//! node exporter's textfile collector, a Pushgateway) and whatever else reads it.
//!
//! Every sample carries the run's `url`, `method`, `protocol` and `scenario` as labels. Counts
//! are counters (`_total`), rates and maxima gauges, latency a summary in seconds (quantiles
//! 0.5 to 0.999, `_sum` and `_count`), as the format's conventions ask (base units, a
//! `# UNIT` line, `# EOF` at the end).

use std::fmt::Write as _;
use std::path::Path;

use crate::bench::json::BenchReport;
use crate::bench::stats::Percentiles;
use crate::error::{CliError, Result};

/// The prefix of every metric family.
const PREFIX: &str = "courier_bench";

/// Renders the report.
pub fn render(report: &BenchReport) -> String {
    let labels = format!(
        "url=\"{}\",method=\"{}\",protocol=\"{}\",scenario=\"{}\"",
        escape(&report.url),
        escape(&report.method),
        escape(&report.protocol),
        escape(&report.scenario)
    );
    let mut out = Families {
        text: String::new(),
        labels,
    };
    out.counter(
        "requests",
        "Measured requests that finished, failed or not.",
        "",
        &[(String::new(), report.requests)],
    );
    let statuses: Vec<(String, u64)> = report
        .status_codes
        .iter()
        .map(|(code, n)| (format!("status=\"{}\"", escape(code)), *n))
        .collect();
    out.counter(
        "responses",
        "Requests that got a response, by status code.",
        "",
        &statuses,
    );
    let kinds: Vec<(String, u64)> = report
        .errors_by_kind
        .iter()
        .map(|(kind, n)| (format!("kind=\"{}\"", escape(kind)), *n))
        .collect();
    out.counter(
        "errors",
        "Requests that failed without a response, by error kind.",
        "",
        &kinds,
    );
    out.gauge(
        "responses_per_second",
        "Responses per second over the measured time.",
        "",
        report.rps,
    );
    out.gauge(
        "duration_seconds",
        "Measured wall time.",
        "seconds",
        report.duration_s,
    );
    out.counter(
        "body_read_bytes",
        "Response body bytes read.",
        "bytes",
        &[(String::new(), report.bytes_read)],
    );
    out.summary(
        "latency_seconds",
        "Time from sending a request to the last body byte.",
        &report.latency_last_byte_ms,
    );
    out.summary(
        "headers_latency_seconds",
        "Time from sending a request to its response headers.",
        &report.latency_headers_ms,
    );
    out.counter(
        "connections_established",
        "Connections the run's clients established.",
        "",
        &[(String::new(), report.connections_established)],
    );
    out.gauge(
        "connections_open_max",
        "Most connections open at once.",
        "",
        report.connections_open_max as f64,
    );
    out.counter(
        "connect_failures",
        "Connection attempts that failed.",
        "",
        &[(String::new(), report.connect_failures)],
    );
    out.counter(
        "tls_handshakes",
        "TLS handshakes completed (full and resumed).",
        "",
        &[(String::new(), report.tls_handshakes)],
    );
    out.gauge(
        "cpu_mean_ratio",
        "Mean CPU use of the bench process over the measured time, as a share of all cores.",
        "ratio",
        report.process.cpu_mean_pct / 100.0,
    );
    out.gauge(
        "resident_max_bytes",
        "Highest resident set size of the bench process.",
        "bytes",
        report.process.rss_max_mb * 1024.0 * 1024.0,
    );
    out.text.push_str("# EOF\n");
    out.text
}

/// Writes the rendering to `path`.
pub fn write(report: &BenchReport, path: &Path) -> Result<()> {
    std::fs::write(path, render(report)).map_err(|e| {
        CliError::new(format!(
            "cannot write the OpenMetrics report to {}: {e}",
            path.display()
        ))
    })
}

/// The text being written, and the run's labels.
struct Families {
    text: String,
    labels: String,
}

impl Families {
    fn head(&mut self, name: &str, kind: &str, help: &str, unit: &str) {
        let _ = writeln!(self.text, "# TYPE {PREFIX}_{name} {kind}");
        if !unit.is_empty() {
            let _ = writeln!(self.text, "# UNIT {PREFIX}_{name} {unit}");
        }
        let _ = writeln!(self.text, "# HELP {PREFIX}_{name} {help}");
    }

    fn sample(&mut self, name: &str, extra: &str, value: &str) {
        let comma = if extra.is_empty() { "" } else { "," };
        let _ = writeln!(
            self.text,
            "{PREFIX}_{name}{{{}{comma}{extra}}} {value}",
            self.labels
        );
    }

    /// A counter with one sample per (extra labels, value); none written when there are none.
    fn counter(&mut self, name: &str, help: &str, unit: &str, samples: &[(String, u64)]) {
        self.head(name, "counter", help, unit);
        for (extra, value) in samples {
            self.sample(&format!("{name}_total"), extra, &value.to_string());
        }
    }

    fn gauge(&mut self, name: &str, help: &str, unit: &str, value: f64) {
        self.head(name, "gauge", help, unit);
        self.sample(name, "", &number(value));
    }

    /// A summary of a latency given in milliseconds, written in seconds.
    fn summary(&mut self, name: &str, help: &str, p: &Percentiles) {
        self.head(name, "summary", help, "seconds");
        let secs = |ms: f64| number(ms / 1000.0);
        for (quantile, ms) in [
            ("0.5", p.p50),
            ("0.75", p.p75),
            ("0.9", p.p90),
            ("0.99", p.p99),
            ("0.999", p.p999),
        ] {
            self.sample(name, &format!("quantile=\"{quantile}\""), &secs(ms));
        }
        self.sample(&format!("{name}_sum"), "", &secs(p.mean * p.count as f64));
        self.sample(&format!("{name}_count"), "", &p.count.to_string());
    }
}

/// A float as the format spells it (no exponent needed: Rust prints decimals).
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

/// A label value: backslash, double quote and line feed escaped.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::json::tests::sample_report;

    #[test]
    fn families_are_typed_and_samples_labelled() {
        let mut report = sample_report();
        report.url = "http://h/\"q\"".to_owned();
        let text = render(&report);
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert_eq!(text.matches("# EOF").count(), 1);
        let mut family = String::new();
        let mut kind = String::new();
        for line in text.lines().filter(|l| *l != "# EOF") {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, k) = rest.split_once(' ').unwrap();
                (family, kind) = (name.to_owned(), k.to_owned());
                continue;
            }
            if line.starts_with('#') {
                assert!(line.contains(&family), "{line} outside its family");
                continue;
            }
            let name = &line[..line.find('{').unwrap()];
            assert!(name.starts_with(&family), "{name} in family {family}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "{line}");
            }
            assert!(line.contains("url=\"http://h/\\\"q\\\"\""), "{line}");
            let value = line.rsplit(' ').next().unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
        let requests = format!("courier_bench_requests_total{{{}", "url=");
        assert!(text.contains(&requests), "{text}");
        let p99 = report.latency_last_byte_ms.p99 / 1000.0;
        assert!(
            text.lines()
                .any(|l| l.starts_with("courier_bench_latency_seconds{")
                    && l.contains("quantile=\"0.99\"")
                    && l.ends_with(&format!(" {p99}"))),
            "{text}"
        );
    }
}
