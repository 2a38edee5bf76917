//! A case of the corpus: a hostile server's script, the client that meets
//! it, and what must come of it. Cases are data (mostly the bytes a server
//! writes), built with the small constructors below so a table of them
//! reads as one line per misbehaviour.

use std::sync::Arc;
use std::time::Duration;

use courier::middleware::Stack;
use courier::{ClientBuilder, ErrorKind};

use super::budget::Budget;
use super::front::Front;
use super::probe::Probe;

/// The classes of misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Framing,
    Interim,
    Headers,
    Floods,
    Hpack,
    FlowControl,
    StreamIds,
    Goaway,
    Lengths,
    Tls,
    Decompression,
    Redirects,
    Injection,
    Proxies,
    Routes,
    Upgrades,
    #[cfg(feature = "cookies")]
    Cookies,
    #[cfg(feature = "http3")]
    AltSvc,
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    HttpsRecord,
    /// State carried from one response to the next on one connection.
    Across,
}

/// A route the client is given around the proxy (the `routes` class): the
/// URL then names `localhost`, and the route leads to the case's server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Around {
    None,
    /// `unix_socket_for("localhost", ..)`: a Unix socket relayed to it.
    UnixFor,
    /// `unix_socket(..)`, for every host.
    UnixAll,
    /// `connector(..)` dialing it.
    Connector,
    /// `resolve("localhost", its address)`.
    Resolve,
    /// The proxy's own bypass: `no_proxy("localhost")` on a builder proxy,
    /// `no_proxy=localhost` beside an environment's.
    Bypass,
}

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transport {
    /// HTTP/1.1 over TCP.
    H1,
    /// HTTP/2 over TCP by prior knowledge.
    H2c,
    /// HTTP/1.1 over TLS (ALPN http/1.1).
    TlsH1,
    /// HTTP/2 over TLS (ALPN h2).
    TlsH2,
}

impl Transport {
    pub fn is_h2(self) -> bool {
        matches!(self, Transport::H2c | Transport::TlsH2)
    }

    pub fn is_tls(self) -> bool {
        matches!(self, Transport::TlsH1 | Transport::TlsH2)
    }
}

/// One thing a server does.
#[derive(Debug, Clone)]
pub enum Step {
    /// Writes these bytes (HTTP/2: `{stream}` is not substituted; see
    /// [`Script::H2`], whose steps are built per stream).
    Write(Vec<u8>),
    /// Writes these bytes in `pieces` writes `gap` apart (a trickle).
    Trickle {
        bytes: Vec<u8>,
        pieces: usize,
        gap: Duration,
    },
    /// Closes cleanly (a FIN; over TLS a close_notify first), then reads
    /// until the client closes.
    Close,
    /// Shuts the socket down under TLS, without a close_notify (a truncation).
    Abort,
    /// Writes these bytes up to this many times, until a write fails (a
    /// flood that goes on for as long as the client listens).
    Flood(Vec<u8>, usize),
    /// Waits this long (the server's pace is the behaviour under test).
    Pause(Duration),
    /// Writes these bytes to the socket itself, under TLS if there is TLS
    /// (a plaintext record in an encrypted stream).
    Inject(Vec<u8>),
}

/// What the server does with the hostile request.
#[derive(Clone)]
pub enum Script {
    /// HTTP/1.1: these steps answer every request for `/hostile`; the
    /// connection is served on afterwards unless a step closed it.
    H1(Vec<Step>),
    /// HTTP/2: the steps that answer a `/hostile` request on `stream`.
    H2(Arc<dyn Fn(u32) -> Vec<Step> + Send + Sync>),
    /// HTTP/1.1, several requests: the `n`th `/hostile` request the server
    /// reads (from 0, over all its connections) gets the `n`th steps (past
    /// the end, the last).
    H1Turns(Vec<Vec<Step>>),
    /// HTTP/2, several requests: the steps that answer the `n`th `/hostile`
    /// request the server reads (over all its connections) on `stream`.
    H2Turns(Arc<dyn Fn(usize, u32) -> Vec<Step> + Send + Sync>),
    /// The first connection gets these steps after its first read (before
    /// any HTTP: a TLS handshake goes wrong); later connections are served
    /// as [`Script::H1`]/[`Script::H2`] would serve `/good`.
    Raw(Vec<Step>),
}

/// The request that meets the hostile server.
#[derive(Clone, Copy)]
pub enum Request {
    Get,
    Head,
    /// A request the caller builds (injection attempts), for the URL given.
    Build(fn(&courier::Client, &str) -> courier::RequestBuilder),
}

/// What must come of the hostile request.
#[derive(Debug, Clone)]
pub enum Expect {
    /// A response with this status, and the whole body read without error.
    Response { status: u16, body: Body },
    /// This error, from sending or from reading the body.
    Error(ErrorKind),
    /// This error, and the server saw no byte of the request.
    Refused(ErrorKind),
}

impl Expect {
    pub fn ok(status: u16, body: &[u8]) -> Expect {
        Expect::Response {
            status,
            body: Body::Exact(body.to_vec()),
        }
    }
}

/// Which connection a request comes on, against the request before it
/// (the server numbers the connections it accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    /// The same one: what the server sent before left it usable.
    Same,
    /// One no earlier request of the case came on: the one before failed
    /// the connection (a framing error, a connection error), and the pool
    /// must not hand it out again.
    Fresh,
}

/// A request of a case after its first, on the same client.
#[derive(Debug, Clone)]
pub struct Turn {
    pub on: On,
    pub expect: Expect,
}

/// What the body must be.
#[derive(Debug, Clone)]
pub enum Body {
    Exact(Vec<u8>),
    Len(usize),
}

/// One case.
#[derive(Clone)]
pub struct Case {
    pub name: &'static str,
    pub class: Class,
    pub transports: Vec<Transport>,
    pub script: Script,
    pub request: Request,
    pub client: fn(ClientBuilder) -> ClientBuilder,
    /// Middleware between the caller and the client.
    pub stack: Option<fn() -> Stack>,
    /// The stack's redirect and decompression settings go to the client
    /// itself (`ClientBuilder::redirect`, `decompression`), and no stack is
    /// built: the case runs through a plain `Client`'s own following and
    /// decoding, the same code as the layers (issue 28).
    pub by_client: bool,
    pub timeout: Duration,
    pub expect: Expect,
    pub budget: Budget,
    /// Only in the full set (it waits out a timeout, or is a variation).
    pub slow: bool,
    /// The hostile request's URL (`{scheme}`, `{port}`: the server's; its
    /// host resolves to the server), if not the server's `/hostile`.
    pub url: Option<&'static str>,
    /// More `/hostile` requests after the first, one at a time once the
    /// script before has had its say, each with its outcome and connection
    /// (the `Across` class: state carried between responses).
    pub then: Vec<Turn>,
    /// The connection the follow-up `/good` request must come on, against
    /// the last hostile request's (checked only for cases with `then`).
    pub after: On,
    /// Requests sent after the hostile one, and what they must carry.
    pub probes: Vec<Probe>,
    /// A scripted proxy in front of the server.
    pub front: Option<Front>,
    /// A route around the proxy.
    pub around: Around,
    /// A hostile nameserver the client asks for the origin's HTTPS record.
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    pub dns: Option<super::dns::DnsCase>,
}

/// The request timeout unless a case says otherwise.
pub const TIMEOUT: Duration = Duration::from_millis(1500);

fn plain(b: ClientBuilder) -> ClientBuilder {
    b
}

impl Case {
    fn new(name: &'static str, class: Class, transport: Transport, script: Script) -> Case {
        Case {
            name,
            class,
            transports: vec![transport],
            script,
            request: Request::Get,
            client: plain,
            stack: None,
            by_client: false,
            timeout: TIMEOUT,
            expect: Expect::Error(ErrorKind::Protocol),
            budget: Budget::default(),
            slow: false,
            url: None,
            then: Vec::new(),
            after: On::Same,
            probes: Vec::new(),
            front: None,
            around: Around::None,
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            dns: None,
        }
    }

    /// An HTTP/1.1 case whose server answers `/hostile` with `bytes` and
    /// closes the connection.
    pub fn h1(name: &'static str, class: Class, bytes: impl Into<Vec<u8>>) -> Case {
        Case::h1_steps(name, class, vec![Step::Write(bytes.into()), Step::Close])
    }

    /// An HTTP/1.1 case whose server answers `/hostile` with `bytes` and
    /// keeps the connection (what follows is the next request's answer).
    pub fn h1_keep(name: &'static str, class: Class, bytes: impl Into<Vec<u8>>) -> Case {
        Case::h1_steps(name, class, vec![Step::Write(bytes.into())])
    }

    pub fn h1_steps(name: &'static str, class: Class, steps: Vec<Step>) -> Case {
        Case::new(name, class, Transport::H1, Script::H1(steps))
    }

    /// An h2c case whose server answers a `/hostile` stream with `steps(stream)`.
    pub fn h2(
        name: &'static str,
        class: Class,
        steps: impl Fn(u32) -> Vec<Step> + Send + Sync + 'static,
    ) -> Case {
        Case::new(name, class, Transport::H2c, Script::H2(Arc::new(steps)))
    }

    /// An HTTP/1.1 case of several requests: the `n`th gets `turns[n]`
    /// (see [`Case::then`]).
    pub fn h1_turns(name: &'static str, class: Class, turns: Vec<Vec<Step>>) -> Case {
        Case::new(name, class, Transport::H1, Script::H1Turns(turns))
    }

    /// An h2c case of several requests: the `n`th (from 0) is answered on
    /// its `stream` with `steps(n, stream)` (see [`Case::then`]).
    pub fn h2_turns(
        name: &'static str,
        class: Class,
        steps: impl Fn(usize, u32) -> Vec<Step> + Send + Sync + 'static,
    ) -> Case {
        Case::new(
            name,
            class,
            Transport::H2c,
            Script::H2Turns(Arc::new(steps)),
        )
    }

    /// Then sends `/hostile` again, which must come `on` its connection and
    /// meet `expect`.
    pub fn then(mut self, on: On, expect: Expect) -> Case {
        self.then.push(Turn { on, expect });
        self
    }

    /// The follow-up `/good` request must come `on` its connection.
    pub fn after(mut self, on: On) -> Case {
        self.after = on;
        self
    }

    /// A case whose first connection meets `steps` before any HTTP.
    pub fn raw(name: &'static str, class: Class, transport: Transport, steps: Vec<Step>) -> Case {
        Case::new(name, class, transport, Script::Raw(steps))
    }

    /// Also over TLS (the same protocol, negotiated by ALPN).
    pub fn tls_too(mut self) -> Case {
        let more: Vec<Transport> = self
            .transports
            .iter()
            .map(|t| match t {
                Transport::H1 => Transport::TlsH1,
                Transport::H2c => Transport::TlsH2,
                other => *other,
            })
            .collect();
        for t in more {
            if !self.transports.contains(&t) {
                self.transports.push(t);
            }
        }
        self
    }

    /// Over `transports` only.
    pub fn over(mut self, transports: &[Transport]) -> Case {
        self.transports = transports.to_vec();
        self
    }

    pub fn ok(mut self, status: u16, body: &[u8]) -> Case {
        self.expect = Expect::Response {
            status,
            body: Body::Exact(body.to_vec()),
        };
        self
    }

    pub fn ok_len(mut self, status: u16, len: usize) -> Case {
        self.expect = Expect::Response {
            status,
            body: Body::Len(len),
        };
        self
    }

    pub fn err(mut self, kind: ErrorKind) -> Case {
        self.expect = Expect::Error(kind);
        self
    }

    /// Fails with `kind` before a byte of the request is written.
    pub fn refused(mut self, kind: ErrorKind) -> Case {
        self.expect = Expect::Refused(kind);
        self
    }

    /// Times out: the server keeps the client waiting (full set only).
    pub fn times_out(mut self) -> Case {
        self.expect = Expect::Error(ErrorKind::Timeout);
        self.slow = true;
        self
    }

    pub fn request(mut self, request: Request) -> Case {
        self.request = request;
        self
    }

    pub fn client(mut self, f: fn(ClientBuilder) -> ClientBuilder) -> Case {
        self.client = f;
        self
    }

    pub fn stack(mut self, f: fn() -> Stack) -> Case {
        self.stack = Some(f);
        self
    }

    #[allow(dead_code)] // for cases that need a longer or shorter wait than TIMEOUT
    pub fn timeout(mut self, timeout: Duration) -> Case {
        self.timeout = timeout;
        self
    }

    pub fn cpu(mut self, ms: u64) -> Case {
        self.budget.cpu = Duration::from_millis(ms);
        self
    }

    pub fn rss_mb(mut self, mb: u64) -> Case {
        self.budget.rss = mb << 20;
        self
    }

    /// Sends the hostile request to `url` (see [`Case::url`]).
    #[allow(dead_code)] // for classes behind a feature (cookies)
    pub fn at(mut self, url: &'static str) -> Case {
        self.url = Some(url);
        self
    }

    /// Then sends GET `url`, whose `header` must pass `check` (see [`Probe`]).
    #[allow(dead_code)] // for classes behind a feature (cookies)
    pub fn probe(
        mut self,
        url: &'static str,
        header: &'static str,
        check: fn(Option<&str>) -> Result<(), String>,
    ) -> Case {
        self.probes.push(Probe { url, header, check });
        self
    }

    /// Behind `front`.
    pub fn front(mut self, front: Front) -> Case {
        self.front = Some(front);
        self
    }

    pub fn around(mut self, around: Around) -> Case {
        self.around = around;
        self
    }

    /// With HTTPS records looked up at `dns`'s hostile nameserver.
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    pub fn dns(mut self, dns: super::dns::DnsCase) -> Case {
        self.dns = Some(dns);
        self
    }

    pub fn slow(mut self) -> Case {
        self.slow = true;
        self
    }
}
