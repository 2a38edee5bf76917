//! The file's scalar values that TOML has no type for: durations with a
//! unit (`"250ms"`, `"2m"`), and limits that may be `"none"`.
//!
//! Why a file of its own: every section (pool, middleware, cluster) takes
//! them, and their parsing rules (units, the spellings of "none") must be
//! one and the same everywhere.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A duration with a unit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Dur(pub(super) Duration);

/// A duration, or `"none"`.
#[derive(Debug, Clone, Copy)]
pub(super) struct OptDur(pub(super) Option<Duration>);

/// A number, or `"none"`.
#[derive(Debug, Clone, Copy)]
pub(super) struct OptNum(pub(super) Option<u64>);

pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{s:?} needs a unit (ms, s, m, h)"))?;
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration"))?;
    let scale = match unit.trim() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        other => return Err(format!("unknown unit {other:?} in {s:?} (ms, s, m, h)")),
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("{s:?} is out of range"))
}

pub(super) fn is_none(s: &str) -> bool {
    matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "none" | "off" | "never" | "infinite" | "unlimited"
    )
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for OptDur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if is_none(&s) {
            return Ok(OptDur(None));
        }
        parse_duration(&s)
            .map(|v| OptDur(Some(v)))
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for OptNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => Ok(OptNum(Some(n))),
            Raw::Str(s) if is_none(&s) => Ok(OptNum(None)),
            Raw::Str(s) => Err(serde::de::Error::custom(format!(
                "expected a number or \"none\", found {s:?}"
            ))),
        }
    }
}

/// Converts a file value into the config field's type.
pub(super) trait IntoValue<T> {
    fn into_value(self) -> T;
}

impl<T> IntoValue<T> for T {
    fn into_value(self) -> T {
        self
    }
}

impl IntoValue<Duration> for Dur {
    fn into_value(self) -> Duration {
        self.0
    }
}

impl IntoValue<Option<u64>> for OptNum {
    fn into_value(self) -> Option<u64> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1 h").unwrap(), Duration::from_secs(3600));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("10 parsecs").is_err());
    }
}
