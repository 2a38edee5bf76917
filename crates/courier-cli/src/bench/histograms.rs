//! The latency histograms themselves, in the JSON report, so runs can be merged exactly.
//!
//! Percentiles cannot be averaged: the p99 of two machines' runs is not the mean of their p99s.
//! HdrHistograms can be added bucket by bucket, so each report keeps its full histograms in
//! HdrHistogram's own serialized form (V2 with deflate, the format every HdrHistogram
//! implementation reads), base64-encoded for JSON, and `courier merge` adds them and computes
//! the percentiles of the sum. Values are microseconds.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::stats::Tally;
use crate::error::{CliError, Result};

/// A report's histograms (µs), each base64 of HdrHistogram's V2 deflate serialization.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Histograms {
    /// Time to the response headers of successful requests.
    pub to_headers_us: String,
    /// Time to the last body byte of successful requests.
    pub to_last_byte_us: String,
    /// Open loop: the same from each request's intended start (corrected for coordinated
    /// omission), for the HTML report's spectrum. Not merged by `courier merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_to_last_byte_us: Option<String>,
}

impl Histograms {
    /// Serializes a run's total tally.
    pub fn of(total: &Tally) -> Result<Self> {
        Ok(Self {
            to_headers_us: encode(&total.to_headers)?,
            to_last_byte_us: encode(&total.to_last_byte)?,
            corrected_to_last_byte_us: if total.corrected_to_last_byte.is_empty() {
                None
            } else {
                Some(encode(&total.corrected_to_last_byte)?)
            },
        })
    }

    /// The histograms back: (to headers, to last byte).
    pub fn decode(&self) -> Result<(Histogram<u64>, Histogram<u64>)> {
        Ok((decode(&self.to_headers_us)?, decode(&self.to_last_byte_us)?))
    }
}

/// One histogram as base64 of its V2 deflate serialization.
pub fn encode(histogram: &Histogram<u64>) -> Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .map_err(|e| CliError::new(format!("cannot serialize a latency histogram: {e:?}")))?;
    Ok(STANDARD.encode(bytes))
}

/// The inverse of [`encode`].
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| CliError::new(format!("a latency histogram is not base64: {e}")))?;
    let mut histogram: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| CliError::new(format!("cannot read a latency histogram: {e:?}")))?;
    // Merged histograms must grow to fit each other's ranges (see `stats::new_histogram`).
    histogram.auto(true);
    Ok(histogram)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::{record, Measured};
    use std::time::Duration;

    #[test]
    fn round_trips_every_count() {
        let mut tally = Tally::new();
        for us in [3u64, 250, 1_000, 1_001, 70_000, 3_600_000_000] {
            tally.record_response(&Measured {
                status: 200,
                to_headers: Duration::from_micros(us),
                to_last_byte: Duration::from_micros(us + 5),
                body_bytes: 0,
                send_lag: None,
            });
        }
        let (headers, last) = Histograms::of(&tally).unwrap().decode().unwrap();
        assert_eq!(headers, tally.to_headers);
        assert_eq!(last, tally.to_last_byte);
        let mut grown = decode(&encode(&tally.to_headers).unwrap()).unwrap();
        record(&mut grown, u64::MAX / 4);
        assert!(decode("not base64!").is_err());
    }
}
