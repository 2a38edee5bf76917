//! `--html FILE`: a self-contained report page (inline CSS and SVG, no script, no CDN), so it
//! can be attached to an issue or archived and still open years later, offline.
//!
//! The page has the same table as the terminal, one line chart per timeline series, the notes,
//! and the full configuration as JSON.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use super::json::{BenchReport, SampleFigure};
use super::report::{notes, rows, title};
use crate::error::{CliError, Result};

const CHART_WIDTH: f64 = 640.0;
const CHART_HEIGHT: f64 = 160.0;
const MARGIN: f64 = 40.0;

/// Writes the page; the message names the file on failure.
pub fn write(report: &BenchReport, path: &Path) -> Result<()> {
    fs::write(path, page(report)).map_err(|e| {
        CliError::new(format!(
            "cannot write the HTML report to {}: {e}",
            path.display()
        ))
    })
}

/// The whole page.
pub fn page(r: &BenchReport) -> String {
    let mut out = String::new();
    let heading = escape(&title(r));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>courier bench: {heading}</title>\n<style>{STYLE}</style></head><body>\n\
         <h1>{heading}</h1>\n<p>courier {} · {} {} · {} loop · {} s measured · server {}</p>\n",
        escape(&r.version),
        escape(&r.method),
        escape(&r.url),
        escape(&r.load.model),
        r.duration_s,
        escape(&r.server)
    );
    out.push_str("<h2>Timeline</h2>\n<div class=\"charts\">\n");
    let series: [(&str, SampleFigure); 5] = [
        ("Requests/s", |s| s.rps),
        ("Latency p99 (ms)", |s| s.p99_ms),
        ("Connections open", |s| s.connections_open as f64),
        ("Requests in flight", |s| s.requests_active as f64),
        ("CPU (% of all cores)", |s| s.cpu_pct.unwrap_or(0.0)),
    ];
    for (name, value) in series {
        let points: Vec<(f64, f64)> = r.timeline.iter().map(|s| (s.t_s, value(s))).collect();
        out.push_str(&svg_chart(name, &points));
    }
    out.push_str("</div>\n<h2>Figures</h2>\n<table>\n");
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
    let config = serde_json::to_string_pretty(&r.config).unwrap_or_default();
    let _ = write!(
        out,
        "<h2>Configuration</h2>\n<pre>{}</pre>\n</body></html>\n",
        escape(&config)
    );
    out
}

/// A line chart of `(seconds, value)` points, scaled from zero to the largest value.
fn svg_chart(name: &str, points: &[(f64, f64)]) -> String {
    let max_x = points.iter().map(|p| p.0).fold(0.0_f64, f64::max).max(1.0);
    let max_y = points.iter().map(|p| p.1).fold(0.0_f64, f64::max);
    let top = if max_y > 0.0 { max_y } else { 1.0 };
    let (w, h) = (CHART_WIDTH - 2.0 * MARGIN, CHART_HEIGHT - 2.0 * MARGIN);
    let coords: Vec<String> = points
        .iter()
        .map(|&(x, y)| {
            format!(
                "{:.1},{:.1}",
                MARGIN + x / max_x * w,
                MARGIN + h - y.max(0.0) / top * h
            )
        })
        .collect();
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><figcaption>{}</figcaption>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {CHART_WIDTH} {CHART_HEIGHT}\" role=\"img\" aria-label=\"{}\">\
         <line x1=\"{MARGIN}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" class=\"axis\"/>\
         <line x1=\"{MARGIN}\" y1=\"{MARGIN}\" x2=\"{MARGIN}\" y2=\"{bottom}\" class=\"axis\"/>\
         <text x=\"{label_x}\" y=\"{top_y}\" text-anchor=\"end\">{}</text>\
         <text x=\"{label_x}\" y=\"{bottom}\" text-anchor=\"end\">0</text>\
         <text x=\"{right}\" y=\"{below}\" text-anchor=\"end\">{max_x:.0} s</text>",
        escape(name),
        escape(name),
        axis_label(max_y),
        bottom = MARGIN + h,
        right = MARGIN + w,
        label_x = MARGIN - 4.0,
        top_y = MARGIN + 4.0,
        below = MARGIN + h + 16.0,
    );
    if !coords.is_empty() {
        let _ = write!(svg, "<polyline points=\"{}\"/>", coords.join(" "));
    }
    svg.push_str("</svg></figure>\n");
    svg
}

fn axis_label(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}th{text-align:left;font-weight:normal;padding:2px 1.5em 2px 0}\
td{text-align:right;font-variant-numeric:tabular-nums}tr:nth-child(even){background:#f4f4f4}\
.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}figcaption{font-weight:600}\
svg{width:640px;height:160px}polyline{fill:none;stroke:#2a6fdb;stroke-width:2}\
.axis{stroke:#999}text{font-size:11px;fill:#555}pre{background:#f4f4f4;padding:1em}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_is_self_contained_with_charts_and_table() {
        let mut report = crate::bench::json::tests::sample_report();
        report.url = "http://x/<script>".to_owned();
        let html = page(&report);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(html.matches("<svg").count(), 5, "{html}");
        assert!(html.contains("<polyline"));
        assert!(html.contains("Mean RPS"));
        assert!(!html.contains("<script"), "text must be escaped");
        assert!(!html.contains("src=\"http"), "no external resources");
        assert!(!html.contains("href=\"http"), "no external resources");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
