//! A case of the hostile HTTP/3 class: the server's script, what the
//! client sends, and what must come of it, with the corpus's budgets
//! (`corpus::budget`).

use std::time::Duration;

use courier::ErrorKind;
use quinn::TransportConfig;

use super::driver::Send;
use super::server::{Resumed, Script, Step};
use super::wire;
use crate::corpus::budget::Budget;

/// What must come of the hostile request.
#[derive(Debug, Clone)]
pub enum Expect {
    /// This status and exactly this body.
    Response(u16, Vec<u8>),
    /// This error, from the request or its body.
    Error(ErrorKind),
}

#[derive(Clone)]
pub struct Case {
    pub name: &'static str,
    pub script: Script,
    pub send: Send,
    /// The request's deadline (what a `Client`'s `timeout` would be).
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub expect: Expect,
    pub budget: Budget,
    /// A defect found and not fixed yet: its failures are printed and
    /// counted as pending (CI's summary shows the count), not failed.
    pub pending: Option<&'static str>,
    /// The fault is the connection's (its control or QPACK streams), found
    /// at a moment the request may not have gone yet: then the pool sends
    /// it again on a new connection (the server's second connection is a
    /// good one), so a good answer from a second connection passes too.
    pub resent_ok: bool,
    /// A fault on another stream than the request's (the peer's QPACK or
    /// control stream) races the answer: an answer of these bytes that
    /// came whole before the client read the fault is the client's to
    /// deliver, and passes if the client then closes the connection with
    /// an HTTP/3 error (the server sees the code).
    pub answered_first: Option<&'static [u8]>,
    /// How the server must find the request stream ended once the
    /// client's request is over (a `ReadRest` step reads it), as
    /// [`Server::request_end`](super::server::Server::request_end) says it.
    pub request_end: Option<&'static str>,
}

/// The request timeout unless a case says otherwise (the corpus's).
pub const TIMEOUT: Duration = crate::corpus::case::TIMEOUT;

fn plain(_: &mut TransportConfig) {}

impl Case {
    pub fn new(name: &'static str, steps: Vec<Step>) -> Case {
        Case {
            name,
            script: Script {
                steps,
                transport: plain,
                silent: false,
                resumed: None,
                prime: wire::control(),
            },
            send: Send::Get,
            timeout: TIMEOUT,
            connect_timeout: Duration::from_secs(1),
            expect: Expect::Error(ErrorKind::Protocol),
            budget: Budget::default(),
            pending: None,
            resent_ok: false,
            answered_first: None,
            request_end: None,
        }
    }

    /// A connection-level fault: [`Expect`] or, had the request not gone
    /// yet, a good answer on a second connection (see `resent_ok`).
    pub fn or_resent(mut self) -> Case {
        self.resent_ok = true;
        self
    }

    /// See `answered_first`.
    pub fn or_answered_first(mut self, body: &'static [u8]) -> Case {
        self.answered_first = Some(body);
        self
    }

    pub fn ok(mut self, body: &[u8]) -> Case {
        self.expect = Expect::Response(200, body.to_vec());
        self
    }

    /// The answer expected is `status` with `body`.
    pub fn status(mut self, status: u16, body: &[u8]) -> Case {
        self.expect = Expect::Response(status, body.to_vec());
        self
    }

    /// The script plays on a second connection, resumed with 0-RTT (the
    /// client's `tls_early_data` on): a first one, whose control stream
    /// says `prime`, answers one request and goes away (GOAWAY) after
    /// handing out its session ticket.
    pub fn resumed(mut self, mode: Resumed, prime: &[(u64, u64)]) -> Case {
        self.script.resumed = Some(mode);
        self.script.prime = wire::control_with(prime);
        self
    }

    pub fn err(mut self, kind: ErrorKind) -> Case {
        self.expect = Expect::Error(kind);
        self
    }

    pub fn send(mut self, send: Send) -> Case {
        self.send = send;
        self
    }

    pub fn transport(mut self, f: fn(&mut TransportConfig)) -> Case {
        self.script.transport = f;
        self
    }

    /// Handshakes go unanswered (until the follow-up).
    pub fn silent(mut self) -> Case {
        self.script.silent = true;
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Case {
        self.timeout = timeout;
        self
    }

    pub fn connect_timeout(mut self, timeout: Duration) -> Case {
        self.connect_timeout = timeout;
        self
    }

    pub fn request_end(mut self, end: &'static str) -> Case {
        self.request_end = Some(end);
        self
    }

    pub fn pending(mut self, why: &'static str) -> Case {
        self.pending = Some(why);
        self
    }

    pub fn cpu(mut self, ms: u64) -> Case {
        self.budget.cpu = Duration::from_millis(ms);
        self
    }
}
