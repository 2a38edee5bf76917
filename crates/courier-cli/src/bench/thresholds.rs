//! `--fail-if` thresholds checked against a run's report (and, for a relative one, a base
//! run's): reading the figures out of a [`BenchReport`] is the report's business, so it lives
//! here, and `crate::threshold` (the expressions, their parsing and rendering) stays a leaf
//! that knows no report.

use super::json::BenchReport;
use super::stats::percent_change;
use crate::error::{CliError, Result};
use crate::threshold::{Checked, Metric, Stat, Threshold};

/// Checks `threshold` on `report`; relative ones need `base` (`None` is an error).
pub fn check(
    threshold: &Threshold,
    report: &BenchReport,
    base: Option<&BenchReport>,
) -> Result<Checked> {
    let metric = threshold.metric();
    let value = read(metric, report);
    let (failed, actual) = if !threshold.is_relative() {
        (
            threshold.fails_at(value),
            format!("{} = {}", metric.name(), metric.show(value)),
        )
    } else {
        let base = base.ok_or_else(|| {
            CliError::new(format!(
                "--fail-if '{threshold}' is relative: it needs a base run, so use it with `courier compare`"
            ))
        })?;
        let from = read(metric, base);
        match percent_change(from, value) {
            Some(change) => (
                threshold.fails_at(change),
                format!(
                    "{} {change:+.2}%: {} → {}",
                    metric.name(),
                    metric.show(from),
                    metric.show(value)
                ),
            ),
            // From zero any rise is infinite and no change is 0 %.
            None => {
                let change = if value > from { f64::INFINITY } else { 0.0 };
                (
                    threshold.fails_at(change),
                    format!(
                        "{} from {} to {}",
                        metric.name(),
                        metric.show(from),
                        metric.show(value)
                    ),
                )
            }
        }
    };
    Ok(Checked {
        expression: threshold.to_string(),
        failed,
        actual,
    })
}

/// The figure `metric` names in `report`.
fn read(metric: Metric, r: &BenchReport) -> f64 {
    let p = &r.latency_last_byte_ms;
    match metric {
        Metric::Latency(stat) => match stat {
            Stat::P50 => p.p50,
            Stat::P75 => p.p75,
            Stat::P90 => p.p90,
            Stat::P99 => p.p99,
            Stat::P999 => p.p999,
            Stat::Max => p.max,
            Stat::Mean => p.mean,
        },
        Metric::ErrorRate => r.error_rate,
        Metric::ErrorCount => r.errors as f64,
        Metric::Rps => r.rps,
        Metric::Requests => r.requests as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::json::tests::sample_report;
    use crate::threshold::{absolute_only, failure, render, EXIT_THRESHOLD};

    fn t(text: &str) -> Threshold {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn checks_against_a_report() {
        // The sample: p99 to the last byte 6 ms, 1 of 4 failed, 6 req/s.
        let r = sample_report();
        assert!(check(&t("p99 > 5ms"), &r, None).unwrap().failed);
        assert!(!check(&t("p99 > 6.5ms"), &r, None).unwrap().failed);
        assert!(check(&t("errors > 0.1%"), &r, None).unwrap().failed);
        assert!(!check(&t("errors > 30%"), &r, None).unwrap().failed);
        assert!(check(&t("rps < 50000"), &r, None).unwrap().failed);
        let checked = check(&t("p99 > 5ms"), &r, None).unwrap();
        assert_eq!(checked.actual, "p99 = 6.00 ms");
    }

    #[test]
    fn relative_thresholds_need_a_base() {
        let base = sample_report();
        let mut slower = sample_report();
        slower.latency_last_byte_ms.p99 = 6.9; // +15%
        let rise = t("p99 > +10%");
        let checked = check(&rise, &slower, Some(&base)).unwrap();
        assert!(checked.failed, "{checked:?}");
        assert!(checked.actual.contains("+15.00%"), "{checked:?}");
        assert!(
            !check(&t("p99 > +20%"), &slower, Some(&base))
                .unwrap()
                .failed
        );
        assert!(check(&rise, &slower, None).is_err());
        assert!(absolute_only(&[t("p99 > 5ms")]).is_ok());
        assert!(absolute_only(&[rise]).is_err());
    }

    #[test]
    fn renders_pass_and_fail_and_the_error_names_the_failed() {
        let r = sample_report();
        let checked: Vec<Checked> = [t("p99 > 5ms"), t("errors > 30%")]
            .iter()
            .map(|t| check(t, &r, None).unwrap())
            .collect();
        let text = render("thresholds", &checked);
        assert!(text.contains("thresholds: 1 of 2 failed"), "{text}");
        assert!(text.contains("FAIL  p99 > 5ms"), "{text}");
        assert!(text.contains("pass  errors > 30%"), "{text}");
        let err = failure(&checked).unwrap();
        assert_eq!(err.code(), EXIT_THRESHOLD);
        assert!(err.to_string().contains("p99 > 5ms"), "{err}");
        assert!(failure(&checked[1..]).is_none());
    }
}
