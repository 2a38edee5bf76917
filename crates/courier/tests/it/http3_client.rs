//! HTTP/3 through `Client` (feature `http3`): `http3_prior_knowledge()`
//! against the built-in server's QUIC side. Requests with and without
//! bodies and a large one, the pool's shared-connection rules on HTTP/3
//! (the server's stream limit opening another connection, GOAWAY, idle
//! close, lifetime), a dropped body, and the metrics' HTTP/3 label.

use std::collections::HashSet;
use std::time::Duration;

use courier::{Client, ClientBuilder, ErrorKind};
use courier_server::{ServerConfig, ServerHandle, TestPki, BYTES_ALPHABET};
use http::{StatusCode, Version};

use crate::support::{eventually, server_with, spawn_timed_get};

/// Every wait in this module is bounded by this.
const LIMIT: Duration = Duration::from_secs(20);

/// The built-in server with TLS and HTTP/3, and a builder that trusts it.
async fn h3_server(config: ServerConfig) -> (ServerHandle, ClientBuilder) {
    let pki = TestPki::new();
    let server = server_with(ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        http3: true,
        ..config
    })
    .await;
    let builder = Client::builder().add_root_certificate(pki.ca_pem());
    (server, builder)
}

/// `https://` on the server's UDP port (the same number as its TCP one).
fn url(server: &ServerHandle, path: &str) -> String {
    let addr = server.http3_addr().expect("HTTP/3 address");
    format!("https://{addr}{path}")
}

async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

fn connection_id(response: &courier::Response) -> u64 {
    response.headers()["x-connection-id"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("number")
}

#[tokio::test]
async fn get_post_and_a_large_body_go_over_http3() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");

    let response = bounded("GET", client.get(url(&server, "/bytes/1000")).send())
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.version(), Version::HTTP_3);
    let first = connection_id(&response);
    let body = bounded("GET body", response.bytes()).await.expect("body");
    assert_eq!(body.len(), 1000);
    assert!(body
        .iter()
        .enumerate()
        .all(|(i, b)| *b == BYTES_ALPHABET[i % 64]));

    let response = bounded(
        "POST",
        client
            .post(url(&server, "/echo"))
            .body("a body over HTTP/3")
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.version(), Version::HTTP_3);
    assert_eq!(connection_id(&response), first, "the same connection");
    let echoed = bounded("POST body", response.bytes()).await.expect("body");
    assert_eq!(&echoed[..], b"a body over HTTP/3");

    let n = 10 * 1024 * 1024;
    let response = bounded(
        "10 MiB",
        client.get(url(&server, &format!("/bytes/{n}"))).send(),
    )
    .await
    .expect("10 MiB");
    let body = bounded("10 MiB body", response.bytes())
        .await
        .expect("body");
    assert_eq!(body.len(), n);

    let m = client.metrics();
    assert_eq!(m.requests_http3, 3);
    assert_eq!((m.requests_http1, m.requests_http2), (0, 0));
    assert_eq!(m.connections_established_http3, 1);
    assert_eq!(m.connections_open_http3, 1);
    assert_eq!(m.connections_idle_http3, 1, "no request in flight");
    assert_eq!(m.http3_streams_active, 0);
    assert_eq!(server.connections_h3(), 1);
    assert_eq!(server.connections_accepted(), 1, "nothing over TCP");
}

#[tokio::test]
async fn the_servers_stream_limit_opens_another_connection() {
    let limit = 4;
    let (server, builder) = h3_server(ServerConfig {
        max_concurrent_streams: Some(limit),
        ..ServerConfig::default()
    })
    .await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    // The server's transport parameters tell its limit
    // (`initial_max_streams_bidi`): one request more than it goes to a
    // second connection at once, not into a wait for credit.
    let burst = |n: usize| {
        let client = client.clone();
        let url = url(&server, "/delay/300ms");
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let req = client.get(&url);
                tasks.spawn(async move {
                    let r = req.send().await.expect("request");
                    let id = connection_id(&r);
                    assert_eq!(r.bytes().await.expect("body").as_ref(), b"ok");
                    id
                });
            }
            let mut ids = HashSet::new();
            while let Some(id) = bounded("burst", tasks.join_next()).await {
                ids.insert(id.expect("task"));
            }
            ids
        }
    };
    let ids = burst(limit as usize + 1).await;
    assert_eq!(ids.len(), 2, "the limit known: {ids:?}");
    assert_eq!(client.metrics().connections_established_http3, 2);
    // Twice the limit now: both connections, full, and no third.
    let ids = burst(2 * limit as usize).await;
    assert_eq!(ids.len(), 2, "{ids:?}");
    let m = client.metrics();
    assert_eq!(m.connections_established_http3, 2);
    assert_eq!(m.requests_http3, 3 * u64::from(limit) + 1);
    assert_eq!(server.connections_h3(), 2);
}

/// More requests held at once than the assumed 100 streams per connection,
/// against a server that allows more. Before the first fix the 101st
/// request waited in the pool for a slot of the first connection (its 100
/// responses are held unread, as long polls hold theirs), forever:
/// `courier bench --scenario longpoll --http 3` hung above 100 in flight;
/// after it, a second connection opened. Now the server's transport
/// parameters say it takes 1,000, and all 150 go on one connection, as
/// over HTTP/2 (three connections instead of one cost `courier bench -c
/// 256` about 500 instructions a request).
#[tokio::test]
async fn requests_past_the_assumed_limit_go_by_the_servers_initial_limit() {
    let (server, builder) = h3_server(ServerConfig {
        max_concurrent_streams: Some(1000),
        ..ServerConfig::default()
    })
    .await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    let held = 150;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..held {
        let req = client.get(url(&server, "/bytes/8"));
        tasks.spawn(async move { req.send().await.expect("request") });
    }
    // Every head arrives while all the bodies are still unread.
    let mut responses = Vec::new();
    while let Some(r) = bounded("150 heads held at once", tasks.join_next()).await {
        responses.push(r.expect("task"));
    }
    let ids: HashSet<u64> = responses.iter().map(connection_id).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    for r in responses {
        assert_eq!(bounded("body", r.bytes()).await.expect("body").len(), 8);
    }
    assert_eq!(client.metrics().connections_established_http3, 1);
}

#[tokio::test]
async fn goaway_moves_new_requests_to_a_new_connection() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    let slow = {
        let req = client.get(url(&server, "/delay/500ms"));
        tokio::spawn(async move {
            let r = req.send().await.expect("slow");
            (connection_id(&r), r.bytes().await.expect("body"))
        })
    };
    // At the server (the pool counts its slot before the handshake ends).
    eventually("the slow request at the server", LIMIT, || {
        server.requests_served() == 1
    })
    .await;
    server.goaway_all();
    // POSTs after the GOAWAY: not idempotent, and still sent. The server's
    // GOAWAY lets one more stream in (courier-server names the next id);
    // the one after is on a new connection: sent there once the client
    // read the GOAWAY, or refused unprocessed on the old one and sent
    // again on a new one.
    let mut on = Vec::new();
    for i in 0..2 {
        let body = format!("again {i}");
        let response = bounded(
            "POST after GOAWAY",
            client.post(url(&server, "/echo")).body(body.clone()).send(),
        )
        .await
        .expect("POST");
        on.push(connection_id(&response));
        assert_eq!(
            bounded("body", response.bytes()).await.expect("body"),
            body.as_bytes()
        );
    }
    let (first, body) = bounded("slow", slow).await.expect("task");
    assert_eq!(&body[..], b"ok", "in flight before GOAWAY: answered");
    assert_ne!(on[1], first, "{on:?}");
    assert_eq!(client.metrics().connections_established_http3, 2);
    assert_eq!(client.metrics().requests_failed, 0);
    eventually("the old connection closed, the new one open", LIMIT, || {
        client.metrics().connections_open_http3 == 1
    })
    .await;
}

#[tokio::test]
async fn a_burst_across_goaway_all_succeeds() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let req = client.post(url(&server, "/echo")).body(format!("{i}"));
        tasks.spawn(async move {
            let r = req.send().await?;
            let body = r.bytes().await?;
            Ok::<_, courier::Error>((i, body))
        });
        if i == 20 {
            server.goaway_all();
        }
    }
    while let Some(done) = bounded("burst", tasks.join_next()).await {
        let (i, body) = done.expect("task").expect("every request answered");
        assert_eq!(body, format!("{i}").as_bytes());
    }
    assert_eq!(client.metrics().requests_failed, 0);
}

#[tokio::test]
async fn a_dropped_body_frees_its_stream() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    for _ in 0..3 {
        let mut response = bounded("send", client.get(url(&server, "/bytes/52428800")).send())
            .await
            .expect("send");
        let chunk = bounded("a chunk", response.chunk()).await.expect("chunk");
        assert!(chunk.is_some());
        drop(response);
    }
    eventually("the streams freed", LIMIT, || {
        client.metrics().http3_streams_active == 0
    })
    .await;
    let response = bounded("again", client.get(url(&server, "/bytes/10")).send())
        .await
        .expect("again");
    assert_eq!(
        bounded("body", response.bytes()).await.expect("body").len(),
        10
    );
    let m = client.metrics();
    assert_eq!(
        m.connections_established_http3, 1,
        "the connection lived on"
    );
    assert_eq!(
        m.drains_completed + m.drains_aborted,
        0,
        "a stream is stopped, not drained"
    );
}

#[tokio::test]
async fn idle_connections_close_and_expired_ones_rotate() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder
        .http3_prior_knowledge()
        .pool_idle_timeout(Some(Duration::from_millis(200)))
        .build()
        .expect("client");
    let response = bounded("GET", client.get(url(&server, "/bytes/1")).send())
        .await
        .expect("GET");
    bounded("body", response.bytes()).await.expect("body");
    eventually("the idle connection closed", LIMIT, || {
        client.metrics().connections_open_http3 == 0
    })
    .await;
    eventually("the server saw it close", LIMIT, || {
        server.connections_open() == 0
    })
    .await;

    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder
        .http3_prior_knowledge()
        .pooled_connection_lifetime(Some(Duration::from_millis(200)))
        .build()
        .expect("client");
    let first = bounded("first", client.get(url(&server, "/bytes/1")).send())
        .await
        .expect("first");
    let first_id = connection_id(&first);
    bounded("body", first.bytes()).await.expect("body");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = bounded("second", client.get(url(&server, "/bytes/1")).send())
        .await
        .expect("second");
    assert_ne!(
        connection_id(&second),
        first_id,
        "past its lifetime: a new one"
    );
    assert_eq!(client.metrics().connections_established_http3, 2);
}

#[tokio::test]
async fn http_origins_stay_on_tcp_and_proxies_are_refused() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let plain = server_with(ServerConfig::default()).await;
    let client = builder
        .http3_prior_knowledge()
        .no_env_proxy()
        .build()
        .expect("client");
    let response = bounded("http", client.get(plain.url("/bytes/3")).send())
        .await
        .expect("plain http");
    assert_eq!(response.version(), Version::HTTP_11);
    assert_eq!(client.metrics().requests_http3, 0);
    drop(server);

    let proxied = Client::builder()
        .http3_prior_knowledge()
        .proxy(courier::Proxy::all("http://127.0.0.1:9").expect("proxy"))
        .build()
        .expect("client");
    let err = bounded(
        "through a proxy",
        proxied.get("https://127.0.0.1:1/").send(),
    )
    .await
    .expect_err("HTTP/3 cannot go through a proxy");
    assert_eq!(err.kind(), ErrorKind::Config, "{err:#}");
}

/// An HTTP/3 connection keeps its requests' deadlines on one timer
/// (`proto/h3/deadline.rs`), not a timer per request: three requests on
/// one connection, their deadlines out of order, fail at their own with the
/// request timeout's error, and one answered before its deadline is
/// untouched.
#[tokio::test]
async fn each_http3_request_fails_at_its_own_deadline() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    bounded("warm-up", client.get(url(&server, "/delay/0")).send())
        .await
        .expect("warm-up");
    let started = tokio::time::Instant::now();
    let get = |path: &str, ms: u64| spawn_timed_get(&client, url(&server, path), ms, started);
    let late = [600, 200, 400].map(|ms| (get("/delay/10s", ms), ms));
    let answered = get("/delay/100ms", 5_000);
    for (task, ms) in late {
        let (outcome, took) = bounded("a late request", task).await.expect("task");
        let err = outcome.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err:#}");
        assert!(
            format!("{err:#}").contains("no response within the request timeout"),
            "{err:#}"
        );
        let ms = Duration::from_millis(ms);
        assert!(took >= ms, "{ms:?}: {took:?}");
        // Real time, on a loaded machine: bounded loosely.
        assert!(took < ms + Duration::from_secs(1), "{ms:?}: {took:?}");
    }
    let (outcome, took) = bounded("the answered request", answered)
        .await
        .expect("task");
    outcome.expect("answered before its deadline");
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert_eq!(client.metrics().connections_established, 1);
}

/// The client's body limit holds over HTTP/3 as over TCP: a declared
/// length past it fails at once, a body that grows past it when it does,
/// and the connection serves on.
#[tokio::test]
async fn the_response_body_limit_holds_over_http3() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder
        .http3_prior_knowledge()
        .max_response_body_size(Some(50_000))
        .build()
        .expect("client");
    for path in ["/bytes/100000", "/bytes/100000?chunked=1"] {
        let response = bounded(path, client.get(url(&server, path)).send())
            .await
            .expect("head");
        let err = bounded("body", response.bytes())
            .await
            .expect_err("over the limit");
        assert_eq!(err.kind(), ErrorKind::BodyTooLarge, "{path}: {err:#}");
    }
    serves_on(&client, &server).await;
}

/// A streamed upload is held to the caller's Content-Length over HTTP/3 as
/// over HTTP/1.1 and HTTP/2: a body shorter or longer than it fails the
/// request (`InvalidRequest`), its stream reset rather than finished, so no
/// server (or proxy behind it) takes the bytes for a whole request. The
/// connection serves on.
#[tokio::test]
async fn a_streamed_upload_is_held_to_its_content_length_over_http3() {
    use futures_util::stream;

    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    // "hello" in two pieces, declared longer and shorter.
    for declared in ["10", "3"] {
        let chunks =
            ["hel", "lo"].map(|p| Ok::<_, std::io::Error>(bytes::Bytes::from_static(p.as_bytes())));
        let sent = client
            .post(url(&server, "/echo"))
            .header("content-length", declared)
            .body(courier::Body::wrap_stream(stream::iter(chunks)))
            .send();
        let result = bounded("the upload", async {
            let response = sent.await?;
            response.bytes().await
        })
        .await;
        let err = result.expect_err("a body that is not its Content-Length must fail");
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidRequest,
            "declared {declared}: {err:#}"
        );
    }
    // A buffered body is refused before a byte goes, as over TCP.
    for declared in ["2", "41"] {
        let sent = client
            .post(url(&server, "/echo"))
            .header("content-length", declared)
            .body(vec![b'u'; 40])
            .send();
        let err = bounded("buffered", sent).await.expect_err("refused");
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidRequest,
            "declared {declared}: {err:#}"
        );
    }
    serves_on(&client, &server).await;
}

/// HTTP/3 has no tunnel here (RFC 9114 §4.4's CONNECT is not built): a
/// CONNECT over it is refused with a typed error before it goes out,
/// never sent as an ordinary request with `:scheme` and `:path`.
#[tokio::test]
async fn connect_is_refused_over_http3() {
    let (server, builder) = h3_server(ServerConfig::default()).await;
    let client = builder.http3_prior_knowledge().build().expect("client");
    let sent = client
        .request(http::Method::CONNECT, url(&server, "/"))
        .send();
    let err = bounded("CONNECT", sent).await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err:#}");
    assert_eq!(server.requests_served(), 0, "nothing reached the server");
}

/// The next request is answered whole, on the connection the client had.
async fn serves_on(client: &Client, server: &ServerHandle) {
    let response = bounded("after", client.get(url(server, "/bytes/10")).send())
        .await
        .expect("after");
    assert_eq!(
        bounded("body", response.bytes()).await.expect("body").len(),
        10
    );
    assert_eq!(client.metrics().connections_established_http3, 1);
}
