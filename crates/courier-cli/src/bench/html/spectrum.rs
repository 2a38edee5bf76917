//! The latency percentile spectrum: HdrHistogram's "percentile distribution" plot.
//!
//! Percentiles in a table hide the shape of the tail: is p99.9 an outlier or the start of a
//! cliff? The spectrum plots latency (y) against the percentile on a log(1/(1 - p)) axis (x),
//! so 90 %, 99 %, 99.9 %, 99.99 % are evenly spaced and the tail gets as much room as the body.
//! It is drawn from the full histogram that `--json` keeps, one point per 0.02 of a decade;
//! reports without one (older files) fall back to their few stored percentiles. Open-loop runs
//! get two lines: from the intended start (corrected for coordinated omission) and from the
//! actual send.

use hdrhistogram::Histogram;

use super::svg::{Chart, Series, PALETTE};
use crate::bench::histograms;
use crate::bench::json::BenchReport;
use crate::bench::stats::Percentiles;

/// Points per decade of the x axis.
const STEPS_PER_DECADE: f64 = 50.0;
/// The axis never goes beyond 99.9999 %.
const MOST_NINES: f64 = 6.0;

/// `x` of percentile `p` (0..1): log10(1 / (1 - p)).
pub fn x_of(p: f64) -> f64 {
    (1.0 / (1.0 - p)).log10()
}

/// How far the axis goes for `count` samples: the decade past the last the data resolves
/// (1,000 samples: 99.9 %, so up to 99.99 %), at least 99 %.
pub fn x_max_for(count: u64) -> f64 {
    ((count.max(1) as f64).log10().ceil()).clamp(2.0, MOST_NINES)
}

/// Tick positions and labels up to `x_max`: 0 %, 50 %, 90 %, 99 %, 99.9 %, …
pub fn ticks(x_max: f64) -> Vec<(f64, String)> {
    let mut ticks = vec![(0.0, "0%".to_owned()), (x_of(0.5), "50%".to_owned())];
    let mut nines = 1.0;
    while nines <= x_max + 1e-9 {
        let p = 100.0 * (1.0 - 10f64.powf(-nines));
        let decimals = (nines as usize).saturating_sub(2);
        ticks.push((nines, format!("{p:.decimals$}%")));
        nines += 1.0;
    }
    ticks
}

/// Latency (ms) along the axis, from the histogram (µs).
pub fn points(histogram: &Histogram<u64>, x_max: f64) -> Vec<(f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    let steps = (x_max * STEPS_PER_DECADE).ceil() as u64;
    (0..=steps)
        .map(|i| {
            let x = i as f64 / STEPS_PER_DECADE;
            let p = 1.0 - 10f64.powf(-x);
            (x, histogram.value_at_quantile(p) as f64 / 1000.0)
        })
        .collect()
}

/// The few percentiles a report stores, placed on the same axis (max at the axis end).
pub fn fallback_points(p: &Percentiles, x_max: f64) -> Vec<(f64, f64)> {
    if p.count == 0 {
        return Vec::new();
    }
    vec![
        (x_of(0.5), p.p50),
        (x_of(0.75), p.p75),
        (x_of(0.9), p.p90),
        (x_of(0.99), p.p99),
        (x_of(0.999), p.p999),
        (x_max, p.max),
    ]
}

/// A run's lines: `(name, points)`, named after `label` (empty for a single run).
pub fn lines(r: &BenchReport, label: &str, x_max: f64) -> Vec<(String, Vec<(f64, f64)>)> {
    let decoded = r.histograms.as_ref().and_then(|h| h.decode().ok());
    let corrected = r
        .histograms
        .as_ref()
        .and_then(|h| h.corrected_to_last_byte_us.as_deref())
        .and_then(|text| histograms::decode(text).ok());
    let name = |what: &str| {
        if label.is_empty() {
            what.to_owned()
        } else if what.is_empty() {
            label.to_owned()
        } else {
            format!("{label} {what}")
        }
    };
    let mut out = Vec::new();
    match (&r.open_loop, corrected) {
        (Some(_), Some(corrected)) => {
            out.push((name("corrected"), points(&corrected, x_max)));
        }
        (Some(open), None) => {
            out.push((
                name("corrected"),
                fallback_points(&open.latency_corrected_last_byte_ms, x_max),
            ));
        }
        (None, _) => {}
    }
    let uncorrected = if r.open_loop.is_some() {
        "from send"
    } else {
        ""
    };
    let measured = match decoded {
        Some((_, last_byte)) => points(&last_byte, x_max),
        None => fallback_points(&r.latency_last_byte_ms, x_max),
    };
    out.push((name(uncorrected), measured));
    out
}

/// The spectrum chart of one or more runs (`(label, report)`; one run: an empty label).
pub fn chart(runs: &[(&str, &BenchReport)]) -> Chart {
    let count = runs.iter().map(|(_, r)| r.responses).max().unwrap_or(0);
    let x_max = x_max_for(count);
    let mut series = Vec::new();
    for (i, (label, report)) in runs.iter().enumerate() {
        let run_lines = lines(report, label, x_max);
        let several = run_lines.len() > 1;
        for (j, (name, points)) in run_lines.into_iter().enumerate() {
            // One colour per run; within a run, the uncorrected line is dashed.
            let color = if runs.len() > 1 {
                PALETTE[i % PALETTE.len()]
            } else {
                PALETTE[j % PALETTE.len()]
            };
            series.push(Series {
                name: if runs.len() == 1 && !several {
                    String::new()
                } else {
                    name
                },
                points,
                color,
                dashed: several && j > 0 && runs.len() > 1,
            });
        }
    }
    Chart {
        title: "Latency by percentile (time to last byte)".to_owned(),
        x_label: "percentile (log scale: each step is one more nine)".to_owned(),
        y_label: "latency (ms)".to_owned(),
        x_max: Some(x_max),
        x_ticks: ticks(x_max),
        series,
        class: "spectrum",
        ..Chart::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::{new_histogram, record};

    #[test]
    fn the_axis_spaces_the_nines_evenly() {
        assert!((x_of(0.9) - 1.0).abs() < 1e-12);
        assert!((x_of(0.999) - 3.0).abs() < 1e-9);
        assert_eq!(x_max_for(10), 2.0);
        assert_eq!(x_max_for(1200), 4.0);
        assert_eq!(x_max_for(u64::MAX), MOST_NINES);
        let labels: Vec<String> = ticks(4.0).into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0%", "50%", "90%", "99%", "99.9%", "99.99%"]);
    }

    #[test]
    fn points_follow_the_histogram() {
        let mut h = new_histogram();
        for us in 1..=1000u64 {
            record(&mut h, us * 1000); // 1..1000 ms
        }
        let pts = points(&h, 3.0);
        assert_eq!(pts.len(), 151);
        assert_eq!(pts[0].0, 0.0);
        // At x = 1 (90 %): about 900 ms; at the end: the max.
        let at_90 = pts[50].1;
        assert!((895.0..=905.0).contains(&at_90), "{at_90}");
        assert!((pts[150].1 - 1000.0).abs() < 1.0, "{:?}", pts[150]);
        assert!(pts.windows(2).all(|w| w[0].1 <= w[1].1), "never decreasing");
        assert!(points(&new_histogram(), 3.0).is_empty());
    }
}
