//! `--fail-if` thresholds: conditions on a run's figures that turn it into a failed CI step.
//!
//! As k6's thresholds do, they set the exit code ([`EXIT_THRESHOLD`], 99 as in k6), so a
//! pipeline can gate on "p99 under 5 ms, under 0.1 % errors" without parsing a report. They
//! are written as the condition that fails the run, because that is how people say it ("fail
//! if p99 > 5ms"):
//!
//! - `p50|p75|p90|p99|p99.9|max|mean OP DURATION` — time to the last response byte; the
//!   duration needs its unit: `250us`, `5ms`, `0.5s`, `1m` (the CLI's duration syntax; a bare
//!   number, which meant milliseconds before, is refused rather than read as seconds, so an old
//!   gate `p99 > 5` fails loudly instead of silently never firing);
//! - `errors OP N%` — the error rate; `errors OP N` — the number of failed requests;
//! - `rps OP N` — successful requests per second; `requests OP N` — requests finished;
//! - with `courier compare`, a signed percentage is relative to the first report:
//!   `p99 > +10%` fails a run whose p99 rose more than 10 %, `rps < -5%` one that lost 5 %.
//!
//! OP is one of `>`, `>=`, `<`, `<=`. Expressions are parsed by clap, so a typo is reported
//! before the run starts, with the flag's name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

/// Exit code when a `--fail-if` threshold did not hold (k6 uses 99 too), so CI can tell
/// "slower than allowed" from "could not run" (1).
pub const EXIT_THRESHOLD: u8 = 99;

/// One `--fail-if` expression. It is kept (and serialized) as the text the user wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Threshold {
    text: String,
    metric: Metric,
    op: Op,
    bound: Bound,
}

/// The figure of a run a threshold reads (`bench::thresholds` reads it from a report).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A percentile (0..=100) of the time to the last byte, or `max`/`mean`.
    Latency(Stat),
    /// Failed requests as a fraction of all.
    ErrorRate,
    /// Failed requests.
    ErrorCount,
    /// Successful requests per second.
    Rps,
    /// Requests finished.
    Requests,
}

/// Which statistic of the time to the last byte.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    P50,
    P75,
    P90,
    P99,
    P999,
    Max,
    Mean,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    /// In the metric's unit: ms, a fraction (error rate), a count or req/s.
    Absolute(f64),
    /// A change from the base report, in percent.
    Relative(f64),
}

/// What one threshold found, as printed and as kept in the JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// The expression as written.
    pub expression: String,
    /// Whether the failing condition was true.
    pub failed: bool,
    /// The figure it was checked against, e.g. `p99 = 7.20 ms` or `p99 +12.50%: 1.10 ms → 1.24 ms`.
    pub actual: String,
}

impl Threshold {
    /// Whether it compares against a base report (`+10%`), which only `compare` has.
    pub fn is_relative(&self) -> bool {
        matches!(self.bound, Bound::Relative(_))
    }

    /// The figure it reads.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Whether the failing condition holds for `figure`: the metric's value for an absolute
    /// threshold, its change from the base run in percent for a relative one.
    pub fn fails_at(&self, figure: f64) -> bool {
        let (Bound::Absolute(limit) | Bound::Relative(limit)) = self.bound;
        self.op.holds(figure, limit)
    }
}

/// Refuses relative thresholds where there is no base (`bench`), before the run starts.
pub fn absolute_only(thresholds: &[Threshold]) -> Result<()> {
    match thresholds.iter().find(|t| t.is_relative()) {
        Some(t) => Err(CliError::new(format!(
            "--fail-if '{}' is relative (a signed %): it needs a base run, so use it with `courier compare`",
            t.text
        ))),
        None => Ok(()),
    }
}

/// The lines that say which thresholds passed and which failed; empty without thresholds.
pub fn render(title: &str, checked: &[Checked]) -> String {
    if checked.is_empty() {
        return String::new();
    }
    let width = checked
        .iter()
        .map(|c| c.expression.chars().count())
        .max()
        .unwrap_or(0);
    let failed = checked.iter().filter(|c| c.failed).count();
    let mut out = format!("\n{title}: {} of {} failed\n", failed, checked.len());
    for c in checked {
        let mark = if c.failed { "FAIL" } else { "pass" };
        out.push_str(&format!(
            "  {mark}  {:<width$}  ({})\n",
            c.expression, c.actual
        ));
    }
    out
}

/// The error that ends a run some threshold failed, naming them.
pub fn failure(checked: &[Checked]) -> Option<CliError> {
    let failed: Vec<&str> = checked
        .iter()
        .filter(|c| c.failed)
        .map(|c| c.expression.as_str())
        .collect();
    (!failed.is_empty()).then(|| {
        CliError::with_code(
            EXIT_THRESHOLD,
            format!("threshold failed: --fail-if '{}'", failed.join("', '")),
        )
    })
}

impl Metric {
    /// Its name in an expression (`errors` for both the rate and the count).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Latency(Stat::P50) => "p50",
            Metric::Latency(Stat::P75) => "p75",
            Metric::Latency(Stat::P90) => "p90",
            Metric::Latency(Stat::P99) => "p99",
            Metric::Latency(Stat::P999) => "p99.9",
            Metric::Latency(Stat::Max) => "max",
            Metric::Latency(Stat::Mean) => "mean",
            Metric::ErrorRate | Metric::ErrorCount => "errors",
            Metric::Rps => "rps",
            Metric::Requests => "requests",
        }
    }

    /// A value of it as a report shows it.
    pub fn show(self, value: f64) -> String {
        match self {
            Metric::Latency(_) => format!("{value:.2} ms"),
            Metric::ErrorRate => format!("{:.3}%", value * 100.0),
            Metric::Rps => format!("{value:.0}"),
            Metric::ErrorCount | Metric::Requests => format!("{value:.0}"),
        }
    }
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
            Op::Lt => value < limit,
            Op::Le => value <= limit,
        }
    }
}

impl FromStr for Threshold {
    type Err = String;

    /// Parses a threshold as the command line gives it (a latency needs its unit).
    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text, Bare::Refused)
    }
}

/// What a bare latency number (no unit) means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bare {
    /// On the command line: refused (it meant ms before the one duration syntax).
    Refused,
    /// In a report written before that: milliseconds, as it meant when written.
    Millis,
}

impl Threshold {
    fn parse(text: &str, bare: Bare) -> Result<Self, String> {
        let text = text.trim();
        let at = text.find(['<', '>']).ok_or_else(|| {
            format!("`{text}`: expected METRIC OP VALUE, e.g. 'p99 > 5ms', 'errors > 0.1%', 'rps < 50000'")
        })?;
        let (name, rest) = text.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else {
            (Op::Lt, &rest[1..])
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        let number = |v: &str| -> Result<f64, String> {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .ok_or_else(|| format!("`{text}`: `{value}` is not a number"))
        };
        // A sign in front of a percentage makes it a change from the base run.
        if value.starts_with(['+', '-']) {
            let pct = value.strip_suffix('%').ok_or_else(|| {
                format!("`{text}`: a signed value is a change from the base run and needs a %, e.g. +10%")
            })?;
            let metric = metric(&name, true).map_err(|e| format!("`{text}`: {e}"))?;
            return Ok(Self {
                text: text.to_owned(),
                metric,
                op,
                bound: Bound::Relative(number(pct)?),
            });
        }
        let percent = value.ends_with('%');
        let metric = metric(&name, percent).map_err(|e| format!("`{text}`: {e}"))?;
        let limit = match metric {
            Metric::Latency(_) => millis(value, bare).map_err(|e| format!("`{text}`: {e}"))?,
            Metric::ErrorRate => number(value.trim_end_matches('%'))? / 100.0,
            _ if percent => return Err(format!("`{text}`: {name} is not a percentage")),
            _ => number(value)?,
        };
        Ok(Self {
            text: text.to_owned(),
            metric,
            op,
            bound: Bound::Absolute(limit),
        })
    }
}

/// The metric named `name`; `errors` is a rate when the value is a percentage.
fn metric(name: &str, percent: bool) -> Result<Metric, String> {
    Ok(match name {
        "p50" => Metric::Latency(Stat::P50),
        "p75" => Metric::Latency(Stat::P75),
        "p90" => Metric::Latency(Stat::P90),
        "p99" => Metric::Latency(Stat::P99),
        "p99.9" | "p999" => Metric::Latency(Stat::P999),
        "max" => Metric::Latency(Stat::Max),
        "mean" => Metric::Latency(Stat::Mean),
        "errors" if percent => Metric::ErrorRate,
        "errors" => Metric::ErrorCount,
        "rps" => Metric::Rps,
        "requests" => Metric::Requests,
        other => {
            return Err(format!(
                "unknown metric `{other}`: use p50, p75, p90, p99, p99.9, max, mean, errors, rps or requests"
            ))
        }
    })
}

/// A latency limit in milliseconds, from the CLI's duration syntax (`250us`, `5ms`, `0.5s`,
/// `1m`); a bare number as `bare` says.
fn millis(value: &str, bare: Bare) -> Result<f64, String> {
    let value = value.trim();
    let unitless = value.parse::<f64>().is_ok();
    if unitless && bare == Bare::Millis {
        return millis(&format!("{value}ms"), Bare::Refused);
    }
    if unitless {
        return Err(format!(
            "`{value}` needs a unit: write e.g. {value}ms or {value}s (a bare number meant ms before \
             the CLI's one duration syntax, where it would mean seconds)"
        ));
    }
    value
        .parse::<crate::secs::Secs>()
        .map(|secs| secs.as_f64() * 1000.0)
        .map_err(|_| format!("`{value}` is not a duration: write e.g. 5ms, 0.5s or 250us"))
}

/// Reading a report back: a threshold keeps the meaning it had when the report was written.
impl TryFrom<String> for Threshold {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text, Bare::Millis)
    }
}

impl From<Threshold> for String {
    fn from(t: Threshold) -> String {
        t.text
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Threshold {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn parses_the_issue_examples() {
        assert_eq!(t("p99 > 5ms").bound, Bound::Absolute(5.0));
        assert_eq!(t("p99 > 5ms").metric, Metric::Latency(Stat::P99));
        assert_eq!(t("errors > 0.1%").metric, Metric::ErrorRate);
        assert_eq!(t("errors > 0.1%").bound, Bound::Absolute(0.001));
        assert_eq!(t("errors>3").metric, Metric::ErrorCount);
        assert_eq!(t("rps < 50000").op, Op::Lt);
        assert_eq!(t("p99 > +10%").bound, Bound::Relative(10.0));
        assert_eq!(t("rps < -5%").bound, Bound::Relative(-5.0));
        assert_eq!(t("p99.9 >= 0.5s").bound, Bound::Absolute(500.0));
        assert_eq!(t("max <= 250us").bound, Bound::Absolute(0.25));
        assert_eq!(t("p99 > 1m").bound, Bound::Absolute(60_000.0));
        assert!(t("p99 > +10%").is_relative());
    }

    #[test]
    fn refuses_typos_with_a_reason() {
        for (bad, needle) in [
            ("p98 > 5ms", "unknown metric"),
            ("p99 5ms", "METRIC OP VALUE"),
            ("p99 > fast", "not a duration"),
            ("rps < 5%", "not a percentage"),
            ("p99 > +10", "needs a %"),
            ("errors > x%", "not a number"),
        ] {
            let err = bad.parse::<Threshold>().unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn a_bare_latency_is_refused_on_the_command_line_and_ms_in_old_reports() {
        let err = "p99 > 5".parse::<Threshold>().unwrap_err();
        assert!(err.contains("needs a unit"), "{err}");
        // A report written when a bare number meant ms still loads, with that meaning.
        let old: Threshold = serde_json::from_str("\"p99 > 5\"").unwrap();
        assert_eq!(old.bound, Bound::Absolute(5.0));
        // Counts and rates stay bare numbers.
        assert_eq!(t("rps < 5").bound, Bound::Absolute(5.0));
    }

    #[test]
    fn serializes_as_the_text() {
        let json = serde_json::to_string(&t("p99 > 5ms")).unwrap();
        assert_eq!(json, "\"p99 > 5ms\"");
        assert_eq!(
            serde_json::from_str::<Threshold>(&json).unwrap(),
            t("p99 > 5ms")
        );
    }
}
