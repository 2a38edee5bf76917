//! The report's summary in the formats other tools read: CSV (spreadsheets, a sweep of runs
//! as one table) and OpenMetrics (Prometheus). JSON (`json/`) stays the complete record; these
//! carry the headline figures only, the same ones in both.
//!
//! The parts: `csv` and `openmetrics`, each rendering a [`BenchReport`] to text and writing it.

pub mod csv;
pub mod openmetrics;
