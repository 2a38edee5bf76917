//! `courier bench -h` is a one-screen summary of the common flags; `--help` has every flag with
//! its details (clap's help / long_help split).

use crate::support::{assert_success, courier};

fn help(flag: &str) -> String {
    let output = courier(&["bench", flag]);
    assert_success(&output);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn short_help_fits_a_screen_and_long_help_has_every_flag() {
    let (short, long) = (help("-h"), help("--help"));
    let lines = short.lines().count();
    assert!(lines <= 50, "-h is {lines} lines:\n{short}");
    assert!(
        long.lines().count() > 2 * lines,
        "--help is not the long one"
    );
    // The common flags in both; the pool's knobs and the cluster's flags in --help only.
    for common in [
        "--concurrency",
        "--duration",
        "--rate",
        "--json",
        "--csv",
        "--cert",
    ] {
        assert!(short.contains(common) && long.contains(common), "{common}");
    }
    for detail in [
        "--pool-idle-timeout",
        "--fault",
        "--key",
        "--handler-lifetime",
    ] {
        assert!(!short.contains(detail), "{detail} in -h");
        assert!(long.contains(detail), "{detail} missing from --help");
    }
    // One duration syntax, said once in each.
    assert!(
        !long.contains("SECS"),
        "a flag still counts seconds by name"
    );
    assert!(short.contains("250ms, 5s, 1m"), "{short}");
    assert!(long.contains("bare number of seconds"), "{long}");
}
