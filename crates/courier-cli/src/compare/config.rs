//! Which settings differ between the runs being compared.
//!
//! A comparison is only as good as knowing what changed: two runs whose HTTP version, load or
//! server differ are different experiments, and a delta column says nothing about why. Every
//! report carries the flags it ran with (`config`) and what was negotiated (`protocol`), so
//! the difference is computed from the files, key by key, and printed before the table.

use serde_json::{Map, Value};

use crate::bench::json::BenchReport;

/// Flags that name output files or presentation, not the experiment.
const IGNORED: &[&str] = &["json", "html", "chart", "fail_if", "start_at", "progress"];

/// `(key, value in each report)` for every setting that is not the same in all of them, in key
/// order; values are shown as the command line would spell them (`null`: not set).
pub fn differences(reports: &[BenchReport]) -> Vec<(String, Vec<String>)> {
    let settings: Vec<Map<String, Value>> = reports.iter().map(settings).collect();
    let mut keys: Vec<&String> = settings.iter().flat_map(Map::keys).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| !IGNORED.contains(&key.as_str()))
        .filter_map(|key| {
            let values: Vec<String> = settings
                .iter()
                .map(|s| show(s.get(key.as_str()).unwrap_or(&Value::Null)))
                .collect();
            let differ = values.iter().any(|v| *v != values[0]);
            differ.then(|| (key.clone(), values))
        })
        .collect()
}

/// The flags of a run plus the facts that are part of the experiment but not flags.
fn settings(report: &BenchReport) -> Map<String, Value> {
    let mut map = match serde_json::to_value(&report.config) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let facts = [
        (
            "protocol (negotiated)",
            Value::from(report.protocol.clone()),
        ),
        ("server", Value::from(report.server.clone())),
        ("cores", Value::from(report.cores)),
        ("threads", Value::from(report.threads)),
        ("courier version", Value::from(report.version.clone())),
    ];
    for (key, value) in facts {
        map.insert(key.to_owned(), value);
    }
    map
}

fn show(value: &Value) -> String {
    match value {
        Value::Null => "(not set)".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::args::HttpVersion;
    use crate::bench::json::tests::sample_report;

    #[test]
    fn names_only_the_keys_that_differ() {
        let a = sample_report();
        let mut b = sample_report();
        b.config.http = HttpVersion::Http2;
        b.protocol = "HTTP/2".to_owned();
        b.config.concurrency = Some(8);
        b.config.json = Some("elsewhere.json".into());
        let diff = differences(&[a, b]);
        let keys: Vec<&str> = diff.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["concurrency", "http", "protocol (negotiated)"]);
        assert_eq!(diff[0].1, ["(not set)", "8"]);
        assert_eq!(diff[1].1, ["auto", "2"]);
        assert!(differences(&[sample_report(), sample_report()]).is_empty());
    }
}
