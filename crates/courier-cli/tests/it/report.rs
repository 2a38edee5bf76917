//! The HTML reports, from the real binary against `courier serve` on loopback: `bench --html`
//! has the latency spectrum and histogram, timelines and the verdict; `compare --html` overlays
//! every run's spectrum. (How the page looks is checked by `bench/screenshot-report.sh`.)

use crate::support::{assert_success, courier, Server, TempDir};

/// The `<svg …>…</svg>` whose class list contains `class`.
fn svg<'a>(html: &'a str, class: &str) -> &'a str {
    let start = html
        .find(&format!("class=\"chart {class}"))
        .unwrap_or_else(|| panic!("no {class} chart in the page"));
    let end = html[start..].find("</svg>").expect("svg closed") + start;
    &html[start..end]
}

#[test]
fn bench_html_has_the_spectrum_histogram_timelines_and_verdict() {
    let server = Server::start(&[]);
    let dir = TempDir::new("html");
    let page = dir.file("r.html");
    let url = format!("{}bytes/64", server.url);
    let output = courier(&[
        "bench",
        &url,
        "-d",
        "2",
        "-c",
        "4",
        "--html",
        &page,
        "--fail-if",
        "p99 > 10s",
    ]);
    assert_success(&output);
    let html = std::fs::read_to_string(&page).expect("HTML written");
    assert!(html.starts_with("<!DOCTYPE html>"));
    let spectrum = svg(&html, "spectrum");
    assert!(spectrum.contains("<polyline"), "{spectrum}");
    for tick in [">50%<", ">90%<", ">99%<", ">99.9%<"] {
        assert!(spectrum.contains(tick), "spectrum tick {tick}");
    }
    let histogram = svg(&html, "histogram");
    assert!(histogram.matches("<rect").count() >= 10, "{histogram}");
    let rps = svg(&html, "timeline rps");
    assert!(rps.contains(">time since measurement started (s)<"));
    assert!(rps.contains(">requests/s<"));
    assert!(html.contains("verdict ok"));
    assert!(html.contains("PASSED"));
    assert!(
        html.contains("<code>p99 &gt; 10s</code>"),
        "thresholds in the headline"
    );
    // The configuration is what was set, not a JSON dump.
    assert!(html.contains("<code>--concurrency</code>"));
    assert!(!html.contains("null"));
    assert!(!html.contains("<script"));
}

#[test]
fn a_failed_run_says_so_in_the_headline() {
    let dir = TempDir::new("html-fail");
    let page = dir.file("r.html");
    let output = courier(&["bench", "http://127.0.0.1:1/", "-n", "20", "--html", &page]);
    assert!(!output.status.success());
    let html = std::fs::read_to_string(&page).expect("HTML written even for a failed run");
    assert!(html.contains("verdict fail"));
    assert!(html.contains("FAILED: all 20 requests failed"), "{html}");
    assert!(html.contains("connection refused 127.0.0.1:1"));
}

#[test]
fn compare_html_overlays_every_run() {
    let server = Server::start(&[]);
    let dir = TempDir::new("compare-html");
    let url = format!("{}bytes/64", server.url);
    let mut reports = Vec::new();
    for (name, concurrency) in [("one", "1"), ("four", "4"), ("eight", "8")] {
        let json = dir.file(&format!("{name}.json"));
        assert_success(&courier(&[
            "bench",
            &url,
            "-n",
            "300",
            "-c",
            concurrency,
            "--json",
            &json,
        ]));
        reports.push(json);
    }
    let page = dir.file("compare.html");
    let mut args = vec!["compare", "--html", page.as_str()];
    args.extend(reports.iter().map(String::as_str));
    assert_success(&courier(&args));
    let html = std::fs::read_to_string(&page).expect("HTML written");
    let spectrum = svg(&html, "spectrum");
    assert_eq!(spectrum.matches("<polyline").count(), 3, "{spectrum}");
    for name in ["one", "four", "eight"] {
        assert!(
            spectrum.contains(&format!("<title>{name}</title>")),
            "{name}"
        );
    }
    assert!(html.contains("configuration differs"));
}
