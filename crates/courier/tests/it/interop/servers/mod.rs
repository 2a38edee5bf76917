//! One launcher per server: each writes its own config into a temp dir
//! (never the system one) for a [`Profile`], starts the server on free
//! loopback ports and says what it can be asked ([`Caps`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::fixtures::Fixtures;
use super::process::Proc;

mod apache;
mod caddy;
mod contract;
mod h2o;
mod haproxy;
mod lighttpd;
mod nginx;

/// The two configurations every server runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The server's own defaults, as far as a config file allows.
    Default,
    /// Keep-alive idle ~2 s, 100 requests per connection where the server
    /// has such a limit, request-header timeout of a few seconds.
    Tight,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Tight => "tight",
        }
    }
}

/// What a launcher is given.
pub struct Ctx<'a> {
    pub fx: &'a Fixtures,
    pub profile: Profile,
    /// Port of the courier-server that serves `/echo`, `/status/`,
    /// `/redirect/` and `/delay/` behind servers that cannot.
    pub backend: u16,
}

/// What a running server can be asked.
#[derive(Clone, Debug, Default)]
pub struct Caps {
    /// `GET /trailers` sends a body with an `x-checksum` trailer.
    pub trailers: bool,
    /// ... over HTTP/1.1 too (hypercorn's ASGI layer sends them over HTTP/2 only).
    pub h1_trailers: bool,
    /// `GET /early-hints` sends a 103 first.
    pub early_hints: bool,
    /// Where `text.txt` is served gzip-encoded to a client that accepts it.
    pub gzip_path: &'static str,
    /// Static files answer conditional GETs (`If-None-Match`,
    /// `If-Modified-Since`); otherwise the 304 check uses `/status/304`.
    pub conditional: bool,
    /// `/redirect/0`'s body.
    pub redirect_done: &'static str,
    /// The keep-alive idle timeout (and, in the tight profile, the
    /// request-header timeout) when the suite knows it: the idle-gap check
    /// waits a little longer than this.
    pub idle: Option<Duration>,
    /// Requests per connection the profile allows, when the server has
    /// such a limit.
    pub request_limit: Option<u32>,
    /// HTTP/2 streams the server allows per connection, when the suite
    /// knows it (bounds the connections 200 concurrent requests may open).
    pub max_streams: Option<u32>,
    /// Why a request with `Expect: 100-continue` is not served reliably
    /// through this server, whatever the client does (the expect-100 check
    /// is then n/a with this reason); `None` when it is.
    pub expect_broken: Option<&'static str>,
    /// Why an upload sent with `Expect: 100-continue` to an upstream that
    /// answers before reading it (the echo) may stall through this server
    /// whatever the client does (such an upload's timeout, over HTTP/1.1,
    /// is then counted for `Tolerance::UploadStall`, within its bounds);
    /// `None` when it never does.
    pub upload_stalls: Option<&'static str>,
    /// Why, over HTTP/2, responses in flight when the server reaches its
    /// request limit are cut whatever the client does (where the profile
    /// has a `request_limit`, the burst, load and bench checks count such
    /// cuts for `Tolerance::GoawayCut`, within its bounds); `None` when the
    /// server completes what its GOAWAY kept.
    pub drops_streams_at_goaway: Option<&'static str>,
    /// HTTP/3: why an upload without `content-length` comes back as an
    /// empty echo whatever the client does (`Tolerance::H3StreamedUploadDropped`).
    pub h3_streamed_upload_dropped: Option<&'static str>,
    /// HTTP/3: why the stream never ends after the trailer section
    /// (`Tolerance::H3TrailersUnended`).
    pub h3_trailers_unended: Option<&'static str>,
    /// HTTP/3: why the server's QUIC listener may die of a request's FIN
    /// that comes after its response (`Tolerance::H3LateFinKills`).
    pub h3_late_fin_kills: Option<&'static str>,
    /// HTTP/3: why busy connections may reach the QUIC idle timeout under
    /// load (`Tolerance::H3IdleStall`).
    pub h3_idle_stall: Option<&'static str>,
}

/// A started server: its processes (stopped on drop) and ports.
pub struct Running {
    pub procs: Vec<Proc>,
    pub h1: u16,
    /// Plain TCP accepting the HTTP/2 preface (may be the `h1` port).
    pub h2c: Option<u16>,
    /// TLS offering ALPN h2 and http/1.1.
    pub tls: Option<u16>,
    pub caps: Caps,
    /// HTTP/3 (QUIC, UDP), with feature `http3`: servers without one have
    /// no `h3` row (a server that cannot speak a protocol is no cell).
    pub h3: Option<H3Port>,
}

/// A server's HTTP/3 port: UDP on loopback, the suite's certificate.
pub struct H3Port {
    pub port: u16,
    /// What it can be asked: the server's caps, where its QUIC stack's own
    /// timeouts and limits differ from its TCP ports'.
    pub caps: Caps,
    /// The process of its own that serves it, when it has one: the run
    /// restarts it after its listener died (`Caps::h3_late_fin_kills`).
    pub own: Option<Arc<Restartable>>,
}

/// Restarts of one column's own process a row may make: past them the
/// row's later checks are not run. hypercorn's QUIC listener died once or
/// twice a full run (one per profile at most, while a death ended the
/// row); a restarted listener meets the heaviest checks (load, bench)
/// afresh, so a row gets room for two more deaths.
pub const MAX_RESTARTS: u32 = 2;

/// A server process of its own serving one column, which the run may stop
/// and start again on the same port (at most [`MAX_RESTARTS`] times), so a
/// listener that dies costs the check that killed it, not the row.
pub struct Restartable {
    spawn: Box<dyn Fn() -> Result<Proc, String> + Send + Sync>,
    proc: Mutex<Option<Proc>>,
    restarts: AtomicU32,
}

impl Restartable {
    /// Starts the process with `spawn` (which waits until it is ready).
    pub fn start(
        spawn: impl Fn() -> Result<Proc, String> + Send + Sync + 'static,
    ) -> Result<Restartable, String> {
        let proc = spawn()?;
        Ok(Restartable {
            spawn: Box::new(spawn),
            proc: Mutex::new(Some(proc)),
            restarts: AtomicU32::new(0),
        })
    }

    /// Stops the process (its whole group) and starts it again; blocks.
    /// Returns how many restarts this one is, or why there was none.
    pub fn restart(&self) -> Result<u32, String> {
        let n = self.restarts.load(Ordering::SeqCst);
        if n >= MAX_RESTARTS {
            return Err(format!("{MAX_RESTARTS} restarts made already"));
        }
        self.restarts.store(n + 1, Ordering::SeqCst);
        let mut slot = self.proc.lock().unwrap_or_else(PoisonError::into_inner);
        drop(slot.take());
        *slot = Some((self.spawn)()?);
        Ok(n + 1)
    }

    /// Restarts made so far.
    pub fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::SeqCst)
    }
}

/// A loopback port free for TCP and UDP both (Caddy serves HTTP/3 on its
/// TLS port's number), or `None` without feature `http3`, so the default
/// run starts no server's QUIC.
pub fn h3_port() -> Option<u16> {
    if !cfg!(feature = "http3") {
        return None;
    }
    for _ in 0..100 {
        let port = super::process::free_port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Some(port);
        }
    }
    panic!("no loopback port free for both TCP and UDP in 100 tries")
}

/// Why a server did not start.
#[derive(Debug)]
pub enum NotStarted {
    /// Its program is not installed here.
    Missing(String),
    /// It was there but failed to start.
    Failed(String),
}

/// One server the suite knows how to run.
pub struct Server {
    pub name: &'static str,
    /// The version banner, or why it is missing.
    pub version: fn() -> Result<String, String>,
    pub launch: fn(&Ctx) -> Result<Running, NotStarted>,
}

/// Every server, in matrix order.
pub fn all() -> Vec<Server> {
    vec![
        nginx::server(),
        apache::server(),
        h2o::server(),
        caddy::server(),
        lighttpd::server(),
        haproxy::server(),
        contract::node(),
        contract::hypercorn(),
        contract::go(),
    ]
}

/// The tight profile's keep-alive idle and request-header timeouts.
pub const TIGHT_IDLE: Duration = Duration::from_secs(2);

/// The idle timeout of `profile`: [`TIGHT_IDLE`], or the server's own
/// default keep-alive timeout when the suite knows it (`None` for the ones
/// of a minute or more).
pub fn idle_of(profile: Profile, default_secs: Option<u64>) -> Option<Duration> {
    match profile {
        Profile::Default => default_secs.map(Duration::from_secs),
        Profile::Tight => Some(TIGHT_IDLE),
    }
}

/// The caps of a static server whose dynamic endpoints are proxied to
/// courier-server; `default_idle` as in [`idle_of`].
pub fn static_caps(profile: Profile, default_idle: Option<u64>, limit: Option<u32>) -> Caps {
    Caps {
        trailers: false,
        h1_trailers: false,
        early_hints: false,
        gzip_path: "/static/text.txt",
        conditional: true,
        redirect_done: "ok",
        idle: idle_of(profile, default_idle),
        request_limit: limit,
        max_streams: None,
        expect_broken: None,
        upload_stalls: None,
        drops_streams_at_goaway: None,
        h3_streamed_upload_dropped: None,
        h3_trailers_unended: None,
        h3_late_fin_kills: None,
        h3_idle_stall: None,
    }
}

/// The paths proxied to courier-server by static servers.
pub const PROXIED: [&str; 4] = ["/echo", "/status/", "/redirect/", "/delay/"];
