//! Differential test of HTTP/1.1 response framing: each case's bytes are read
//! by courier and by hyper's client (see `differential/harness.rs`), and
//! where the two disagree about where the first response ends or whether the
//! connection can carry the next request, the test fails. A disagreement that
//! is a difference of policy (one side refuses what the other accepts) must be
//! listed with its reason in the case itself; one listed that no longer
//! happens fails too, so the list stays true.

mod harness;

use harness::{BodyEnd, Refusal, Script, Second, Verdict};
use http::Method;

/// What a case expects of the comparison.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Both clients read the same.
    Agree,
    /// A policy difference, with its reason (see [`Verdict`] for the kinds).
    Allowed(Allowed, &'static str),
}

/// The allowlistable kinds of disagreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowed {
    BothRefuse(Refusal, Refusal),
    BothFailBody(BodyEnd, BodyEnd),
    /// A framing disagreement where hyper is the one at fault
    /// ([`harness::hyper_known_wrong`] must recognise the bytes).
    HyperWrong,
    CourierRejectsBody,
    CourierRefuses,
    HyperRefuses,
    CourierCloses,
}

struct Case {
    class: &'static str,
    name: &'static str,
    head: bool,
    /// The server closes after the first answer.
    close: bool,
    bytes: &'static [u8],
    expect: Expect,
    /// courier must not reuse the connection, whatever hyper does.
    courier_closes: bool,
}

use Expect::Agree;

const fn case(class: &'static str, name: &'static str, bytes: &'static [u8]) -> Case {
    Case {
        class,
        name,
        head: false,
        close: false,
        bytes,
        expect: Agree,
        courier_closes: false,
    }
}

impl Case {
    const fn closing(mut self) -> Case {
        self.close = true;
        self
    }
    const fn head(mut self) -> Case {
        self.head = true;
        self
    }
    const fn courier_closes(mut self) -> Case {
        self.courier_closes = true;
        self
    }
    const fn allow(mut self, kind: Allowed, reason: &'static str) -> Case {
        self.expect = Expect::Allowed(kind, reason);
        self
    }
}

mod corpus;
use corpus::corpus;

#[tokio::test(start_paused = true)]
async fn courier_and_hyper_agree_on_response_framing() {
    let cases = corpus();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let mut failures = Vec::new();
    let mut classes: Vec<(&str, usize)> = Vec::new();
    for case in &cases {
        match classes.iter_mut().find(|(c, _)| *c == case.class) {
            Some((_, n)) => *n += 1,
            None => classes.push((case.class, 1)),
        }
        let method = if case.head { Method::HEAD } else { Method::GET };
        let script = Script {
            method: &method,
            first: case.bytes,
            close: case.close,
        };
        let (courier, hyper, verdict) = harness::run(script).await;
        let expected = match (case.expect, &verdict) {
            (Agree, Verdict::Agree) => true,
            (Expect::Allowed(kind, _), verdict) => match (kind, verdict) {
                (Allowed::BothRefuse(a, b), Verdict::BothRefuse(x, y)) => (a, b) == (*x, *y),
                (Allowed::BothFailBody(a, b), Verdict::BothFailBody(x, y)) => (a, b) == (*x, *y),
                (Allowed::CourierRejectsBody, Verdict::CourierRejectsBody) => true,
                (Allowed::HyperWrong, Verdict::Framing(_)) => {
                    harness::hyper_known_wrong(case.bytes).is_some()
                }
                (Allowed::CourierRefuses, Verdict::CourierRefuses)
                | (Allowed::HyperRefuses, Verdict::HyperRefuses)
                | (Allowed::CourierCloses, Verdict::CourierCloses) => true,
                _ => false,
            },
            _ => false,
        } && (!case.courier_closes || courier.record.second == Second::NotReused);
        if std::env::var_os("DIFFERENTIAL_VERBOSE").is_some() || !expected {
            let reason = match case.expect {
                Expect::Allowed(_, reason) => reason,
                Agree => "",
            };
            eprintln!(
                "{} {}: {verdict:?} {reason}\n  courier {:?} unread {:?}\n  hyper   {:?}",
                case.class,
                case.name,
                courier.record,
                String::from_utf8_lossy(&courier.read.unread),
                hyper
            );
        }
        if !expected {
            failures.push(format!(
                "{}: expected {:?}, got {verdict:?}",
                case.name, case.expect
            ));
        }
    }
    eprintln!("cases per class: {classes:?}");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn case_names_are_unique() {
    let cases = corpus();
    let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len());
}
