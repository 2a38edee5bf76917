//! Per-replica fault profiles for the cluster scenario, and their compact
//! command-line form.
//!
//! Why a syntax of its own: `courier bench --scenario cluster` and
//! `courier serve --replicas` take the faults as flags, one per fault, so a
//! scenario ("replica 3 ten times slower, replica 7 answering 503, replica 5
//! stuck at 2 s from 10 s for 30 s") is one readable command line:
//!
//! ```text
//! REPLICA=KIND[@START][+LENGTH]
//!   REPLICA  0-based index, or * for every replica
//!   KIND     slow:K       service time x K (K > 0, e.g. 10 or 2.5)
//!            503          answer 503 at once (not queued)
//!            reset        reset the connection instead of answering
//!            flap:PERIOD  503 for PERIOD, healthy for PERIOD, over and over
//!            stall        accept the request and never answer it
//!            stall:D      answer each request after D (not queued), e.g. stall:2s
//!   @START   the fault begins START after the load starts (default: at once)
//!   +LENGTH  and lasts LENGTH (default: to the end)
//! ```
//!
//! Durations take `ms`, `s` or `m` (a bare number is seconds). Examples:
//! `3=slow:10`, `7=503`, `5=stall:2s@10s+30s`, `*=503`, `2=flap:5s@20s`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Which replicas a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// The replica with this 0-based index.
    One(usize),
    /// Every replica.
    All,
}

impl ReplicaSelector {
    /// Whether replica `index` is selected.
    pub fn selects(self, index: usize) -> bool {
        match self {
            ReplicaSelector::One(i) => i == index,
            ReplicaSelector::All => true,
        }
    }
}

/// What a faulty replica does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultKind {
    /// Service time × this factor.
    Slow(f64),
    /// 503 at once, without queueing.
    Unavailable,
    /// The connection is reset instead of an answer.
    Reset,
    /// 503 for a period, then healthy for a period, alternating (down first).
    Flap(Duration),
    /// Never answer (`None`), or answer after this long without queueing.
    Stall(Option<Duration>),
}

/// One fault of the profile: who, what, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicaFault {
    /// The replicas it applies to.
    pub replica: ReplicaSelector,
    /// What they do.
    pub kind: FaultKind,
    /// When it begins, from the start of the load.
    pub start: Duration,
    /// How long it lasts (`None`: to the end).
    pub length: Option<Duration>,
}

impl ReplicaFault {
    /// Whether the fault is on at `t` (time since the load started).
    pub fn active_at(&self, t: Duration) -> bool {
        t >= self.start && self.length.is_none_or(|l| t < self.start + l)
    }

    /// When the fault ends, if it does.
    pub fn end(&self) -> Option<Duration> {
        self.length.map(|l| self.start + l)
    }
}

impl FromStr for ReplicaFault {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let help = "expected REPLICA=KIND[@START][+LENGTH], e.g. 3=slow:10, 7=503, \
                    5=stall:2s@10s+30s (KIND: slow:K, 503, reset, flap:PERIOD, stall, stall:D)";
        let (who, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: {help}"))?;
        let replica = match who.trim() {
            "*" => ReplicaSelector::All,
            n => ReplicaSelector::One(
                n.parse()
                    .map_err(|_| format!("`{text}`: replica `{n}` is not an index or *"))?,
            ),
        };
        let (rest, length) = match rest.split_once('+') {
            Some((rest, length)) => (rest, Some(duration(length, text)?)),
            None => (rest, None),
        };
        let (kind, start) = match rest.split_once('@') {
            Some((kind, start)) => (kind, duration(start, text)?),
            None => (rest, Duration::ZERO),
        };
        let kind = match kind.split_once(':') {
            None if kind == "503" => FaultKind::Unavailable,
            None if kind == "reset" => FaultKind::Reset,
            None if kind == "stall" => FaultKind::Stall(None),
            Some(("slow", k)) => match k.parse::<f64>() {
                Ok(k) if k.is_finite() && k > 0.0 => FaultKind::Slow(k),
                _ => return Err(format!("`{text}`: slow:K needs a factor K > 0")),
            },
            Some(("flap", period)) => {
                let period = duration(period, text)?;
                if period.is_zero() {
                    return Err(format!("`{text}`: flap:PERIOD needs a period > 0"));
                }
                FaultKind::Flap(period)
            }
            Some(("stall", d)) => FaultKind::Stall(Some(duration(d, text)?)),
            _ => return Err(format!("`{text}`: unknown fault `{kind}`; {help}")),
        };
        Ok(ReplicaFault {
            replica,
            kind,
            start,
            length,
        })
    }
}

impl fmt::Display for ReplicaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.replica {
            ReplicaSelector::One(i) => write!(f, "{i}=")?,
            ReplicaSelector::All => f.write_str("*=")?,
        }
        match self.kind {
            FaultKind::Slow(k) => write!(f, "slow:{k}")?,
            FaultKind::Unavailable => f.write_str("503")?,
            FaultKind::Reset => f.write_str("reset")?,
            FaultKind::Flap(p) => write!(f, "flap:{}", show(p))?,
            FaultKind::Stall(None) => f.write_str("stall")?,
            FaultKind::Stall(Some(d)) => write!(f, "stall:{}", show(d))?,
        }
        if !self.start.is_zero() {
            write!(f, "@{}", show(self.start))?;
        }
        if let Some(l) = self.length {
            write!(f, "+{}", show(l))?;
        }
        Ok(())
    }
}

/// `2s`, `500ms`, `1.5s`, `1m`, `3` (seconds): a duration as the fault
/// syntax writes it.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    duration(text, text)
}

fn duration(text: &str, whole: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    // `try_from`: a number too large for a `Duration` is an error, not a panic.
    match number
        .parse::<f64>()
        .map(|n| Duration::try_from_secs_f64(n * unit))
    {
        Ok(Ok(d)) => Ok(d),
        _ => Err(format!(
            "`{whole}`: `{text}` is not a duration (e.g. 500ms, 2s, 1m)"
        )),
    }
}

/// A duration as the syntax writes it.
fn show(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        // Not rounded: what is shown parses back to the same duration.
        format!("{}ms", d.as_secs_f64() * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> ReplicaFault {
        s.parse().unwrap()
    }

    #[test]
    fn every_kind_parses_and_prints_back() {
        for s in [
            "3=slow:10",
            "7=503",
            "5=stall:2s@10s+30s",
            "*=503",
            "2=flap:5s@20s",
            "0=reset+3s",
            "1=stall",
            "4=stall:500ms",
        ] {
            assert_eq!(parse(s).to_string(), s);
        }
        let f = parse("5=stall:2s@10s+30s");
        assert_eq!(f.replica, ReplicaSelector::One(5));
        assert_eq!(f.kind, FaultKind::Stall(Some(Duration::from_secs(2))));
        assert_eq!(f.start, Duration::from_secs(10));
        assert_eq!(f.end(), Some(Duration::from_secs(40)));
        assert_eq!(parse("3=slow:2.5").kind, FaultKind::Slow(2.5));
        // Below a millisecond, printing back loses nothing (it rounded to
        // 0 ms, and `flap:0ms` is refused: the fault was dropped).
        let sub_ms = parse("2=flap:0.5ms");
        assert_eq!(parse(&sub_ms.to_string()), sub_ms);
    }

    #[test]
    fn a_duration_too_large_is_an_error_not_a_panic() {
        assert!(parse_duration("1e20").is_err());
        assert!("1=stall:1e30s".parse::<ReplicaFault>().is_err());
    }

    #[test]
    fn windows_open_and_close() {
        let f = parse("5=503@10s+30s");
        assert!(!f.active_at(Duration::from_secs(9)));
        assert!(f.active_at(Duration::from_secs(10)));
        assert!(f.active_at(Duration::from_millis(39_999)));
        assert!(!f.active_at(Duration::from_secs(40)));
        assert!(parse("5=503").active_at(Duration::from_secs(1000)));
    }

    #[test]
    fn mistakes_are_named() {
        for (s, says) in [
            ("3", "expected REPLICA=KIND"),
            ("x=503", "not an index"),
            ("3=slow", "unknown fault"),
            ("3=slow:0", "K > 0"),
            ("3=flap:0s", "period > 0"),
            ("3=503@soon", "not a duration"),
            ("3=teapot", "unknown fault `teapot`"),
        ] {
            let err = s.parse::<ReplicaFault>().unwrap_err();
            assert!(err.contains(says), "{s}: {err}");
        }
    }
}
