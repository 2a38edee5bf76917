//! `--targets FILE`: a workload of several requests instead of one URL.
//!
//! Real traffic is not one URL: a read-heavy API mixes list, item and write requests, each with
//! its own headers and body. The file lists them in vegeta's `http` format, extended with an
//! optional weight:
//!
//! ```text
//! # comments start with '#'; entries are separated by blank lines
//! GET http://127.0.0.1:8080/items weight=3
//! Accept: application/json
//!
//! POST http://127.0.0.1:8080/items
//! Content-Type: application/json
//! @item.json
//! ```
//!
//! An entry is a request line (`METHOD URL [weight=N]`), then `Name: value` header lines and at
//! most one `@FILE` body line (relative to the targets file). The whole file is parsed and every
//! body read before the run, so a mistake is reported as `FILE:LINE: what` instead of as failed
//! requests. Entries are sent in a fixed cycle in which each appears `weight` times (1 by
//! default: round robin), interleaved by smooth weighted round robin (nginx's), so a weight of 3
//! to 1 sends `A A B A`, not `A A A B`, and the mix holds over any stretch of the run. The cycle
//! is deterministic: two runs of one file send the same sequence.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

/// The largest weight of one entry, and of the whole cycle (which is kept in memory).
const MAX_WEIGHT: u64 = 10_000;
const MAX_CYCLE: u64 = 1_000_000;

/// One request of the workload.
#[derive(Debug, Clone)]
pub struct Entry {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The `@FILE` line, as written.
    pub body_file: Option<String>,
    pub weight: u64,
}

/// A parsed targets file: its entries and the order they are sent in.
#[derive(Debug)]
pub struct Targets {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    /// Entry indices, each appearing `weight` times.
    cycle: Vec<u32>,
    /// Requests picked so far (shared by every slot).
    next: AtomicU64,
}

/// An entry as the JSON report records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetReport {
    pub method: String,
    pub url: String,
    pub weight: u64,
    pub headers: u64,
    pub body_bytes: u64,
}

impl Targets {
    /// Reads and checks the file; errors say `FILE:LINE: what`.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::new(format!(
                "cannot read the targets file {}: {e}",
                path.display()
            ))
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let entries = parse(&text, base)
            .map_err(|(line, e)| CliError::new(format!("{}:{line}: {e}", path.display())))?;
        let cycle =
            cycle(&entries).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        Ok(Self {
            path: path.to_owned(),
            entries,
            cycle,
            next: AtomicU64::new(0),
        })
    }

    /// The entry the next request sends.
    pub fn pick(&self) -> usize {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.cycle[(n % self.cycle.len() as u64) as usize] as usize
    }

    /// The distinct URLs, in file order.
    pub fn uris(&self) -> Vec<Uri> {
        let mut uris: Vec<Uri> = Vec::new();
        for entry in &self.entries {
            if !uris.contains(&entry.uri) {
                uris.push(entry.uri.clone());
            }
        }
        uris
    }

    /// The entries as the report records them.
    pub fn report(&self) -> Vec<TargetReport> {
        self.entries
            .iter()
            .map(|e| TargetReport {
                method: e.method.to_string(),
                url: e.uri.to_string(),
                weight: e.weight,
                headers: e.headers.len() as u64,
                body_bytes: e.body.len() as u64,
            })
            .collect()
    }

    /// The methods used, e.g. `GET` or `GET+POST`.
    pub fn methods(&self) -> String {
        let mut methods: Vec<&str> = Vec::new();
        for entry in &self.entries {
            if !methods.contains(&entry.method.as_str()) {
                methods.push(entry.method.as_str());
            }
        }
        methods.join("+")
    }
}

/// Parses the text; an error carries its 1-based line number.
fn parse(text: &str, base: &Path) -> std::result::Result<Vec<Entry>, (usize, String)> {
    let mut entries: Vec<Entry> = Vec::new();
    // Whether the current entry may take more lines (no blank line since its request line).
    let mut open = false;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim();
        if line.is_empty() {
            open = false;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let current = if open { entries.last_mut() } else { None };
        match current {
            Some(entry) if line.starts_with('@') => {
                if entry.body_file.is_some() {
                    return Err((
                        number,
                        "a second body line: an entry has one `@FILE`".into(),
                    ));
                }
                let file = line[1..].trim();
                if file.is_empty() {
                    return Err((number, "`@` needs a file name, e.g. @body.json".into()));
                }
                let path = base.join(file);
                let body = std::fs::read(&path).map_err(|e| {
                    (
                        number,
                        format!("cannot read the body {}: {e}", path.display()),
                    )
                })?;
                entry.body = Bytes::from(body);
                entry.body_file = Some(file.to_owned());
            }
            Some(entry) if is_header(line) => {
                let (name, value) = header(line).map_err(|e| (number, e))?;
                entry.headers.append(name, value);
            }
            _ => {
                entries.push(request_line(line).map_err(|e| (number, e))?);
                open = true;
            }
        }
    }
    if entries.is_empty() {
        return Err((
            1,
            "no request: write lines like `GET http://host/path`".into(),
        ));
    }
    Ok(entries)
}

/// `name: value` with a name free of spaces (a request line's first `:` follows a space).
fn is_header(line: &str) -> bool {
    line.split_once(':')
        .is_some_and(|(name, _)| !name.is_empty() && !name.contains(char::is_whitespace))
}

fn header(line: &str) -> std::result::Result<(HeaderName, HeaderValue), String> {
    crate::bench::args::split_header(line)
}

/// `METHOD URL [weight=N]`.
fn request_line(line: &str) -> std::result::Result<Entry, String> {
    let mut words = line.split_whitespace();
    let (Some(method), Some(url)) = (words.next(), words.next().filter(|u| u.contains("://")))
    else {
        return Err(format!(
            "`{line}` is not a request line: expected `METHOD URL [weight=N]` with an absolute URL, \
             e.g. `GET http://host/path` (or, after one, a `Name: value` header or an `@FILE` body)"
        ));
    };
    let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| format!("`{method}` is not an HTTP method"))?;
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("`{url}` is not a valid URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        return Err(format!(
            "`{url}` must be an absolute http:// or https:// URL"
        ));
    }
    let mut weight = 1;
    for word in words {
        let value = word.strip_prefix("weight=").ok_or_else(|| {
            format!("unexpected `{word}` after the URL (only weight=N may follow)")
        })?;
        weight = match value.parse::<u64>() {
            Ok(w) if (1..=MAX_WEIGHT).contains(&w) => w,
            _ => {
                return Err(format!(
                    "`{word}`: the weight must be a whole number from 1 to {MAX_WEIGHT}"
                ))
            }
        };
    }
    Ok(Entry {
        method,
        uri,
        headers: HeaderMap::new(),
        body: Bytes::new(),
        body_file: None,
        weight,
    })
}

/// Smooth weighted round robin: each step, every entry gains its weight, the one with the most
/// is picked and loses the total. Over `sum(weights)` steps each entry is picked `weight` times,
/// spread out as evenly as the weights allow.
fn cycle(entries: &[Entry]) -> std::result::Result<Vec<u32>, String> {
    let total: u64 = entries.iter().map(|e| e.weight).sum();
    if total > MAX_CYCLE {
        return Err(format!(
            "the weights add up to {total}: at most {MAX_CYCLE} (divide them by a common factor)"
        ));
    }
    let mut current = vec![0i64; entries.len()];
    let mut cycle = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, e) in current.iter_mut().zip(entries) {
            *c += e.weight as i64;
        }
        let best = (0..entries.len())
            .max_by_key(|&i| (current[i], std::cmp::Reverse(i)))
            .unwrap_or(0);
        current[best] -= total as i64;
        cycle.push(best as u32);
    }
    Ok(cycle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> std::result::Result<Vec<Entry>, (usize, String)> {
        parse(text, Path::new("/nonexistent"))
    }

    #[test]
    fn parses_entries_with_headers_weights_and_comments() {
        let entries = parse_text(
            "# a comment\nGET http://h/a weight=3\nX-A: 1\nx-b:2\n\n\npost https://h:8443/b\n",
        )
        .unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].method, Method::GET);
        assert_eq!(entries[0].weight, 3);
        assert_eq!(entries[0].headers.len(), 2);
        assert_eq!(entries[1].method, Method::POST);
        assert_eq!(entries[1].uri.to_string(), "https://h:8443/b");
        // A request line right after headers starts the next entry, as in vegeta.
        let entries = parse_text("GET http://h/a\nGET http://h/b\n").unwrap();
        assert_eq!(entries.len(), 2);
    }

    #[test]
    fn reads_the_body_relative_to_the_file() {
        let dir = std::env::temp_dir().join(format!("courier-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b.json"), "{\"a\":1}").unwrap();
        let entries = parse("PUT http://h/x\n@b.json\n", &dir).unwrap();
        assert_eq!(&entries[0].body[..], b"{\"a\":1}");
        let err = parse("PUT http://h/x\n@missing.json\n", &dir).unwrap_err();
        assert_eq!(err.0, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line, needle) in [
            ("GET http://h/a\n\nGET /relative\n", 3, "absolute"),
            ("GET http://h/a\nbad header line\n", 2, "request line"),
            ("GET http://h/a weight=0\n", 1, "weight"),
            ("GET http://h/a fast\n", 1, "unexpected"),
            ("G@T http://h/a\n", 1, "method"),
            ("\n# only comments\n", 1, "no request"),
            ("GET http://h/a\nX-A: \u{1}\n", 2, "invalid"),
            ("GET http://h/a\n\n@body\n", 3, "request line"),
        ] {
            let (at, message) = parse_text(text).unwrap_err();
            assert_eq!(at, line, "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn the_cycle_interleaves_by_weight() {
        let entries = parse_text("GET http://h/a weight=3\nGET http://h/b\n").unwrap();
        assert_eq!(cycle(&entries).unwrap(), [0, 0, 1, 0]);
        let entries = parse_text("GET http://h/a\nGET http://h/b\nGET http://h/c\n").unwrap();
        assert_eq!(cycle(&entries).unwrap(), [0, 1, 2]);
    }
}
