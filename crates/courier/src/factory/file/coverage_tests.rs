//! Every public knob of [`ClientBuilder`] has a key in the TOML (issue 28:
//! the file was said to cover every knob, and proxies, keep-alive, Unix
//! sockets, `resolve`, happy eyeballs, expect-continue and native roots had
//! none). The builder's source files (`client/builder*.rs`, and
//! `client/builder/` if it becomes a folder) are read for the `pub fn`s of
//! `impl ClientBuilder` blocks; each must have a key the file accepts, or
//! be listed in [`CODE_ONLY`] with the reason. A new knob fails this test
//! until it has one or the other.

use std::path::{Path, PathBuf};

use super::parse;
use crate::client::builder::ClientBuilder;

/// Methods whose key has another name (`a.b` is key `b` of table `a`).
const KEY_OF: &[(&str, &str)] = &[
    ("add_root_certificate", "root_certificates"),
    ("http1_only", "http_version"),
    ("http2_prior_knowledge", "http_version"),
    ("http3_prior_knowledge", "http_version"),
    ("no_timeout", "timeout"),
    ("no_env_proxy", "env_proxy"),
    ("unix_socket_for", "unix_sockets"),
    // The client's own following and decoding: the middleware sections set
    // them (a section switched off turns the client's off too).
    ("redirect", "redirect"),
    ("decompression", "decompression"),
    ("gzip", "decompression.gzip"),
    ("brotli", "decompression.brotli"),
    ("zstd", "decompression.zstd"),
    ("deflate", "decompression.deflate"),
    ("no_gzip", "decompression.gzip"),
    ("no_brotli", "decompression.brotli"),
    ("no_zstd", "decompression.zstd"),
    ("no_deflate", "decompression.deflate"),
];

/// Methods with no key, and why.
const CODE_ONLY: &[(&str, &str)] = &[
    ("new", "not a knob: where a builder starts"),
    (
        "tls_config",
        "takes a `rustls::ClientConfig`: verifiers and providers are code, not data",
    ),
    (
        "client_cert_resolver",
        "takes a `ResolvesClientCert` implementation: code, not data",
    ),
    ("build", "not a knob: where a builder ends"),
    (
        "connector",
        "takes a `Connect` implementation: code, not data",
    ),
    (
        "dns_resolver",
        "takes a `Resolve` implementation: code, not data",
    ),
    (
        "default_headers",
        "the `headers` key gives a named client its default headers (on the \
         ServiceClient the factory returns, which every request goes through)",
    ),
];

/// The `pub fn` names of the `impl ClientBuilder { ... }` blocks in `text`
/// (rustfmt's layout: the block opens on its `impl` line and closes with a
/// `}` in column 0; comment lines are skipped, so a brace in a doc example
/// does not count).
fn builder_methods(text: &str) -> Vec<String> {
    scan(text).into_iter().map(|(name, _)| name).collect()
}

/// [`builder_methods`], each with whether its `#[cfg]` (if any) holds in
/// this build.
fn scan(text: &str) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    // Whether the next `pub fn` is in this build (a `#[cfg]` before it).
    let mut compiled = true;
    for line in text.lines() {
        let t = line.trim_start();
        if depth == 0 {
            if t.starts_with("impl ClientBuilder {") {
                depth = 1;
            }
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        if depth == 1 {
            if let Some(cfg) = t.strip_prefix("#[cfg(") {
                compiled = cfg_on(cfg.trim_end_matches(")]"));
            } else if let Some(rest) = t.strip_prefix("pub fn ") {
                let end = rest.find(['(', '<']).unwrap_or(rest.len());
                names.push((rest[..end].to_owned(), compiled));
                compiled = true;
            }
        }
        depth += t.matches('{').count();
        depth = depth.saturating_sub(t.matches('}').count());
    }
    names
}

/// The builder's source files.
fn builder_files() -> Vec<PathBuf> {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/client");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&client).expect("src/client") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("builder") && name.ends_with(".rs") {
            files.push(path);
        } else if name == "builder" && path.is_dir() {
            for inner in std::fs::read_dir(&path).expect("src/client/builder") {
                files.push(inner.expect("a directory entry").path());
            }
        }
    }
    files.sort();
    files
}

/// Whether a builder file is part of this build.
fn compiled(file: &str) -> bool {
    const BEHIND_FEATURES: &[(&str, bool)] = &[
        ("builder_http3.rs", cfg!(feature = "http3")),
        (
            "builder_https_records.rs",
            cfg!(all(feature = "http3", feature = "dns-srv")),
        ),
    ];
    BEHIND_FEATURES
        .iter()
        .find(|(name, _)| *name == file)
        .is_none_or(|&(_, on)| on)
}

/// Whether a method's `#[cfg(...)]` holds in this build. A condition this
/// does not know fails the test, so a new one is added here, not skipped.
fn cfg_on(cfg: &str) -> bool {
    match cfg {
        r#"feature = "http3""# => cfg!(feature = "http3"),
        other => panic!("a builder method behind #[cfg({other})]: teach cfg_on"),
    }
}

/// Whether the file accepts `key` (dotted: a table's key) in `[defaults]`:
/// a value of the wrong type is an error too, but not "unknown field".
fn is_a_key(key: &str) -> Result<(), String> {
    let (tables, last) = match key.rsplit_once('.') {
        Some((t, l)) => (format!(".{t}"), l),
        None => (String::new(), key),
    };
    let probe = format!("[defaults{tables}]\n{last} = {{ probe_only = 1 }}\n");
    match parse(&probe, None) {
        Ok(_) => Ok(()),
        Err(e) => {
            let e = e.to_string();
            let unknown = key
                .split('.')
                .any(|part| e.contains(&format!("unknown field `{part}`")));
            if unknown {
                Err(e)
            } else {
                Ok(())
            }
        }
    }
}

#[test]
fn every_builder_knob_has_a_toml_key() {
    let files = builder_files();
    assert!(!files.is_empty(), "no src/client/builder*.rs");
    // Every method, and those of this build (a feature's knobs have keys
    // only where the feature is on: both are behind it).
    let mut methods = Vec::new();
    let mut built = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a builder file");
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        for (method, on) in scan(&text) {
            if on && compiled(name) {
                built.push(method.clone());
            }
            methods.push(method);
        }
    }
    // The scanner still sees the builder (a sample of its knobs).
    for known in ["timeout", "proxy", "resolve", "build"] {
        assert!(
            methods.iter().any(|m| m == known),
            "scanner lost {known}: {methods:?}"
        );
    }
    let mut missing = Vec::new();
    for m in &built {
        if CODE_ONLY.iter().any(|(name, _)| name == m) {
            continue;
        }
        let key = KEY_OF
            .iter()
            .find(|(name, _)| name == m)
            .map_or(m.as_str(), |(_, key)| key);
        if let Err(e) = is_a_key(key) {
            missing.push(format!("ClientBuilder::{m} (key `{key}`): {e}"));
        }
    }
    assert!(
        missing.is_empty(),
        "builder knobs without a TOML key (add one in factory/file, or list the \
         method in CODE_ONLY with the reason):\n{}",
        missing.join("\n")
    );
    // The lists name only methods that exist.
    for (name, _) in KEY_OF.iter().chain(CODE_ONLY) {
        assert!(methods.iter().any(|m| m == name), "stale entry: {name}");
    }
}

#[test]
fn the_scanner_reads_only_inherent_blocks() {
    let text = "impl Default for ClientBuilder {\n    pub fn not_this() {}\n}\n\
                impl ClientBuilder {\n    /// ```\n    /// fn x() { {\n    /// ```\n    \
                pub fn one(self) -> Self {\n        if x { y }\n        self\n    }\n\n    \
                pub fn two<T>(self) -> Self {\n        self\n    }\n    fn private() {}\n}\n\
                pub fn after() {}\n";
    assert_eq!(builder_methods(text), ["one", "two"]);
    assert!(is_a_key("no_such_knob").is_err());
    assert!(is_a_key("tcp_keepalive").is_ok());
    assert!(is_a_key("retry.max_attempts").is_ok());
    assert!(is_a_key("retry.no_such_knob").is_err());
}

/// The lines of `b`'s pretty `Debug`, sorted: the order of a hash map's
/// entries differs from one map to the next.
fn lines(b: &ClientBuilder) -> Vec<String> {
    let mut lines: Vec<String> = format!("{b:#?}").lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// The new keys set what their methods set.
#[test]
fn the_connection_keys_apply_as_their_methods() {
    let dir = Path::new("/etc/courier");
    let text = r#"
        [defaults]
        expect_continue = 1024
        expect_continue_timeout = "200ms"
        tcp_keepalive = "none"
        local_address = "127.0.0.1"
        happy_eyeballs_delay = "100ms"
        connect_timeout_per_address = "2s"
        http2_max_refused_retries = 3
        tls_native_roots = false
        env_proxy = false
        proxy = ["http://p.internal:3128", { url = "http://q.internal:8080", scheme = "https", no_proxy = "localhost" }]
        resolve = { "api.internal" = ["127.0.0.1:8443", "[::1]"], "b.internal" = "10.0.0.1" }
        unix_socket = "all.sock"
        unix_sockets = { "agent.local" = "/run/agent.sock" }
    "#;
    let parsed = parse(text, Some(dir)).expect("valid");
    let from_file = parsed
        .defaults
        .pool
        .iter()
        .fold(ClientBuilder::new(), |b, step| step(b));
    let by_hand = ClientBuilder::new()
        .expect_continue(Some(1024))
        .expect_continue_timeout(std::time::Duration::from_millis(200))
        .tcp_keepalive(None)
        .local_address(Some([127, 0, 0, 1].into()))
        .happy_eyeballs_delay(std::time::Duration::from_millis(100))
        .connect_timeout_per_address(Some(std::time::Duration::from_secs(2)))
        .http2_max_refused_retries(3)
        .tls_native_roots(false)
        .no_env_proxy()
        .proxy(crate::Proxy::all("http://p.internal:3128").unwrap())
        .proxy(
            crate::Proxy::https("http://q.internal:8080")
                .unwrap()
                .no_proxy("localhost"),
        )
        .resolve("api.internal", "127.0.0.1:8443".parse().unwrap())
        .resolve("api.internal", "[::1]:0".parse().unwrap())
        .resolve("b.internal", "10.0.0.1:0".parse().unwrap())
        .unix_socket("/etc/courier/all.sock")
        .unix_socket_for("agent.local", "/run/agent.sock");
    assert_eq!(lines(&from_file), lines(&by_hand));
    // And differ from the defaults, so the comparison means something.
    assert_ne!(lines(&from_file), lines(&ClientBuilder::new()));

    for (bad, place) in [
        ("proxy = \"no-scheme\"", "defaults.proxy"),
        ("resolve = { h = \"nowhere\" }", "defaults.resolve.h"),
        (
            "proxy = { url = \"http://p:1\", scheme = \"ftp\" }",
            "proxy",
        ),
    ] {
        let err = parse(&format!("[defaults]\n{bad}\n"), None)
            .err()
            .expect(bad);
        assert!(err.to_string().contains(place), "{bad}: {err}");
    }
}
