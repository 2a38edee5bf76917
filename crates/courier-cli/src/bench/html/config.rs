//! The configuration as a table of what was set.
//!
//! The report's `config` is every flag, most of them unset (`null`) or at their default; a dump
//! of it buries the two that matter. The table lists the flags whose value differs from the
//! default, spelled as on the command line (`--max-connections-per-host 8`), so the run can be
//! repeated from it; the resolved load (model, clients, in flight, stop) is listed apart.

use clap::{Args, FromArgMatches};
use serde_json::{Map, Value};

use crate::bench::args::BenchArgs;
use crate::bench::json::BenchReport;

/// The flags as parsed from an empty command line.
fn defaults() -> Map<String, Value> {
    let command = BenchArgs::augment_args(clap::Command::new("bench"));
    let parsed = command
        .try_get_matches_from(["bench"])
        .ok()
        .and_then(|m| BenchArgs::from_arg_matches(&m).ok());
    match parsed.map(serde_json::to_value) {
        Some(Ok(Value::Object(map))) => map,
        _ => Map::new(),
    }
}

/// `(flag, value)` for every flag set to something other than its default: the URL first, then
/// by name.
pub fn set_flags(config: &BenchArgs) -> Vec<(String, String)> {
    let defaults = defaults();
    let Ok(Value::Object(values)) = serde_json::to_value(config) else {
        return Vec::new();
    };
    let mut flags: Vec<(String, String)> = values
        .into_iter()
        .filter(|(key, value)| defaults.get(key).unwrap_or(&Value::Null) != value)
        .filter(|(_, value)| !matches!(value, Value::Null | Value::Bool(false)))
        .filter(|(_, value)| !matches!(value, Value::Array(a) if a.is_empty()))
        .map(|(key, value)| {
            let flag = match key.as_str() {
                "url" => "URL".to_owned(),
                "headers" => "-H".to_owned(),
                _ => format!("--{}", key.replace('_', "-")),
            };
            (flag, show(&value))
        })
        .collect();
    flags.sort_by_key(|(flag, _)| {
        (
            flag != "URL",
            flag.trim_start_matches('-').to_ascii_lowercase(),
        )
    });
    flags
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The load as it ran, defaults filled in.
pub fn resolved(r: &BenchReport) -> Vec<(String, String)> {
    let l = &r.load;
    let mut rows = vec![
        ("model".to_owned(), format!("{} loop", l.model)),
        ("clients".to_owned(), l.clients.to_string()),
        (
            if l.model == "open" {
                "in-flight cap per client"
            } else {
                "in flight per client"
            }
            .to_owned(),
            l.concurrency.to_string(),
        ),
    ];
    if let Some(rate) = l.rate {
        rows.push(("rate (req/s, peak)".to_owned(), rate.to_string()));
    }
    if let Some(cap) = l.max_connections_per_host {
        rows.push(("connections per host".to_owned(), cap.to_string()));
    }
    rows.extend([
        ("stop".to_owned(), l.stop.clone()),
        ("measured (s)".to_owned(), format!("{:.2}", r.duration_s)),
        ("warmup (s)".to_owned(), r.warmup_s.to_string()),
        ("protocol".to_owned(), r.protocol.clone()),
        ("server".to_owned(), r.server.clone()),
        (
            "client threads / cores".to_owned(),
            format!("{} / {}", r.threads, r.cores),
        ),
        ("courier".to_owned(), r.version.clone()),
    ]);
    if r.agents > 1 {
        rows.push(("agents merged".to_owned(), r.agents.to_string()));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_only_what_was_set() {
        let args = crate::bench::args::tests::parse(&[
            "http://h/x",
            "-c",
            "8",
            "--pool-idle-timeout",
            "none",
            "-H",
            "a: b",
            "--insecure",
        ])
        .unwrap();
        let flags = set_flags(&args);
        let keys: Vec<&str> = flags.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "URL",
                "--concurrency",
                "-H",
                "--insecure",
                "--pool-idle-timeout"
            ]
        );
        assert!(flags.contains(&("--concurrency".to_owned(), "8".to_owned())));
        assert!(set_flags(&crate::bench::args::tests::parse(&[]).unwrap()).is_empty());
    }
}
