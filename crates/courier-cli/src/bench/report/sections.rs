//! The rows only some runs have: the open loop's schedule and corrected latencies, the long
//! polls' in-flight and memory figures, and the allocation counts of `--count-allocations`.
//!
//! Why apart from the table's main rows: each section belongs to one load model or flag and
//! reads one optional part of the report; the main rows are the ones every run has, in the
//! seed tables' order. The sections come after them, in this order.

use super::super::json::{AllocationReport, LongPollReport, OpenLoopReport};
use super::Better::{Higher, Lower, Neither};
use super::Rows;

impl Rows {
    /// The open loop: the rate asked for (the peak one with `--stages`) and what was sent.
    pub(super) fn open_loop(&mut self, o: &OpenLoopReport, staged: bool) {
        let asked = if staged {
            "Open loop - peak rate asked (req/s)"
        } else {
            "Open loop - rate asked (req/s)"
        };
        self.number(asked, o.rate, 0, Neither);
        self.number("Open loop - sent (req/s)", o.sent_per_s, 0, Higher);
        self.count("Open loop - requests due", o.intended, Neither);
        self.count("Open loop - not sent (all slots busy)", o.not_sent, Lower);
        self.count("Open loop - sent late", o.late, Lower);
        self.count("Open loop - unfinished at the end", o.unfinished, Lower);
        self.count("Open loop - max in flight", o.max_in_flight, Neither);
        self.ms("Open loop - send lag (ms) - p99", o.send_lag_ms.p99);
        self.ms("Open loop - send lag (ms) - max", o.send_lag_ms.max);
        self.percentiles(
            "Corrected time to response headers",
            &o.latency_corrected_headers_ms,
        );
        self.percentiles(
            "Corrected time to last response content byte",
            &o.latency_corrected_last_byte_ms,
        );
    }

    /// Long polls: how many were held in flight, their wake-up latency, what they cost.
    pub(super) fn longpoll(&mut self, l: &LongPollReport) {
        self.count("Long polls in flight - target", l.target_in_flight, Neither);
        self.count("Long polls in flight - peak", l.peak_in_flight, Higher);
        for (which, value) in [
            ("p50", l.wake_up_ms.p50),
            ("p90", l.wake_up_ms.p90),
            ("p99", l.wake_up_ms.p99),
            ("p99.9", l.wake_up_ms.p999),
            ("max", l.wake_up_ms.max),
        ] {
            self.ms(format!("Wake-up latency (ms) - {which}"), value);
        }
        self.number("Working set before (MB)", l.rss_before_mb, 1, Neither);
        self.number("Working set at peak (MB)", l.rss_peak_mb, 1, Neither);
        self.number("Working set, highest (MB)", l.rss_high_water_mb, 1, Lower);
        self.number(
            "Memory per in-flight request (bytes)",
            l.memory_per_request_bytes,
            0,
            Lower,
        );
        self.number(
            "Heap per open connection (bytes)",
            l.heap_per_connection_bytes,
            0,
            Lower,
        );
        self.number(
            "Heap per in-flight request (bytes)",
            l.heap_per_request_bytes,
            0,
            Lower,
        );
    }

    /// `--count-allocations`.
    pub(super) fn allocations(&mut self, a: &AllocationReport) {
        self.number(
            "Allocations per request",
            a.allocations_per_request,
            2,
            Lower,
        );
        self.number("Bytes allocated per request", a.bytes_per_request, 0, Lower);
        self.count("Allocations", a.allocations, Neither);
        self.count("Bytes allocated", a.bytes, Neither);
        self.number(
            "Building a request: allocations (caller's, not above)",
            a.request_construction_allocations,
            2,
            Lower,
        );
        self.number(
            "Building a request: bytes",
            a.request_construction_bytes,
            0,
            Lower,
        );
    }
}
