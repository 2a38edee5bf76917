//! Hostile answers to a request that asked for an upgrade: a `101` that
//! frames a body (where does the new protocol start?), two `101`s (the
//! second is the new protocol's bytes, never a response), a `101` whose
//! head never ends or is huge, and a `101` followed by a flood the client
//! must not read when nobody upgrades. A switched response's body is empty;
//! the harness drops it without upgrading, which closes the connection, so
//! no byte of it can reach the next request.

use courier::http::header;
use courier::ErrorKind::*;

use super::{cat, ok, resp, w};
use crate::corpus::case::{Case, Class::Upgrades, Request, Step};

const SWITCH: &str = "HTTP/1.1 101 Switching Protocols";

fn upgrade(client: &courier::Client, url: &str) -> courier::RequestBuilder {
    client
        .get(url)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "websocket")
}

pub fn cases() -> Vec<Case> {
    let asked = |name, bytes: Vec<u8>| {
        Case::h1_keep(name, Upgrades, bytes).request(Request::Build(upgrade))
    };
    let switch = resp(SWITCH, &["upgrade: websocket", "connection: upgrade"], b"");
    let big = format!("x-a: {}", "b".repeat(100 * 1024));
    vec![
        asked("101-to-upgrade", switch.clone()).ok(101, b""),
        asked(
            "101-with-chunked",
            resp(
                SWITCH,
                &["upgrade: websocket", "transfer-encoding: chunked"],
                b"5\r\nhello\r\n0\r\n\r\n",
            ),
        )
        .err(Protocol),
        asked(
            "101-with-content-length",
            resp(
                SWITCH,
                &["upgrade: websocket", "content-length: 4"],
                b"EVIL",
            ),
        )
        .err(Protocol),
        asked("101-twice", cat(&[&switch, &switch, &ok(b"EVIL")])).ok(101, b""),
        asked("101-head-100k", resp(SWITCH, &[&big], b"")).err(HeadersTooLarge),
        asked(
            "101-endless-head",
            cat(&[
                SWITCH.as_bytes(),
                b"\r\n",
                &b"x-a: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n".repeat(60_000),
            ]),
        )
        .err(HeadersTooLarge),
        Case::h1_steps(
            "101-then-flood",
            Upgrades,
            vec![w(switch.clone()), Step::Flood(vec![0x82; 64 * 1024], 1_000)],
        )
        .request(Request::Build(upgrade))
        .ok(101, b""),
        asked("upgrade-declined", ok(b"hello")).ok(200, b"hello"),
    ]
}
