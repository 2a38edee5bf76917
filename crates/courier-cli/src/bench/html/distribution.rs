//! The latency histogram: how many requests took how long.
//!
//! The spectrum shows the tail; the histogram shows the body: one mode or two (a cache hit and
//! a miss, a pooled connection and a new one). Latencies span decades, so the bins are spaced
//! evenly in log(latency) from the fastest to the slowest request, and the bars are a
//! percentage of the successful requests. Counts come from the run's full histogram.

use hdrhistogram::Histogram;

use super::svg::Chart;

/// Bars across the range.
const BINS: usize = 40;

/// `(from ms, to ms, % of requests)` per bin, log-spaced; empty without samples.
pub fn bins(histogram: &Histogram<u64>) -> Vec<(f64, f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    let low = (histogram.min().max(1) as f64).log10();
    let high = (histogram.max().max(1) as f64).log10();
    // A narrow range still gets a visible width (± 10 %).
    let (low, high) = if high - low < 0.08 {
        (low - 0.04, high + 0.04)
    } else {
        (low, high + 1e-9)
    };
    let width = (high - low) / BINS as f64;
    let mut counts = vec![0u64; BINS];
    for v in histogram.iter_recorded() {
        let x = (v.value_iterated_to().max(1) as f64).log10();
        let bin = (((x - low) / width).floor().max(0.0) as usize).min(BINS - 1);
        counts[bin] += v.count_at_value();
    }
    let total = histogram.len() as f64;
    counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let from = 10f64.powf(low + i as f64 * width) / 1000.0;
            let to = 10f64.powf(low + (i + 1) as f64 * width) / 1000.0;
            (from, to, 100.0 * c as f64 / total)
        })
        .collect()
}

/// Ticks at 1, 2, 5 × 10^k ms within `[low, high]` (ms), at their log10 positions.
pub fn log_ticks(low: f64, high: f64) -> Vec<(f64, String)> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high * 1.0001 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * decade;
            if v >= low * 0.9999 && v <= high * 1.0001 {
                let label = if v >= 1.0 {
                    crate::bench::format::group_thousands(&format!("{v:.0}"))
                } else {
                    format!("{}", (v * 1e6).round() / 1e6)
                };
                ticks.push((v.log10(), label));
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// The histogram chart; the x axis is log10(ms), labelled in ms.
pub fn chart(histogram: &Histogram<u64>) -> Chart {
    let bins = bins(histogram);
    let (low, high) = match (bins.first(), bins.last()) {
        (Some(first), Some(last)) => (first.0, last.1),
        _ => (0.1, 1.0),
    };
    let mut ticks = log_ticks(low, high);
    if ticks.len() < 2 {
        ticks = vec![
            (low.log10(), format!("{low:.3}")),
            (high.log10(), format!("{high:.3}")),
        ];
    }
    Chart {
        title: "Latency histogram (time to last byte)".to_owned(),
        x_label: "latency (ms, log scale)".to_owned(),
        y_label: "% of requests".to_owned(),
        x_min: low.log10(),
        x_max: Some(high.log10()),
        x_ticks: ticks,
        bars: bins
            .iter()
            .map(|&(from, to, pct)| (from.log10(), to.log10(), pct))
            .collect(),
        series: Vec::new(),
        class: "histogram",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::{new_histogram, record};

    #[test]
    fn bins_add_up_to_all_requests() {
        let mut h = new_histogram();
        for us in [100u64, 120, 150, 1000, 1100, 50_000] {
            record(&mut h, us);
        }
        let bins = bins(&h);
        assert_eq!(bins.len(), BINS);
        let total: f64 = bins.iter().map(|b| b.2).sum();
        assert!((total - 100.0).abs() < 1e-9, "{total}");
        assert!(bins[0].0 <= 0.1 && bins[BINS - 1].1 >= 50.0, "{bins:?}");
        assert!(bins.windows(2).all(|w| (w[0].1 - w[1].0).abs() < 1e-9));
        assert!(super::bins(&new_histogram()).is_empty());
    }

    #[test]
    fn log_ticks_are_one_two_five() {
        let labels: Vec<String> = log_ticks(0.08, 60.0).into_iter().map(|t| t.1).collect();
        assert_eq!(
            labels,
            ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50"]
        );
    }
}
