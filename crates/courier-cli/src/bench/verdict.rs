//! The verdict that opens a report when something went wrong.
//!
//! A table of figures reads as a measurement even when nothing was measured: a run against a
//! refused port finishes "97,673 requests" in two seconds. So when requests failed, the report
//! starts by saying so — how many failed, what fraction, and the most frequent causes with
//! their counts, named as `cause::describe` words them — before any figure. A run in which
//! no request got a response is a failed run, and `bench` exits non-zero for it.

use super::args::HttpVersion;
use super::cause;
use super::format::group_thousands;
use super::json::BenchReport;

/// How many distinct causes the verdict lists.
const TOP_CAUSES: usize = 5;

/// Whether the run measured nothing: no request got a response.
pub fn all_failed(r: &BenchReport) -> bool {
    r.responses == 0
}

/// The verdict lines; none for a clean, complete run.
pub fn lines(r: &BenchReport) -> Vec<String> {
    let mut out = Vec::new();
    let n = |v: u64| group_thousands(&v.to_string());
    if r.interrupted {
        out.push(format!(
            "INTERRUPTED: stopped by Ctrl-C after {:.1} s; the figures cover that time only",
            r.duration_s
        ));
    }
    if r.requests == 0 {
        out.push(format!(
            "FAILED: no request finished in {:.1} s: nothing was measured",
            r.duration_s
        ));
    } else if all_failed(r) {
        out.push(format!(
            "FAILED: all {} requests failed; nothing was measured (latencies and RPS are empty)",
            n(r.requests)
        ));
    } else if r.errors > 0 {
        out.push(format!(
            "WARNING: {} of {} requests failed ({:.2}%); throughput and latencies count only the {} that got a response",
            n(r.errors),
            n(r.requests),
            r.error_rate * 100.0,
            n(r.responses)
        ));
    }
    let mut causes: Vec<(&String, &u64)> = r.error_messages.iter().collect();
    // Most frequent first; ties in the message's order, so the output is stable.
    causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let width = causes.first().map_or(0, |(_, c)| n(**c).len());
    for (message, count) in causes.iter().take(TOP_CAUSES) {
        out.push(format!("  {:>width$} x {message}", n(**count)));
    }
    if causes.len() > TOP_CAUSES {
        out.push(format!(
            "  ... and {} other causes (see error_messages in --json)",
            causes.len() - TOP_CAUSES
        ));
    }
    let kinds: Vec<&str> = r.errors_by_kind.keys().map(String::as_str).collect();
    let prior_knowledge =
        r.config.http == HttpVersion::Http2 && r.url.starts_with("http://") && r.errors > 0;
    if let Some(hint) = cause::protocol_hint(prior_knowledge, &kinds) {
        out.push(format!("hint: {hint}"));
    }
    let bad_status: u64 = r
        .status_codes
        .iter()
        .filter(|(code, _)| code.starts_with('4') || code.starts_with('5'))
        .map(|(_, count)| count)
        .sum();
    if bad_status > 0 {
        out.push(format!(
            "WARNING: {} responses had a 4xx/5xx status (see Responses below); they count as responses",
            n(bad_status)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::json::tests::sample_report;

    #[test]
    fn a_clean_run_has_no_verdict() {
        let mut r = sample_report();
        r.errors = 0;
        r.responses = r.requests;
        r.error_messages.clear();
        r.errors_by_kind.clear();
        assert!(lines(&r).is_empty(), "{:?}", lines(&r));
        assert!(!all_failed(&r));
    }

    #[test]
    fn total_failure_leads_with_the_cause() {
        let mut r = sample_report();
        r.responses = 0;
        r.errors = 97_673;
        r.requests = 97_673;
        r.error_rate = 1.0;
        r.error_messages = [
            ("connection refused 127.0.0.1:1".to_owned(), 97_600),
            ("something rarer".to_owned(), 73),
        ]
        .into_iter()
        .collect();
        let text = lines(&r).join("\n");
        assert!(all_failed(&r));
        assert!(
            text.starts_with("FAILED: all 97,673 requests failed"),
            "{text}"
        );
        let refused = text
            .find("97,600 x connection refused 127.0.0.1:1")
            .unwrap();
        assert!(refused < text.find("something rarer").unwrap(), "{text}");
    }

    #[test]
    fn partial_failure_warns_with_the_rate() {
        let text = lines(&sample_report()).join("\n");
        assert!(
            text.contains("WARNING: 1 of 4 requests failed (25.00%)"),
            "{text}"
        );
        assert!(text.contains("only the 3 that got a response"), "{text}");
    }

    #[test]
    fn prior_knowledge_failures_hint_at_the_protocol() {
        let mut r = sample_report();
        r.config.http = HttpVersion::Http2;
        r.errors_by_kind = [("protocol".to_owned(), 1)].into_iter().collect();
        assert!(lines(&r).join("\n").contains("--http 1.1"));
    }
}
