//! Differential test of HTTP/2 responses: each case's frames are read by
//! courier and by the `h2` crate's client (see `differential_h2/harness.rs`),
//! each reduced to one record (the answer, or the class of its failure, and
//! whether a next request got exactly the next answer), and compared. courier
//! has its own HTTP/2 implementation; h2 is the one most of the Rust
//! ecosystem runs, so where the two read the same frames differently one of
//! them is wrong or the two differ in policy. A difference of policy (one
//! side refuses what the other accepts, or closes the connection where the
//! other keeps it) must be listed with its RFC 9113 reason in the case
//! itself; one listed that no longer happens fails too, so the list stays
//! true.

mod corpus;
mod frames;
mod h2_reader;
mod harness;

use harness::{Class, Frames, Verdict};

/// What a case expects of the comparison.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Agree,
    /// A known difference, with its reason.
    Allowed(Allowed, &'static str),
}

/// The allowlistable kinds of disagreement (see [`Verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowed {
    CourierRefuses,
    /// Only for a documented choice of courier's (never for a wrong read).
    H2Refuses,
    BothFail(Class, Class),
    CourierRetries,
    CourierCloses,
    H2Closes,
}

struct Case {
    class: &'static str,
    name: &'static str,
    frames: Frames,
    /// The server closes the connection after the case's frames.
    close: bool,
    expect: Expect,
}

fn case(class: &'static str, name: &'static str, frames: Frames) -> Case {
    Case {
        class,
        name,
        frames,
        close: false,
        expect: Expect::Agree,
    }
}

impl Case {
    fn closing(mut self) -> Case {
        self.close = true;
        self
    }

    fn allow(mut self, kind: Allowed, reason: &'static str) -> Case {
        self.expect = Expect::Allowed(kind, reason);
        self
    }
}

fn expected(expect: Expect, verdict: &Verdict) -> bool {
    match (expect, verdict) {
        (Expect::Agree, Verdict::Agree) => true,
        (Expect::Allowed(kind, _), verdict) => {
            matches!(
                (kind, verdict),
                (Allowed::CourierRefuses, Verdict::CourierRefuses)
                    | (Allowed::H2Refuses, Verdict::H2Refuses)
                    | (Allowed::CourierRetries, Verdict::CourierRetries)
                    | (Allowed::CourierCloses, Verdict::CourierCloses)
                    | (Allowed::H2Closes, Verdict::H2Closes)
            ) || matches!((kind, verdict), (Allowed::BothFail(a, b), Verdict::BothFail(x, y)) if (a, b) == (*x, *y))
        }
        _ => false,
    }
}

#[tokio::test]
async fn courier_and_h2_agree_on_responses() {
    let cases = corpus::corpus();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let (mut agree, mut allowed) = (0, 0);
    for case in &cases {
        let (courier, h2, verdict) = harness::run(case.frames, case.close).await;
        let ok = expected(case.expect, &verdict);
        match (ok, case.expect) {
            (true, Expect::Agree) => agree += 1,
            (true, Expect::Allowed(..)) => allowed += 1,
            (false, _) => {}
        }
        if std::env::var_os("DIFFERENTIAL_VERBOSE").is_some() || !ok {
            let reason = match case.expect {
                Expect::Allowed(_, reason) => reason,
                Expect::Agree => "",
            };
            eprintln!(
                "{} {}: {verdict:?} {reason}\n  courier {courier:?}\n  h2      {h2:?}",
                case.class, case.name
            );
        }
        if !ok {
            failures.push(format!(
                "{}: expected {:?}, got {verdict:?}",
                case.name, case.expect
            ));
        }
    }
    eprintln!(
        "HTTP/2 differential: {} cases, {} agree, {allowed} allowlisted, {} failed, in {:?}",
        cases.len(),
        agree,
        failures.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn case_names_are_unique() {
    let cases = corpus::corpus();
    let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len());
}
