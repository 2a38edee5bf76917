//! `courier bench` flags.
//!
//! The struct doubles as the `config` object of the JSON report (it is `Serialize`), so a report
//! always records exactly what was asked for. Values are validated while parsing, so a typo in a
//! header or a URL is reported by clap with the flag's name instead of surfacing as a failed
//! request later. Pool knobs left unset keep the library's defaults and appear as `null`.

use std::time::Duration;

use clap::Args;
use http::{HeaderName, HeaderValue, Method, Uri};
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};
use crate::secs::{Secs, SecsOrNone};

/// How long the test runs when neither `--duration` nor `--requests` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// Closed-loop HTTP load generator: C workers each send a request, wait for it, and repeat.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
pub struct BenchArgs {
    /// Target URL (http:// or https://). Without one, the built-in server is started
    /// in-process on 127.0.0.1 and `/bytes/{response-size}` is targeted.
    #[arg(value_parser = parse_url)]
    pub url: Option<String>,

    /// Requests in flight at once (one worker task per request slot).
    #[arg(short = 'c', long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: u64,

    /// Run for this many seconds [default: 10].
    #[arg(short = 'd', long, value_name = "SECS", conflicts_with = "requests")]
    pub duration: Option<Secs>,

    /// Send exactly this many requests, then stop (instead of --duration).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// Read only the first N bytes of each body, then drop the response (the library drains
    /// the rest in the background). Default: read every body to its end.
    #[arg(long, value_name = "N")]
    pub read_bytes: Option<u64>,

    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET", value_parser = parse_method)]
    pub method: String,

    /// Extra request header, as "name: value"; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<String>,

    /// Tokio worker threads [default: number of cores].
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,

    /// Total time limit per request, in seconds [library default: 100].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<Secs>,

    /// Connection limit per origin [library default: unbounded].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_host: Option<u64>,

    /// Close connections idle for this long, or `none` [library default: 60].
    #[arg(long, value_name = "SECS|none")]
    pub pool_idle_timeout: Option<SecsOrNone>,

    /// Retire connections this old (checked between requests), or `none` [library default: none].
    #[arg(long, value_name = "SECS|none")]
    pub pooled_connection_lifetime: Option<SecsOrNone>,

    /// Random extra lifetime per connection, so connections do not all expire together.
    #[arg(long, value_name = "SECS")]
    pub pooled_connection_lifetime_jitter: Option<Secs>,

    /// Time limit for establishing a connection [library default: 10].
    #[arg(long, value_name = "SECS")]
    pub connect_timeout: Option<Secs>,

    /// Give up on a request that waited this long for a connection, or `none`.
    #[arg(long, value_name = "SECS|none")]
    pub pool_queue_timeout: Option<SecsOrNone>,

    /// Most bytes read to drain a dropped body before closing its connection
    /// [library default: 1 MiB].
    #[arg(long, value_name = "BYTES")]
    pub max_response_drain_size: Option<u64>,

    /// Time limit for draining a dropped body [library default: 2].
    #[arg(long, value_name = "SECS")]
    pub response_drain_timeout: Option<Secs>,

    /// Largest accepted response header block [library default: 64 KiB].
    #[arg(long, value_name = "BYTES")]
    pub max_response_headers_size: Option<u64>,

    /// Body size asked of the built-in server (used only when no URL is given).
    #[arg(long, value_name = "BYTES", default_value_t = 128)]
    pub response_size: u64,

    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After exactly this many requests (successful or not).
    Requests(u64),
    /// When this much time has passed; requests still in flight then are abandoned.
    Duration(Duration),
}

impl BenchArgs {
    /// The stop condition: `--requests` if given, else `--duration`, else the default duration.
    pub fn stop(&self) -> Stop {
        match (self.requests, self.duration) {
            (Some(n), _) => Stop::Requests(n),
            (None, Some(secs)) => Stop::Duration(secs.as_duration()),
            (None, None) => Stop::Duration(DEFAULT_DURATION),
        }
    }

    /// The method as `http` knows it (already validated by the parser).
    pub fn http_method(&self) -> Result<Method> {
        Method::from_bytes(self.method.as_bytes())
            .map_err(|_| CliError::new(format!("invalid HTTP method `{}`", self.method)))
    }

    /// The `-H` headers as typed pairs (already validated by the parser).
    pub fn http_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>> {
        self.headers
            .iter()
            .map(|h| split_header(h).map_err(CliError::new))
            .collect()
    }
}

/// Accepts absolute http(s) URLs only: a relative or scheme-less URL cannot be sent anywhere.
fn parse_url(text: &str) -> Result<String, String> {
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("`{text}` is not a valid URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(format!("unsupported scheme `{other}`: use http or https")),
        None => return Err(format!("`{text}` has no scheme: write http://{text}")),
    }
    if uri.authority().is_none() {
        return Err(format!("`{text}` has no host"));
    }
    Ok(text.to_owned())
}

/// Upper-cases the method: methods are case-sensitive, and `post` almost always means POST.
fn parse_method(text: &str) -> Result<String, String> {
    let upper = text.trim().to_ascii_uppercase();
    Method::from_bytes(upper.as_bytes()).map_err(|_| format!("`{text}` is not an HTTP method"))?;
    Ok(upper)
}

/// Checks a "name: value" header and returns it normalized.
fn parse_header(text: &str) -> Result<String, String> {
    let (name, value) = split_header(text)?;
    let value = value
        .to_str()
        .map_err(|_| format!("header `{text}`: value must be visible ASCII"))?;
    Ok(format!("{name}: {value}"))
}

fn split_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("header `{text}` must look like \"name: value\""))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("header `{text}`: `{}` is not a valid name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("header `{text}`: the value has invalid characters"))?;
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Wraps the flags the way `main` does, so parsing is tested end to end.
    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
        let mut full = vec!["bench"];
        full.extend_from_slice(argv);
        Wrapper::try_parse_from(full).map(|w| w.args)
    }

    #[test]
    fn defaults() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.url, None);
        assert_eq!(args.concurrency, 64);
        assert_eq!(args.stop(), Stop::Duration(DEFAULT_DURATION));
        assert_eq!(args.read_bytes, None);
        assert_eq!(args.method, "GET");
        assert_eq!(args.response_size, 128);
        assert_eq!(args.pool_idle_timeout, None);
    }

    #[test]
    fn all_flags() {
        let args = parse(&[
            "http://127.0.0.1:9/x",
            "-c",
            "16",
            "-n",
            "2000",
            "--read-bytes",
            "0",
            "-m",
            "post",
            "-H",
            "X-A:  1",
            "-H",
            "accept: */*",
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
            "--json",
            "out.json",
        ])
        .unwrap();
        assert_eq!(args.stop(), Stop::Requests(2000));
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
    }

    #[test]
    fn duration_flag() {
        let args = parse(&["-d", "1"]).unwrap();
        assert_eq!(args.stop(), Stop::Duration(Duration::from_secs(1)));
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
        ] {
            assert!(parse(argv).is_err(), "{argv:?} should be refused");
        }
    }
}
