//! Differential test of HTTP/1.1 response framing: each case's bytes are read
//! by courier and by hyper's client (see `differential/harness.rs`), and
//! where the two disagree about where the first response ends or whether the
//! connection can carry the next request, the test fails. A disagreement that
//! is a difference of policy (one side refuses what the other accepts) must be
//! listed with its reason in the case itself; one listed that no longer
//! happens fails too, so the list stays true.

mod harness;

use courier::fuzzing::Http1Answer;
use courier::ErrorKind;
use harness::{BodyEnd, CourierRecord, First, Record, Refusal, Script, Second, Verdict};
use http::Method;

/// What a case expects of the comparison.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Both clients read the same.
    Agree,
    /// A policy difference, with its reason (see [`Verdict`] for the kinds).
    Allowed(Allowed, &'static str),
}

/// The allowlistable kinds of disagreement. Each pins courier's own outcome
/// (its exact error kind, or what it read) as well as hyper's, so that a
/// change on courier's side (a hang where it refused, another error, a
/// desync) fails the case even where hyper's reading stays the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowed {
    /// Both refuse the head: courier with this error kind, hyper with this class.
    BothRefuse(ErrorKind, Refusal),
    /// Both stop in the body: courier with this error kind, hyper this way.
    BothFailBody(ErrorKind, BodyEnd),
    /// A framing disagreement where hyper is the one at fault
    /// ([`harness::hyper_known_wrong`] must recognise the bytes): courier
    /// must read them as the corrected bytes, and pinned here as it reads them.
    HyperWrong(Read),
    /// courier fails the body hyper reads whole, with this error kind.
    CourierRejectsBody(ErrorKind),
    /// courier refuses the head with this error kind; hyper reads a response
    /// with this status.
    CourierRefuses(ErrorKind, u16),
    /// hyper refuses the head (this class); courier reads it so.
    HyperRefuses(Refusal, Read),
    /// The same first answer, read whole; courier does not reuse the
    /// connection, hyper does.
    CourierCloses,
}

/// courier's reading of a case, pinned: the status, the whole body, and
/// whether the connection carried the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Read {
    status: u16,
    body: &'static [u8],
    reused: bool,
}

/// Read `hello` with a 200, and the connection reused or not.
const fn hello(reused: bool) -> Read {
    Read {
        status: 200,
        body: b"hello",
        reused,
    }
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
        let mut checked = pinned(case, &courier, &hyper, &verdict);
        if let (Ok(()), Expect::Allowed(Allowed::HyperWrong(_), _)) = (&checked, case.expect) {
            checked = match harness::hyper_known_wrong(case.bytes) {
                Some(known) => harness::known_wrong_holds(script, &courier, &known).await,
                None => Err("hyper_known_wrong does not recognise the bytes".into()),
            };
        }
        let expected = checked.is_ok();
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
                "{}: expected {:?}, got {verdict:?}: {}",
                case.name,
                case.expect,
                checked.err().unwrap_or_default()
            ));
        }
    }
    eprintln!("cases per class: {classes:?}");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Whether a case's outcome is the one it expects: `Ok`, or what differs.
/// (A `HyperWrong` case is further checked against its corrected bytes.)
fn pinned(
    case: &Case,
    courier: &CourierRecord,
    hyper: &Record,
    verdict: &Verdict,
) -> Result<(), String> {
    if case.courier_closes && courier.record.second != Second::NotReused {
        return Err("courier reused the connection".into());
    }
    let kind = match case.expect {
        Agree if *verdict == Verdict::Agree => return Ok(()),
        Agree => return Err("not agreed".into()),
        Expect::Allowed(kind, _) => kind,
    };
    let c = &courier.record;
    let refused = match &courier.outcome.first {
        Http1Answer::Refused(kind) => Some(*kind),
        Http1Answer::Response { .. } => None,
    };
    let body_error = match &courier.outcome.first {
        Http1Answer::Response {
            body: Err(kind), ..
        } => Some(*kind),
        _ => None,
    };
    let hyper_status = match &hyper.first {
        First::Response { status, .. } => Some(*status),
        First::Refused(_) => None,
    };
    let holds = match (kind, verdict) {
        (Allowed::BothRefuse(a, b), Verdict::BothRefuse(_, y)) => {
            refused == Some(a) && b == *y && c.second == Second::NotReused
        }
        (Allowed::BothFailBody(a, b), Verdict::BothFailBody(_, y)) => {
            body_error == Some(a) && b == *y
        }
        (Allowed::CourierRejectsBody(a), Verdict::CourierRejectsBody) => body_error == Some(a),
        (Allowed::HyperWrong(read), Verdict::Framing(_)) => reads(c, read),
        (Allowed::CourierRefuses(a, status), Verdict::CourierRefuses) => {
            refused == Some(a) && hyper_status == Some(status) && c.second == Second::NotReused
        }
        (Allowed::HyperRefuses(b, read), Verdict::HyperRefuses) => {
            hyper.first == First::Refused(b) && reads(c, read)
        }
        (Allowed::CourierCloses, Verdict::CourierCloses) => {
            matches!(c.first, First::Response { body: Ok(_), .. })
        }
        _ => false,
    };
    match holds {
        true => Ok(()),
        false => Err(format!(
            "courier {c:?} ({:?}), hyper {hyper:?}",
            courier.outcome.first
        )),
    }
}

/// courier's record is `read`.
fn reads(record: &Record, read: Read) -> bool {
    let second = match read.reused {
        true => Second::Served,
        false => Second::NotReused,
    };
    *record
        == Record {
            first: First::Response {
                status: read.status,
                body: Ok(read.body.to_vec()),
            },
            second,
        }
}

mod pins;

#[test]
fn case_names_are_unique() {
    let cases = corpus();
    let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len());
}
