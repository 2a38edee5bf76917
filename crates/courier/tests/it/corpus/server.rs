//! The scripted server of a case: an accept loop on 127.0.0.1 that serves
//! each connection as HTTP/1.1 or HTTP/2 (over TLS when the transport says
//! so). `/hostile` gets the case's script; `/good` (and anything else) a
//! well-formed `200` whose body is unique in the run, so a byte of one
//! response seen by another request shows up as a wrong body. The log
//! counts what the server read, to prove a refused request wrote nothing.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

use super::case::{Script, Transport};
use super::io::{self, Conn, Cutter};
use super::tasks::Tasks;
use super::{h1_server, h2_server, tls};

/// What the server read, over all its connections.
#[derive(Default, Debug)]
pub struct Log {
    /// Requests for `/hostile` seen.
    pub hostile: AtomicUsize,
    /// Requests for anything else seen.
    pub good: AtomicUsize,
    /// Bytes that were not a request (a smuggled or malformed one).
    pub garbage: AtomicUsize,
    /// Scripts run to their end (or to a failed write).
    pub scripts_done: AtomicUsize,
    /// Connections accepted.
    pub conns: AtomicUsize,
    /// Connections the client has not closed yet.
    pub live: AtomicUsize,
    /// The HTTP/1.1 request heads read, for the cases' probes.
    pub heads: super::probe::Heads,
    /// The connection (numbered from 0 as accepted) each request came on,
    /// in the order read: which requests of a case shared one.
    pub served: std::sync::Mutex<Vec<usize>>,
}

impl Log {
    /// A request came on connection `conn`.
    pub fn served_on(&self, conn: usize) {
        self.served.lock().unwrap().push(conn);
    }

    /// The `n`th `/hostile` request's number (from 0, over all connections).
    pub fn next_hostile(&self) -> usize {
        self.hostile.fetch_add(1, Ordering::Relaxed)
    }
}

/// Counts a connection as live until the server is done with it, which
/// (every serving loop reads until the end) is when the client closed it.
struct Live(Arc<Log>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A good response's body: unique across the run.
pub fn good_body() -> Vec<u8> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    format!("good:{:08}", SEQ.fetch_add(1, Ordering::Relaxed)).into_bytes()
}

/// Whether `body` is a good response's body.
pub fn is_good_body(body: &[u8]) -> bool {
    body.len() == 13 && body.starts_with(b"good:") && body[5..].iter().all(u8::is_ascii_digit)
}

pub struct Server {
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub log: Arc<Log>,
    pub tasks: Tasks,
}

impl Server {
    pub async fn start(transport: Transport, script: Script) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let port = addr.port();
        let scheme = if transport.is_tls() { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{port}");
        let log = Arc::new(Log::default());
        let tasks = Tasks::default();
        let (shared, spawner) = (Arc::clone(&log), tasks.clone());
        tasks.spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let n = shared.conns.fetch_add(1, Ordering::Relaxed);
                shared.live.fetch_add(1, Ordering::Relaxed);
                let conn = serve(
                    transport,
                    script.clone(),
                    n,
                    tcp,
                    Arc::clone(&shared),
                    spawner.clone(),
                );
                spawner.spawn(conn);
            }
        });
        Server {
            url,
            addr,
            log,
            tasks,
        }
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.url.starts_with("https:") {
            "https"
        } else {
            "http"
        }
    }

    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    pub fn hostile(&self) -> usize {
        self.log.hostile.load(Ordering::Relaxed)
    }

    pub fn scripts_done(&self) -> usize {
        self.log.scripts_done.load(Ordering::Relaxed)
    }

    pub fn live(&self) -> usize {
        self.log.live.load(Ordering::Relaxed)
    }

    /// How many requests the server has read.
    pub fn requests(&self) -> usize {
        self.log.served.lock().unwrap().len()
    }

    /// The connection of the last request read after the first `since`.
    pub fn last_served_since(&self, since: usize) -> Option<usize> {
        self.log
            .served
            .lock()
            .unwrap()
            .get(since..)?
            .last()
            .copied()
    }

    pub fn garbage(&self) -> usize {
        self.log.garbage.load(Ordering::Relaxed)
    }
}

async fn serve(
    transport: Transport,
    script: Script,
    n: usize,
    mut tcp: tokio::net::TcpStream,
    log: Arc<Log>,
    tasks: Tasks,
) {
    let _live = Live(Arc::clone(&log));
    let cutter = Cutter::of(&tcp);
    if let Script::Raw(steps) = &script {
        if n == 0 {
            let mut first = [0u8; 4096];
            if matches!(tcp.read(&mut first).await, Ok(n) if n > 0)
                && io::run(&mut tcp, &cutter, steps).await == io::After::Open
            {
                io::drain(&mut tcp).await;
            }
            return;
        }
    }
    let conn: Conn = if transport.is_tls() {
        let alpn: &[u8] = if transport.is_h2() {
            b"h2"
        } else {
            b"http/1.1"
        };
        match tls::acceptor(alpn).accept(tcp).await {
            Ok(tls) => tokio_util::either::Either::Right(tls),
            Err(_) => return,
        }
    } else {
        tokio_util::either::Either::Left(tcp)
    };
    if transport.is_h2() {
        h2_server::serve(conn, n, cutter, script, log, tasks).await;
    } else {
        h1_server::serve(conn, n, cutter, script, log).await;
    }
}
