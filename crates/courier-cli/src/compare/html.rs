//! `courier compare --html OUT`: several runs on one page, their latency spectra overlaid.
//!
//! Two tables of percentiles are hard to compare by eye; two curves on the same percentile axis
//! are not: where one run's tail leaves the other's shows at a glance. The page has each run's
//! title and verdict, the overlaid spectra (each run one colour; open-loop runs a solid
//! corrected line and a dashed one from the send), throughput and p99 over time overlaid, the
//! settings that differ and the comparison table as the terminal prints it.

use std::fmt::Write as _;

use crate::bench::format::group_thousands;
use crate::bench::html::spectrum;
use crate::bench::html::svg::{steps, Chart, Series, PALETTE};
use crate::bench::html::{escape, head};
use crate::bench::json::{BenchReport, TimelineSample};
use crate::bench::report::title;
use crate::bench::verdict;

/// The page comparing `reports`, named `names`; `table` is the text comparison.
pub fn page(names: &[String], reports: &[BenchReport], preamble: &str, table: &str) -> String {
    let mut out = head(&format!("courier compare: {}", names.join(" vs ")));
    let _ = writeln!(
        out,
        "<h1>courier compare: {} runs</h1>\n<table class=\"runs\">\
         <tr><th></th><th>run</th><th>what</th><th>req/s</th><th>p99 (ms)</th><th>errors</th><th>verdict</th></tr>",
        reports.len()
    );
    for (i, (name, r)) in names.iter().zip(reports).enumerate() {
        let verdict = verdict::lines(r)
            .first()
            .cloned()
            .unwrap_or_else(|| "ok".to_owned());
        let _ = writeln!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span></td><th>{}</th><td>{}</td>\
             <td>{}</td><td>{:.2}</td><td>{:.2}%</td><td>{}</td></tr>",
            PALETTE[i % PALETTE.len()],
            escape(name),
            escape(&title(r)),
            group_thousands(&format!("{:.0}", r.rps)),
            r.latency_last_byte_ms.p99,
            r.error_rate * 100.0,
            escape(&verdict)
        );
    }
    out.push_str("</table>\n<h2>Latency</h2>\n<div class=\"charts\">\n");
    let runs: Vec<(&str, &BenchReport)> = names
        .iter()
        .map(String::as_str)
        .zip(reports.iter())
        .collect();
    out.push_str(&spectrum::chart(&runs).render());
    out.push_str("</div>\n<h2>Timeline</h2>\n<div class=\"charts\">\n");
    out.push_str(
        &overlay(
            &runs,
            "Throughput (successful requests per second)",
            "requests/s",
            "rps",
            |s| s.rps,
        )
        .render(),
    );
    out.push_str(
        &overlay(
            &runs,
            "p99 per second (time to last byte)",
            "ms",
            "p99",
            |s| s.p99_ms,
        )
        .render(),
    );
    let _ = write!(
        out,
        "</div>\n<h2>Figures</h2>\n<pre>{}\n{}</pre>\n</body></html>\n",
        escape(preamble),
        escape(table)
    );
    out
}

/// One timeline figure of every run on one chart.
fn overlay(
    runs: &[(&str, &BenchReport)],
    title: &str,
    y_label: &str,
    class: &'static str,
    value: fn(&TimelineSample) -> f64,
) -> Chart {
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, (name, r))| {
            let intervals: Vec<(f64, f64, f64)> = r
                .timeline
                .iter()
                .map(|s| (s.t_s, s.interval_s, value(s)))
                .collect();
            Series {
                name: (*name).to_owned(),
                points: steps(&intervals),
                color: PALETTE[i % PALETTE.len()],
                dashed: false,
            }
        })
        .collect();
    Chart {
        title: title.to_owned(),
        x_label: "time since measurement started (s)".to_owned(),
        y_label: y_label.to_owned(),
        series,
        class: if class == "rps" {
            "timeline rps"
        } else {
            "timeline p99"
        },
        ..Chart::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlays_every_run() {
        let a = crate::bench::json::tests::sample_report();
        let mut b = a.clone();
        b.latency_last_byte_ms.p99 *= 2.0;
        let c = a.clone();
        let names = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let html = page(&names, &[a, b, c], "runs:\n", "figure a b");
        assert!(html.contains("class=\"chart spectrum\""));
        // Three runs: three lines on the spectrum, each named.
        let spectrum = html
            .split("class=\"chart spectrum\"")
            .nth(1)
            .and_then(|s| s.split("</svg>").next())
            .unwrap();
        assert_eq!(spectrum.matches("<polyline").count(), 3, "{spectrum}");
        for name in ["<title>a</title>", "<title>b</title>", "<title>c</title>"] {
            assert!(spectrum.contains(name), "{name}");
        }
    }
}
