//! Opening a path through a proxy on an established TCP connection to it:
//! an HTTP `CONNECT` tunnel (RFC 9110 §9.3.6), or a SOCKS5 `CONNECT`
//! (RFC 1928, username/password per RFC 1929). What the proxy sends is
//! bounded like any peer's: a head of at most [`MAX_HEAD`] bytes, SOCKS
//! replies of their fixed shapes, every field checked against its RFC; the
//! pool's `connect_timeout` is the deadline of the whole exchange. Bytes
//! that follow a proxy's answer belong to the tunnel: after a SOCKS5 reply
//! they stay unread in the stream, and after a `CONNECT` head they are
//! handed back to be read before the stream.

use std::io;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use http::HeaderValue;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest `CONNECT` response head read from a proxy.
const MAX_HEAD: usize = 16 * 1024;

fn refused(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, what)
}

fn garbled(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// Asks an HTTP proxy for a tunnel to `host:port`; the stream carries the
/// origin's bytes once this returns, after the bytes returned (what the
/// proxy sent behind its answer's head: the tunnel's first bytes).
pub(crate) async fn http_connect<IO: AsyncRead + AsyncWrite + Unpin>(
    io: &mut IO,
    host: &str,
    port: u16,
    auth: Option<&HeaderValue>,
) -> io::Result<Bytes> {
    let target = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nhost: {target}\r\n").into_bytes();
    if let Some(auth) = auth {
        request.extend_from_slice(b"proxy-authorization: ");
        request.extend_from_slice(auth.as_bytes());
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"\r\n");
    io.write_all(&request).await?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = io.read(&mut chunk).await?;
        if n == 0 {
            return Err(refused(format!(
                "the proxy closed the connection before answering CONNECT {target}"
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let code = response.code.unwrap_or(0);
                if !(200..300).contains(&code) {
                    let reason = response.reason.unwrap_or("");
                    let hint = if code == 407 {
                        if auth.is_some() {
                            " (the credentials in the proxy URL were refused)"
                        } else {
                            " (put credentials in the proxy URL)"
                        }
                    } else {
                        ""
                    };
                    // Not retried here: one answer per connection attempt,
                    // so a proxy that keeps asking cannot make a loop.
                    return Err(refused(format!(
                        "the proxy answered CONNECT {target} with {code} {reason}{hint}"
                    )));
                }
                // A 2xx has no body (RFC 9110 §9.3.6: framing headers are
                // ignored); whatever follows the head is the tunnel's.
                return Ok(Bytes::copy_from_slice(&buf[len..]));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(garbled("the proxy's CONNECT answer is too large"))
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(garbled(
                    "the proxy's CONNECT answer has too many header fields",
                ))
            }
            Err(_) => return Err(garbled("the proxy's CONNECT answer is not HTTP")),
        }
    }
}

/// Where a SOCKS5 proxy is asked to connect.
pub(crate) enum SocksTarget<'a> {
    /// Resolved by the proxy (`socks5h`).
    Name(&'a str, u16),
    /// Resolved here (`socks5`).
    Addr(SocketAddr),
}

/// Asks a SOCKS5 proxy to connect to `target`. Whatever the proxy sends
/// after its reply is left in the stream: it is the tunnel's.
pub(crate) async fn socks5_connect<IO: AsyncRead + AsyncWrite + Unpin>(
    io: &mut IO,
    target: SocksTarget<'_>,
    auth: Option<(&str, &str)>,
) -> io::Result<()> {
    // Greeting: the methods offered (0: none; 2: username/password).
    let greeting: &[u8] = if auth.is_some() {
        &[5, 2, 0, 2]
    } else {
        &[5, 1, 0]
    };
    io.write_all(greeting).await?;
    let mut choice = [0u8; 2];
    io.read_exact(&mut choice).await?;
    match (choice[0], choice[1], auth) {
        (5, 0, _) => {}
        (5, 2, Some((user, pass))) => {
            let mut m = vec![1, user.len() as u8];
            m.extend_from_slice(user.as_bytes());
            m.push(pass.len() as u8);
            m.extend_from_slice(pass.as_bytes());
            io.write_all(&m).await?;
            let mut status = [0u8; 2];
            io.read_exact(&mut status).await?;
            // RFC 1929 §2: the sub-negotiation's version is 1, in the reply
            // as in the request (a 5 here is a proxy that mixes the two up).
            if status[0] != 1 {
                return Err(garbled(
                    "the SOCKS5 proxy's username/password reply is not version 1 (RFC 1929)",
                ));
            }
            if status[1] != 0 {
                return Err(refused(
                    "the SOCKS5 proxy refused the username and password".into(),
                ));
            }
        }
        (5, 0xff, _) | (5, 2, None) => {
            return Err(refused(
                "the SOCKS5 proxy accepts none of the offered authentication methods".into(),
            ))
        }
        _ => return Err(garbled("not a SOCKS5 proxy")),
    }
    let mut request = vec![5, 1, 0];
    let port = match target {
        SocksTarget::Name(host, port) => {
            let host = host.as_bytes();
            let len = u8::try_from(host.len())
                .map_err(|_| garbled("host name longer than SOCKS5 allows"))?;
            request.push(3);
            request.push(len);
            request.extend_from_slice(host);
            port
        }
        SocksTarget::Addr(addr) => {
            match addr.ip() {
                IpAddr::V4(ip) => {
                    request.push(1);
                    request.extend_from_slice(&ip.octets());
                }
                IpAddr::V6(ip) => {
                    request.push(4);
                    request.extend_from_slice(&ip.octets());
                }
            }
            addr.port()
        }
    };
    request.extend_from_slice(&port.to_be_bytes());
    io.write_all(&request).await?;
    let mut reply = [0u8; 4];
    io.read_exact(&mut reply).await?;
    if reply[0] != 5 {
        return Err(garbled("not a SOCKS5 reply"));
    }
    if reply[1] != 0 {
        return Err(refused(format!(
            "the SOCKS5 proxy could not connect: {}",
            socks_reason(reply[1])
        )));
    }
    // RFC 1928 §6: RSV is 0 (Go's client checks it too).
    if reply[2] != 0 {
        return Err(garbled("the SOCKS5 reply's reserved byte is not 0"));
    }
    // The address the proxy bound, which nobody needs: read past it, and
    // not a byte further (what follows is the tunnel's).
    let skip = match reply[3] {
        1 => 4 + 2,
        4 => 16 + 2,
        3 => {
            let mut len = [0u8; 1];
            io.read_exact(&mut len).await?;
            if len[0] == 0 {
                return Err(garbled("the SOCKS5 reply's domain name is empty"));
            }
            usize::from(len[0]) + 2
        }
        _ => return Err(garbled("bad SOCKS5 address type")),
    };
    let mut rest = [0u8; 258];
    io.read_exact(&mut rest[..skip]).await?;
    Ok(())
}

fn socks_reason(code: u8) -> &'static str {
    match code {
        1 => "general failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unknown error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// A proxy that writes `script` at once, ends its side, and reads what
    /// it is sent.
    async fn scripted(script: Vec<u8>) -> DuplexStream {
        let (client, mut proxy) = duplex(64 * 1024);
        tokio::spawn(async move {
            let _ = proxy.write_all(&script).await;
            let _ = proxy.shutdown().await;
            let mut sink = [0u8; 4096];
            while matches!(proxy.read(&mut sink).await, Ok(n) if n > 0) {}
        });
        client
    }

    async fn socks(script: &[u8], auth: Option<(&str, &str)>) -> io::Result<DuplexStream> {
        let mut io = scripted(script.to_vec()).await;
        let target = SocksTarget::Name("origin.example", 443);
        socks5_connect(&mut io, target, auth).await.map(|()| io)
    }

    const OK_V4: &[u8] = &[5, 0, 0, 1, 127, 0, 0, 1, 0, 80];

    #[tokio::test]
    async fn socks5_replies_are_held_to_their_rfcs() {
        let creds = Some(("u", "p"));
        // RFC 1929: the sub-negotiation's reply has version 1.
        let ok = [&[5, 2, 1, 0][..], OK_V4].concat();
        assert!(socks(&ok, creds).await.is_ok());
        for (what, script, auth) in [
            (
                "auth reply version 5",
                [&[5, 2, 5, 0][..], OK_V4].concat(),
                creds,
            ),
            (
                "auth reply version 0",
                [&[5, 2, 0, 0][..], OK_V4].concat(),
                creds,
            ),
            ("auth refused", [&[5, 2, 1, 1][..], OK_V4].concat(), creds),
            (
                "reserved byte",
                vec![5, 0, 5, 0, 1, 1, 127, 0, 0, 1, 0, 80],
                None,
            ),
            (
                "reply version 4",
                vec![5, 0, 4, 0, 0, 1, 127, 0, 0, 1, 0, 80],
                None,
            ),
            (
                "unknown ATYP",
                vec![5, 0, 5, 0, 0, 9, 127, 0, 0, 1, 0, 80],
                None,
            ),
            ("domain of length 0", vec![5, 0, 5, 0, 0, 3, 0, 0, 80], None),
            ("method not offered", vec![5, 1], None),
            ("auth chosen, not offered", vec![5, 2], None),
            ("no acceptable method", vec![5, 0xff], creds),
            (
                "connection refused",
                vec![5, 0, 5, 5, 0, 1, 127, 0, 0, 1, 0, 80],
                None,
            ),
            ("closed mid-reply", vec![5, 0, 5, 0, 0, 1, 127], None),
            ("closed before choosing", vec![5], None),
        ] {
            let err = socks(&script, auth).await.expect_err(what);
            assert!(
                matches!(
                    err.kind(),
                    io::ErrorKind::InvalidData
                        | io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::UnexpectedEof
                ),
                "{what}: {err:?}"
            );
        }
    }

    /// What follows a reply belongs to the tunnel: left in the stream.
    #[tokio::test]
    async fn socks5_bytes_after_the_reply_are_the_tunnels() {
        let domain = [&[5, 0, 5, 0, 0, 3, 4][..], b"host", &[0, 80], b"EARLY"].concat();
        let mut io = socks(&domain, None).await.unwrap();
        let mut early = [0u8; 5];
        io.read_exact(&mut early).await.unwrap();
        assert_eq!(&early, b"EARLY");
    }

    async fn connect(script: &[u8]) -> io::Result<(DuplexStream, Bytes)> {
        let mut io = scripted(script.to_vec()).await;
        let early = http_connect(&mut io, "origin.example", 443, None).await?;
        Ok((io, early))
    }

    #[tokio::test]
    async fn connect_answers_are_bounded_and_early_bytes_kept() {
        let (_, early) = connect(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        assert!(early.is_empty());
        // Bytes after a 2xx head are the tunnel's: kept, not an error, and
        // not read as part of the head (a Content-Length is ignored).
        let (_, early) = connect(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\n\x16\x03\x01TLS")
            .await
            .unwrap();
        assert_eq!(&early[..], b"\x16\x03\x01TLS");
        let huge = [
            &b"HTTP/1.1 200 OK\r\nx: "[..],
            &vec![b'a'; 2 * MAX_HEAD],
            b"\r\n\r\n",
        ]
        .concat();
        let many: Vec<u8> = [
            &b"HTTP/1.1 200 OK\r\n"[..],
            &b"x: y\r\n".repeat(1000),
            b"\r\n",
        ]
        .concat();
        for (what, script) in [
            (
                "407",
                b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n".to_vec(),
            ),
            ("not HTTP", b"SSH-2.0-OpenSSH\r\n\r\n".to_vec()),
            ("huge head", huge),
            ("many fields", many),
            ("closed mid-head", b"HTTP/1.1 200 OK\r\nx:".to_vec()),
            ("closed at once", Vec::new()),
        ] {
            let err = connect(&script).await.expect_err(what);
            assert!(
                matches!(
                    err.kind(),
                    io::ErrorKind::InvalidData | io::ErrorKind::ConnectionRefused
                ),
                "{what}: {err:?}"
            );
            if what == "407" {
                assert!(err.to_string().contains("407"), "{err}");
            }
        }
    }
}
