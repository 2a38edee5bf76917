//! `--html FILE`: a self-contained report page (inline CSS and SVG, no script, no CDN), so it
//! can be attached to an issue or archived and still open years later, offline.
//!
//! The page reads top down as one would investigate: the verdict (and the thresholds) first;
//! then latency as a distribution (`spectrum`: percentiles on a log axis, `distribution`: a
//! histogram); then what happened over time, each second drawn from t = 0 (throughput against
//! the target rate, latency, errors, connections, CPU); then the same table as the terminal,
//! the notes, and the configuration as the flags that were set (`config`). `courier compare
//! --html` reuses the parts to overlay several runs (`crate::compare::html`).

mod config;
mod distribution;
mod escape;
pub mod spectrum;
pub mod svg;

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

pub use self::escape::escape;
use self::svg::{steps, Chart, Series, PALETTE};
use super::format::group_thousands;
use super::json::{BenchReport, TimelineSample};
use super::report::{notes, rows, title, what_url};
use super::verdict;
use crate::error::{CliError, Result};

/// Writes `html` to `path`; the message names the file on failure.
pub fn write_page(html: &str, path: &Path) -> Result<()> {
    fs::write(path, html).map_err(|e| {
        CliError::new(format!(
            "cannot write the HTML report to {}: {e}",
            path.display()
        ))
    })
}

/// Writes the report's page.
pub fn write(report: &BenchReport, path: &Path) -> Result<()> {
    write_page(&page(report), path)
}

/// The start of a page: doctype, title, style.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title>\n<style>{STYLE}</style></head><body>\n",
        escape(title)
    )
}

/// The whole page.
pub fn page(r: &BenchReport) -> String {
    let heading = title(r);
    let mut out = head(&format!("courier bench: {heading}"));
    let _ = write!(
        out,
        "<h1>{}</h1>\n<p class=\"sub\">courier {} · {} {} · {} loop · {:.1} s measured · server {}</p>\n",
        escape(&heading),
        escape(&r.version),
        escape(&r.method),
        escape(&what_url(r)),
        escape(&r.load.model),
        r.duration_s,
        escape(&r.server)
    );
    out.push_str(&headline(r));
    out.push_str("<h2>Latency</h2>\n<div class=\"charts\">\n");
    out.push_str(&spectrum::chart(&[("", r)]).render());
    if let Some((_, last_byte)) = r.histograms.as_ref().and_then(|h| h.decode().ok()) {
        out.push_str(&distribution::chart(&last_byte).render());
    }
    out.push_str("</div>\n<h2>Timeline</h2>\n<div class=\"charts\">\n");
    for chart in timeline_charts(r) {
        out.push_str(&chart.render());
    }
    out.push_str("</div>\n<h2>Figures</h2>\n<table class=\"figures\">\n");
    for row in rows(r) {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(&row.label),
            escape(&row.value.display())
        );
    }
    out.push_str("</table>\n");
    let notes = notes(r);
    if !notes.is_empty() {
        out.push_str("<h2>Notes</h2>\n<ul>\n");
        for note in notes {
            let _ = writeln!(out, "<li>{}</li>", escape(&note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str(&configuration(r));
    out.push_str("</body></html>\n");
    out
}

/// The verdict box: what went wrong (or that nothing did), the key figures, the thresholds.
pub fn headline(r: &BenchReport) -> String {
    let lines = verdict::lines(r);
    let failed_thresholds = r.thresholds.iter().filter(|t| t.failed).count();
    let class = if verdict::all_failed(r) || r.requests == 0 || failed_thresholds > 0 {
        "fail"
    } else if lines.is_empty() {
        "ok"
    } else {
        "warn"
    };
    let mut out = format!("<section class=\"verdict {class}\">\n");
    match lines.split_first() {
        Some((first, causes)) => {
            let _ = writeln!(out, "<p class=\"headline\">{}</p>", escape(first));
            if !causes.is_empty() {
                out.push_str("<ul class=\"causes\">");
                for cause in causes {
                    let _ = write!(out, "<li>{}</li>", escape(cause.trim()));
                }
                out.push_str("</ul>\n");
            }
        }
        None => {
            let _ = writeln!(
                out,
                "<p class=\"headline\">{}: every one of {} requests got a response</p>",
                if failed_thresholds > 0 {
                    "THRESHOLD FAILED"
                } else {
                    "PASSED"
                },
                group_thousands(&r.requests.to_string())
            );
        }
    }
    let p = &r.latency_last_byte_ms;
    let _ = writeln!(
        out,
        "<p class=\"keys\"><b>{}</b> req/s successful · p50 <b>{:.2}</b> ms · p99 <b>{:.2}</b> ms · \
         p99.9 <b>{:.2}</b> ms · errors <b>{:.2}%</b> · {:.1} s</p>",
        group_thousands(&format!("{:.0}", r.rps)),
        p.p50,
        p.p99,
        p.p999,
        r.error_rate * 100.0,
        r.duration_s
    );
    if !r.thresholds.is_empty() {
        let _ = writeln!(
            out,
            "<p>Thresholds: {} of {} failed</p>\n<ul class=\"thresholds\">",
            failed_thresholds,
            r.thresholds.len()
        );
        for t in &r.thresholds {
            let (mark, class) = if t.failed {
                ("FAIL", "fail")
            } else {
                ("pass", "pass")
            };
            let _ = writeln!(
                out,
                "<li class=\"{class}\"><b>{mark}</b> <code>{}</code> ({})</li>",
                escape(&t.expression),
                escape(&t.actual)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    out
}

/// One step line from a timeline figure.
fn line(
    timeline: &[TimelineSample],
    name: &str,
    color: &'static str,
    dashed: bool,
    value: impl Fn(&TimelineSample) -> f64,
) -> Series {
    let intervals: Vec<(f64, f64, f64)> = timeline
        .iter()
        .map(|s| (s.t_s, s.interval_s, value(s)))
        .collect();
    Series {
        name: name.to_owned(),
        points: steps(&intervals),
        color,
        dashed,
    }
}

/// The charts over time, each from t = 0 to the end of the measurement.
pub fn timeline_charts(r: &BenchReport) -> Vec<Chart> {
    let t = &r.timeline;
    let chart = |title: &str, y_label: &str, class: &'static str, series: Vec<Series>| Chart {
        title: title.to_owned(),
        x_label: "time since measurement started (s)".to_owned(),
        y_label: y_label.to_owned(),
        x_max: Some(r.duration_s.max(t.last().map_or(0.0, |s| s.t_s))),
        series,
        class,
        ..Chart::default()
    };
    let mut throughput = vec![line(t, "achieved", PALETTE[0], false, |s| s.rps)];
    if t.iter().any(|s| s.target_rps.is_some()) {
        throughput.push(line(t, "target", PALETTE[1], true, |s| {
            s.target_rps.unwrap_or(0.0)
        }));
    }
    let mut charts = vec![
        chart(
            "Throughput (successful requests per second)",
            "requests/s",
            "timeline rps",
            throughput,
        ),
        chart(
            "Latency per second (time to last byte)",
            "ms",
            "timeline latency",
            vec![
                line(t, "p50", PALETTE[0], false, |s| s.p50_ms),
                line(t, "p99", PALETTE[3], false, |s| s.p99_ms),
            ],
        ),
    ];
    if r.errors > 0 {
        charts.push(chart(
            "Errors per second",
            "errors/s",
            "timeline errors",
            vec![line(t, "", PALETTE[3], false, |s| {
                s.errors as f64 / s.interval_s.max(1e-9)
            })],
        ));
    }
    charts.push(chart(
        "Connections and requests in flight (end of each second)",
        "count",
        "timeline connections",
        vec![
            line(t, "connections open", PALETTE[2], false, |s| {
                s.connections_open as f64
            }),
            line(t, "in flight", PALETTE[4], false, |s| {
                s.requests_active as f64
            }),
        ],
    ));
    if t.iter().any(|s| s.cpu_pct.is_some()) {
        charts.push(chart(
            "CPU of this process (% of all cores)",
            "%",
            "timeline cpu",
            vec![line(t, "", PALETTE[6], false, |s| s.cpu_pct.unwrap_or(0.0))],
        ));
    }
    charts
}

/// The configuration: the flags that were set, the load as it ran, the targets.
fn configuration(r: &BenchReport) -> String {
    let mut out = String::from("<h2>Configuration</h2>\n<div class=\"tables\">\n");
    let flags = config::set_flags(&r.config);
    out.push_str("<table class=\"config\"><caption>Flags set</caption>\n");
    if flags.is_empty() {
        out.push_str("<tr><td>none: every default</td></tr>\n");
    }
    for (flag, value) in flags {
        let _ = writeln!(
            out,
            "<tr><th><code>{}</code></th><td>{}</td></tr>",
            escape(&flag),
            escape(&value)
        );
    }
    out.push_str("</table>\n<table class=\"config\"><caption>As run</caption>\n");
    for (key, value) in config::resolved(r) {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(&key),
            escape(&value)
        );
    }
    out.push_str("</table>\n</div>\n");
    if !r.targets.is_empty() {
        out.push_str(
            "<table class=\"targets\"><caption>Targets</caption>\n\
             <tr><th>method</th><th>URL</th><th>weight</th><th>headers</th><th>body bytes</th></tr>\n",
        );
        for t in &r.targets {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&t.method),
                escape(&t.url),
                t.weight,
                t.headers,
                t.body_bytes
            );
        }
        out.push_str("</table>\n");
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1340px;color:#222;padding:0 1em}\
h1{font-size:1.5em;margin-bottom:.2em}.sub{color:#666;margin-top:0}h2{margin-top:1.6em;border-bottom:1px solid #ddd}\
.verdict{border-radius:6px;padding:.6em 1em;margin:1em 0;border-left:6px solid}\
.verdict.ok{background:#e6f4ea;border-color:#1e8e3e}.verdict.warn{background:#fef7e0;border-color:#e8710a}\
.verdict.fail{background:#fce8e6;border-color:#d93025}.headline{font-size:1.25em;font-weight:600;margin:.2em 0}\
.keys{font-size:1.05em}.swatch{display:inline-block;width:14px;height:14px;border-radius:3px}.thresholds li.fail{color:#b3261e}.thresholds li.pass{color:#1e6e34}\
table{border-collapse:collapse;margin-bottom:1em}caption{text-align:left;font-weight:600;padding:4px 0}\
th{text-align:left;font-weight:normal;padding:2px 1.5em 2px 0}td{text-align:right;font-variant-numeric:tabular-nums;padding:2px .5em}\
.config td,.targets td{text-align:left}tr:nth-child(even){background:#f4f4f4}\
.tables{display:flex;flex-wrap:wrap;gap:3em;align-items:flex-start}\
.charts{display:flex;flex-wrap:wrap;gap:1.5em 24px}figure{margin:0}figcaption{font-weight:600;margin-bottom:2px}\
svg.chart{width:600px;height:262px;background:#fff}.runs td{text-align:left}\
polyline.series{fill:none;stroke-width:2;stroke-linejoin:round}.bar{fill:#2a6fdb;opacity:.8}\
.axis{stroke:#555}.grid{stroke:#e4e4e4}text{font-size:11px;fill:#444}text.label{font-size:12px;fill:#222}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_is_self_contained_with_charts_verdict_and_table() {
        let mut report = crate::bench::json::tests::sample_report();
        report.url = "http://x/<script>".to_owned();
        let html = page(&report);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("class=\"chart spectrum\""), "{html}");
        assert!(html.contains("class=\"chart timeline rps\""));
        assert!(html.contains("<polyline"));
        assert!(html.contains("Mean RPS"));
        // One of four requests failed: a warning, with its cause.
        assert!(html.contains("verdict warn"), "{html}");
        assert!(html.contains("request timed out"));
        assert!(html.contains("Flags set"));
        assert!(!html.contains("null"), "no raw JSON nulls");
        assert!(!html.contains("<script"), "text must be escaped");
        assert!(!html.contains("src=\"http"), "no external resources");
        assert!(!html.contains("href=\"http"), "no external resources");
    }
}
