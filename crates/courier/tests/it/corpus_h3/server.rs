//! A hostile HTTP/3 server: quinn's server side with rustls and a test
//! certificate, writing its HTTP/3 frames and streams itself (not the h3
//! crate's server, which would not misbehave). The first connection plays
//! the case's script; once the script is done, and on every later
//! connection, request streams get a good answer, so a follow-up request
//! shows whether the client recovered.
//!
//! Every task is kept in [`Tasks`] (aborted by the harness); every write
//! that may block on the client's flow control runs under a bound.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use quinn::{SendStream, TransportConfig, VarInt};

use super::wire;
use crate::corpus::tasks::Tasks;

/// The bound on any one server write that waits for the client's credit.
const WRITE_LIMIT: Duration = Duration::from_secs(5);

/// One thing the hostile connection does.
#[derive(Debug, Clone)]
pub enum Step {
    /// Opens a unidirectional stream and writes `bytes`; the stream stays
    /// open unless `fin` (its number: the order opened).
    Uni { bytes: Vec<u8>, fin: bool },
    /// Writes `bytes` on unidirectional stream `n`.
    UniMore(usize, Vec<u8>),
    /// Writes `bytes` `times` times on unidirectional stream `n`, in the
    /// background (a flood the client may stop reading).
    UniFlood(usize, Vec<u8>, usize),
    /// Opens up to `count` unidirectional streams, each carrying `bytes`
    /// and finished, in the background (each open waits for credit).
    UniStreams(Vec<u8>, usize),
    /// Waits this long, then lets the client open this many request
    /// streams (MAX_STREAMS): credit granted late.
    GrantStreams(Duration, u32),
    /// Waits for the request stream and reads the request's first bytes.
    Accept,
    /// Writes `bytes` on the request stream.
    Write(Vec<u8>),
    /// Writes `bytes` up to `times` times on the request stream, until a
    /// write fails (the client stopped it) or stalls.
    Flood(Vec<u8>, usize),
    /// Finishes the request stream.
    Fin,
    /// Does nothing more until the client closes the connection (no
    /// request stream is answered).
    Hold,
    /// Does nothing more on the hostile request stream (kept open, never
    /// answered); later request streams get good answers, as the other
    /// corpus classes' servers answer the follow-up on a connection that
    /// broke no rule of the connection's own.
    Serve,
    /// Once the client's request has ended (the harness says so), reads
    /// what is left of the request stream to its end and records how it
    /// ended ([`Server::request_end`]); then as [`Step::Serve`].
    ReadRest,
}

/// What the first connection meets.
#[derive(Clone)]
pub struct Script {
    pub steps: Vec<Step>,
    /// The first connection's transport (MAX_STREAMS, windows).
    pub transport: fn(&mut TransportConfig),
    /// Handshakes are ignored (no packet answered) until the harness says.
    pub silent: bool,
    /// The script plays on the second connection, which the client resumes
    /// with 0-RTT; the first (`prime`) hands out the session ticket.
    pub resumed: Option<Resumed>,
    /// The first connection's control stream when `resumed`.
    pub prime: Vec<u8>,
}

/// What the server does with a resumed connection's early data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumed {
    /// Takes it: the script's connection sees the early requests.
    Accept,
    /// Forgets every session: the resumption fails and the early data is
    /// rejected (the client must send it again after the handshake).
    Reject,
}

/// The running server.
pub struct Server {
    pub addr: SocketAddr,
    pub tasks: Tasks,
    state: Arc<State>,
    endpoint: quinn::Endpoint,
}

#[derive(Default)]
struct State {
    /// Connections not yet closed.
    live: AtomicUsize,
    /// Connections accepted.
    accepted: AtomicUsize,
    /// Handshakes are being ignored.
    silent: AtomicBool,
    /// Request streams accepted.
    requests: AtomicUsize,
    /// Connections the client closed with an HTTP/3 error (not
    /// H3_NO_ERROR): it saw a fault.
    faulted: AtomicUsize,
    /// The client's request has ended (its outcome came): for `ReadRest`.
    client_done: tokio::sync::Notify,
    /// How the request stream ended, read by `ReadRest`.
    request_end: std::sync::Mutex<Option<String>>,
}

pub use crate::corpus::tls::root_pem;

/// HTTP/3's "no error" (RFC 9114 §8.1): how a client closes a good connection.
const H3_NO_ERROR: u32 = 0x100;

/// Tickets the server issues: sessions kept here (rustls takes early data
/// only from sessions it stored), or forgotten at once.
fn sessions(resumed: Option<Resumed>) -> Option<Arc<dyn rustls::server::StoresServerSessions>> {
    Some(match resumed? {
        Resumed::Reject => Arc::new(Forgetful),
        Resumed::Accept => rustls::server::ServerSessionMemoryCache::new(64),
    })
}

/// Issues tickets and never finds their sessions again.
#[derive(Debug)]
struct Forgetful;

impl rustls::server::StoresServerSessions for Forgetful {
    fn put(&self, _: Vec<u8>, _: Vec<u8>) -> bool {
        true
    }
    fn get(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn take(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn can_cache(&self) -> bool {
        true
    }
}

fn server_config(
    transport: fn(&mut TransportConfig),
    sessions: Option<&Arc<dyn rustls::server::StoresServerSessions>>,
) -> quinn::ServerConfig {
    let id = crate::corpus::tls::identity();
    let mut tls = crate::support::h3_tls(&id.cert, &id.key);
    // For the 0-RTT cases, every connection's tickets name sessions in one
    // store, so a second connection can resume the first and send early
    // data; the other cases' server is as it was.
    if let Some(sessions) = sessions {
        tls.session_storage = Arc::clone(sessions);
        tls.max_early_data_size = u32::MAX;
    }
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut t = TransportConfig::default();
    t.max_concurrent_uni_streams(VarInt::from_u32(100));
    transport(&mut t);
    config.transport_config(Arc::new(t));
    config
}

fn plain(_: &mut TransportConfig) {}

impl Server {
    pub fn start(script: Script) -> Server {
        let tasks = Tasks::default();
        let state = Arc::new(State::default());
        state.silent.store(script.silent, Ordering::Relaxed);
        let store = sessions(script.resumed);
        let endpoint = quinn::Endpoint::server(
            server_config(plain, store.as_ref()),
            ([127, 0, 0, 1], 0).into(),
        )
        .expect("QUIC server");
        let addr = endpoint.local_addr().expect("address");
        let hostile = Arc::new(server_config(script.transport, store.as_ref()));
        let good = Arc::new(server_config(plain, store.as_ref()));
        // Which connection plays the script: the first, or the resumed second.
        let scripted = usize::from(script.resumed.is_some());
        let (ep, st, t) = (endpoint.clone(), Arc::clone(&state), tasks.clone());
        tasks.spawn(async move {
            // The handshakes ignored while silent: their Initials, sent
            // again by an attempt the client gave up on, are ignored after
            // too (else a late one starts a connection the client no
            // longer has, which lingers until the server's idle timeout).
            let mut ignored = Vec::new();
            while let Some(incoming) = ep.accept().await {
                let cid = incoming.orig_dst_cid();
                if st.silent.load(Ordering::Relaxed) || ignored.contains(&cid) {
                    if ignored.len() < 64 && !ignored.contains(&cid) {
                        ignored.push(cid);
                    }
                    incoming.ignore();
                    continue;
                }
                let n = st.accepted.fetch_add(1, Ordering::Relaxed);
                let first = n == scripted;
                let prime = n == 0 && scripted == 1;
                let config = if first { &hostile } else { &good };
                let Ok(connecting) = incoming.accept_with(Arc::clone(config)) else {
                    continue;
                };
                let steps = if first {
                    script.steps.clone()
                } else if prime {
                    vec![Step::Uni {
                        bytes: script.prime.clone(),
                        fin: false,
                    }]
                } else {
                    good_steps()
                };
                let (st, tasks) = (Arc::clone(&st), t.clone());
                t.spawn(async move {
                    // Served at once (0.5-RTT): early request streams are
                    // seen before the handshake completes.
                    let conn = match (scripted, connecting.into_0rtt()) {
                        (1, Ok((conn, _))) => conn,
                        // The other cases wait for the handshake, as before.
                        (_, Ok((conn, established))) => {
                            established.await;
                            conn
                        }
                        (_, Err(connecting)) => match connecting.await {
                            Ok(conn) => conn,
                            Err(_) => return,
                        },
                    };
                    st.live.fetch_add(1, Ordering::Relaxed);
                    let mut play = Play {
                        conn: conn.clone(),
                        uni: Vec::new(),
                        request: None,
                        tasks: tasks.clone(),
                    };
                    // Whether the script ran to its end or stopped at a
                    // write the client refused (a stopped stream), the
                    // connection answers what comes next, if it lives.
                    play.run(&steps, &st).await;
                    if prime {
                        play.prime(&st).await;
                    }
                    serve_good(&conn, &st, &tasks).await;
                    if let quinn::ConnectionError::ApplicationClosed(close) = conn.closed().await {
                        if close.error_code != VarInt::from_u32(H3_NO_ERROR) {
                            st.faulted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    drop(play);
                    st.live.fetch_sub(1, Ordering::Relaxed);
                });
            }
        });
        Server {
            addr,
            tasks,
            state,
            endpoint,
        }
    }

    /// Handshakes are answered from now on.
    pub fn speak(&self) {
        self.state.silent.store(false, Ordering::Relaxed);
    }

    /// Connections the server took (the first is the hostile one).
    pub fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::Relaxed)
    }

    /// Connections the client closed for a fault (an HTTP/3 error code).
    pub fn faulted(&self) -> usize {
        self.state.faulted.load(Ordering::Relaxed)
    }

    /// Connections still open.
    pub fn live(&self) -> usize {
        self.state.live.load(Ordering::Relaxed)
    }

    /// The client's request has ended: a `ReadRest` step reads on.
    pub fn client_done(&self) {
        self.state.client_done.notify_one();
    }

    /// How the hostile request stream ended, once a `ReadRest` step read
    /// it: `fin after N bytes`, `reset N` (the client's code) or what
    /// else happened.
    pub fn request_end(&self) -> Option<String> {
        let end = self.state.request_end.lock();
        end.unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Stops accepting and aborts every task.
    pub fn stop(&self) {
        self.endpoint.close(VarInt::from_u32(0), b"");
        self.tasks.abort_all();
    }
}

/// A good connection: a control stream, then answers.
fn good_steps() -> Vec<Step> {
    vec![Step::Uni {
        bytes: wire::control(),
        fin: false,
    }]
}

/// A good answer's body.
pub const GOOD: &[u8] = b"good h3 answer";

/// Answers every request stream with [`GOOD`] until the connection ends.
async fn serve_good(conn: &quinn::Connection, st: &Arc<State>, tasks: &Tasks) {
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        st.requests.fetch_add(1, Ordering::Relaxed);
        tasks.spawn(async move {
            // The request (bounded): its head, and any body, to its end.
            let _ = tokio::time::timeout(WRITE_LIMIT, recv.read_to_end(1 << 20)).await;
            let _ = tokio::time::timeout(WRITE_LIMIT, send.write_all(&wire::ok(GOOD))).await;
            let _ = send.finish();
            let _ = tokio::time::timeout(WRITE_LIMIT, send.stopped()).await;
        });
    }
}

/// The hostile connection's state while its script plays.
struct Play {
    conn: quinn::Connection,
    uni: Vec<SendStream>,
    request: Option<(SendStream, quinn::RecvStream)>,
    tasks: Tasks,
}

impl Play {
    /// The first of two connections: one good answer, then GOAWAY, so the
    /// client's next request resumes on a new connection.
    async fn prime(&mut self, st: &Arc<State>) {
        let Ok(Ok((mut send, mut recv))) =
            tokio::time::timeout(WRITE_LIMIT, self.conn.accept_bi()).await
        else {
            return;
        };
        st.requests.fetch_add(1, Ordering::Relaxed);
        let _ = tokio::time::timeout(WRITE_LIMIT, recv.read_to_end(1 << 20)).await;
        if write(&mut send, &wire::ok(GOOD)).await {
            let _ = send.finish();
        }
        if let Some(control) = self.uni.first_mut() {
            // Request stream 4 on are not processed: the client closes the
            // connection once stream 0's answer is read.
            write(control, &wire::goaway(4)).await;
        }
    }

    /// Plays `steps` until one fails (a write the client refused) or holds.
    async fn run(&mut self, steps: &[Step], st: &Arc<State>) {
        for step in steps {
            if !self.step(step, st).await {
                return;
            }
        }
    }

    async fn step(&mut self, step: &Step, st: &Arc<State>) -> bool {
        match step {
            Step::Uni { bytes, fin } => {
                let Ok(Ok(mut s)) = tokio::time::timeout(WRITE_LIMIT, self.conn.open_uni()).await
                else {
                    return false;
                };
                if !write(&mut s, bytes).await {
                    return false;
                }
                if *fin {
                    let _ = s.finish();
                }
                self.uni.push(s);
                true
            }
            Step::UniMore(n, bytes) => write(&mut self.uni[*n], bytes).await,
            Step::UniFlood(n, bytes, times) => {
                // Moved out: the flood owns the stream (a stand-in keeps
                // the numbering).
                let Ok(Ok(mut stand_in)) =
                    tokio::time::timeout(WRITE_LIMIT, self.conn.open_uni()).await
                else {
                    return false;
                };
                std::mem::swap(&mut stand_in, &mut self.uni[*n]);
                let mut s = stand_in;
                let (bytes, times) = (bytes.clone(), *times);
                self.tasks.spawn(async move {
                    for _ in 0..times {
                        if !write(&mut s, &bytes).await {
                            return;
                        }
                    }
                    // Kept open: a finished QPACK stream is another error.
                    std::future::pending::<()>().await;
                });
                true
            }
            Step::UniStreams(bytes, count) => {
                let (conn, bytes, count) = (self.conn.clone(), bytes.clone(), *count);
                self.tasks.spawn(async move {
                    for _ in 0..count {
                        let Ok(Ok(mut s)) =
                            tokio::time::timeout(WRITE_LIMIT, conn.open_uni()).await
                        else {
                            return;
                        };
                        if !write(&mut s, &bytes).await {
                            return;
                        }
                        let _ = s.finish();
                    }
                });
                true
            }
            Step::GrantStreams(after, count) => {
                tokio::time::sleep(*after).await;
                self.conn
                    .set_max_concurrent_bi_streams(VarInt::from_u32(*count));
                true
            }
            Step::Accept => {
                let Ok(Ok((send, mut recv))) =
                    tokio::time::timeout(WRITE_LIMIT, self.conn.accept_bi()).await
                else {
                    return false;
                };
                st.requests.fetch_add(1, Ordering::Relaxed);
                let mut head = [0u8; 64];
                let read = tokio::time::timeout(WRITE_LIMIT, recv.read(&mut head)).await;
                // A request reset before the server read anything: its end
                // is seen here, and a later read would find the stream done.
                if let Ok(Err(quinn::ReadError::Reset(code))) = read {
                    let kept = st.request_end.lock();
                    *kept.unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Some(format!("reset {code}"));
                }
                self.request = Some((send, recv));
                true
            }
            Step::Write(bytes) => match self.request.as_mut() {
                Some((send, _)) => write(send, bytes).await,
                None => false,
            },
            Step::Flood(bytes, times) => match self.request.as_mut() {
                Some((send, _)) => {
                    for _ in 0..*times {
                        if !write(send, bytes).await {
                            return false;
                        }
                    }
                    true
                }
                None => false,
            },
            Step::Fin => match self.request.as_mut() {
                Some((send, _)) => send.finish().is_ok(),
                None => false,
            },
            Step::Hold => {
                self.conn.closed().await;
                false
            }
            // The rest of the connection is the follow-up's (see `run`).
            Step::Serve => false,
            Step::ReadRest => {
                let Some((_, recv)) = self.request.as_mut() else {
                    return false;
                };
                let done = st.client_done.notified();
                if tokio::time::timeout(WRITE_LIMIT, done).await.is_err() {
                    return false;
                }
                let read = tokio::time::timeout(WRITE_LIMIT, recv.read_to_end(64 << 20)).await;
                let end = match read {
                    Ok(Ok(rest)) => format!("fin after {} more bytes", rest.len()),
                    Ok(Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code)))) => {
                        format!("reset {code}")
                    }
                    Ok(Err(e)) => format!("error: {e}"),
                    Err(_) => "no end within the write limit".to_owned(),
                };
                let mut kept = st
                    .request_end
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // A reset already seen by `Accept` stands.
                kept.get_or_insert(end);
                false
            }
        }
    }
}

/// Writes all of `bytes`, within the bound; false if it failed or stalled.
async fn write(s: &mut SendStream, bytes: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_LIMIT, s.write_all(bytes)).await,
        Ok(Ok(()))
    )
}
