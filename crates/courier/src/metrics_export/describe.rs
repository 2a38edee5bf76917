//! The metrics' descriptions (kind, unit, help text) as tables, handed to the
//! `metrics` facade by one function.
//!
//! Why: the pool's and the cluster's exports each describe their metrics;
//! as tables of data they share the one loop that calls the facade's
//! `describe_*!` macros, instead of each writing the calls out again.

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

/// Which `describe_*!` a metric takes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric: its name, kind, unit and help text.
pub(super) type Description = (&'static str, Kind, Unit, &'static str);

/// Describes every metric of `table` to the installed recorder.
pub(super) fn describe(table: &[Description]) {
    for &(name, kind, unit, help) in table {
        match kind {
            Kind::Counter => describe_counter!(name, unit, help),
            Kind::Gauge => describe_gauge!(name, unit, help),
            Kind::Histogram => describe_histogram!(name, unit, help),
        }
    }
}
