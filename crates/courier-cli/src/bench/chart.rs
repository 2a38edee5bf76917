//! `--chart`: the per-second timeline as terminal sparklines.
//!
//! A table of totals hides what happened over time (a slow first second of connection setup, a
//! dip when connections rotate); one line of block characters per series shows it at a glance.
//! Long runs are squeezed to [`WIDTH`] columns: rates and gauges are averaged per column, while
//! latency keeps each column's worst second, so a spike is never averaged away.

use std::fmt::Write as _;

use super::format::group_thousands;
use super::json::{BenchReport, SampleFigure};

/// Most columns a sparkline takes.
pub const WIDTH: usize = 60;

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// How a series combines the seconds that share a column.
#[derive(Clone, Copy)]
enum Combine {
    Mean,
    Max,
}

/// The chart: one sparkline per series, with its min and max.
pub fn render(report: &BenchReport) -> String {
    let timeline = &report.timeline;
    if timeline.is_empty() {
        return "timeline: no complete second was measured\n".to_owned();
    }
    let series: [(&str, SampleFigure, Combine); 5] = [
        ("requests/s", |s| s.rps, Combine::Mean),
        ("p99 (ms)", |s| s.p99_ms, Combine::Max),
        ("connections", |s| s.connections_open as f64, Combine::Mean),
        ("in flight", |s| s.requests_active as f64, Combine::Mean),
        ("CPU %", |s| s.cpu_pct.unwrap_or(0.0), Combine::Mean),
    ];
    let mut out = format!(
        "timeline: {} s, one column per {}\n",
        timeline.len(),
        if timeline.len() > WIDTH {
            format!("{:.1} s", timeline.len() as f64 / WIDTH as f64)
        } else {
            "second".to_owned()
        }
    );
    let targets = timeline.iter().any(|s| s.target_rps.is_some());
    let target: [(&str, SampleFigure, Combine); 1] =
        [("target/s", |s| s.target_rps.unwrap_or(0.0), Combine::Mean)];
    let extra = if targets { &target[..] } else { &[] };
    for &(name, value, combine) in series
        .iter()
        .take(1)
        .chain(extra)
        .chain(series.iter().skip(1))
    {
        let values: Vec<f64> = timeline.iter().map(value).collect();
        let columns = squeeze(&values, WIDTH, combine);
        let (low, high) = bounds(&values);
        let _ = writeln!(
            out,
            "{name:<12} {}  min {}  max {}",
            sparkline(&columns),
            fmt(low),
            fmt(high)
        );
    }
    out
}

/// One block character per value, scaled from zero to the largest value.
pub fn sparkline(values: &[f64]) -> String {
    let high = values.iter().copied().fold(0.0_f64, f64::max);
    values
        .iter()
        .map(|&v| {
            if high <= 0.0 || !v.is_finite() || v <= 0.0 {
                BLOCKS[0]
            } else {
                let level = (v / high * (BLOCKS.len() - 1) as f64).round() as usize;
                BLOCKS[level.min(BLOCKS.len() - 1)]
            }
        })
        .collect()
}

/// Reduces `values` to at most `width` columns.
fn squeeze(values: &[f64], width: usize, combine: Combine) -> Vec<f64> {
    if values.len() <= width || width == 0 {
        return values.to_vec();
    }
    (0..width)
        .map(|col| {
            let from = col * values.len() / width;
            let to = ((col + 1) * values.len() / width).max(from + 1);
            let group = &values[from..to];
            match combine {
                Combine::Mean => group.iter().sum::<f64>() / group.len() as f64,
                Combine::Max => group.iter().copied().fold(f64::MIN, f64::max),
            }
        })
        .collect()
}

fn bounds(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

fn fmt(value: f64) -> String {
    if value.abs() >= 100.0 {
        group_thousands(&format!("{value:.0}"))
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_to_the_largest_value() {
        assert_eq!(sparkline(&[0.0, 50.0, 100.0]), "▁▅█");
        assert_eq!(sparkline(&[0.0, 0.0]), "▁▁");
        assert_eq!(sparkline(&[]), "");
    }

    #[test]
    fn long_timelines_are_squeezed_keeping_spikes() {
        let mut values = vec![1.0; 120];
        values[7] = 50.0;
        let max = squeeze(&values, 60, Combine::Max);
        assert_eq!(max.len(), 60);
        assert_eq!(max[3], 50.0);
        let mean = squeeze(&values, 60, Combine::Mean);
        assert_eq!(mean[3], 25.5);
        assert_eq!(squeeze(&[1.0, 2.0], 60, Combine::Mean), [1.0, 2.0]);
    }

    #[test]
    fn chart_has_a_line_per_series() {
        let report = crate::bench::json::tests::sample_report();
        let text = render(&report);
        for name in ["requests/s", "p99 (ms)", "connections", "CPU %"] {
            assert!(text.contains(name), "{text}");
        }
        let mut empty = report;
        empty.timeline.clear();
        assert!(render(&empty).contains("no complete second"));
    }
}
