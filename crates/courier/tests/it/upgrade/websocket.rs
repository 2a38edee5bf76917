//! WebSocket through `Response::upgrade()` against real servers: Python's
//! `websockets` over HTTP/1.1 and hypercorn over HTTP/2 (RFC 8441 extended
//! CONNECT, h2c), both pinned in interop/requirements.txt, spoken to by
//! tokio-tungstenite over the upgraded stream. Without the packages the
//! tests are skipped, counted as n/a; under CI they fail.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use courier::http::header;
use courier::Client;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::support::ci::{is_ci, write_summary};
use crate::support::free_port;

const LIMIT: Duration = Duration::from_secs(20);

/// An echo server: every message back as it came; messages up to 16 MiB.
const ECHO_SERVER: &str = r#"
import asyncio, logging, sys
from websockets.asyncio.server import serve

# The test's readiness probe connects and closes without a handshake.
logging.getLogger("websockets").setLevel(logging.CRITICAL)

async def echo(ws):
    async for message in ws:
        await ws.send(message)

async def main(port):
    async with serve(echo, "127.0.0.1", port, max_size=16 * 1024 * 1024):
        await asyncio.get_running_loop().create_future()

asyncio.run(main(int(sys.argv[1])))
"#;

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// A hypercorn ASGI app: every WebSocket message back as it came.
const HYPERCORN_ECHO: &str = r#"
import asyncio, sys
from hypercorn.asyncio import serve
from hypercorn.config import Config

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "websocket":
        return
    await receive()
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return
        await send({"type": "websocket.send", "bytes": message.get("bytes"), "text": message.get("text")})

config = Config()
config.bind = [f"127.0.0.1:{sys.argv[1]}"]
config.accesslog = None
config.websocket_max_message_size = 16 * 1024 * 1024
asyncio.run(serve(app, config))
"#;

/// Whether `module` imports; if not, the test is n/a (or under CI, fails).
fn installed(test: &str, module: &str) -> bool {
    let found = Command::new(python())
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            !is_ci(),
            "CI is set and Python's {module} is not installed (interop/install.sh)"
        );
        eprintln!("n/a: Python's {module} is not installed (interop/install.sh)");
    }
    write_summary(
        &format!("websocket-{test}"),
        &[
            ("ok", u8::from(found).to_string()),
            ("na", u8::from(!found).to_string()),
        ],
    );
    found
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(script: &str) -> Server {
    let port = free_port();
    let child = Command::new(python())
        .args(["-c", script, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the websockets server");
    let mut server = Server { child, port };
    let deadline = Instant::now() + LIMIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("the websockets server exited at start: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the websockets server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

/// The WebSocket opening handshake over HTTP/1.1, then tokio-tungstenite
/// over the upgraded stream.
async fn connect(client: &Client, port: u16) -> WebSocketStream<courier::Upgraded> {
    let res = client
        .get(format!("http://127.0.0.1:{port}/"))
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .header(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 101);
    // RFC 6455 §1.3's example key and its accept value.
    assert_eq!(
        res.headers()[header::SEC_WEBSOCKET_ACCEPT],
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
    let upgraded = res.upgrade().await.unwrap();
    WebSocketStream::from_raw_socket(upgraded, Role::Client, None).await
}

/// WebSocket over HTTP/2 (RFC 8441): an extended CONNECT with `:protocol`
/// websocket, a 200, then tokio-tungstenite over the stream.
async fn connect_h2(client: &Client, port: u16) -> WebSocketStream<courier::Upgraded> {
    let mut req = courier::http::Request::builder()
        .method(courier::http::Method::CONNECT)
        .uri(format!("http://127.0.0.1:{port}/"))
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .body(courier::Body::empty())
        .unwrap();
    req.extensions_mut()
        .insert(courier::Protocol::from_static("websocket"));
    let res = client.execute(req).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.version(), courier::http::Version::HTTP_2);
    let upgraded = res.upgrade().await.unwrap();
    WebSocketStream::from_raw_socket(upgraded, Role::Client, None).await
}

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} not within {LIMIT:?}"))
}

/// Echo, a large message, the close handshake; `eof`: the server then
/// ends the stream (hypercorn over HTTP/2 does not: it leaves the stream
/// open after the closing handshake a client started, and courier resets
/// it when the stream is dropped).
async fn exchange(mut ws: WebSocketStream<courier::Upgraded>, eof: bool) {
    within("the echo", async {
        ws.send(Message::text("hello")).await.unwrap();
        let echoed = ws.next().await.unwrap().unwrap();
        assert_eq!(echoed, Message::text("hello"));
    })
    .await;
    // Several MiB: many reads and writes, the server's frames fragmented
    // over TCP segments.
    let big: Vec<u8> = (0..5 * 1024 * 1024u32).map(|i| (i % 253) as u8).collect();
    within("the large echo", async {
        ws.send(Message::binary(big.clone())).await.unwrap();
        let echoed = ws.next().await.unwrap().unwrap();
        assert!(
            echoed.into_data() == big,
            "the large message came back changed"
        );
    })
    .await;
    within("the close handshake", async {
        ws.close(Some(CloseFrame {
            code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Normal,
            reason: "done".into(),
        }))
        .await
        .unwrap();
        // The server's close frame, then (`eof`) the end of the stream.
        match ws.next().await {
            Some(Ok(Message::Close(frame))) => {
                assert_eq!(u16::from(frame.unwrap().code), 1000);
            }
            other => panic!("instead of the server's close: {other:?}"),
        }
        if eof {
            assert!(ws.next().await.is_none(), "the stream goes on after close");
        }
    })
    .await;
}

#[tokio::test]
async fn an_echo_round_trip_a_large_message_and_the_close_handshake_over_http1() {
    if !installed("http1", "websockets.asyncio.server") {
        return;
    }
    let server = start(ECHO_SERVER);
    let client = Client::new();
    exchange(connect(&client, server.port).await, true).await;
    assert_eq!(client.metrics().upgrades, 1);
    crate::support::eventually("the upgraded connection closed", LIMIT, || {
        client.metrics().connections_open == 0
    })
    .await;
}

#[tokio::test]
async fn an_echo_round_trip_a_large_message_and_the_close_handshake_over_http2() {
    if !installed("http2", "hypercorn") {
        return;
    }
    let server = start(HYPERCORN_ECHO);
    let client = Client::builder().http2_prior_knowledge().build().unwrap();
    exchange(connect_h2(&client, server.port).await, false).await;
    assert_eq!(client.metrics().upgrades, 1);
    crate::support::eventually("the stream's slot freed", LIMIT, || {
        client.metrics().http2_streams_active == 0
    })
    .await;
    // The connection itself stays, for other requests.
    assert_eq!(client.metrics().connections_open, 1);
}
