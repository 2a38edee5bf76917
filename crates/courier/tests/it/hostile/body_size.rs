//! Issue 14, defect 1: a declared Content-Length is a claim, not a size. A
//! response that declares 10^12 (or 10^19 - 1) bytes and sends a few must
//! fail as a short body, with the client's memory where it was; before the
//! fix `bytes()` allocated the declared length up front (an abort: "memory
//! allocation of 1000000000000 bytes failed", or a "capacity overflow" panic).

use courier::{Client, ErrorKind};

use super::h1_wire::{self, Reply};
use std::collections::HashSet;

use tokio::net::TcpListener;

use super::h2_wire::{
    self, frame, head_200, rst_stream, Peer, ACK, CANCEL, DATA, HEADERS, SETTINGS, WINDOW_UPDATE,
};
use super::{within, LIMIT};
use crate::support::alone;
use crate::support::memory::Mark;

/// What the servers declare.
const DECLARED: [&str; 2] = ["1000000000000", "9999999999999999999"];

/// What they send of it: enough for several reads.
const SENT: usize = 200 * 1024;

/// The most the client's RSS may grow over a test's hostile responses.
const RSS_BUDGET: u64 = 64 * 1024 * 1024;

/// How the body is read.
#[derive(Debug, Clone, Copy)]
enum Read {
    Bytes,
    Text,
    Json,
}

async fn read(client: &Client, url: &str, how: Read) -> Result<usize, courier::Error> {
    let res = within("the head", client.get(url).send()).await?;
    within("the body", async {
        match how {
            Read::Bytes => res.bytes().await.map(|b| b.len()),
            Read::Text => res.text().await.map(|t| t.len()),
            Read::Json => res.json::<serde_json::Value>().await.map(|_| 0),
        }
    })
    .await
}

fn clients() -> Vec<(&'static str, courier::ClientBuilder)> {
    vec![
        ("no body limit", Client::builder()),
        (
            "a body limit above the declared length",
            Client::builder().max_response_body_size(Some(1 << 40)),
        ),
    ]
}

/// Whether `err` is what a short body or a limit makes of a lying length.
fn expected(err: &courier::Error) -> bool {
    matches!(err.kind(), ErrorKind::Body | ErrorKind::BodyTooLarge)
}

fn h1_route(path: &str) -> Reply {
    let declared = match path {
        "/big/0" => DECLARED[0],
        "/big/1" => DECLARED[1],
        // One small piece past the limit below, delimited by the close.
        "/over" => {
            let mut out = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n".to_vec();
            out.extend_from_slice(&[b'z'; 100]);
            return Reply::Close(out);
        }
        _ => return h1_wire::ok(b"\"ok\""),
    };
    let mut out = format!("HTTP/1.1 200 OK\r\ncontent-length: {declared}\r\n\r\n").into_bytes();
    out.extend(std::iter::repeat_n(b'x', SENT));
    Reply::Close(out)
}

#[tokio::test]
async fn h1_a_declared_content_length_sizes_no_buffer() {
    if !alone(
        module_path!(),
        "h1_a_declared_content_length_sizes_no_buffer",
    ) {
        return;
    }
    let server = h1_wire::Server::start(h1_route).await;
    let memory = Mark::now();
    for (name, builder) in clients() {
        let client = builder.timeout(LIMIT).build().unwrap();
        for (i, declared) in DECLARED.iter().enumerate() {
            for how in [Read::Bytes, Read::Text, Read::Json] {
                let url = format!("{}/big/{i}", server.url);
                let err = read(&client, &url, how)
                    .await
                    .expect_err("a body shorter than declared must fail");
                assert!(
                    expected(&err),
                    "{name}, {declared}, {how:?}: unexpected error {err:?}"
                );
            }
        }
        let good = read(&client, &format!("{}/good", server.url), Read::Json).await;
        assert!(good.is_ok(), "{name}: the client serves on: {good:?}");
    }
    if let Some(grown) = memory.grown() {
        assert!(
            grown < RSS_BUDGET,
            "RSS rose by {grown} bytes (peak: {})",
            memory.is_peak()
        );
    }
}

/// Serves every connection: `/big/N` gets a head declaring `DECLARED[N]`
/// and `SENT_H2` bytes in DATA frames; once the client grants the stream
/// more window (it has read over half of it, so well past two chunks), the
/// server gives up on the stream. Anything else gets `"ok"`.
async fn h2_server(listener: TcpListener) {
    while let Ok((io, _)) = listener.accept().await {
        tokio::spawn(async move {
            let Some(mut peer) = Peer::handshake(io, &[]).await else {
                return;
            };
            let mut big = HashSet::new();
            while let Some(f) = peer.try_read().await {
                match f.ty {
                    SETTINGS if !f.has(ACK) => peer.send(&frame(SETTINGS, ACK, 0, &[])).await,
                    WINDOW_UPDATE if big.remove(&f.stream) => {
                        peer.send(&rst_stream(f.stream, CANCEL)).await
                    }
                    HEADERS => {
                        let s = f.stream;
                        let declared = DECLARED
                            .iter()
                            .enumerate()
                            .find(|(i, _)| f.contains(format!("/big/{i}").as_bytes()));
                        let Some((_, declared)) = declared else {
                            peer.send(&h2_wire::respond(s, b"\"ok\"")).await;
                            continue;
                        };
                        let mut out = head_200(s, declared);
                        for _ in 0..SENT_H2 / MAX_FRAME {
                            out.extend(frame(DATA, 0, s, &[b'x'; MAX_FRAME]));
                        }
                        peer.send(&out).await;
                        big.insert(s);
                    }
                    _ => {}
                }
            }
        });
    }
}

/// What the HTTP/2 server sends of a declared body: past half the client's
/// stream window (2 MiB, set below), so the client grants more as it reads.
const SENT_H2: usize = 1536 * 1024;

/// The default SETTINGS_MAX_FRAME_SIZE.
const MAX_FRAME: usize = 16_384;

#[tokio::test]
async fn h2_a_declared_content_length_sizes_no_buffer() {
    if !alone(
        module_path!(),
        "h2_a_declared_content_length_sizes_no_buffer",
    ) {
        return;
    }
    let (listener, url) = h2_wire::listen().await;
    tokio::spawn(h2_server(listener));
    let memory = Mark::now();
    for (name, builder) in clients() {
        // Fixed windows: the server waits for a stream WINDOW_UPDATE, which
        // a window grown past 4 x SENT_H2 (a fast reader's) would never need.
        let client = builder
            .http2_prior_knowledge()
            .http2_adaptive_window(false)
            .http2_initial_stream_window_size(2 << 20)
            .timeout(LIMIT)
            .build()
            .unwrap();
        for (i, declared) in DECLARED.iter().enumerate() {
            for how in [Read::Bytes, Read::Text, Read::Json] {
                let err = read(&client, &format!("{url}/big/{i}"), how)
                    .await
                    .expect_err("a body shorter than declared must fail");
                assert!(
                    expected(&err),
                    "{name}, {declared}, {how:?}: unexpected error {err:?}"
                );
            }
        }
        let good = read(&client, &format!("{url}/good"), Read::Json).await;
        assert!(good.is_ok(), "{name}: the client serves on: {good:?}");
    }
    if let Some(grown) = memory.grown() {
        assert!(
            grown < RSS_BUDGET,
            "RSS rose by {grown} bytes (peak: {})",
            memory.is_peak()
        );
    }
}

/// The sibling found on the way: a body that came in one piece was returned
/// whole, whatever `max_response_body_size` said.
#[tokio::test]
async fn a_body_in_one_piece_is_held_to_the_body_limit() {
    let server = h1_wire::Server::start(h1_route).await;
    let client = Client::builder()
        .max_response_body_size(Some(10))
        .timeout(LIMIT)
        .build()
        .unwrap();
    for how in [Read::Bytes, Read::Text] {
        let err = read(&client, &format!("{}/over", server.url), how)
            .await
            .expect_err("100 bytes over a 10-byte limit");
        assert_eq!(err.kind(), ErrorKind::BodyTooLarge, "{how:?}: {err:?}");
    }
    let good = read(&client, &format!("{}/good", server.url), Read::Json).await;
    assert!(good.is_ok(), "the client serves on: {good:?}");
}
