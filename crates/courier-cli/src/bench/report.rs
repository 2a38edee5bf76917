//! The report as a table for people.
//!
//! Row labels follow the benchmark tables people already read (time to response headers, time to
//! last response content byte, connections established, queue duration …), one metric per line,
//! values right-aligned with thousands separators. The table is built as [`Row`]s first so that a
//! side-by-side comparison of two reports can reuse the same labels and values.

use std::fmt::Write as _;

use super::args::Stop;
use super::json::BenchReport;
use super::stats::Percentiles;

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub value: Value,
}

/// A table value and how to print it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A whole number.
    Count(u64),
    /// A measurement with a fixed number of decimals.
    Number { value: f64, decimals: usize },
}

impl Value {
    fn ms(value: f64) -> Self {
        Self::Number { value, decimals: 2 }
    }

    /// The value with thousands separators, e.g. `1,648,740` or `1,234.57`.
    pub fn display(&self) -> String {
        match *self {
            Self::Count(n) => group_thousands(&n.to_string()),
            Self::Number { value, decimals } => group_thousands(&format!("{value:.decimals$}")),
        }
    }
}

/// The rows of the table, in display order.
pub fn rows(report: &BenchReport) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut push = |label: String, value: Value| rows.push(Row { label, value });

    push("Requests".into(), Value::Count(report.requests));
    push("Errors".into(), Value::Count(report.errors));
    for (kind, n) in &report.errors_by_kind {
        push(format!("Errors - {kind}"), Value::Count(*n));
    }
    for (code, n) in &report.status_codes {
        push(format!("Responses - {code}"), Value::Count(*n));
    }
    push(
        "Duration (s)".into(),
        Value::Number {
            value: report.duration_s,
            decimals: 3,
        },
    );
    push(
        "Requests/s".into(),
        Value::Number {
            value: report.rps,
            decimals: 2,
        },
    );
    push(
        "Bytes read/s".into(),
        Value::Number {
            value: report.bytes_per_s,
            decimals: 0,
        },
    );
    for (name, latency) in [
        ("Time to response headers", &report.latency_headers_ms),
        (
            "Time to last response content byte",
            &report.latency_last_byte_ms,
        ),
    ] {
        for (which, value) in percentile_rows(latency) {
            push(format!("{name} (ms) - {which}"), Value::ms(value));
        }
    }
    push(
        "Connections established".into(),
        Value::Count(report.connections_established),
    );
    push(
        "Connections open - max".into(),
        Value::Count(report.connections_open_max),
    );
    push(
        "Requests per connection".into(),
        Value::Number {
            value: report.requests_per_connection,
            decimals: 2,
        },
    );
    push(
        "Requests queued - max".into(),
        Value::Count(report.requests_queued_max),
    );
    push(
        "Queue duration (ms) - mean".into(),
        Value::ms(report.queue_time_ms.mean),
    );
    push(
        "Queue duration (ms) - max".into(),
        Value::ms(report.queue_time_ms.max),
    );
    push(
        "Drains completed".into(),
        Value::Count(report.drains_completed),
    );
    push("Drains aborted".into(), Value::Count(report.drains_aborted));
    push("Stale retries".into(), Value::Count(report.stale_retries));
    rows
}

/// The whole text report: a heading that says what was run, then the table.
pub fn render(report: &BenchReport) -> String {
    let config = &report.config;
    let stop = match config.stop() {
        Stop::Requests(n) => format!("{} requests", Value::Count(n).display()),
        Stop::Duration(d) => format!("{} s", d.as_secs_f64()),
    };
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        out,
        "courier {} bench: {} {}",
        report.version, report.method, report.url
    );
    let _ = writeln!(
        out,
        "{} concurrent, {} threads, {stop}\n",
        config.concurrency, report.threads
    );
    out.push_str(&table(&rows(report)));
    out
}

/// Rows as aligned text: labels left, values right.
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<(&str, String)> = rows
        .iter()
        .map(|row| (row.label.as_str(), row.value.display()))
        .collect();
    let label_width = cells.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let value_width = cells.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (label, value) in cells {
        let _ = writeln!(out, "{label:<label_width$}  {value:>value_width$}");
    }
    out
}

fn percentile_rows(p: &Percentiles) -> [(&'static str, f64); 6] {
    [
        ("p50", p.p50),
        ("p90", p.p90),
        ("p99", p.p99),
        ("p99.9", p.p999),
        ("max", p.max),
        ("mean", p.mean),
    ]
}

/// Inserts `,` every three digits of the integer part of a formatted number.
fn group_thousands(number: &str) -> String {
    let (sign, unsigned) = match number.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", number),
    };
    let (int, frac) = match unsigned.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (unsigned, None),
    };
    let mut grouped = String::with_capacity(number.len() + int.len() / 3);
    grouped.push_str(sign);
    for (i, digit) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if let Some(frac) = frac {
        grouped.push('.');
        grouped.push_str(frac);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::super::json::tests::sample_report;
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(group_thousands("0"), "0");
        assert_eq!(group_thousands("999"), "999");
        assert_eq!(group_thousands("1000"), "1,000");
        assert_eq!(group_thousands("1648740"), "1,648,740");
        assert_eq!(group_thousands("109959.61"), "109,959.61");
        assert_eq!(group_thousands("-1234.5"), "-1,234.5");
        assert_eq!(
            Value::Number {
                value: 7.6949,
                decimals: 2
            }
            .display(),
            "7.69"
        );
    }

    #[test]
    fn table_has_every_metric() {
        let text = render(&sample_report());
        for label in [
            "Requests ",
            "Errors ",
            "Errors - timeout",
            "Responses - 200",
            "Duration (s)",
            "Requests/s",
            "Bytes read/s",
            "Time to response headers (ms) - p50",
            "Time to response headers (ms) - p99.9",
            "Time to last response content byte (ms) - max",
            "Connections established",
            "Connections open - max",
            "Requests per connection",
            "Requests queued - max",
            "Queue duration (ms) - mean",
            "Queue duration (ms) - max",
            "Drains completed",
            "Drains aborted",
            "Stale retries",
        ] {
            assert!(text.contains(label), "missing {label:?} in\n{text}");
        }
        assert!(text.contains("4 requests"), "{text}");
    }

    #[test]
    fn values_are_right_aligned_with_two_decimals_for_ms() {
        let text = table(&rows(&sample_report()));
        let widths: Vec<usize> = text.lines().map(str::len).collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "{text}");
        let p50 = text
            .lines()
            .find(|l| l.starts_with("Time to response headers (ms) - p50"))
            .unwrap();
        assert!(p50.ends_with("2.00"), "{p50}");
    }
}
