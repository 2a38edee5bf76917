//! The request headers the flags ask for, and the browser-like header set used by
//! `--count-allocations` when no `-H` is given.
//!
//! Allocation counts depend on the request: a bare GET hides the cost of header handling. This is
//! the set from the .NET allocation-reduction work (dotnet/runtime#34724), "what my browser is
//! sending", so counts are comparable with that experiment.

use http::HeaderMap;

use super::args::{split_header, BenchArgs};
use crate::error::{CliError, Result};

/// The headers the flags ask for: `-H`, or with `--count-allocations` and no `-H` the browser
/// header set of seed 001.
pub fn from_flags(args: &BenchArgs) -> Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    for (name, value) in args.http_headers()? {
        headers.append(name, value);
    }
    if args.count_allocations && headers.is_empty() {
        for line in BROWSER_HEADERS {
            let (name, value) = split_header(line).map_err(CliError::new)?;
            headers.append(name, value);
        }
    }
    Ok(headers)
}

/// The eleven headers of a browser's navigation request, as `name: value` lines.
pub const BROWSER_HEADERS: [&str; 11] = [
    "accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.9",
    "accept-encoding: gzip, deflate, br",
    "accept-language: en-US,en;q=0.9",
    "cache-control: no-cache",
    "pragma: no-cache",
    "sec-fetch-dest: document",
    "sec-fetch-mode: navigate",
    "sec-fetch-site: none",
    "sec-fetch-user: ?1",
    "upgrade-insecure-requests: 1",
    "user-agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/83.0.4090.0 Safari/537.36 Edg/83.0.467.0",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_is_valid() {
        for line in BROWSER_HEADERS {
            assert!(split_header(line).is_ok(), "{line}");
        }
    }
}
