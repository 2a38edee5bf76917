//! `courier merge a.json b.json … [--json all.json]`: one report from runs on several machines.
//!
//! One machine's client saturates long before a cluster does, so big loads come from several
//! agents (`deploy/courier-bench-job.yaml` runs one per pod, started together with
//! `--start-at`). Their reports merge exactly where it matters: counts add up, and latency
//! percentiles come from the sum of the agents' full HdrHistograms (kept in each `--json`),
//! never from averaging percentiles. Throughput is the sum of the agents' rates (they ran at the
//! same time). Gauges that belong to one machine (CPU, memory) are the largest agent's, and
//! per-second timelines stay in the agents' own reports.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;

use crate::bench::histograms::{self, Histograms};
use crate::bench::json::BenchReport;
use crate::bench::stats::{add_histogram, ratio, Percentiles};
use crate::bench::{output, verdict};
use crate::error::{CliError, Result};
use crate::threshold::{self, Threshold};

/// Merge `courier bench --json` reports from agents that ran together.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct MergeArgs {
    /// The agents' JSON reports (written by `courier bench --json`).
    #[arg(value_name = "REPORT.json", num_args = 1.., required = true)]
    pub reports: Vec<PathBuf>,

    /// Write the merged report as JSON (it can be merged again, or compared).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write the merged report as HTML.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write the merged summary as a CSV row (appended under the same header), as `bench --csv`.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write the merged summary in the OpenMetrics text format, as `bench --openmetrics`.
    #[arg(long, value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,

    /// Exit with code 99 if this holds for the merged run, as `bench --fail-if`; repeatable.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<Threshold>,
}

/// Reads, merges, prints and writes.
pub fn run(args: MergeArgs) -> Result<()> {
    threshold::absolute_only(&args.fail_if)?;
    if let Some(path) = &args.json {
        output::check_writable("--json", path)?;
    }
    if let Some(path) = &args.html {
        output::check_writable("--html", path)?;
    }
    if let Some(path) = &args.csv {
        output::check_writable("--csv", path)?;
    }
    if let Some(path) = &args.openmetrics {
        output::check_writable("--openmetrics", path)?;
    }
    let reports = args
        .reports
        .iter()
        .map(|path| BenchReport::read(path))
        .collect::<Result<Vec<_>>>()?;
    let mut merged = merge(&reports, &args.reports)?;
    output::publish(
        &mut merged,
        output::Outputs {
            fail_if: &args.fail_if,
            chart: false,
            json: args.json.as_deref(),
            html: args.html.as_deref(),
            csv: args.csv.as_deref(),
            openmetrics: args.openmetrics.as_deref(),
        },
    )?;
    if verdict::all_failed(&merged) {
        return Err(CliError::new("no request of any agent got a response"));
    }
    match threshold::failure(&merged.thresholds) {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

/// The merged report; `paths` name the reports in messages.
pub fn merge(reports: &[BenchReport], paths: &[PathBuf]) -> Result<BenchReport> {
    let Some(first) = reports.first() else {
        return Err(CliError::new("nothing to merge"));
    };
    let mut headers = crate::bench::stats::new_histogram();
    let mut last_byte = crate::bench::stats::new_histogram();
    let mut m = first.clone();
    m.agents = 0;
    for field in [
        &mut m.requests,
        &mut m.responses,
        &mut m.errors,
        &mut m.bytes_read,
        &mut m.connections_open_max,
        &mut m.connections_established,
        &mut m.tls_handshakes,
        &mut m.tls_resumed,
        &mut m.connect_failures,
        &mut m.drains_completed,
        &mut m.drains_aborted,
        &mut m.stale_retries,
    ] {
        *field = 0;
    }
    m.rps = 0.0;
    m.bytes_per_s = 0.0;
    m.duration_s = 0.0;
    m.connections_current = Default::default();
    m.connections_established_by_version = Default::default();
    m.errors_by_kind.clear();
    m.error_messages.clear();
    m.status_codes.clear();
    m.interrupted = false;
    m.process.cpu_seconds = 0.0;
    for (i, r) in reports.iter().enumerate() {
        let name = paths
            .get(i)
            .map_or_else(|| format!("report {}", i + 1), |p| p.display().to_string());
        let hist = r.histograms.as_ref().ok_or_else(|| {
            CliError::new(format!(
                "{name} has no latency histograms (written by a courier before `merge`): run it again"
            ))
        })?;
        let (h, l) = hist
            .decode()
            .map_err(|e| CliError::new(format!("{name}: {e}")))?;
        add_histogram(&mut headers, &h)?;
        add_histogram(&mut last_byte, &l)?;
        if r.url != first.url || r.method != first.method {
            eprintln!(
                "courier merge: note: {name} ran {} {}, the first ran {} {}",
                r.method, r.url, first.method, first.url
            );
        }
        m.agents += r.agents;
        m.requests += r.requests;
        m.responses += r.responses;
        m.errors += r.errors;
        m.bytes_read += r.bytes_read;
        m.connections_open_max += r.connections_open_max;
        m.connections_established += r.connections_established;
        m.connections_established_by_version.http1 += r.connections_established_by_version.http1;
        m.connections_established_by_version.http2 += r.connections_established_by_version.http2;
        m.connections_established_by_version.http3 += r.connections_established_by_version.http3;
        m.tls_handshakes += r.tls_handshakes;
        m.tls_resumed += r.tls_resumed;
        m.connect_failures += r.connect_failures;
        m.drains_completed += r.drains_completed;
        m.drains_aborted += r.drains_aborted;
        m.stale_retries += r.stale_retries;
        // The agents ran at the same time: their rates and open connections add up.
        m.rps += r.rps;
        m.bytes_per_s += r.bytes_per_s;
        m.connections_current.mean += r.connections_current.mean;
        m.connections_current.max += r.connections_current.max;
        m.duration_s = m.duration_s.max(r.duration_s);
        m.interrupted |= r.interrupted;
        add_counts(&mut m.errors_by_kind, &r.errors_by_kind);
        add_counts(&mut m.error_messages, &r.error_messages);
        add_counts(&mut m.status_codes, &r.status_codes);
        m.process.cpu_seconds += r.process.cpu_seconds;
        m.process.cpu_max_pct = m.process.cpu_max_pct.max(r.process.cpu_max_pct);
        m.process.cpu_mean_pct = m.process.cpu_mean_pct.max(r.process.cpu_mean_pct);
        m.process.rss_max_mb = m.process.rss_max_mb.max(r.process.rss_max_mb);
        m.process.private_max_mb = m.process.private_max_mb.max(r.process.private_max_mb);
    }
    m.error_rate = ratio(m.errors, m.requests);
    m.requests_per_connection = ratio(m.requests, m.connections_established);
    m.latency_headers_ms = Percentiles::from_micros(&headers);
    m.latency_last_byte_ms = Percentiles::from_micros(&last_byte);
    m.histograms = Some(Histograms {
        to_headers_us: histograms::encode(&headers)?,
        to_last_byte_us: histograms::encode(&last_byte)?,
        // Open-loop figures do not merge (`open_loop` is dropped below).
        corrected_to_last_byte_us: None,
    });
    // Figures of one agent's run that do not add up across agents.
    m.timeline.clear();
    m.open_loop = None;
    m.longpoll = None;
    m.first_requests = None;
    m.allocations = None;
    m.tls = None;
    m.thresholds.clear();
    m.limits.notes = vec![format!(
        "merged from {} agents: counts and rates are sums, percentiles come from the merged histograms; CPU time per request is over every agent's CPU, the other CPU and memory rows are the largest agent's; per-second timelines are in the agents' reports",
        m.agents
    )];
    Ok(m)
}

fn add_counts(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (key, n) in from {
        *into.entry(key.clone()).or_insert(0) += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::json::tests::sample_report;
    use crate::bench::stats::{Measured, Tally};
    use std::time::Duration;

    fn agent(latencies_us: impl Iterator<Item = u64>) -> (BenchReport, Tally) {
        let mut tally = Tally::new();
        for us in latencies_us {
            tally.record_response(&Measured {
                status: 200,
                to_headers: Duration::from_micros(us),
                to_last_byte: Duration::from_micros(us),
                body_bytes: 1,
                send_lag: None,
            });
        }
        let mut r = sample_report();
        r.requests = tally.requests();
        r.responses = tally.responses();
        r.errors = 0;
        r.errors_by_kind.clear();
        r.error_messages.clear();
        r.status_codes = [("200".to_owned(), tally.responses())]
            .into_iter()
            .collect();
        r.rps = 100.0;
        r.histograms = Some(Histograms::of(&tally).unwrap());
        (r, tally)
    }

    #[test]
    fn percentiles_come_from_the_merged_histograms_and_counts_add_up() {
        let (a, ta) = agent((0..1000).map(|i| 100 + i));
        let (b, tb) = agent((0..10).map(|i| 50_000 + i * 1000));
        let (c, tc) = agent((0..500).map(|i| 2_000 + i * 3));
        let merged = merge(&[a.clone(), b, c], &[]).unwrap();
        let all = Tally::merge_all([&ta, &tb, &tc]).unwrap();
        assert_eq!(merged.requests, 1510);
        assert_eq!(merged.agents, 3);
        assert_eq!(merged.status_codes["200"], 1510);
        assert_eq!(merged.rps, 300.0);
        assert!((merged.process.cpu_seconds - 1.2).abs() < 1e-9);
        assert_eq!(
            merged.latency_last_byte_ms,
            Percentiles::from_micros(&all.to_last_byte)
        );
        // Averaging the agents' p99s would be far off: b's ten slow requests are under 1 %
        // of all, so the merged p99 is c's range, not a third of the way to b's.
        let averaged = [&ta, &tb, &tc]
            .iter()
            .map(|t| Percentiles::from_micros(&t.to_last_byte).p99)
            .sum::<f64>()
            / 3.0;
        let p99 = merged.latency_last_byte_ms.p99;
        assert!(
            p99 < 4.0 && averaged > 15.0,
            "merged {p99}, averaged {averaged}"
        );
        // A merged report merges again.
        let again = merge(&[merged.clone(), a], &[]).unwrap();
        assert_eq!(again.requests, 2510);
        assert_eq!(again.agents, 4);
    }

    #[test]
    fn a_report_without_histograms_is_refused_by_name() {
        let (a, _) = agent(0..3);
        let mut old = sample_report();
        old.histograms = None;
        let err = merge(
            &[a, old],
            &[PathBuf::from("a.json"), PathBuf::from("old.json")],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("old.json has no latency histograms"),
            "{err}"
        );
    }
}
