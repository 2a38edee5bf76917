//! The flags' tests: parsed end to end as `main` wraps them. A file of its own so that
//! `args/mod.rs`, the flags themselves, stays under 600 lines.

use super::*;
use clap::Parser;
use std::time::Duration;

/// Wraps the flags the way `main` does, so parsing is tested end to end.
#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    args: BenchArgs,
}

pub(crate) fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
    let mut full = vec!["bench"];
    full.extend_from_slice(argv);
    Wrapper::try_parse_from(full).map(|w| w.args)
}

#[test]
fn all_flags() {
    let args = parse(&[
        "http://127.0.0.1:9/x",
        "-c",
        "16",
        "--clients",
        "3",
        "-n",
        "2000",
        "--warmup",
        "1",
        "--read-bytes",
        "0",
        "-m",
        "post",
        "-H",
        "X-A:  1",
        "-H",
        "accept: */*",
        "--body-size",
        "512",
        "--threads",
        "2",
        "--timeout",
        "1.5",
        "--max-connections-per-host",
        "8",
        "--pool-idle-timeout",
        "none",
        "--pooled-connection-lifetime",
        "30",
        "--pooled-connection-lifetime-jitter",
        "500ms",
        "--connect-timeout",
        "2",
        "--pool-queue-timeout",
        "0.1",
        "--max-response-drain-size",
        "4096",
        "--response-drain-timeout",
        "1",
        "--max-response-headers-size",
        "8192",
        "--count-allocations",
        "--chart",
        "--json",
        "out.json",
        "--html",
        "out.html",
    ])
    .unwrap();
    assert_eq!(args.method, "POST");
    assert_eq!(args.headers, ["x-a: 1", "accept: */*"]);
    assert_eq!(args.http_headers().unwrap().len(), 2);
    assert_eq!(args.pool_idle_timeout, Some(SecsOrNone::None));
    assert_eq!(
        args.pooled_connection_lifetime_jitter
            .map(Secs::as_duration),
        Some(Duration::from_millis(500))
    );
    assert_eq!(args.http_method().unwrap(), Method::POST);
    let load = args.load().unwrap();
    assert_eq!(load.stop, Stop::Requests(2000));
    assert_eq!((load.clients, load.concurrency), (3, 16));
    assert_eq!(load.in_flight(), 48);
    assert_eq!(load.max_connections_per_host, Some(8));
    assert_eq!(load.warmup, Duration::from_secs(1));
}

#[test]
fn refuses_bad_input() {
    for argv in [
        &["-c", "0"][..],
        &["-n", "0"],
        &["-d", "1", "-n", "5"],
        &["-d", "-3"],
        &["-H", "no-colon"],
        &["-H", "bad name: v"],
        &["-m", "GE T"],
        &["ftp://host/"],
        &["localhost:8080/x"],
        &["--pool-idle-timeout", "soon"],
        &["--rate", "0"],
        &["--rate", "-5"],
        &["--streams", "2"],
        &["--connections", "2", "-c", "3"],
        &["--connections", "2", "--max-connections-per-host", "3"],
        &["--path", "delay/5"],
        &["http://h/", "--path", "/x"],
        &["--scenario", "poll"],
    ] {
        assert!(parse(argv).is_err(), "{argv:?} should be refused");
    }
}

/// Every time flag takes the one duration syntax (`250ms`, `5s`, `1m`, bare seconds) and
/// says so with its value name; none is named in seconds (`SECS`) any more.
#[test]
fn every_time_flag_takes_the_one_duration_syntax() {
    use clap::CommandFactory;
    let command = Wrapper::command();
    let mut time_flags = Vec::new();
    for arg in command.get_arguments() {
        let names: Vec<String> = arg
            .get_value_names()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            !names.iter().any(|n| n.contains("SECS")),
            "--{:?} is still named in seconds",
            arg.get_long()
        );
        if names.iter().any(|n| n.starts_with("DURATION")) {
            time_flags.push(
                arg.get_long()
                    .expect("time flags are long flags")
                    .to_owned(),
            );
        }
    }
    // The run, the pool's timeouts, the cluster's service time...
    assert!(time_flags.len() >= 10, "{time_flags:?}");
    for flag in &time_flags {
        for (value, expected) in [
            ("1m", Duration::from_secs(60)),
            ("250ms", Duration::from_millis(250)),
            ("5", Duration::from_secs(5)),
            ("1.5s", Duration::from_millis(1500)),
        ] {
            let args = parse(&[&format!("--{flag}"), value])
                .unwrap_or_else(|e| panic!("--{flag} {value}: {e}"));
            let config = serde_json::to_value(&args).unwrap();
            let key = flag.replace('-', "_");
            // The report records what was asked: seconds (or the text, for cluster flags).
            match &config[&key] {
                serde_json::Value::Number(n) => {
                    assert_eq!(n.as_f64(), Some(expected.as_secs_f64()), "--{flag} {value}")
                }
                serde_json::Value::String(text) => assert_eq!(text, value, "--{flag}"),
                other => panic!("--{flag} {value} recorded as {other}"),
            }
        }
    }
    let stages = parse(&["--stages", "1m:100,30s:0"])
        .unwrap()
        .load()
        .unwrap();
    assert_eq!(stages.stop, Stop::Duration(Duration::from_secs(90)));
}

#[test]
fn negative_durations_get_our_message() {
    for bad in ["-1", "0", "0ms", "-0.5"] {
        let err = parse(&["-d", bad]).unwrap_err().to_string();
        assert!(err.contains("more than 0 seconds"), "{bad}: {err}");
    }
}

#[test]
fn alt_svc_asks_the_built_in_target_for_http3() {
    let args = parse(&["--alt-svc"]).expect("parse");
    assert!(args.alt_svc && args.server_http3() && args.server_tls());
    let with_http1 = parse(&["--alt-svc", "--http", "1.1"]).expect("parse");
    assert!(with_http1.alt_svc && with_http1.server_http3());
    let plain = parse(&[]).expect("parse");
    assert!(!plain.alt_svc && !plain.server_http3() && !plain.server_tls());
}
