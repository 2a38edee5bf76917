//! The report as a table for people, in the layout of the HTTP client benchmark tables.
//!
//! The first rows follow those tables one for one (Requests, Mean RPS, time to response headers
//! and to the last content byte by percentile, current connections, queue duration, connect
//! attempts, connections established, TLS, max CPU, working set, private memory); courier's
//! extra figures come after. Labels do not name the protocol, so runs over HTTP/1.1 and HTTP/2
//! line up in `courier compare`. Each row knows whether a higher or a lower value is better,
//! which is what the comparison's better/worse marks are made from.
//!
//! The parts: this file (the rows every run has, the title, the notes), `sections` (the rows
//! of the open loop, long polls and allocation counts) and `table` (the text layout); numbers
//! are grouped by `super::format`.

mod sections;
mod table;

use std::fmt::Write as _;

pub use self::table::table;
use super::format::group_thousands;
use super::json::BenchReport;
use super::stats::{MeanMax, Percentiles};

/// Which direction of change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// A setting or a count with no better direction (duration, status codes).
    Neither,
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub value: Value,
    pub better: Better,
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
    /// The value with thousands separators, e.g. `1,648,740` or `1,234.57`.
    pub fn display(&self) -> String {
        match *self {
            Self::Count(n) => group_thousands(&n.to_string()),
            Self::Number { value, decimals } => group_thousands(&format!("{value:.decimals$}")),
        }
    }

    /// The value as a number, for deltas.
    pub fn as_f64(&self) -> f64 {
        match *self {
            Self::Count(n) => n as f64,
            Self::Number { value, .. } => value,
        }
    }
}

/// Builds the rows, in display order.
struct Rows(Vec<Row>);

impl Rows {
    fn push(&mut self, label: impl Into<String>, value: Value, better: Better) {
        self.0.push(Row {
            label: label.into(),
            value,
            better,
        });
    }
    fn count(&mut self, label: impl Into<String>, n: u64, better: Better) {
        self.push(label, Value::Count(n), better);
    }
    fn number(&mut self, label: impl Into<String>, value: f64, decimals: usize, better: Better) {
        self.push(label, Value::Number { value, decimals }, better);
    }
    fn ms(&mut self, label: impl Into<String>, value: f64) {
        self.number(label, value, 2, Better::Lower);
    }
    fn mean_max(&mut self, label: &str, m: MeanMax, decimals: usize, better: Better) {
        self.number(format!("{label} - Mean"), m.mean, decimals, better);
        self.number(format!("{label} - Max"), m.max, decimals, better);
    }
    fn percentiles(&mut self, label: &str, p: &Percentiles) {
        for (which, value) in [
            ("p50", p.p50),
            ("p75", p.p75),
            ("p90", p.p90),
            ("p99", p.p99),
            ("p99.9", p.p999),
            ("max", p.max),
        ] {
            self.ms(format!("{label} (ms) - {which}"), value);
        }
    }
}

/// The rows of the table, in display order: the seed table's rows first, then the rest.
pub fn rows(r: &BenchReport) -> Vec<Row> {
    use Better::{Higher, Lower, Neither};
    let mut rows = Rows(Vec::new());
    // Totals follow from the run's length or `-n`: RPS carries the direction.
    rows.count("Requests", r.requests, Neither);
    rows.count("Successful requests", r.responses, Neither);
    rows.number("Mean RPS", r.rps, 0, Higher);
    rows.percentiles("Time to response headers", &r.latency_headers_ms);
    rows.percentiles(
        "Time to last response content byte",
        &r.latency_last_byte_ms,
    );
    // Connections, connect attempts, sessions, total CPU and memory follow from the load and
    // the settings (32 slots need more connections than 1): no direction is better in itself.
    rows.mean_max("Current connections", r.connections_current, 0, Neither);
    rows.mean_max("Requests queue duration (ms)", r.queue_time_ms, 2, Lower);
    rows.mean_max(
        "Current connect attempts",
        r.connect_attempts_current,
        0,
        Neither,
    );
    rows.count(
        "Connections established",
        r.connections_established,
        Neither,
    );
    let by_version = r.connections_established_by_version;
    if by_version.http1 > 0 && by_version.http2 > 0 {
        rows.count(
            "Connections established - HTTP/1.1",
            by_version.http1,
            Neither,
        );
        rows.count(
            "Connections established - HTTP/2",
            by_version.http2,
            Neither,
        );
    }
    if let Some(tls) = &r.tls {
        rows.count(
            "Total TLS handshakes completed",
            tls.handshakes_total,
            Neither,
        );
        rows.count("TLS handshakes resumed", tls.resumed, Neither);
        rows.mean_max("Current TLS handshakes", tls.handshakes_current, 0, Neither);
        rows.mean_max("TLS sessions active", tls.sessions_active, 0, Neither);
        rows.mean_max(
            "TLS handshake duration (ms)",
            tls.handshake_duration_ms,
            2,
            Lower,
        );
    }
    rows.number("Max CPU usage (%)", r.process.cpu_max_pct, 0, Neither);
    rows.number("Max working set (MB)", r.process.rss_max_mb, 0, Neither);
    rows.number(
        "Max private memory (MB)",
        r.process.private_max_mb,
        0,
        Neither,
    );
    // CPU normalised per request is comparable across loads, and lower is better.
    rows.number(
        "CPU time per successful request (us)",
        cpu_per_request_us(r),
        1,
        Lower,
    );

    rows.count("Errors", r.errors, Lower);
    rows.number("Error rate (%)", r.error_rate * 100.0, 2, Lower);
    for (kind, n) in &r.errors_by_kind {
        rows.count(format!("Errors - {kind}"), *n, Lower);
    }
    for (code, n) in &r.status_codes {
        rows.count(format!("Responses - {code}"), *n, Neither);
    }
    rows.number("Response bytes/s", r.bytes_per_s, 0, Higher);
    rows.ms(
        "Time to response headers (ms) - mean",
        r.latency_headers_ms.mean,
    );
    rows.ms(
        "Time to last response content byte (ms) - mean",
        r.latency_last_byte_ms.mean,
    );
    rows.number(
        "Requests per connection",
        r.requests_per_connection,
        2,
        Neither,
    );
    rows.mean_max("Requests queued", r.requests_queued, 0, Neither);
    rows.count("Connect failures", r.connect_failures, Lower);
    rows.count("Drains completed", r.drains_completed, Neither);
    rows.count("Drains aborted", r.drains_aborted, Lower);
    rows.count("Stale retries", r.stale_retries, Lower);
    rows.number("Mean CPU usage (%)", r.process.cpu_mean_pct, 0, Neither);
    rows.number("Duration (s)", r.duration_s, 2, Neither);
    if let Some(first) = &r.first_requests {
        // The first requests opened the pool's connections: the latency a service sees when it
        // starts, which the percentiles above (over warm connections) hide.
        let latency = &first.latency_last_byte_ms;
        let (p50, max) = match r.open_loop {
            None => (
                "First request of each slot (ms) - p50",
                "First request of each slot (ms) - max",
            ),
            Some(_) => (
                "Requests before the first response (ms) - p50",
                "Requests before the first response (ms) - max",
            ),
        };
        if latency.count > 0 {
            rows.ms(p50, latency.p50);
            rows.ms(max, latency.max);
        }
        if first.failed > 0 {
            rows.count("First requests failed", first.failed, Lower);
        }
    }

    if let Some(o) = &r.open_loop {
        rows.open_loop(o, r.config.stages.is_some());
    }
    if let Some(l) = &r.longpoll {
        rows.longpoll(l);
    }
    if let Some(a) = &r.allocations {
        rows.allocations(a);
    }
    rows.0
}

/// CPU time of this process (of every agent, once merged) per successful request, in
/// microseconds; 0 when nothing succeeded. Reports from before `cpu_seconds` existed get it
/// from mean CPU (% of all cores) × cores × measured seconds.
pub fn cpu_per_request_us(r: &BenchReport) -> f64 {
    if r.responses == 0 {
        return 0.0;
    }
    let cpu_seconds = if r.process.cpu_seconds > 0.0 {
        r.process.cpu_seconds
    } else {
        r.process.cpu_mean_pct / 100.0 * r.cores as f64 * r.duration_s
    };
    cpu_seconds / r.responses as f64 * 1e6
}

/// The seed tables' title cell: protocol, method, response size and load, e.g.
/// `HTTP/1.1 GET 128b x 64`.
pub fn title(r: &BenchReport) -> String {
    let path = r
        .url
        .parse::<http::Uri>()
        .ok()
        .map(|u| u.path().to_owned())
        .unwrap_or_default();
    let what = match path
        .strip_prefix("/bytes/")
        .and_then(|n| n.parse::<u64>().ok())
    {
        _ if !r.targets.is_empty() => format!("{} targets", r.targets.len()),
        Some(n) => size_label(n),
        None => path,
    };
    let load = &r.load;
    let slots = if load.clients > 1 {
        format!("{} clients x {}", load.clients, load.concurrency)
    } else {
        load.concurrency.to_string()
    };
    let load_text = match (load.rate, load.delay_s) {
        (Some(rate), _) if r.config.stages.is_some() => format!(
            "in stages {} (peak {} req/s, cap {slots})",
            r.config.stages.as_deref().unwrap_or_default(),
            fmt_number(rate)
        ),
        (Some(rate), _) => format!("at {} req/s (cap {slots})", fmt_number(rate)),
        (None, Some(delay)) => format!("x {slots} long polls of {delay} s"),
        (None, None) => format!("x {slots}"),
    };
    format!("{} {} {what} {load_text}", r.protocol, r.method)
}

/// The URL, or with `--targets` the entries' URLs.
pub fn what_url(r: &BenchReport) -> String {
    if r.targets.is_empty() {
        return r.url.clone();
    }
    let urls: Vec<String> = r
        .targets
        .iter()
        .map(|t| format!("{} {} (x{})", t.method, t.url, t.weight))
        .collect();
    format!("{} targets: {}", r.targets.len(), urls.join(", "))
}

/// `128` → `128B`, `1048576` → `1MiB`: binary units, named as such (`Kb` would be kilobits).
fn size_label(bytes: u64) -> String {
    match bytes {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}KiB", n >> 10),
        n => format!("{n}B"),
    }
}

fn fmt_number(value: f64) -> String {
    if value.fract() == 0.0 {
        group_thousands(&format!("{value:.0}"))
    } else {
        group_thousands(&format!("{value:.2}"))
    }
}

/// The whole text report: what was run, the table, then notes.
pub fn render(r: &BenchReport) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored for that reason.
    let verdict = super::verdict::lines(r);
    for line in &verdict {
        let _ = writeln!(out, "{line}");
    }
    if !verdict.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "courier {} bench: {} {}",
        r.version,
        r.method,
        what_url(r)
    );
    if r.agents > 1 {
        let _ = writeln!(
            out,
            "merged from {} agents that ran together (each as below)",
            r.agents
        );
    }
    let stop = match r.load.stop.as_str() {
        "requests" => format!("{} requests", group_thousands(&r.requests.to_string())),
        "one-round" => "one request per slot".to_owned(),
        _ => format!("{:.1} s", r.duration_s),
    };
    let _ = writeln!(
        out,
        "{} loop, {} client(s) x {}, {} threads, {stop}, warmup {} s, server {}\n",
        r.load.model, r.load.clients, r.load.concurrency, r.threads, r.warmup_s, r.server
    );
    let values: Vec<Vec<String>> = rows(r)
        .iter()
        .map(|row| vec![row.label.clone(), row.value.display()])
        .collect();
    out.push_str(&table(&[title(r), "courier".to_owned()], &values));
    for note in notes(r) {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// Remarks that change how the figures read.
pub fn notes(r: &BenchReport) -> Vec<String> {
    let mut notes = r.limits.notes.clone();
    if r.process.includes_server {
        notes.push(
            "CPU and memory include the built-in server (same process); `--server process` separates them"
                .to_owned(),
        );
    }
    if let Some(o) = &r.open_loop {
        if o.not_sent > 0 {
            notes.push(format!(
                "{} of {} due requests were never sent: all {} in-flight slots stayed busy (raise -c or lower --rate)",
                group_thousands(&o.not_sent.to_string()),
                group_thousands(&o.intended.to_string()),
                o.in_flight_cap
            ));
        }
    }
    if let Some(l) = &r.longpoll {
        if l.peak_in_flight < l.target_in_flight {
            let why = if r.errors > 0 {
                format!(
                    "{} requests failed (see Errors)",
                    group_thousands(&r.errors.to_string())
                )
            } else {
                "some finished before the last started (raise --delay)".to_owned()
            };
            notes.push(format!(
                "only {} of {} long polls were in flight at once: {why}",
                group_thousands(&l.peak_in_flight.to_string()),
                group_thousands(&l.target_in_flight.to_string())
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::super::json::tests::sample_report;
    use super::super::json::{OpenLoopReport, TlsReport};
    use super::*;

    #[test]
    fn table_has_the_seed_rows_in_the_seed_order() {
        let text = render(&sample_report());
        let seed_rows = [
            "Requests ",
            "Mean RPS",
            "Time to response headers (ms) - p50",
            "Time to response headers (ms) - p75",
            "Time to response headers (ms) - p90",
            "Time to response headers (ms) - p99 ",
            "Time to last response content byte (ms) - p50",
            "Time to last response content byte (ms) - p99 ",
            "Current connections - Mean",
            "Current connections - Max",
            "Requests queue duration (ms) - Mean",
            "Requests queue duration (ms) - Max",
            "Current connect attempts - Mean",
            "Current connect attempts - Max",
            "Connections established",
            "Max CPU usage (%)",
            "Max working set (MB)",
            "Max private memory (MB)",
        ];
        let mut last = 0;
        for label in seed_rows {
            let at = text
                .find(label)
                .unwrap_or_else(|| panic!("missing {label:?} in\n{text}"));
            assert!(at > last, "{label:?} out of order in\n{text}");
            last = at;
        }
        for label in [
            "Time to response headers (ms) - p99.9",
            "Time to last response content byte (ms) - max",
            "Errors - timeout",
            "Responses - 200",
            "Response bytes/s",
            "Requests per connection",
            "Requests queued - Max",
            "Drains completed",
            "Duration (s)",
        ] {
            assert!(text.contains(label), "missing {label:?} in\n{text}");
        }
        assert!(text.contains("HTTP/1.1 GET 128B x 64"), "{text}");
        assert!(text.contains("4 requests"), "{text}");
        assert!(
            !text.contains("TLS"),
            "no TLS rows without TLS figures:\n{text}"
        );
    }

    #[test]
    fn optional_sections_add_their_rows() {
        let mut r = sample_report();
        r.tls = Some(TlsReport::default());
        r.open_loop = Some(OpenLoopReport {
            rate: 500.0,
            intended: 1000,
            sent: 900,
            not_sent: 100,
            in_flight_cap: 2,
            ..OpenLoopReport::default()
        });
        r.load.rate = Some(500.0);
        let text = render(&r);
        for label in [
            "Total TLS handshakes completed",
            "TLS handshake duration (ms) - Max",
            "Corrected time to last response content byte (ms) - p99",
            "Open loop - not sent",
            "100 of 1,000 due requests were never sent",
            "at 500 req/s",
        ] {
            assert!(text.contains(label), "missing {label:?} in\n{text}");
        }
        let tls = text.find("Total TLS").unwrap();
        assert!(tls > text.find("Connections established").unwrap());
        assert!(tls < text.find("Max CPU usage").unwrap());
    }

    #[test]
    fn numbers_get_their_decimals_and_separators() {
        assert_eq!(
            Value::Number {
                value: 7.6949,
                decimals: 2
            }
            .display(),
            "7.69"
        );
        assert_eq!(Value::Count(1_648_740).display(), "1,648,740");
    }

    #[test]
    fn values_are_right_aligned_with_two_decimals_for_ms() {
        let r = sample_report();
        let cells: Vec<Vec<String>> = rows(&r)
            .iter()
            .map(|row| vec![row.label.clone(), row.value.display()])
            .collect();
        let text = table(&["t".to_owned(), "courier".to_owned()], &cells);
        let widths: Vec<usize> = text.lines().map(str::len).collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "{text}");
        let p50 = text
            .lines()
            .find(|l| l.starts_with("Time to response headers (ms) - p50"))
            .unwrap();
        assert!(p50.ends_with("2.00"), "{p50}");
    }

    #[test]
    fn every_row_knows_its_direction() {
        let r = sample_report();
        let find = |label: &str| {
            rows(&r)
                .into_iter()
                .find(|row| row.label == label)
                .unwrap_or_else(|| panic!("{label}"))
                .better
        };
        assert_eq!(find("Mean RPS"), Better::Higher);
        assert_eq!(find("Time to response headers (ms) - p99"), Better::Lower);
        assert_eq!(find("Max working set (MB)"), Better::Neither);
        assert_eq!(find("Current connections - Max"), Better::Neither);
        assert_eq!(find("Max CPU usage (%)"), Better::Neither);
        assert_eq!(find("CPU time per successful request (us)"), Better::Lower);
        assert_eq!(find("Error rate (%)"), Better::Lower);
        assert_eq!(find("Duration (s)"), Better::Neither);
    }

    #[test]
    fn cpu_per_request_is_normalised_by_cores_time_and_responses() {
        let mut r = sample_report();
        // 50% of 2 cores for 0.5 s = 0.5 CPU seconds, over 3 responses.
        r.process.cpu_mean_pct = 50.0;
        r.process.cpu_seconds = 0.0;
        assert!((cpu_per_request_us(&r) - 0.5 / 3.0 * 1e6).abs() < 1e-6);
        // Measured (or summed over agents) CPU seconds take precedence.
        r.process.cpu_seconds = 0.3;
        assert!((cpu_per_request_us(&r) - 0.1 * 1e6).abs() < 1e-6);
        r.responses = 0;
        assert_eq!(cpu_per_request_us(&r), 0.0);
    }

    #[test]
    fn size_labels_follow_the_seed() {
        assert_eq!(size_label(128), "128B");
        assert_eq!(size_label(1 << 20), "1MiB");
        assert_eq!(size_label(4096), "4KiB");
        assert_eq!(size_label(1000), "1000B");
    }
}
