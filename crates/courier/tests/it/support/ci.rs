//! Whether the tests run under CI, where a missing server or tool is a
//! failure, not a skip. One rule for every suite (the `it` modules and the
//! separate `h2spec` binary, which includes this file by path): any
//! non-empty `CI` value means CI (`true`, `1`, `yes`, as CI services set
//! it), except an explicit no (`0`, `false`, `no`, `off`).

/// `CI` is set to a value that means yes.
pub fn is_ci() -> bool {
    means_ci(std::env::var("CI").ok().as_deref())
}

/// Whether a `CI` value (`None`: unset) means CI.
pub fn means_ci(value: Option<&str>) -> bool {
    let Some(value) = value.map(str::trim) else {
        return false;
    };
    !value.is_empty()
        && !["0", "false", "no", "off"]
            .iter()
            .any(|no| value.eq_ignore_ascii_case(no))
}

/// Skips what needs `missing` with a message, or fails the test under CI.
#[allow(dead_code)] // h2spec.rs reports its skip itself (no panic there).
pub fn skip_unless_ci(missing: &str) {
    assert!(!is_ci(), "CI is set and {missing}");
    eprintln!("skipped: {missing}");
}

/// Records what a suite ran, for `.ci/run`'s closing summary: when
/// `COURIER_CI_SUMMARY` names a directory (`.ci/run` sets it), writes
/// `<dir>/<suite>.txt`, one line of space-separated `key=value` pairs, the
/// first `suite=<suite>`, e.g.
/// `suite=interop cells=1296 ok=1130 failed=0 na=166 servers=9 skipped=0 seconds=61.2`.
/// Keys are the suite's own; values have no spaces. `.ci/summary.py`
/// prints every pair, so a suite that adds a count (`flaky=`) needs no
/// change there.
#[allow(dead_code)] // h2spec.rs prints its counts on stdout instead.
pub fn write_summary(suite: &str, fields: &[(&str, String)]) {
    let Some(dir) = std::env::var_os("COURIER_CI_SUMMARY") else {
        return;
    };
    let mut line = format!("suite={suite}");
    for (key, value) in fields {
        line.push_str(&format!(
            " {key}={}",
            value.replace(char::is_whitespace, "_")
        ));
    }
    line.push('\n');
    let path = std::path::Path::new(&dir).join(format!("{suite}.txt"));
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, line));
    assert!(written.is_ok(), "writing {}: {written:?}", path.display());
}
