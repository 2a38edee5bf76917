//! HTTP/2 servers that refuse streams, close connections after a number of
//! requests, or advertise no streams at all: what real servers do (nginx's
//! `keepalive_requests`, lighttpd's idle close on a timer tick, a server
//! under load saying SETTINGS_MAX_CONCURRENT_STREAMS = 0 for a while).
//!
//! A stream refused unprocessed is sent again, on a connection that can take
//! it, a bounded number of times within its deadline, and surfaces as
//! [`ErrorKind::Refused`]; a GOAWAY teaches the pool how many streams the
//! server serves per connection; a limit of 0 makes requests wait, not dial.
//!
//! Servers are scripts written frame by frame (h2c by prior knowledge on
//! loopback), as in `http2_wire.rs`. Every wait is bounded by [`LIMIT`].

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use courier::{Client, ClientBuilder, ErrorKind};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::support::h2::*;

/// The bound on every wait (longer than the shared [`crate::support::h2::LIMIT`]:
/// these tests dial many connections one after another).
const LIMIT: Duration = Duration::from_secs(10);

async fn within<F: Future>(what: &str, f: F) -> F::Output {
    within_for(LIMIT, what, f).await
}

/// `:status: 200` with an empty body, in one HEADERS frame ending the stream.
fn ok_empty(stream: u32) -> Vec<u8> {
    frame(HEADERS, END_HEADERS | END_STREAM, stream, &[STATUS_200])
}

/// `:status: 200` and a DATA frame with `body`.
fn ok(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = frame(HEADERS, END_HEADERS, stream, &[STATUS_200]);
    out.extend(frame(DATA, END_STREAM, stream, body));
    out
}

/// Answers every request on the connection with `answer(stream)` until the
/// client closes; returns the requests read.
async fn answer_each(mut peer: Peer, answer: impl Fn(u32) -> Vec<u8> + Send) -> usize {
    let mut seen = 0;
    while let Some(s) = peer.next_request().await {
        seen += 1;
        peer.try_send(&answer(s)).await;
    }
    seen
}

/// What a server saw: per connection (in accept order), the requests it read.
#[derive(Default)]
struct Seen {
    accepted: AtomicUsize,
    streams: Mutex<Vec<Option<usize>>>,
}

impl Seen {
    fn connection(&self) -> usize {
        self.streams.lock().unwrap().push(None);
        self.accepted.fetch_add(1, SeqCst)
    }

    fn closed(&self, conn: usize, streams: usize) {
        self.streams.lock().unwrap()[conn] = Some(streams);
    }

    /// Requests read per connection, once every connection has closed.
    async fn per_connection(&self) -> Vec<usize> {
        within("every connection to close", async {
            loop {
                let done: Option<Vec<usize>> =
                    self.streams.lock().unwrap().iter().copied().collect();
                if let Some(done) = done {
                    return done;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
    }
}

/// Serves every connection on 127.0.0.1 with `conn(peer, index)`, which
/// returns the number of requests it read; the task ends when the test drops it.
async fn serve<F, Fut>(
    params: &'static [(u16, u32)],
    conn: F,
) -> (String, Arc<Seen>, JoinHandle<()>)
where
    F: Fn(Peer, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = usize> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let conn = Arc::new(conn);
    let task = tokio::spawn({
        let seen = Arc::clone(&seen);
        async move {
            while let Ok((io, _)) = listener.accept().await {
                let index = seen.connection();
                let (seen, conn) = (Arc::clone(&seen), Arc::clone(&conn));
                tokio::spawn(async move {
                    let n = match Peer::handshake(io, params).await {
                        Some(peer) => conn(peer.without_deadline(), index).await,
                        None => 0,
                    };
                    seen.closed(index, n);
                });
            }
        }
    });
    (url, seen, task)
}

fn h2c() -> ClientBuilder {
    Client::builder().http2_prior_knowledge().timeout(LIMIT)
}

/// Every connection closes after `n` requests, the nginx way: on reading
/// the `n`th it sends GOAWAY naming it as the last, then answers it.
/// Streams past it are ignored (refused by the GOAWAY). Returns the
/// requests read.
async fn closes_after(mut peer: Peer, n: usize) -> usize {
    let mut seen = 0;
    while let Some(s) = peer.next_request().await {
        seen += 1;
        if seen < n {
            peer.try_send(&ok(s, b"hi")).await;
        } else if seen == n {
            let mut out = goaway(s, NO_ERROR);
            out.extend(ok(s, b"hi"));
            peer.try_send(&out).await;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_after_n_streams_loses_no_request_and_is_learnt() {
    const N: usize = 10;
    const WORKERS: usize = 64;
    const EACH: usize = 6;
    static PARAMS: [(u16, u32); 1] = [(SETTINGS_MAX_CONCURRENT_STREAMS, 128)];
    let (url, seen, server) = serve(&PARAMS, |peer, _| closes_after(peer, N)).await;
    let client = h2c().build().unwrap();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let mut errors = Vec::new();
                for _ in 0..EACH {
                    match fetch(&client, &url).await {
                        Ok(body) => assert_eq!(body, "hi"),
                        Err(e) => errors.push(format!("{e:#}")),
                    }
                }
                errors
            })
        })
        .collect();
    let mut errors = Vec::new();
    for w in workers {
        errors.extend(within("the requests", w).await.unwrap());
    }
    let m = client.metrics();
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    assert!(m.refused_stream_retries > 0, "{m:?}");
    // The first two connections taught the pool (a budget is learnt once
    // two connections agree); every later one was given at most the N
    // streams the server serves.
    assert!(
        per_conn[2..].iter().all(|&n| n <= N),
        "requests per connection: {per_conn:?}"
    );
    let needed = WORKERS * EACH / N;
    assert!(
        per_conn.len() <= needed + 8,
        "{} connections for {} requests: {per_conn:?}",
        per_conn.len(),
        WORKERS * EACH
    );
}

/// The graceful way (RFC 9113 §6.8): a first GOAWAY with 2^31-1, then the
/// real last stream id once the requests in flight arrived.
#[tokio::test]
async fn a_graceful_double_goaway_is_learnt_from_its_second_frame() {
    const N: usize = 3;
    let (url, seen, server) = serve(&[], |mut peer, _| async move {
        let mut seen = 0;
        while let Some(s) = peer.next_request().await {
            seen += 1;
            if seen < N {
                peer.try_send(&ok(s, b"hi")).await;
            } else if seen == N {
                let mut out = goaway((1 << 31) - 1, NO_ERROR);
                out.extend(goaway(s, NO_ERROR));
                out.extend(ok(s, b"hi"));
                peer.try_send(&out).await;
            }
        }
        seen
    })
    .await;
    let client = h2c().build().unwrap();
    // All at once: the first connection takes them all, and the GOAWAY
    // refuses those past its third.
    let requests: Vec<_> = (0..4 * N)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    for r in requests {
        assert_eq!(within("a request", r).await.unwrap().unwrap(), "hi");
    }
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert!(per_conn[0] >= N, "requests per connection: {per_conn:?}");
    // Learnt once two connections agreed.
    assert!(
        per_conn[2..].iter().all(|&n| n <= N),
        "requests per connection: {per_conn:?}"
    );
}

#[tokio::test]
async fn a_refused_stream_storm_is_retried_a_bounded_number_of_times() {
    let (url, seen, server) = serve(&[], |peer, _| {
        answer_each(peer, |s| rst_stream(s, REFUSED_STREAM))
    })
    .await;
    let timeout = Duration::from_secs(3);
    let client = h2c().timeout(timeout).build().unwrap();
    let started = Instant::now();
    let err = client
        .post(&url)
        .body("not processed")
        .send()
        .await
        .expect_err("every stream is refused");
    let elapsed = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
    assert!(elapsed < timeout, "took {elapsed:?}");
    let m = client.metrics();
    drop(client);
    let attempts: usize = seen.per_connection().await.iter().sum();
    server.abort();
    assert!((3..=8).contains(&attempts), "{attempts} attempts");
    assert_eq!(m.refused_stream_retries as usize, attempts - 1, "{m:?}");
}

/// The lighttpd way: a connection the server is closing takes a new stream
/// and answers it with GOAWAY naming the streams before it.
async fn goaway_on_first_stream(mut peer: Peer) -> usize {
    let Some(_) = peer.next_request().await else {
        return 0;
    };
    peer.try_send(&goaway(0, NO_ERROR)).await;
    peer.drain().await;
    1
}

#[tokio::test]
async fn connections_that_goaway_on_their_first_stream_are_left_for_another() {
    let (url, seen, server) = serve(&[], |peer, index| async move {
        if index < 3 {
            return goaway_on_first_stream(peer).await;
        }
        serves(peer).await
    })
    .await;
    let client = h2c().build().unwrap();
    let res = client.post(&url).body("once").send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap(), "served");
    let m = client.metrics();
    drop(client);
    assert_eq!(seen.per_connection().await, vec![1, 1, 1, 1]);
    server.abort();
    assert_eq!(m.refused_stream_retries, 3, "{m:?}");
    assert_eq!(m.connections_established, 4, "{m:?}");
}

#[tokio::test]
async fn connections_that_always_goaway_surface_refused_within_the_bound() {
    let (url, seen, server) = serve(&[], |peer, _| goaway_on_first_stream(peer)).await;
    let client = h2c().build().unwrap();
    let err = fetch(&client, &url).await.expect_err("never served");
    assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
    assert!(err.to_string().contains("; sent 6 times ("), "{err}");
    let m = client.metrics();
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert!((3..=8).contains(&per_conn.len()), "{per_conn:?}");
    assert_eq!(m.connections_established as usize, per_conn.len(), "{m:?}");
}

/// SETTINGS_MAX_CONCURRENT_STREAMS = 0 for a while, then 1: the request
/// waits on the one connection and goes once the limit rises.
#[tokio::test]
async fn no_streams_allowed_then_raised_serves_the_waiting_request() {
    static PARAMS: [(u16, u32); 1] = [(SETTINGS_MAX_CONCURRENT_STREAMS, 0)];
    let (url, seen, server) = serve(&PARAMS, |mut peer, _| async move {
        // "For a while": the client has its connection and waits.
        tokio::time::sleep(Duration::from_millis(300)).await;
        peer.try_send(&settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 1)]))
            .await;
        answer_each(peer, |s| ok(s, b"at last")).await
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "at last");
    let m = client.metrics();
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert!((1..=2).contains(&m.connections_established), "{m:?}");
    assert_eq!(per_conn.iter().sum::<usize>(), 1, "{per_conn:?}");
}

/// Refused as a server at its limit refuses (nginx, h2, Go's server): only
/// the request sent with the preface, before the SETTINGS were read, comes.
#[tokio::test]
async fn no_streams_allowed_forever_times_out_without_dialing_more() {
    static PARAMS: [(u16, u32); 1] = [(SETTINGS_MAX_CONCURRENT_STREAMS, 0)];
    let (url, seen, server) = serve(&PARAMS, |peer, _| {
        answer_each(peer, |s| rst_stream(s, REFUSED_STREAM))
    })
    .await;
    let timeout = Duration::from_millis(500);
    let client = h2c().timeout(timeout).build().unwrap();
    let started = Instant::now();
    let err = fetch(&client, &url).await.expect_err("never a stream");
    let elapsed = started.elapsed();
    assert!(err.is_timeout(), "{err}");
    assert!(
        elapsed < timeout + Duration::from_millis(300),
        "{elapsed:?}"
    );
    let m = client.metrics();
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert!((1..=2).contains(&m.connections_established), "{m:?}");
    assert!(
        per_conn.iter().sum::<usize>() <= 1,
        "nothing sent once the limit was known: {per_conn:?}"
    );
}

/// A limit raised while every stream is held: the waiting requests go at
/// once, before any stream ends.
#[tokio::test]
async fn a_raised_limit_serves_waiters_before_any_stream_ends() {
    static PARAMS: [(u16, u32); 1] = [(SETTINGS_MAX_CONCURRENT_STREAMS, 1)];
    let (url, seen, server) = serve(&PARAMS, |mut peer, _| async move {
        let first = peer.next_request().await.unwrap();
        // Two more requests wait for a stream; none ends until they come.
        peer.try_send(&settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 3)]))
            .await;
        let second = within("the second request", peer.next_request())
            .await
            .unwrap();
        let third = within("the third request", peer.next_request())
            .await
            .unwrap();
        for s in [first, second, third] {
            peer.try_send(&ok_empty(s)).await;
        }
        while peer.next_request().await.is_some() {}
        3
    })
    .await;
    // Only one connection: the test is about streams on it.
    let client = h2c().http2_multiple_connections(false).build().unwrap();
    let requests: Vec<_> = (0..3)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    for r in requests {
        within("a request", r).await.unwrap().unwrap();
    }
    drop(client);
    assert_eq!(seen.per_connection().await, vec![3]);
    server.abort();
}

/// A limit lowered below the streams in flight: no new stream opens until
/// the count is under the new limit.
#[tokio::test]
async fn a_lowered_limit_holds_new_streams_until_the_count_is_under_it() {
    use tokio::sync::Notify;
    static PARAMS: [(u16, u32); 1] = [(SETTINGS_MAX_CONCURRENT_STREAMS, 3)];
    let (lowered, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (url, seen, server) = serve(&PARAMS, {
        let (lowered, go) = (Arc::clone(&lowered), Arc::clone(&go));
        move |mut peer, _| {
            let (lowered, go) = (Arc::clone(&lowered), Arc::clone(&go));
            async move {
                let mut held = Vec::new();
                for _ in 0..3 {
                    held.push(within("a request", peer.next_request()).await.unwrap());
                }
                peer.try_send(&settings(&[(SETTINGS_MAX_CONCURRENT_STREAMS, 1)]))
                    .await;
                // The client applied the new limit once it acknowledged it.
                loop {
                    let f = within("the SETTINGS ACK", peer.try_read()).await.unwrap();
                    match f.ty {
                        SETTINGS if f.has(ACK) => break,
                        SETTINGS => {
                            peer.try_send(&frame(SETTINGS, ACK, 0, &[])).await;
                        }
                        HEADERS => panic!("a stream opened past the limit"),
                        _ => {}
                    }
                }
                lowered.notify_one();
                within("the fourth request to queue", go.notified()).await;
                // Two of three answered: one still open, at the new limit of 1.
                peer.try_send(&ok_empty(held[0])).await;
                peer.try_send(&ok_empty(held[1])).await;
                let early =
                    tokio::time::timeout(Duration::from_millis(300), peer.next_request()).await;
                assert!(early.is_err(), "a stream opened past the lowered limit");
                peer.try_send(&ok_empty(held[2])).await;
                let fourth = within("the fourth request", peer.next_request())
                    .await
                    .unwrap();
                peer.try_send(&ok_empty(fourth)).await;
                while peer.next_request().await.is_some() {}
                4
            }
        }
    })
    .await;
    let client = h2c().http2_multiple_connections(false).build().unwrap();
    let mut requests: Vec<_> = (0..3)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    within("the limit lowered", lowered.notified()).await;
    let (c, u) = (client.clone(), url.clone());
    requests.push(tokio::spawn(async move { fetch(&c, &u).await }));
    within("the fourth request queued", async {
        while client.metrics().requests_queued == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    go.notify_one();
    for r in requests {
        within("a request", r).await.unwrap().unwrap();
    }
    drop(client);
    assert_eq!(seen.per_connection().await, vec![4]);
    server.abort();
}

/// hypercorn's way past `keep_alive_max_requests`: GOAWAY naming the highest
/// stream it *received* as processed, then the connection closes with those
/// streams unanswered. They are not provably unprocessed, but a request
/// whose connection died before any answer may be sent again when its
/// method is idempotent (RFC 9110 §9.2.2), as over HTTP/1.1.
async fn goaway_claiming_all_then_close(mut peer: Peer) -> usize {
    let Some(s) = peer.next_request().await else {
        return 0;
    };
    peer.try_send(&goaway(s, NO_ERROR)).await;
    1 // dropped: the connection closes, the stream unanswered
}

#[tokio::test]
async fn an_idempotent_request_whose_connection_closed_unanswered_is_sent_again() {
    let (url, seen, server) = serve(&[], |peer, index| async move {
        if index == 0 {
            return goaway_claiming_all_then_close(peer).await;
        }
        serves(peer).await
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "served");
    let m = client.metrics();
    drop(client);
    // One request on each of two connections (the GOAWAY also taught a
    // budget of one stream per connection, so a spare may have been dialed).
    let per_conn = seen.per_connection().await;
    assert_eq!(per_conn[..2], [1, 1], "{per_conn:?}");
    assert_eq!(per_conn.iter().sum::<usize>(), 2, "{per_conn:?}");
    server.abort();
    // Dropped by a server going away: resent as a refused stream would be.
    assert_eq!(m.refused_stream_retries, 1, "{m:?}");
    assert_eq!(m.stale_retries, 0, "{m:?}");
}

#[tokio::test]
async fn a_post_whose_connection_closed_unanswered_is_not_sent_again() {
    let (url, seen, server) = serve(&[], |peer, _| goaway_claiming_all_then_close(peer)).await;
    let client = h2c().build().unwrap();
    let err = client
        .post(&url)
        .body("once")
        .send()
        .await
        .expect_err("the server may have processed it");
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed, "{err}");
    assert!(!err.to_string().contains("; sent "), "sent once: {err}");
    drop(client);
    assert_eq!(seen.per_connection().await, vec![1]);
    server.abort();
}

/// A connection that dies with no GOAWAY (a crash, a reset): its streams
/// may have been processed, and nothing says the server is going away on
/// purpose, so an idempotent request is resent once, as over HTTP/1.1.
async fn close_unanswered(mut peer: Peer) -> usize {
    match peer.next_request().await {
        Some(_) => 1, // dropped: closed with the stream unanswered
        None => 0,
    }
}

#[tokio::test]
async fn a_request_is_sent_again_once_after_its_connection_died_unanswered() {
    let (url, seen, server) = serve(&[], |peer, _| close_unanswered(peer)).await;
    let client = h2c().build().unwrap();
    let err = fetch(&client, &url).await.expect_err("never answered");
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed, "{err}");
    // The error says how often the request went out.
    assert!(err.to_string().contains("; sent 2 times ("), "{err}");
    drop(client);
    assert_eq!(seen.per_connection().await, vec![1, 1]);
    server.abort();
}

/// A server that announced it is going away (GOAWAY) and then closed with
/// claimed streams unanswered did so on purpose, on every connection past
/// its request limit (hypercorn under load): an idempotent request is
/// resent like a refused one, within the same bound.
#[tokio::test]
async fn idempotent_requests_dropped_after_goaway_are_resent_within_the_bound() {
    let (url, seen, server) = serve(&[], |mut peer, index| async move {
        if index < 3 {
            return goaway_claiming_all_then_close(peer).await;
        }
        let mut seen = 0;
        while let Some(s) = peer.next_request().await {
            seen += 1;
            peer.send(&ok(s, b"served")).await;
        }
        seen
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "served");
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert_eq!(per_conn[..4], [1, 1, 1, 1], "{per_conn:?}");
    assert_eq!(per_conn.iter().sum::<usize>(), 4, "{per_conn:?}");

    // A server that never stops dropping them: the bound holds.
    let (url, seen, server) = serve(&[], |peer, _| goaway_claiming_all_then_close(peer)).await;
    let client = h2c().build().unwrap();
    let err = fetch(&client, &url).await.expect_err("never answered");
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed, "{err}");
    assert!(err.to_string().contains("; sent 6 times ("), "{err}");
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    // The first attempt and `http2_max_refused_retries` (5) more.
    assert_eq!(per_conn.iter().sum::<usize>(), 6, "{per_conn:?}");
}

/// Every connection serves `n` requests, the hypercorn way: on reading the
/// one after, GOAWAY names the last it served (answered already) and the
/// streams past it are refused.
async fn refuses_past(mut peer: Peer, n: usize) -> usize {
    let mut seen = 0;
    let mut last = 0;
    while let Some(s) = peer.next_request().await {
        seen += 1;
        if seen <= n {
            last = s;
            peer.try_send(&ok(s, b"hi")).await;
        } else if seen == n + 1 {
            peer.try_send(&goaway(last, NO_ERROR)).await;
        }
    }
    seen
}

#[tokio::test]
async fn a_goaway_past_answered_streams_is_learnt_once_two_connections_agree() {
    const N: usize = 3;
    let (url, seen, server) = serve(&[], |peer, _| refuses_past(peer, N)).await;
    let client = h2c().build().unwrap();
    // One at a time: the GOAWAY always names a stream answered long before.
    for _ in 0..5 * N {
        assert_eq!(fetch(&client, &url).await.unwrap(), "hi");
    }
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    // The first two connections each read one request past their N (the
    // one refused) and agreed; every later one is given one fewer than the
    // count the GOAWAY named (so the server never has to go away) and
    // retires.
    assert_eq!(per_conn[..2], [N + 1, N + 1], "{per_conn:?}");
    assert!(
        per_conn[2..].iter().all(|&n| n < N),
        "requests per connection: {per_conn:?}"
    );
}

/// One GOAWAY that refuses a stream (an idle close racing a new request, as
/// lighttpd's timer can) is no request limit: it teaches nothing alone.
#[tokio::test]
async fn a_single_goaway_count_teaches_no_budget() {
    let (url, seen, server) = serve(&[], |peer, index| async move {
        if index == 0 {
            return refuses_past(peer, 2).await;
        }
        answer_each(peer, |s| ok(s, b"hi")).await
    })
    .await;
    let client = h2c().build().unwrap();
    for _ in 0..23 {
        assert_eq!(fetch(&client, &url).await.unwrap(), "hi");
    }
    drop(client);
    assert_eq!(seen.per_connection().await, vec![3, 21]);
    server.abort();
}

/// nginx's request limit seen one request at a time: the first GOAWAY names
/// the stream it has not answered yet, which only a server going away on
/// reading a request does, so the budget is learnt from it at once (a
/// server that loses what is in flight when it goes away, as hypercorn
/// does, costs one connection's worth, not two).
#[tokio::test]
async fn a_request_limit_is_learnt_from_its_first_goaway() {
    const N: usize = 4;
    let (url, seen, server) = serve(&[], |peer, _| closes_after(peer, N)).await;
    let client = h2c().build().unwrap();
    for _ in 0..4 * N {
        assert_eq!(fetch(&client, &url).await.unwrap(), "hi");
    }
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert_eq!(per_conn[0], N, "{per_conn:?}");
    assert!(
        per_conn[1..].iter().all(|&n| n < N),
        "every later connection retires before the limit: {per_conn:?}"
    );
}

/// python-h2's way (hypercorn): after its own GOAWAY the server can send
/// nothing, so the stream it named stays unanswered, and the first frame it
/// reads makes it close. courier asks with a PING, so the stream fails at
/// once as dropped unanswered and is sent again, instead of waiting for its
/// deadline on a connection that will never answer.
async fn goaway_then_close_on_next_frame(mut peer: Peer) -> usize {
    let Some(s) = peer.next_request().await else {
        return 0;
    };
    peer.try_send(&goaway(s, NO_ERROR)).await;
    if peer.try_read().await.is_some() {
        peer.try_send(&goaway(s, PROTOCOL_ERROR)).await;
    }
    1
}

/// Answers every request on the connection with `served`.
async fn serves(peer: Peer) -> usize {
    answer_each(peer, |s| ok(s, b"served")).await
}

/// Serves a fetch from a server whose first connection runs `first` and
/// whose later ones serve: the request must come back "served", sent on the
/// first two connections once each.
async fn served_after<F, Fut>(first: F, client: ClientBuilder)
where
    F: Fn(Peer) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = usize> + Send + 'static,
{
    let (url, seen, server) = serve(&[], move |peer, index| async move {
        if index == 0 {
            return first(peer).await;
        }
        serves(peer).await
    })
    .await;
    let client = client.build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "served");
    drop(client);
    let per_conn = seen.per_connection().await;
    server.abort();
    assert_eq!(per_conn[..2], [1, 1], "{per_conn:?}");
}

#[tokio::test]
async fn a_server_that_goes_silent_after_its_goaway_is_asked_with_a_ping() {
    // Shorter than the PING's own deadline (20 s): only the PING's answer,
    // the close, can make this request succeed in time.
    served_after(
        goaway_then_close_on_next_frame,
        h2c().timeout(Duration::from_secs(3)),
    )
    .await;
}

/// Neither answers nor closes after its GOAWAY, whatever it reads.
async fn goaway_then_deaf(mut peer: Peer) -> usize {
    let Some(s) = peer.next_request().await else {
        return 0;
    };
    peer.try_send(&goaway(s, NO_ERROR)).await;
    while peer.try_read().await.is_some() {}
    1
}

/// A server that ignores the PING as well (neither answers nor closes):
/// the connection is closed when the PING's deadline (the keep-alive
/// timeout) passes, and the stream is sent again.
#[tokio::test]
async fn a_server_silent_after_its_goaway_and_deaf_to_pings_is_closed() {
    let client = h2c()
        .timeout(Duration::from_secs(5))
        .http2_keep_alive_timeout(Duration::from_millis(200));
    served_after(goaway_then_deaf, client).await;
}

/// A server that goes away gracefully and answers what it kept (nginx, Go):
/// the PING is answered and changes nothing; the stream is answered on the
/// connection that went away, not sent again.
#[tokio::test]
async fn a_graceful_goaway_answered_after_the_ping_is_not_resent() {
    let pinged = Arc::new(AtomicUsize::new(0));
    let (url, seen, server) = serve(&[], {
        let pinged = Arc::clone(&pinged);
        move |mut peer, _| {
            let pinged = Arc::clone(&pinged);
            async move {
                let Some(s) = peer.next_request().await else {
                    return 0;
                };
                peer.try_send(&goaway(s, NO_ERROR)).await;
                while let Some(f) = peer.next().await {
                    if f.ty == PING && !f.has(ACK) {
                        pinged.fetch_add(1, SeqCst);
                        let mut out = frame(PING, ACK, 0, &f.payload);
                        out.extend(ok(s, b"kept"));
                        peer.try_send(&out).await;
                    }
                }
                1
            }
        }
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "kept");
    let m = client.metrics();
    drop(client);
    // The GOAWAY taught a budget of one stream, so a spare connection may
    // have been dialed; it carried nothing.
    let per_conn = seen.per_connection().await;
    server.abort();
    assert_eq!(per_conn[0], 1, "{per_conn:?}");
    assert_eq!(per_conn.iter().sum::<usize>(), 1, "{per_conn:?}");
    assert_eq!(pinged.load(SeqCst), 1);
    assert_eq!(m.refused_stream_retries + m.stale_retries, 0, "{m:?}");
}
