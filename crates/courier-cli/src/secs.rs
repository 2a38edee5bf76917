//! Durations as the command line spells them: the one syntax of every time flag.
//!
//! A number with a unit, `250us`, `250ms`, `5s`, `1m`, `1h`, fractions allowed (`0.5s`), or
//! a bare number of seconds (`10`, `0.25`), as in the TOML configuration. One syntax for every
//! flag, so nobody has to remember which flag counts in which unit.
//! Knobs whose library setting is an `Option<Duration>` also take `none` (meaning "never"),
//! so "use the library default" (flag absent) and "switch it off" stay distinguishable.
//! Both types serialize as a number of seconds so the JSON report stays easy to read.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A non-negative, finite number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Secs(f64);

impl Secs {
    /// Validates a number of seconds; the error says why it was refused.
    pub fn new(secs: f64) -> Result<Self, String> {
        if !secs.is_finite() || secs < 0.0 {
            return Err(format!(
                "`{secs}` is not a duration: expected a non-negative number of seconds"
            ));
        }
        // Refuse what `Duration` cannot hold, so `as_duration` never panics later.
        Duration::try_from_secs_f64(secs).map_err(|e| format!("`{secs}` seconds: {e}"))?;
        Ok(Self(secs))
    }

    /// The value as a `Duration`.
    pub fn as_duration(self) -> Duration {
        Duration::from_secs_f64(self.0)
    }

    /// The value in seconds.
    pub fn as_f64(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Secs {
    type Error = String;
    fn try_from(secs: f64) -> Result<Self, String> {
        Self::new(secs)
    }
}

impl From<Secs> for f64 {
    fn from(secs: Secs) -> f64 {
        secs.0
    }
}

impl FromStr for Secs {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        // Longest suffixes first: `ms` and `us` end in `s`.
        const UNITS: [(&str, f64); 6] = [
            ("ms", 1e-3),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("s", 1.0),
            ("m", 60.0),
            ("h", 3600.0),
        ];
        let (number, scale) = UNITS
            .iter()
            .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))
            .unwrap_or((text, 1.0));
        let value: f64 = number.trim().parse().map_err(|_| {
            format!(
                "`{text}` is not a duration: expected e.g. 250ms, 5s, 1m, or a bare number of seconds"
            )
        })?;
        Self::new(value * scale)
    }
}

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0)
    }
}

/// A duration that can also be switched off with `none` (maps to `Option<Duration>`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SecsOrNoneRepr", into = "SecsOrNoneRepr")]
pub enum SecsOrNone {
    /// A finite duration.
    Secs(Secs),
    /// Explicitly disabled ("never").
    None,
}

impl SecsOrNone {
    /// The library's representation: `None` means the limit is switched off.
    pub fn as_option(self) -> Option<Duration> {
        match self {
            Self::Secs(secs) => Some(secs.as_duration()),
            Self::None => None,
        }
    }
}

impl FromStr for SecsOrNone {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" | "never" | "off" => Ok(Self::None),
            _ => text
                .parse::<Secs>()
                .map(Self::Secs)
                .map_err(|e| format!("{e}, or `none` to disable")),
        }
    }
}

impl fmt::Display for SecsOrNone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Secs(secs) => secs.fmt(f),
            Self::None => f.write_str("none"),
        }
    }
}

/// JSON shape of [`SecsOrNone`]: a number of seconds or the string `"none"`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SecsOrNoneRepr {
    Secs(f64),
    Word(String),
}

impl From<SecsOrNone> for SecsOrNoneRepr {
    fn from(value: SecsOrNone) -> Self {
        match value {
            SecsOrNone::Secs(secs) => Self::Secs(secs.as_f64()),
            SecsOrNone::None => Self::Word("none".to_owned()),
        }
    }
}

impl TryFrom<SecsOrNoneRepr> for SecsOrNone {
    type Error = String;
    fn try_from(repr: SecsOrNoneRepr) -> Result<Self, String> {
        match repr {
            SecsOrNoneRepr::Secs(secs) => Secs::new(secs).map(Self::Secs),
            SecsOrNoneRepr::Word(word) => word.parse(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seconds_fractions_and_suffixes() {
        assert_eq!(
            "2".parse::<Secs>().unwrap().as_duration(),
            Duration::from_secs(2)
        );
        assert_eq!(
            "0.25".parse::<Secs>().unwrap().as_duration(),
            Duration::from_millis(250)
        );
        assert_eq!(
            "500ms".parse::<Secs>().unwrap().as_duration(),
            Duration::from_millis(500)
        );
        assert_eq!(
            "3s".parse::<Secs>().unwrap().as_duration(),
            Duration::from_secs(3)
        );
        assert_eq!(
            "1m".parse::<Secs>().unwrap().as_duration(),
            Duration::from_secs(60)
        );
        assert_eq!(
            "1.5h".parse::<Secs>().unwrap().as_duration(),
            Duration::from_secs(5400)
        );
        assert_eq!(
            "250us".parse::<Secs>().unwrap().as_duration(),
            Duration::from_micros(250)
        );
    }

    #[test]
    fn refuses_negative_nan_and_garbage() {
        for bad in [
            "-1", "NaN", "inf", "abc", "", "1e300", "5 sec", "ms", "1d", "2mm",
        ] {
            assert!(bad.parse::<Secs>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn none_switches_a_limit_off() {
        assert_eq!("none".parse::<SecsOrNone>().unwrap().as_option(), None);
        assert_eq!(
            "1.5".parse::<SecsOrNone>().unwrap().as_option(),
            Some(Duration::from_millis(1500))
        );
        let err = "soon".parse::<SecsOrNone>().unwrap_err();
        assert!(err.contains("none"), "{err}");
    }

    #[test]
    fn serializes_as_seconds_or_none_and_back() {
        let on: SecsOrNone = "1.5".parse().unwrap();
        let off = SecsOrNone::None;
        assert_eq!(serde_json::to_string(&on).unwrap(), "1.5");
        assert_eq!(serde_json::to_string(&off).unwrap(), "\"none\"");
        assert_eq!(serde_json::from_str::<SecsOrNone>("1.5").unwrap(), on);
        assert_eq!(serde_json::from_str::<SecsOrNone>("\"none\"").unwrap(), off);
        assert!(serde_json::from_str::<Secs>("-2").is_err());
    }
}
