//! The places a credential can arrive at, each recording what was
//! addressed to it: origins (HTTP/1.1 in the clear, HTTP/2 over TLS, hyper's
//! servers) record every request head; the HTTP proxy records the heads of
//! the requests it forwards and of its CONNECTs (and consumes
//! `Proxy-Authorization`, as a proxy does, RFC 9110 §11.7.2); the SOCKS5
//! proxy records its handshake. What goes through a tunnel is addressed to
//! the origin at its end, which records it.
//!
//! An origin answers `/go?to=<location>` with a 302 whose Location is the
//! rest of the query verbatim (so chains nest unescaped), anything else with
//! `200 ok`; `/learn` carries the run's `Alt-Svc` offer ([`Offer`]) and
//! `/clear` an `Alt-Svc: clear` (the HTTP/3 routes, `alternatives.rs`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::corpus::tls;

/// Every wait of a proxy on its peers.
const WAIT: Duration = Duration::from_secs(5);
/// The most a request head or a handshake may take.
const MAX_HEAD: usize = 64 * 1024;

/// What every endpoint received, as text, by endpoint name.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<(&'static str, String)>>>);

impl Log {
    pub fn record(&self, endpoint: &'static str, text: String) {
        self.0.lock().unwrap().push((endpoint, text));
    }

    /// Forgets everything (between runs).
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// The endpoints that received `needle`, in first-seen order.
    pub fn who_saw(&self, needle: &str) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (endpoint, text) in self.0.lock().unwrap().iter() {
            if text.contains(needle) && !out.contains(endpoint) {
                out.push(*endpoint);
            }
        }
        out
    }

    /// How many requests `endpoint` received.
    pub fn requests(&self, endpoint: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(e, _)| *e == endpoint)
            .count()
    }
}

/// The servers' tasks, stopped on drop.
#[derive(Default)]
pub struct Tasks(Mutex<JoinSet<()>>);

impl Tasks {
    pub fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        self.0.lock().unwrap().spawn(f);
    }
}

/// The `Alt-Svc` value the origins send on `/learn`, set per run.
#[derive(Clone, Default)]
pub struct Offer(Arc<Mutex<Option<String>>>);

impl Offer {
    #[cfg_attr(not(feature = "http3"), allow(dead_code))]
    pub fn set(&self, value: Option<String>) {
        *self.0.lock().unwrap() = value;
    }

    fn get(&self) -> Option<String> {
        self.0.lock().unwrap().clone()
    }
}

/// The head of a request as text: request line, then `name: value` lines.
pub fn head_text<B>(req: &Request<B>) -> String {
    let mut text = format!("{} {} {:?}\n", req.method(), req.uri(), req.version());
    for (name, value) in req.headers() {
        text.push_str(&format!(
            "{name}: {}\n",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    text
}

pub fn answer(path_and_query: &str, offer: &Offer) -> Response<Full<Bytes>> {
    if let Some(to) = path_and_query.strip_prefix("/go?to=") {
        return Response::builder()
            .status(302)
            .header("location", to)
            .header("content-length", "0")
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    let alt_svc = match path_and_query {
        "/learn" => offer.get(),
        "/clear" => Some("clear".to_owned()),
        _ => None,
    };
    let mut res = Response::builder().header("content-length", "2");
    if let Some(value) = alt_svc {
        res = res.header("alt-svc", value);
    }
    res.body(Full::new(Bytes::from_static(b"ok"))).unwrap()
}

/// Starts an origin on 127.0.0.1 recording under `name`: HTTP/1.1 in the
/// clear, or HTTP/2 over TLS (ALPN h2) with `tls`; `/learn` offers `offer`.
pub async fn origin(
    name: &'static str,
    tls: bool,
    log: &Log,
    tasks: &Tasks,
    offer: &Offer,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (log, offer) = (log.clone(), offer.clone());
    let acceptor = tls.then(|| tls::acceptor(b"h2"));
    tasks.spawn(async move {
        let mut conns = JoinSet::new();
        while let Ok((tcp, _)) = listener.accept().await {
            let (log, offer) = (log.clone(), offer.clone());
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                log.record(name, head_text(&req));
                let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
                let res = answer(target, &offer);
                async move { Ok::<_, Infallible>(res) }
            });
            match &acceptor {
                None => {
                    conns.spawn(async move {
                        let io = TokioIo::new(tcp);
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service)
                            .await;
                    });
                }
                Some(acceptor) => {
                    let acceptor = acceptor.clone();
                    conns.spawn(async move {
                        let Ok(Ok(stream)) = tokio::time::timeout(WAIT, acceptor.accept(tcp)).await
                        else {
                            return;
                        };
                        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
    });
    addr
}

/// Reads until the end of a head (`\r\n\r\n`), within [`MAX_HEAD`] and [`WAIT`].
async fn read_head<S: AsyncRead + Unpin>(io: &mut S) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // A byte at a time: what follows the head belongs to the tunnel.
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return None;
        }
        match tokio::time::timeout(WAIT, io.read(&mut byte)).await {
            Ok(Ok(1)) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(head)
}

/// Connects to `host:port`, trying each address the name has.
async fn dial(host: &str, port: u16) -> Option<TcpStream> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = tokio::time::timeout(WAIT, tokio::net::lookup_host((host, port)))
        .await
        .ok()?
        .ok()?;
    for addr in addrs {
        if let Ok(Ok(tcp)) = tokio::time::timeout(WAIT, TcpStream::connect(addr)).await {
            return Some(tcp);
        }
    }
    None
}

fn split_authority(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = authority.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

/// Starts an HTTP proxy: requests in absolute form are forwarded (their
/// heads recorded as `proxy-forward`), CONNECT opens a tunnel (its head
/// recorded as `proxy-connect`).
pub async fn http_proxy(log: &Log, tasks: &Tasks) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = log.clone();
    tasks.spawn(async move {
        let mut conns = JoinSet::new();
        while let Ok((tcp, _)) = listener.accept().await {
            conns.spawn(serve_proxy(tcp, log.clone()));
        }
    });
    addr
}

async fn serve_proxy(mut client: TcpStream, log: Log) {
    while let Some(head) = read_head(&mut client).await {
        let text = String::from_utf8_lossy(&head).into_owned();
        let mut lines = text.split("\r\n");
        let line = lines.next().unwrap_or_default().to_owned();
        let mut parts = line.split(' ');
        let (method, target) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        if method == "CONNECT" {
            log.record("proxy-connect", text.clone());
            let Some((host, port)) = split_authority(target) else {
                return;
            };
            let Some(mut upstream) = dial(host, port).await else {
                let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                return;
            };
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            return;
        }
        log.record("proxy-forward", text.clone());
        // `http://host:port/path` to `/path`, to host:port.
        let Some(rest) = target.strip_prefix("http://") else {
            return;
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let Some((host, port)) = split_authority(authority) else {
            return;
        };
        let Some(mut upstream) = dial(host, port).await else {
            return;
        };
        let mut out = format!("{method} {path} HTTP/1.1\r\n");
        for header in lines.filter(|l| !l.is_empty()) {
            let name = header
                .split(':')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            // What was for the proxy, the proxy consumes.
            if !matches!(
                name.as_str(),
                "proxy-authorization" | "proxy-connection" | "connection"
            ) {
                out.push_str(header);
                out.push_str("\r\n");
            }
        }
        out.push_str("connection: close\r\n\r\n");
        if upstream.write_all(out.as_bytes()).await.is_err() {
            return;
        }
        // GETs only: the answer is everything up to the upstream's close.
        let mut answer = Vec::new();
        let read = tokio::time::timeout(WAIT, upstream.read_to_end(&mut answer)).await;
        if !matches!(read, Ok(Ok(_))) || client.write_all(&answer).await.is_err() {
            return;
        }
    }
}

/// Starts a SOCKS5 proxy (RFC 1928, username/password per RFC 1929) that
/// records its handshake as `socks5`.
pub async fn socks5(log: &Log, tasks: &Tasks) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = log.clone();
    tasks.spawn(async move {
        let mut conns = JoinSet::new();
        while let Ok((tcp, _)) = listener.accept().await {
            let log = log.clone();
            conns.spawn(async move {
                let handshake = tokio::time::timeout(WAIT, socks_handshake(tcp, log)).await;
                if let Ok(Some((mut client, mut upstream))) = handshake {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    addr
}

async fn exact<S: AsyncRead + Unpin>(io: &mut S, n: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0; n];
    io.read_exact(&mut buf).await.ok()?;
    Some(buf)
}

/// The handshake, recorded; the client and the target it asked for.
async fn socks_handshake(mut client: TcpStream, log: Log) -> Option<(TcpStream, TcpStream)> {
    let greeting = exact(&mut client, 2).await?;
    let methods = exact(&mut client, usize::from(greeting[1])).await?;
    let mut text = String::from("socks5 greeting\n");
    if methods.contains(&2) {
        client.write_all(&[5, 2]).await.ok()?;
        let ver_len = exact(&mut client, 2).await?;
        let user = exact(&mut client, usize::from(ver_len[1])).await?;
        let pass_len = exact(&mut client, 1).await?;
        let pass = exact(&mut client, usize::from(pass_len[0])).await?;
        text.push_str(&format!(
            "user: {}\npassword: {}\n",
            String::from_utf8_lossy(&user),
            String::from_utf8_lossy(&pass)
        ));
        client.write_all(&[1, 0]).await.ok()?;
    } else {
        client.write_all(&[5, 0]).await.ok()?;
    }
    let request = exact(&mut client, 4).await?;
    let host = match request[3] {
        1 => {
            let a = exact(&mut client, 4).await?;
            format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
        }
        3 => {
            let len = exact(&mut client, 1).await?;
            String::from_utf8_lossy(&exact(&mut client, usize::from(len[0])).await?).into_owned()
        }
        4 => {
            let a: [u8; 16] = exact(&mut client, 16).await?.try_into().ok()?;
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => return None,
    };
    let port = exact(&mut client, 2).await?;
    let port = u16::from_be_bytes([port[0], port[1]]);
    text.push_str(&format!("connect {host}:{port}\n"));
    log.record("socks5", text);
    let upstream = dial(&host, port).await?;
    client
        .write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .ok()?;
    Some((client, upstream))
}
