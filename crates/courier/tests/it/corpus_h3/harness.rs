//! Runs one case alone and checks what the corpus checks for every class:
//! the outcome, the wall time against the request deadline, CPU time and
//! peak RSS growth against the budget, that a follow-up request on the same
//! client gets a good answer, that no request stream is left open, that
//! the server sees every connection closed once the client is gone, and
//! that no task is left behind.

use std::time::{Duration, Instant};

use courier::ErrorKind;

use super::case::{Case, Expect};
use super::driver::{Driver, Outcome, Send};
use super::server::{self, Server};
use crate::corpus::budget::{Cost, Reading};
use crate::corpus::harness::settles;
use crate::support::udp_delay::UdpDelay;

/// The bound on each wait of the harness itself.
const SETTLE: Duration = Duration::from_secs(3);
/// The bound on the client's tasks ending: a QUIC connection closed
/// during its handshake (a connect timeout) stays in quinn's closing state
/// for three PTOs (RFC 9000 §10.2), about 3 s at the initial RTT of 333 ms,
/// and its endpoint's task with it.
const TASKS_END: Duration = Duration::from_secs(5);
/// The server's datagrams held back in the 0-RTT cases (see `run`).
const RELAY_DELAY: Duration = Duration::from_millis(50);

pub struct Run {
    pub name: &'static str,
    pub cost: Cost,
    pub failures: Vec<String>,
}

pub async fn run(case: &Case) -> Run {
    let runtime = tokio::runtime::Handle::current().metrics();
    let baseline = runtime.num_alive_tasks();
    let server = Server::start(case.script.clone());
    let resumed = case.script.resumed.is_some();
    // A resumed handshake over loopback is done before the client's first
    // request is on its way; the relay's delay keeps it going meanwhile,
    // so the request does go early.
    let relay = match resumed {
        true => Some(UdpDelay::start(server.addr, RELAY_DELAY).await),
        false => None,
    };
    let mut driver = Driver::new(
        relay.as_ref().map_or(server.addr, |r| r.addr),
        server::root_pem(),
        case.connect_timeout,
        resumed,
    );
    let mut failures = Vec::new();
    if resumed {
        // The first connection: a ticket and SETTINGS to remember, then
        // gone, so the hostile request resumes with 0-RTT.
        match driver.request("/prime", Send::Get, SETTLE).await {
            Ok((200, body)) if body[..] == *server::GOOD => {}
            other => failures.push(format!("the first connection got {}", describe(&other))),
        }
        if !settles(SETTLE, || driver.open_connections() == 0).await {
            failures.push("the first connection did not go away".into());
        }
    }

    let start = Reading::now();
    let began = Instant::now();
    let deadline = case.timeout + case.budget.margin + SETTLE;
    let outcome = tokio::time::timeout(
        deadline,
        driver.request("/hostile", case.send, case.timeout),
    )
    .await;
    let cost = start.cost(began.elapsed());
    let mut answered_first = false;
    match outcome {
        Err(_) => failures.push(format!("no outcome within {deadline:?}: a hang")),
        Ok(outcome) => {
            answered_first = matches!(
                (&outcome, case.answered_first),
                (Ok((200, got)), Some(body)) if got[..] == *body
            );
            if !answered_first {
                check(case, &outcome, server.accepted(), &mut failures);
            }
        }
    }
    failures.extend(cost.over(&case.budget, case.timeout));
    // What the server found of the request stream after the request
    // ended: a cut upload must never end as a whole one.
    server.client_done();
    if let Some(want) = case.request_end {
        if !settles(SETTLE, || server.request_end().is_some()).await {
            failures.push("the server read no end of the request stream".into());
        } else if server.request_end().as_deref() != Some(want) {
            failures.push(format!(
                "the request stream ended with {:?}, not {want:?}",
                server.request_end()
            ));
        }
    }
    if resumed && driver.early_data() == 0 {
        failures.push("the resumed connection sent no early data: 0-RTT untested".into());
    }

    // The same client gets a good answer (on the same connection if it
    // is still usable, else on a new one).
    server.speak();
    let mut follow_up = driver.request("/good", Send::Get, SETTLE).await;
    if answered_first && matches!(follow_up, Err((ErrorKind::Protocol, _))) {
        // The fault the answer beat can catch the follow-up in flight on
        // the same connection, which then fails with it; the client must
        // still recover, on a new connection.
        follow_up = driver.request("/good", Send::Get, SETTLE).await;
    }
    match follow_up {
        Ok((200, body)) if body[..] == *server::GOOD => {}
        other => failures.push(format!("the follow-up got {}", describe(&other))),
    }

    // An answer that beat the fault does not excuse it: the client, still
    // alive, must read the fault and close that connection with an HTTP/3
    // error. Its driver may lag the answer on a loaded machine: waited
    // for, within SETTLE.
    if answered_first && !settles(SETTLE, || server.faulted() > 0).await {
        failures.push(
            "answered before the fault was read, and no connection was closed \
             with an HTTP/3 error: the fault went unseen"
                .into(),
        );
    }

    // No request stream left open.
    if !settles(SETTLE, || driver.open_streams() == 0).await {
        failures.push(format!(
            "{} request stream(s) left open",
            driver.open_streams()
        ));
    }
    // No connection left behind once the client is gone.
    drop(driver);
    if !settles(SETTLE, || server.live() == 0).await {
        failures.push(format!(
            "{} connection(s) still open after the client was dropped",
            server.live()
        ));
    }
    server.stop();
    drop(server);
    drop(relay);
    if !settles(TASKS_END, || runtime.num_alive_tasks() <= baseline).await {
        failures.push(format!(
            "tasks left behind: {} alive, {baseline} before",
            runtime.num_alive_tasks()
        ));
    }
    Run {
        name: case.name,
        cost,
        failures,
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Ok((status, body)) => format!(
            "{status} with {} bytes {:?}",
            body.len(),
            String::from_utf8_lossy(&body[..body.len().min(40)])
        ),
        Err((kind, message)) => format!("error {kind:?}: {message}"),
    }
}

/// The outcome is the case's; `accepted`: connections the server took.
fn check(case: &Case, outcome: &Outcome, accepted: usize, failures: &mut Vec<String>) {
    let expect = &case.expect;
    let fits = match (expect, outcome) {
        (Expect::Response(status, body), Ok((got, bytes))) => {
            got == status && bytes[..] == body[..]
        }
        (Expect::Error(kind), Err((got, _))) => got == kind,
        // Resent on a new connection: the hostile one answers nothing.
        (Expect::Error(_), Ok((200, bytes))) if case.resent_ok => {
            accepted >= 2 && bytes[..] == *server::GOOD
        }
        _ => false,
    };
    if !fits {
        failures.push(format!("expected {expect:?}, got {}", describe(outcome)));
    }
}
