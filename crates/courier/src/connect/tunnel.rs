//! Opening a path through a proxy on an established TCP connection to it:
//! an HTTP `CONNECT` tunnel (RFC 9110 §9.3.6), or a SOCKS5 `CONNECT`
//! (RFC 1928, username/password per RFC 1929). What the proxy sends is
//! bounded like any peer's: a head of at most [`MAX_HEAD`] bytes, SOCKS
//! replies of their fixed shapes.

use std::io;
use std::net::{IpAddr, SocketAddr};

use http::HeaderValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest `CONNECT` response head read from a proxy.
const MAX_HEAD: usize = 16 * 1024;

fn refused(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, what)
}

fn garbled(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// Asks an HTTP proxy for a tunnel to `host:port`; the stream carries the
/// origin's bytes once this returns.
pub(crate) async fn http_connect(
    io: &mut TcpStream,
    host: &str,
    port: u16,
    auth: Option<&HeaderValue>,
) -> io::Result<()> {
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
                    return Err(refused(format!(
                        "the proxy answered CONNECT {target} with {code} {reason}"
                    )));
                }
                if len != buf.len() {
                    return Err(garbled("the proxy sent bytes after its CONNECT answer"));
                }
                return Ok(());
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(garbled("the proxy's CONNECT answer is too large"))
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

/// Asks a SOCKS5 proxy to connect to `target`.
pub(crate) async fn socks5_connect(
    io: &mut TcpStream,
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
    // The address the proxy bound, which nobody needs: read past it.
    let skip = match reply[3] {
        1 => 4 + 2,
        4 => 16 + 2,
        3 => {
            let mut len = [0u8; 1];
            io.read_exact(&mut len).await?;
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
