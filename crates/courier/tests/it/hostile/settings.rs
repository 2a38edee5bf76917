//! Issue 14, defect 5, and the rest of RFC 9113 §6.5: a SETTINGS frame the
//! RFC calls a connection error ends the connection with GOAWAY and the
//! RFC's error code; the client then serves on over a new connection.

use tokio::net::TcpListener;

use super::h2_wire::{
    frame, h2c, listen, respond, settings, Peer, ACK, GOAWAY, HEADERS, PING, SETTINGS,
};
use super::within;

const PROTOCOL_ERROR: u32 = 0x1;
const FLOW_CONTROL_ERROR: u32 = 0x3;
const FRAME_SIZE_ERROR: u32 = 0x6;

const ENABLE_PUSH: u16 = 0x2;
const INITIAL_WINDOW_SIZE: u16 = 0x4;
const MAX_FRAME_SIZE: u16 = 0x5;

/// Serves the first connection with `hostile` (after the preface) and
/// returns the GOAWAY error code the client answered with; serves later
/// connections normally.
async fn first_connection_gets(listener: TcpListener, hostile: Vec<u8>) -> u32 {
    let mut peer = Peer::accept_raw(&listener).await;
    peer.send(&hostile).await;
    let code = loop {
        let f = peer
            .try_read()
            .await
            .expect("the client closed without GOAWAY");
        if f.ty == GOAWAY {
            break f.u32_at(4);
        }
    };
    tokio::spawn(peer.drain());
    serve_well(listener).await;
    code
}

/// Answers every request on the next connection with `200 ok`.
async fn serve_well(listener: TcpListener) {
    let mut peer = Peer::accept(&listener, &[]).await;
    while let Some(f) = peer.next().await {
        if f.ty == HEADERS {
            peer.send(&respond(f.stream, b"ok")).await;
        }
    }
}

#[tokio::test]
async fn settings_the_rfc_forbids_end_the_connection_with_its_error_code() {
    let payload = |id: u16, value: u32| {
        let mut p = id.to_be_bytes().to_vec();
        p.extend_from_slice(&value.to_be_bytes());
        p
    };
    let cases: Vec<(&str, Vec<u8>, u32)> = vec![
        (
            "an ACK with a payload",
            [settings(&[]), frame(SETTINGS, ACK, 0, &payload(1, 4096))].concat(),
            FRAME_SIZE_ERROR,
        ),
        (
            "an empty ACK's 1-byte sibling",
            [settings(&[]), frame(SETTINGS, ACK, 0, &[0])].concat(),
            FRAME_SIZE_ERROR,
        ),
        (
            "SETTINGS on a stream",
            frame(SETTINGS, 0, 1, &[]),
            PROTOCOL_ERROR,
        ),
        (
            "a PING before the SETTINGS (no server preface, RFC 9113 §3.4)",
            [frame(PING, 0, 0, &[0; 8]), settings(&[])].concat(),
            PROTOCOL_ERROR,
        ),
        (
            "a SETTINGS ACK before the SETTINGS",
            [frame(SETTINGS, ACK, 0, &[]), settings(&[])].concat(),
            PROTOCOL_ERROR,
        ),
        (
            "a length not a multiple of 6",
            frame(SETTINGS, 0, 0, &[0; 7]),
            FRAME_SIZE_ERROR,
        ),
        (
            "ENABLE_PUSH 1 from a server",
            settings(&[(ENABLE_PUSH, 1)]),
            PROTOCOL_ERROR,
        ),
        (
            "ENABLE_PUSH 2",
            settings(&[(ENABLE_PUSH, 2)]),
            PROTOCOL_ERROR,
        ),
        (
            "INITIAL_WINDOW_SIZE 2^31",
            settings(&[(INITIAL_WINDOW_SIZE, 1 << 31)]),
            FLOW_CONTROL_ERROR,
        ),
        (
            "MAX_FRAME_SIZE below 2^14",
            settings(&[(MAX_FRAME_SIZE, (1 << 14) - 1)]),
            PROTOCOL_ERROR,
        ),
        (
            "MAX_FRAME_SIZE above 2^24-1",
            settings(&[(MAX_FRAME_SIZE, 1 << 24)]),
            PROTOCOL_ERROR,
        ),
    ];
    for (name, hostile, code) in cases {
        let (listener, url) = listen().await;
        let server = tokio::spawn(first_connection_gets(listener, hostile));
        let client = h2c().build().unwrap();
        // The first request meets the broken connection: it fails, or (not
        // written yet) is sent again on the next connection.
        let first = within("the first request", client.get(&url).send()).await;
        if let Err(e) = &first {
            assert!(
                matches!(
                    e.kind(),
                    courier::ErrorKind::Protocol | courier::ErrorKind::ConnectionClosed
                ),
                "{name}: {e:?}"
            );
        }
        drop(first);
        let res = within("a good request", client.get(&url).send())
            .await
            .unwrap_or_else(|e| panic!("{name}: the client serves on: {e:?}"));
        assert_eq!(res.text().await.unwrap(), "ok", "{name}");
        drop(client);
        let sent = within("the server script", server).await.unwrap();
        assert_eq!(sent, code, "{name}: GOAWAY error code");
    }
}

#[tokio::test]
async fn settings_at_the_rfc_bounds_are_accepted() {
    let (listener, url) = listen().await;
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept_raw(&listener).await;
        peer.send(&settings(&[
            (ENABLE_PUSH, 0),
            (INITIAL_WINDOW_SIZE, (1 << 31) - 1),
            (MAX_FRAME_SIZE, (1 << 24) - 1),
            (0xff0f, 7), // unknown: ignored
        ]))
        .await;
        while let Some(f) = peer.next().await {
            if f.ty == GOAWAY {
                // Only the goodbye of a client that is done.
                assert_eq!(f.u32_at(4), 0, "GOAWAY for valid SETTINGS: {f:?}");
            }
            if f.ty == HEADERS {
                peer.send(&respond(f.stream, b"ok")).await;
            }
        }
    });
    let client = h2c().build().unwrap();
    let res = within("the response", client.get(&url).send())
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "ok");
    drop(client);
    within("the server script", server).await.unwrap();
}
