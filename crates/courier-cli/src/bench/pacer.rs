//! When each open-loop request is due: a constant `--rate`, or `--stages` that ramp it.
//!
//! A constant rate finds no knee: a server that holds 5,000 req/s for ten seconds may fall over
//! at 5,500, and a run straight at 20,000 shows only the wreck. Stages, as k6's
//! `ramping-arrival-rate` and vegeta's linear pacer do, move the target rate linearly from where
//! the previous stage ended (the first from `--rate`, else 0) to each stage's rate over its
//! duration: `10s:1000,30s:5000,10s:0` ramps up to 1,000/s, on to 5,000/s, then down to
//! nothing. The schedule stays exact, not sampled: the number of requests due by time `t` is the
//! integral of the rate, and request `i` is due when that integral reaches `i`, solved in closed
//! form within a stage (a quadratic while the rate ramps). The timeline reports the target rate
//! of each second beside the achieved one.

use std::time::Duration;

use crate::secs::Secs;

/// One stage: reach `rate` (req/s) linearly over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub rate: f64,
}

/// The rate over time. Times are seconds since the run's first request was due.
#[derive(Debug, Clone, PartialEq)]
pub struct Pacer {
    start_rate: f64,
    /// Empty: `start_rate` forever.
    stages: Vec<Stage>,
}

impl Pacer {
    /// `rate` requests per second for ever.
    pub fn constant(rate: f64) -> Self {
        Self {
            start_rate: rate,
            stages: Vec::new(),
        }
    }

    /// Ramps from `start_rate` through `stages`; nothing is due after the last one.
    pub fn staged(start_rate: f64, stages: Vec<Stage>) -> Self {
        Self { start_rate, stages }
    }

    /// How long the stages last (`None` for a constant rate).
    pub fn total(&self) -> Option<Duration> {
        (!self.stages.is_empty()).then(|| self.stages.iter().map(|s| s.duration).sum())
    }

    /// The highest target rate.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.rate)
            .fold(self.start_rate, f64::max)
    }

    /// The target rate at `t` (the tests' view of a schedule; the pacer itself
    /// works from the count due, [`Pacer::count`]).
    #[cfg(test)]
    pub fn rate_at(&self, t: f64) -> f64 {
        let mut from = self.start_rate;
        let mut begin = 0.0;
        for stage in &self.stages {
            let length = stage.duration.as_secs_f64();
            if t < begin + length {
                return from + (stage.rate - from) * (t - begin) / length;
            }
            begin += length;
            from = stage.rate;
        }
        if self.stages.is_empty() {
            self.start_rate
        } else {
            0.0
        }
    }

    /// Requests due in `[0, t]`: the integral of the rate.
    pub fn count(&self, t: f64) -> f64 {
        if self.stages.is_empty() {
            return self.start_rate * t.max(0.0);
        }
        let mut from = self.start_rate;
        let mut begin = 0.0;
        let mut total = 0.0;
        for stage in &self.stages {
            let length = stage.duration.as_secs_f64();
            let tau = (t - begin).clamp(0.0, length);
            let slope = (stage.rate - from) / length;
            total += from * tau + slope * tau * tau / 2.0;
            if t < begin + length {
                break;
            }
            begin += length;
            from = stage.rate;
        }
        total
    }

    /// When request `i` (from 0) is due, or `None` if never (after the last stage).
    pub fn due(&self, i: u64) -> Option<Duration> {
        let n = i as f64;
        if self.stages.is_empty() {
            return Some(Duration::from_secs_f64(n / self.start_rate));
        }
        let mut from = self.start_rate;
        let mut begin = 0.0;
        let mut before = 0.0;
        for stage in &self.stages {
            let length = stage.duration.as_secs_f64();
            let within = (from + stage.rate) / 2.0 * length;
            if n < before + within {
                let tau = solve(from, (stage.rate - from) / length, n - before).min(length);
                return Some(Duration::from_secs_f64(begin + tau));
            }
            before += within;
            begin += length;
            from = stage.rate;
        }
        None
    }

    /// How many requests are due in `[from, to)`.
    pub fn due_between(&self, from: Duration, to: Duration) -> u64 {
        let first = self.count(from.as_secs_f64()).ceil();
        let end = self.count(to.as_secs_f64()).ceil();
        (end - first).max(0.0) as u64
    }
}

/// The `tau >= 0` at which `rate * tau + slope * tau² / 2 = n`, for `n` within the stage. Written
/// as `2n / (rate + sqrt(rate² + 2 slope n))`, which holds for a flat stage too and does not
/// lose precision when the slope is small.
fn solve(rate: f64, slope: f64, n: f64) -> f64 {
    if n <= 0.0 {
        return 0.0;
    }
    let root = (rate * rate + 2.0 * slope * n).max(0.0).sqrt();
    let denominator = rate + root;
    if denominator <= 0.0 {
        return 0.0;
    }
    2.0 * n / denominator
}

/// Parses `--stages`: `DURATION:RATE` pairs separated by commas, e.g. `10s:1000,30s:5000,10s:0`.
/// Durations take `s`, `ms` or `m` (minutes); rates are requests per second.
pub fn parse_stages(text: &str) -> Result<Vec<Stage>, String> {
    let stages = text
        .split(',')
        .map(|part| {
            let part = part.trim();
            let (duration, rate) = part
                .split_once(':')
                .ok_or_else(|| format!("stage `{part}` must be DURATION:RATE, e.g. 30s:5000"))?;
            let duration =
                stage_duration(duration.trim()).map_err(|e| format!("stage `{part}`: {e}"))?;
            if duration.is_zero() {
                return Err(format!("stage `{part}` must last more than 0 seconds"));
            }
            let rate = match rate.trim().parse::<f64>() {
                Ok(rate) if rate.is_finite() && rate >= 0.0 => rate,
                _ => {
                    return Err(format!(
                        "stage `{part}`: `{rate}` is not a rate (requests per second, 0 or more)"
                    ))
                }
            };
            Ok(Stage { duration, rate })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if stages.iter().all(|s| s.rate == 0.0) {
        return Err(format!(
            "`{text}`: every stage's rate is 0, so nothing would be sent"
        ));
    }
    Ok(stages)
}

/// `30s`, `500ms`, `2m`, `1.5`.
fn stage_duration(text: &str) -> Result<Duration, String> {
    text.parse::<Secs>().map(Secs::as_duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn a_constant_rate_is_due_every_period() {
        let p = Pacer::constant(500.0);
        assert_eq!(p.due(0), Some(Duration::ZERO));
        assert_eq!(p.due(500), Some(s(1)));
        assert_eq!(p.due_between(s(0), s(2)), 1000);
        assert_eq!(p.due_between(s(1), s(3)), 1000);
        assert_eq!(p.total(), None);
        // Due at 0, 0.4, 0.8: three in [0, 1) at 2.5/s.
        let p = Pacer::constant(2.5);
        assert_eq!(p.due_between(s(0), s(1)), 3);
        assert_eq!(p.due_between(s(1), s(1)), 0);
    }

    #[test]
    fn stages_ramp_linearly() {
        let p = Pacer::staged(0.0, parse_stages("10s:1000,10s:1000,10s:0").unwrap());
        assert_eq!(p.total(), Some(s(30)));
        assert_eq!(p.peak(), 1000.0);
        assert_eq!(p.rate_at(5.0), 500.0);
        assert_eq!(p.rate_at(15.0), 1000.0);
        assert_eq!(p.rate_at(25.0), 500.0);
        assert_eq!(p.rate_at(31.0), 0.0);
        // Ramp up: 5,000 requests; plateau: 10,000; ramp down: 5,000.
        assert_eq!(p.count(10.0), 5000.0);
        assert_eq!(p.count(20.0), 15000.0);
        assert_eq!(p.count(30.0), 20000.0);
        assert_eq!(p.count(99.0), 20000.0);
        assert_eq!(p.due_between(s(0), s(30)), 20000);
        // During the ramp, t = sqrt(2 i / slope): request 1,250 at 5 s.
        let at = p.due(1250).unwrap().as_secs_f64();
        assert!((at - 5.0).abs() < 1e-9, "{at}");
        assert!((p.due(10_000).unwrap().as_secs_f64() - 15.0).abs() < 1e-9);
        // Ramping down from 1,000/s, 3,750 requests are due in the first 5 s.
        assert!((p.due(18_750).unwrap().as_secs_f64() - 25.0).abs() < 1e-6);
        assert_eq!(p.due(20_000), None);
        // Due times never go backwards.
        let mut last = Duration::ZERO;
        for i in 0..20_000 {
            let due = p.due(i).unwrap();
            assert!(due >= last, "request {i}");
            last = due;
        }
    }

    #[test]
    fn the_first_stage_starts_from_the_rate() {
        let p = Pacer::staged(100.0, parse_stages("2s:300").unwrap());
        assert_eq!(p.rate_at(0.0), 100.0);
        assert_eq!(p.count(2.0), 400.0);
        // 100 t + 50 t² = 100: t = sqrt(3) - 1.
        let at = p.due(100).unwrap().as_secs_f64();
        assert!((at - (3.0_f64.sqrt() - 1.0)).abs() < 1e-9, "{at}");
    }

    #[test]
    fn parses_and_refuses_stages() {
        let stages = parse_stages("500ms:10, 2m:20,1.5:0").unwrap();
        assert_eq!(stages[0].duration, Duration::from_millis(500));
        assert_eq!(stages[1].duration, s(120));
        assert_eq!(stages[2].duration, Duration::from_millis(1500));
        for bad in ["", "10s", "10s:-1", "0s:5", "x:5", "10s:fast", "10s:0,5s:0"] {
            assert!(parse_stages(bad).is_err(), "{bad} should be refused");
        }
    }
}
